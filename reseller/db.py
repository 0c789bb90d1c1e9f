"""What the ORM cannot say: giving a pooled connection back around long waits,
PostgreSQL's transaction-level advisory locks (and their stand-in on the embedded default),
and an exact sum of a decimal column on every database.

With a connection pool (``DATABASE_POOL_SIZE``), a thread that is about to wait on a third
party (a provider's answer) gives its connection back first: hundreds of calls in flight then
hold only as many connections as threads are doing database work. Without a pool, or inside a
transaction, nothing changes.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connection, connections
from django.db.models import DecimalField, Sum
from django.db.models.functions import Round


def connection_release(alias: str = "default") -> None:
    connection = connections[alias]
    if (
        connection.connection is not None
        and "pool" in connection.settings_dict.get("OPTIONS", {})
        and not connection.in_atomic_block
    ):
        connection.close()


def advisory_key(*parts: object) -> int:
    """The advisory lock named by ``parts`` (joined with ":", the first naming what it
    guards): the first 8 bytes of its SHA-256 as a signed 64-bit number, the same in every
    process."""
    digest = hashlib.sha256(":".join(str(part) for part in parts).encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def advisory_xact_lock(key: int, *, wait: bool = False) -> bool:
    """Take PostgreSQL's transaction-level advisory lock ``key`` (a signed 64-bit number),
    released by the transaction's end; without ``wait``, False when another transaction holds
    it. Elsewhere (SQLite runs one writing transaction at a time) there is nothing to take:
    True. The ORM has no advisory locks, hence the one statement."""
    if connection.vendor != "postgresql":
        return True
    function = "pg_advisory_xact_lock" if wait else "pg_try_advisory_xact_lock"
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {function}(%s)", [key])
        if wait:
            return True
        return bool(cursor.fetchone()[0])


_claimed: set[int] = set()
_claims = threading.Lock()


@contextmanager
def process_claim(key: int) -> Iterator[bool]:
    """Around a block that takes ``advisory_xact_lock(key)`` in its transaction: whether no
    other thread of this process is inside such a block for ``key`` (held until the block
    ends). On PostgreSQL always True: the advisory lock decides, across processes. Elsewhere
    (the embedded default: SQLite in one process) this is the lock: SQLite's one writing
    transaction at a time would make a second request with the key wait for the first and
    replay it, where a request still running is to be refused at once."""
    if connection.vendor == "postgresql":
        yield True
        return
    with _claims:
        free = key not in _claimed
        _claimed.add(key)
    try:
        yield free
    finally:
        if free:
            with _claims:
                _claimed.discard(key)


def exact_sum(field: str, *, places: int) -> Round:
    """The sum of a decimal column with ``places`` places, exact on every database, for a
    comparison made in SQL (``.exclude(total=0)``). SQLite adds decimals as binary floats
    (5.14 - 5.14 + 4.8208 - 4.8208 is 8.9e-16 there); rounded to the column's places, the
    float's error goes. PostgreSQL adds numerics exactly: the rounding changes nothing."""
    return Round(
        Sum(field), places, output_field=DecimalField(max_digits=30, decimal_places=places)
    )
