"""Fixed-window rate limits that are exact under concurrency and shared by every process.

With REDIS_URL set, one MULTI/EXEC of INCR + EXPIRE per hit: Redis serialises the increments,
so N + k concurrent hits on a limit of N let exactly N through, across all web processes.
Without Redis (the embedded default) a process-local counter under a lock does the same job.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass
from functools import cache

from django.conf import settings


@dataclass(frozen=True)
class Decision:
    allowed: bool
    limit: int
    remaining: int
    reset: int  # seconds until the window ends
    window: int
    counter: str = ""  # the window's counter this hit went to (``give_back``)

    def headers(self) -> dict[str, str]:
        """IETF draft RateLimit headers (draft-ietf-httpapi-ratelimit-headers)."""
        return {
            "RateLimit-Policy": f"{self.limit};w={self.window}",
            "RateLimit": f"limit={self.limit}, remaining={self.remaining}, reset={self.reset}",
        }


@cache
def _redis():
    import redis

    return redis.Redis.from_url(settings.REDIS_URL, socket_timeout=2, socket_connect_timeout=2)


def _redis_incr(key: str, window: int) -> int:
    """INCR + EXPIRE in one MULTI/EXEC. A connection that breaks while it is being set up can
    surface from redis-py as a bare OSError/ValueError; it is retried once on a fresh
    connection, then reported as a redis ConnectionError (503 service_unavailable)."""
    import redis

    for attempt in (1, 2):
        try:
            pipe = _redis().pipeline(transaction=True)
            pipe.incr(key)
            pipe.expire(key, window + 1, nx=True)
            return int(pipe.execute()[0])
        except (redis.ConnectionError, redis.TimeoutError, OSError, ValueError) as exc:
            if attempt == 2:
                if isinstance(exc, redis.ConnectionError | redis.TimeoutError):
                    raise
                raise redis.ConnectionError(f"redis connection broke: {exc}") from exc
    raise AssertionError("unreachable")


_memory: dict[str, tuple[int, float]] = {}
_memory_lock = threading.Lock()


def _prefix() -> str:
    return settings.CACHES["default"].get("KEY_PREFIX", "reseller")


def hit(scope: str, ident: str, *, limit: int, window: int, now: float | None = None) -> Decision:
    """Count one hit of ``ident`` against ``limit`` per ``window`` seconds."""
    now = time.time() if now is None else now
    slot = math.floor(now / window)
    reset = max(1, math.ceil((slot + 1) * window - now))
    key = f"{_prefix()}:rl:{scope}:{ident}:{slot}"
    if settings.REDIS_URL:
        count = _redis_incr(key, window)
    else:
        with _memory_lock:
            if len(_memory) > 10_000:
                for stale in [k for k, (_, exp) in _memory.items() if exp < now]:
                    del _memory[stale]
            count = _memory.get(key, (0, 0.0))[0] + 1
            _memory[key] = (count, now + window + 1)
    return Decision(
        allowed=count <= limit,
        limit=limit,
        remaining=max(0, limit - count),
        reset=reset,
        window=window,
        counter=key,
    )


# DECR only a window that still exists: a window that ended meanwhile is not made again
# (without an expiry) at -1.
_GIVE_BACK = "if redis.call('exists', KEYS[1]) == 1 then return redis.call('decr', KEYS[1]) end"


def give_back(decisions) -> None:
    """Take back the hits of ``decisions`` (``hit``'s): a request they counted was refused
    after all with 401 or 403, which never uses quota (contract section 7)."""
    counters = {decision.counter for decision in decisions if decision.counter}
    if not counters:
        return
    if settings.REDIS_URL:
        for counter in counters:
            _redis().eval(_GIVE_BACK, 1, counter)
        return
    with _memory_lock:
        for counter in counters:
            if counter in _memory:
                count, expires = _memory[counter]
                _memory[counter] = (count - 1, expires)


def reset_all_for_tests() -> None:
    if settings.REDIS_URL:
        client = _redis()
        for key in client.scan_iter(f"{_prefix()}:rl:*"):
            client.delete(key)
    with _memory_lock:
        _memory.clear()
