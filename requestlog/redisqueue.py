"""The Redis list between the web processes and the request log's table (docs/request-log.md).

A thread of each web process pushes captures, encoded as JSON, onto a list
(``REQUEST_LOG_REDIS_KEY``, with the cache's key prefix); ``drain`` (the beat's
``requestlog_drain_task``, every second) writes them with ``COPY``. Nothing is lost when a
drain is interrupted: it moves a batch onto a processing list in one step (a Lua script:
``LRANGE``, ``LTRIM``, ``RPUSH``), writes it, and only then deletes that list; the next drain
writes what a stopped one left there first. One drain works at a time (a Redis lock that
expires, so a drain killed holding it delays the next one by at most ``LOCK_SECONDS``). A
batch written but not yet deleted when its drain stopped is written again as the same rows
(their public ids travel with the captures): none is doubled.
"""

from __future__ import annotations

import logging
import time
from functools import cache
from typing import Any

from django.conf import settings

from requestlog.services import Capture, api_requests_record, capture_decode, capture_encode

logger = logging.getLogger(__name__)

BATCH = 500  # captures per COPY
LOCK_SECONDS = 60  # a drain renews its lock at every batch; one that died frees it after this
BUDGET_SECONDS = 20.0  # a drain returns after this, beat sends the next one
PENDING_MAX = 200_000  # captures waiting at most (a database or worker outage): then dropped

# Move up to ARGV[1] items from the head of KEYS[1] to the tail of KEYS[2], atomically.
_CLAIM = """
local items = redis.call('LRANGE', KEYS[1], 0, tonumber(ARGV[1]) - 1)
if #items > 0 then
  redis.call('LTRIM', KEYS[1], #items, -1)
  redis.call('RPUSH', KEYS[2], unpack(items))
end
return items
"""


@cache
def _client(url: str) -> Any:
    import redis

    return redis.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=2)


def client() -> Any:
    return _client(settings.REDIS_URL)


def pending_key() -> str:
    return settings.REQUEST_LOG_REDIS_KEY


def processing_key() -> str:
    return f"{settings.REQUEST_LOG_REDIS_KEY}:processing"


def lock(seconds: float = LOCK_SECONDS) -> Any:
    return client().lock(f"{settings.REQUEST_LOG_REDIS_KEY}:lock", timeout=seconds)


def push(captures: list[Capture]) -> int:
    """Append captures to the list (one ``RPUSH``); returns how many were pushed: none when
    ``PENDING_MAX`` already wait (nobody drains). Raises redis errors (the caller counts the
    loss: the log never retries into a growing memory)."""
    if not captures:
        return 0
    redis = client()
    if redis.llen(pending_key()) >= PENDING_MAX:
        return 0
    redis.rpush(pending_key(), *(capture_encode(capture) for capture in captures))
    return len(captures)


def claim(batch: int = BATCH) -> list[bytes]:
    """Move up to ``batch`` captures from the list onto the processing list, in one step; the
    caller holds the lock and deletes the processing list once they are written."""
    script = client().register_script(_CLAIM)
    return list(script(keys=[pending_key(), processing_key()], args=[batch]))


def _write(items: list[bytes]) -> int:
    captures = []
    for item in items:
        try:
            captures.append(capture_decode(item))
        except ValueError:
            logger.warning("request log: an unreadable capture dropped: %r", item[:200])
    return api_requests_record(captures=captures)


def drain(*, batch: int = BATCH, budget_seconds: float = BUDGET_SECONDS) -> int:
    """Write what waits in Redis, ``batch`` rows per ``COPY``, until the list is empty or
    ``budget_seconds`` are spent. First what an interrupted drain left on the processing
    list. Returns the rows written; 0 at once when another drain holds the lock. A database
    error stops it with the batch still on the processing list (the next drain writes it)."""
    held = lock()
    if not held.acquire(blocking=False):
        return 0
    redis = client()
    written = 0
    deadline = time.monotonic() + budget_seconds
    try:
        left = redis.lrange(processing_key(), 0, -1)
        if left:
            logger.info("request log: writing %d captures an earlier drain left", len(left))
            written += _write(left)
            redis.delete(processing_key())
        while time.monotonic() < deadline:
            held.reacquire()  # LOCK_SECONDS from now
            items = claim(batch)
            if not items:
                break
            written += _write(items)
            redis.delete(processing_key())
    finally:
        try:
            held.release()
        except Exception:  # expired meanwhile: whoever holds it now recovers the batch
            logger.warning("request log: the drain's lock was lost", exc_info=True)
    return written


def waiting() -> int:
    """Captures in Redis not written yet (waiting, and on the processing list)."""
    redis = client()
    return int(redis.llen(pending_key())) + int(redis.llen(processing_key()))
