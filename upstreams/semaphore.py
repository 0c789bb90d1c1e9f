"""A counting semaphore per provider, shared by every worker process (docs/processor.md).

- **A ceiling of calls in flight** per provider (its row's ``max_in_flight``, or
  ``PROVIDER_MAX_IN_FLIGHT`` for ``AIRTIME_PROVIDER``): a burst of 10,000 recharges never
  opens 10,000 calls. A slot is a lease (the provider's timeout twice, plus a margin) in a
  Redis sorted set, so a worker killed mid-call frees its slot when the lease ends.
- **Waiting wakes, it does not poll.** A caller that finds every slot taken blocks on the
  provider's wake list (``BLPOP``); each release pushes one wake-up onto it, so the first
  waiter takes the slot freed, in the order they came (Redis serves blocked clients first
  come, first served). A wake-up nobody waits for stays on the list (trimmed to the ceiling):
  the next caller who finds no slot tries once more at once. The wait ends at ``wait``
  seconds, or sooner when the oldest lease runs out.
- **A pause** per provider after a 429: every worker holds its calls for the provider's
  ``Retry-After``; a caller during a pause is told how long is left instead of waiting.
- **Who waits.** A caller may name a group it waits as (``waiting_as``: fair dispatch names
  the recharge's account); ``waiting(group)`` counts the callers of that group waiting for a
  slot now, of every process. Each is a lease too (the wait, plus a margin), so a worker killed
  while waiting is not counted for long.

Without Redis (the embedded default) the same lives in this process, with a condition
variable for the waiting.
"""

from __future__ import annotations

import contextlib
import secrets
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache

import redis
from django.conf import settings

# KEYS: the leases, the pause; ARGV: now, the lease's end, the ceiling, the token. Takes a
# slot if one is free: 1; none: 0 (or minus the milliseconds the provider's pause lasts).
_TAKE = """
local paused = redis.call('PTTL', KEYS[2])
if paused > 0 then
  return -paused
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then
  return 0
end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[4])
redis.call('EXPIRE', KEYS[1], 3600)
return 1
"""
# KEYS: the leases, the wake list; ARGV: the token, the ceiling. Gives the slot back and
# wakes one waiter (a wake-up nobody takes stays, at most one per slot).
_GIVE = """
if redis.call('ZREM', KEYS[1], ARGV[1]) == 1 then
  redis.call('LPUSH', KEYS[2], 1)
  redis.call('LTRIM', KEYS[2], 0, tonumber(ARGV[2]) - 1)
  redis.call('EXPIRE', KEYS[2], 3600)
end
return 0
"""


@dataclass(frozen=True)
class Slot:
    """What ``provider_slot`` yields: ``held`` (the call may go), else ``paused_for``: seconds
    the provider's pause still lasts (0 when every slot stayed taken for the whole wait)."""

    held: bool
    paused_for: float = 0.0

    def __bool__(self) -> bool:
        return self.held


@cache
def _redis():
    # A read may block for a whole wait (BLPOP): the socket's timeout is longer than that.
    return redis.Redis.from_url(
        settings.REDIS_URL,
        socket_connect_timeout=2,
        socket_timeout=settings.PROVIDER_SLOT_WAIT_SECONDS + 5,
    )


@cache
def _scripts():
    client = _redis()
    return client.register_script(_TAKE), client.register_script(_GIVE)


def _key(kind: str, provider: str) -> str:
    prefix = settings.CACHES["default"].get("KEY_PREFIX", "reseller")
    return f"{prefix}:provider-{kind}:{provider}"


def _lease_seconds() -> float:
    timeout = max(settings.RELOADLY_TIMEOUT_SECONDS, settings.PROVIDER_TIMEOUT_SECONDS)
    return timeout * 2 + 30


class _Local:
    """The semaphores of this process, without Redis."""

    def __init__(self) -> None:
        self.changed = threading.Condition()
        self.leases: dict[str, dict[str, float]] = {}
        self.pauses: dict[str, float] = {}
        self.waiters: dict[str, dict[str, float]] = {}

    def take(self, provider: str, token: str, limit: int) -> int:
        now = time.time()
        if (paused := self.pauses.get(provider, 0.0) - now) > 0:
            return -int(paused * 1000) or -1
        leases = self.leases.setdefault(provider, {})
        for held, until in list(leases.items()):
            if until < now:
                del leases[held]
        if len(leases) >= limit:
            return 0
        leases[token] = now + _lease_seconds()
        return 1


_local = _Local()


