"""How a process connects to PostgreSQL: the connection pool, and its size in a threaded
Celery worker. Plain functions on a ``DATABASES`` entry, used by the settings and by the
worker before its first connection (reseller/celery.py); docs/operations.md, "Database
connections".

Without ``DATABASE_POOL_SIZE`` a thread keeps a connection of its own (``CONN_MAX_AGE``). That
is right for gunicorn's few threads, wrong for a Celery worker of 100 threads: 100 connections
from one process, and with the web tier PostgreSQL's default ``max_connections`` (100) is gone
("too many clients"). So a worker whose pool runs more than ``THREADS_WITHOUT_POOL`` threads
gets a pool sized from its concurrency, unless ``DATABASE_POOL_SIZE`` says otherwise; with
``DATABASE_POOL_SIZE=0`` (no pool, said on purpose) such a worker refuses to start.
"""

from __future__ import annotations

import math
from typing import Any

from django.core.exceptions import ImproperlyConfigured

# A worker with this many threads or fewer keeps one connection per thread (the webhooks
# worker's 16 do: a delivery holds its connection while the receiver answers).
THREADS_WITHOUT_POOL = 20
# Threads per pooled connection: a processor thread holds one only while it writes, and gives
# it back before a provider call (reseller/db.py): 100 threads share 10 (docker-compose).
THREADS_PER_CONNECTION = 10
POOL_MIN = 10
# Celery's pools that run tasks on threads (or green threads) of one process.
THREADED_POOLS = ("thread", "gevent", "eventlet")


def database_pool_enable(database: dict[str, Any], size: int, *, timeout: float) -> None:
    """Share at most ``size`` connections among the process's threads (psycopg's pool through
    Django's). The pool and persistent connections exclude each other."""
    database["CONN_MAX_AGE"] = 0
    database["CONN_HEALTH_CHECKS"] = False  # the pool checks a connection it hands out
    database.setdefault("OPTIONS", {})["pool"] = {
        "min_size": min(2, size),
        "max_size": size,
        "timeout": timeout,
    }


def pool_size_for(threads: int) -> int:
    """The pool of a worker of ``threads`` threads: one connection per ten, at least ten, never
    more than the threads."""
    return min(threads, max(POOL_MIN, math.ceil(threads / THREADS_PER_CONNECTION)))


def is_threaded(pool: Any) -> bool:
    """Whether a Celery worker pool (its name or class) runs its tasks on threads."""
    name = pool if isinstance(pool, str) else f"{pool.__module__}.{pool.__qualname__}"
    return any(kind in name.lower() for kind in THREADED_POOLS)


def database_for_worker(
    database: dict[str, Any], *, threads: int, pool_size: int | None, timeout: float
) -> int | None:
    """Before a threaded worker's first connection: give it a pool sized from its threads when
    ``DATABASE_POOL_SIZE`` is unset (``pool_size`` None); the pool's size, or None when nothing
    changed. Refuses (ImproperlyConfigured) a worker of many threads with the pool turned off."""
    if database.get("ENGINE") != "django.db.backends.postgresql":
        return None
    if threads <= THREADS_WITHOUT_POOL or "pool" in database.get("OPTIONS", {}):
        return None
    if pool_size is not None:  # 0: no pool, on purpose
        raise ImproperlyConfigured(
            f"A Celery worker of {threads} threads with DATABASE_POOL_SIZE=0 would open up to "
            f"{threads} PostgreSQL connections (one per thread). Set DATABASE_POOL_SIZE to the "
            f"connections its threads may share (e.g. {pool_size_for(threads)}), or unset it to "
            f"size the pool from the concurrency, or run at most {THREADS_WITHOUT_POOL} threads."
        )
    size = pool_size_for(threads)
    database_pool_enable(database, size, timeout=timeout)
    return size
