"""Back-pressure towards airtime providers (docs/processor.md).

- A ceiling of calls in flight per provider, shared by every worker process through Redis
  (``PROVIDER_MAX_IN_FLIGHT``): a burst of 10,000 recharges never opens 10,000 calls. A slot
  is a lease (provider timeout + a margin), so a worker killed mid-call frees its slot.
- A pause per provider after a 429: every worker waits out the provider's ``Retry-After``
  before its next call instead of hammering it, and the rate-limited recharge is retried
  without counting as a failed attempt.

Without Redis (the embedded default) both live in this process.
"""

from __future__ import annotations

import contextlib
import secrets
import threading
import time
from collections.abc import Iterator
from functools import cache

from django.conf import settings

# KEYS: the slots, the pause; ARGV: now, the leases' end, the ceiling, then one token per
# slot wanted. Takes as many of those slots as are free, in order, and returns how many;
# or minus the milliseconds the provider's pause still lasts. One round trip per try.
_TAKE = """
local paused = redis.call('PTTL', KEYS[2])
if paused > 0 then
  return -paused
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
local free = tonumber(ARGV[3]) - redis.call('ZCARD', KEYS[1])
local taken = 0
for i = 4, #ARGV do
  if taken >= free then
    break
  end
  redis.call('ZADD', KEYS[1], ARGV[2], ARGV[i])
  taken = taken + 1
end
if taken > 0 then
  redis.call('EXPIRE', KEYS[1], 3600)
end
return taken
"""
POLL_SECONDS = 0.05

_local_lock = threading.Lock()
_local_slots: dict[str, dict[str, float]] = {}
_local_pauses: dict[str, float] = {}


@cache
def _redis():
    import redis

    return redis.Redis.from_url(settings.REDIS_URL, socket_timeout=2, socket_connect_timeout=2)


@cache
def _take_script():
    return _redis().register_script(_TAKE)


def _key(kind: str, provider: str) -> str:
    prefix = settings.CACHES["default"].get("KEY_PREFIX", "reseller")
    return f"{prefix}:provider-{kind}:{provider}"


def _lease_seconds() -> float:
    timeout = max(settings.RELOADLY_TIMEOUT_SECONDS, settings.PROVIDER_TIMEOUT_SECONDS)
    return timeout * 2 + 30


def _take(provider: str, tokens: list[str], limit: int) -> tuple[int, float]:
    """Take a slot for each token while free ones last: (how many, in order; seconds the
    provider's pause still lasts, when it is paused and none was taken)."""
    now = time.time()
    if settings.REDIS_URL:
        answer = int(
            _take_script()(
                keys=[_key("slots", provider), _key("pause", provider)],
                args=[now, now + _lease_seconds(), limit, *tokens],
            )
        )
        return max(0, answer), max(0, -answer) / 1000
    if held := paused_for(provider):
        return 0, held
    with _local_lock:
        slots = _local_slots.setdefault(provider, {})
        for token, until in list(slots.items()):
            if until < now:
                del slots[token]
        taken = tokens[: max(0, limit - len(slots))]
        for token in taken:
            slots[token] = now + _lease_seconds()
        return len(taken), 0.0


def slots_take(provider: str, count: int) -> list[str]:
    """Up to ``count`` of the provider's slots at once, without waiting (the processor's group
    commit takes its batch's in one round trip): their tokens, for ``slots_release``. With no
    ceiling, a token per slot that holds nothing."""
    limit = settings.PROVIDER_MAX_IN_FLIGHT
    if limit <= 0:
        return [""] * count
    tokens = [secrets.token_hex(8) for _ in range(count)]
    taken, _paused = _take(provider, tokens, limit)
    return tokens[:taken]


def slots_release(provider: str, tokens: list[str]) -> None:
    held = [token for token in tokens if token]
    if not held:
        return
    if settings.REDIS_URL:
        _redis().zrem(_key("slots", provider), *held)
        return
    with _local_lock:
        slots = _local_slots.get(provider, {})
        for token in held:
            slots.pop(token, None)


def paused_for(provider: str) -> float:
    """Seconds left of the provider's pause after a 429 (0 when it may be called)."""
    if settings.REDIS_URL:
        ttl = _redis().pttl(_key("pause", provider))
        return max(0.0, ttl / 1000) if ttl and ttl > 0 else 0.0
    with _local_lock:
        return max(0.0, _local_pauses.get(provider, 0.0) - time.time())


def pause(provider: str, seconds: float) -> None:
    """Hold every call to ``provider`` for ``seconds`` (its Retry-After), from every worker."""
    seconds = min(max(seconds, 0.1), 60.0)
    if settings.REDIS_URL:
        # Only lengthen a pause already set: a shorter Retry-After never cuts one short.
        if paused_for(provider) < seconds:
            _redis().set(_key("pause", provider), 1, px=int(seconds * 1000))
        return
    with _local_lock:
        _local_pauses[provider] = max(_local_pauses.get(provider, 0.0), time.time() + seconds)


@contextlib.contextmanager
def provider_slot(provider: str, *, wait: float, limit: int | None = None) -> Iterator[bool]:
    """Hold one of the provider's in-flight slots; yields False if none came free within
    ``wait`` seconds (the caller hands its recharge back to the queue for later). ``limit``:
    the provider row's ceiling (default ``PROVIDER_MAX_IN_FLIGHT``; 0: none)."""
    limit = settings.PROVIDER_MAX_IN_FLIGHT if limit is None else limit
    if limit <= 0:
        yield True
        return
    token = secrets.token_hex(8)
    deadline = time.monotonic() + wait
    while True:
        taken, held = _take(provider, [token], limit)
        if taken:
            break
        if time.monotonic() >= deadline:
            yield False
            return
        time.sleep(min(max(held, POLL_SECONDS), max(0.0, deadline - time.monotonic()), 1.0))
    try:
        yield True
    finally:
        slots_release(provider, [token])


def in_flight(provider: str) -> int:
    """Calls holding a slot now (tests, the bench)."""
    now = time.time()
    if settings.REDIS_URL:
        return int(_redis().zcount(_key("slots", provider), now, "+inf"))
    with _local_lock:
        return sum(1 for until in _local_slots.get(provider, {}).values() if until >= now)