def _take(provider: str, token: str, limit: int) -> int:
    if settings.REDIS_URL:
        take, _give = _scripts()
        now = time.time()
        args = [now, now + _lease_seconds(), limit, token]
        return int(take(keys=[_key("slots", provider), _key("pause", provider)], args=args))
    with _local.changed:
        return _local.take(provider, token, limit)


def _give(provider: str, token: str, limit: int) -> None:
    if settings.REDIS_URL:
        _take_script, give = _scripts()
        give(keys=[_key("slots", provider), _key("wake", provider)], args=[token, limit])
        return
    with _local.changed:
        _local.leases.get(provider, {}).pop(token, None)
        _local.changed.notify()


def _wait_for_release(provider: str, seconds: float) -> None:
    """Block until a slot of ``provider`` is given back, or ``seconds`` pass."""
    if seconds <= 0:
        return
    if settings.REDIS_URL:
        _redis().blpop([_key("wake", provider)], timeout=seconds)
        return
    with _local.changed:
        _local.changed.wait(seconds)


@contextlib.contextmanager
def _waiting_as(group: str, token: str, wait: float) -> Iterator[None]:
    """Count the caller among ``group``'s waiters for the block (``waiting``)."""
    if not group:
        yield
        return
    until = time.time() + wait + 5
    if settings.REDIS_URL:
        key = _key("waiting", group)
        client = _redis()
        pipeline = client.pipeline(transaction=False)
        pipeline.zremrangebyscore(key, "-inf", time.time())  # a killed waiter's lease, over
        pipeline.zadd(key, {token: until}).expire(key, 3600).execute()
        try:
            yield
        finally:
            client.zrem(key, token)
        return
    with _local.changed:
        _local.waiters.setdefault(group, {})[token] = until
    try:
        yield
    finally:
        with _local.changed:
            _local.waiters.get(group, {}).pop(token, None)


def waiting(group: str) -> int:
    """How many callers that named ``group`` (``provider_slot``'s ``waiting_as``) wait for a
    slot now, in every process."""
    now = time.time()
    if settings.REDIS_URL:
        return int(_redis().zcount(_key("waiting", group), now, "+inf"))
    with _local.changed:
        return sum(1 for until in _local.waiters.get(group, {}).values() if until >= now)


@contextlib.contextmanager
def provider_slot(
    provider: str, *, limit: int, wait: float, waiting_as: str = ""
) -> Iterator[Slot]:
    """Hold one of the provider's ``limit`` slots (0: no ceiling) for the block. Waits up to
    ``wait`` seconds for one to be given back, counted among ``waiting_as``'s waiters
    meanwhile (``waiting``); yields a ``Slot`` that is false when none was, or when the
    provider is paused (``Slot.paused_for``): the caller hands its recharge back for later,
    without spending an attempt."""
    if limit <= 0:
        yield Slot(True)
        return
    token = secrets.token_hex(8)
    deadline = time.monotonic() + wait
    answer = _take(provider, token, limit)
    if answer == 0:
        with _waiting_as(waiting_as, token, wait):
            while answer == 0:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                _wait_for_release(provider, left)
                answer = _take(provider, token, limit)
    if answer < 0:
        yield Slot(False, paused_for=-answer / 1000)
        return
    if answer == 0:
        yield Slot(False)
        return
    try:
        yield Slot(True)
    finally:
        _give(provider, token, limit)


def paused_for(provider: str) -> float:
    """Seconds left of the provider's pause after a 429 (0 when it may be called)."""
    if settings.REDIS_URL:
        ttl = _redis().pttl(_key("pause", provider))
        return max(0.0, ttl / 1000) if ttl and ttl > 0 else 0.0
    with _local.changed:
        return max(0.0, _local.pauses.get(provider, 0.0) - time.time())


def pause(provider: str, seconds: float) -> float:
    """Hold every call to ``provider`` for ``seconds`` (its Retry-After, kept between 0.1 and
    60), from every worker; the seconds the pause now lasts. Only lengthens a pause already
    set: a shorter Retry-After never cuts one short."""
    seconds = min(max(seconds, 0.1), 60.0)
    if settings.REDIS_URL:
        left = paused_for(provider)
        if left < seconds:
            _redis().set(_key("pause", provider), 1, px=int(seconds * 1000))
        return max(left, seconds)
    with _local.changed:
        now = time.time()
        until = max(_local.pauses.get(provider, 0.0), now + seconds)
        _local.pauses[provider] = until
        return until - now


def in_flight(provider: str) -> int:
    """Calls holding a slot now (the back office, metrics, tests, the bench)."""
    now = time.time()
    if settings.REDIS_URL:
        return int(_redis().zcount(_key("slots", provider), now, "+inf"))
    with _local.changed:
        return sum(1 for until in _local.leases.get(provider, {}).values() if until >= now)
