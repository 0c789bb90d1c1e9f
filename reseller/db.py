"""Database connections around long waits.

With a connection pool (``DATABASE_POOL_SIZE``), a thread that is about to wait on a third
party (a provider's answer) gives its connection back first: hundreds of calls in flight then
hold only as many connections as threads are doing database work. Without a pool, or inside a
transaction, nothing changes.
"""

from __future__ import annotations

from django.db import connections


def connection_release(alias: str = "default") -> None:
    connection = connections[alias]
    if (
        connection.connection is not None
        and "pool" in connection.settings_dict.get("OPTIONS", {})
        and not connection.in_atomic_block
    ):
        connection.close()
