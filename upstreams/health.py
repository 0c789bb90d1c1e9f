"""Each provider's health, shared by every worker (docs/providers.md, "Health").

- **Circuit breaker.** Calls that fail (refused connection, timeout, 5xx, an answer we cannot
  read) or take longer than ``PROVIDER_CIRCUIT_SLOW_SECONDS`` count against the provider;
  ``PROVIDER_CIRCUIT_FAILURES`` of them in a row open its circuit: new recharges skip it for
  ``PROVIDER_CIRCUIT_COOLDOWN_SECONDS``. Then it is half-open: one recharge at a time may
  probe it; a good answer closes the circuit, a bad one opens it again. A documented refusal
  (an invalid number) is a good answer: the provider is working.
- **Knocking.** A circuit opened by refused connections (nothing listens: the provider's
  host is up, its service is not) need not wait for the cool-down to notice the service is
  back: a TCP connection is a free, instant and harmless probe. While it is open, at most one
  caller every ``KNOCK_EVERY`` seconds (across every process) knocks (``knock_due``,
  ``knocked``; the connect itself is ``upstreams.routing.providers_knock``, which the
  processor calls before it chooses the targets of a batch), and a provider that listens
  again is closed at once. A knock that gets no answer at all (a connect
  timeout) stops the knocking: that outage waits for the cool-down like any other.
- **Figures.** Every call adds to per-minute counters (answers, failures, a latency
  histogram) kept 16 minutes: success rate and p50/p95 latency over the last 15 minutes.

It lives in Django's cache: Redis when ``REDIS_URL`` is set (every process shares it), the
process's memory in the embedded default.
"""

from __future__ import annotations

import time
from bisect import bisect_left
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import cache

# Upper bounds (ms) of the latency histogram's buckets; the last one takes the rest.
BOUNDS_MS = (25, 50, 100, 200, 300, 500, 750, 1000, 1500, 2000, 3000, 5000, 10000, 30000)
WINDOW_MINUTES = 15

HEALTHY, DEGRADED, OPEN = "healthy", "degraded", "open"
# Seconds between two knocks at one provider, across every process: a refused connection
# costs both sides next to nothing, and dispatches come in waves of tens within a few ms, so
# every 50 ms sent up to 2% of the deliveries after an outage elsewhere (the routing bench).
KNOCK_EVERY = 0.01
KNOCKING = "upstream:knocking"  # the providers whose circuit refused connections opened


def _key(provider: str, *parts: object) -> str:
    return ":".join(["upstream", provider, *(str(p) for p in parts)])


def _incr(key: str, ttl: int) -> int:
    cache.add(key, 0, ttl)
    try:
        return int(cache.incr(key))
    except ValueError:  # expired between the two calls
        cache.set(key, 1, ttl)
        return 1


def _count(keys: list[str], ttl: int) -> None:
    count_many = getattr(cache, "count_many", None)  # Redis: one round trip
    if count_many is not None:
        count_many(keys, ttl)
        return
    for key in keys:
        _incr(key, ttl)


def record(provider: str, *, ok: bool, seconds: float, refused: bool = False) -> None:
    """One call's answer: ``ok`` when the provider answered as it documents (a delivery, a
    pending top-up, a refusal), not when it failed to answer or answered with an error;
    ``refused``: the connection was refused (nothing listened). Two cache round trips for a
    good answer while the circuit is closed."""
    minute = int(time.time() // 60)
    keep = (WINDOW_MINUTES + 1) * 60
    milliseconds = seconds * 1000
    _count(
        [
            _key(provider, "m", minute, "ok" if ok else "err"),
            _key(provider, "m", minute, "l", bisect_left(BOUNDS_MS, milliseconds)),
        ],
        keep,
    )
    slow = seconds > settings.PROVIDER_CIRCUIT_SLOW_SECONDS
    if ok and not slow:
        found = cache.get_many([_key(provider, "tripped"), _key(provider, "fails")])
        if found.get(_key(provider, "tripped")):  # the half-open probe came back well
            cache.delete_many([_key(provider, "tripped"), _key(provider, "probe")])
        if found.get(_key(provider, "fails")):
            cache.delete(_key(provider, "fails"))
        return
    fails = _incr(_key(provider, "fails"), 3600)
    if fails >= settings.PROVIDER_CIRCUIT_FAILURES or cache.get(_key(provider, "tripped")):
        trip(provider, refused=refused)


def trip(provider: str, *, refused: bool = False) -> None:
    """Open the provider's circuit for the cool-down (then half-open: one probe at a time);
    ``refused``: the failure that opened it was a refused connection (knock meanwhile)."""
    cooldown = settings.PROVIDER_CIRCUIT_COOLDOWN_SECONDS
    cache.set(_key(provider, "open"), 1, cooldown)
    cache.set(_key(provider, "tripped"), 1, 24 * 3600)
    cache.delete_many([_key(provider, "fails"), _key(provider, "probe")])
    _knocking(provider, refused)


def reset(provider: str) -> None:
    """Close the circuit (staff, tests, a knock that found it listening)."""
    cache.delete_many([_key(provider, name) for name in ("open", "tripped", "probe", "fails")])
    _knocking(provider, False)


def _knocking(provider: str, knock: bool) -> None:
    # Read, change, write: two trips at once may lose a name, which then waits for the
    # cool-down and its probe as without knocking (never the other way round).
    names = set(cache.get(KNOCKING) or ())
    if (provider in names) != knock:
        cache.set(KNOCKING, sorted(names ^ {provider}), 24 * 3600)


def knock_due() -> list[str]:
    """The providers this caller should knock at now: those whose circuit refused
    connections opened, each at most once every ``KNOCK_EVERY`` s across every process. One
    cache read when there are none (every dispatch asks)."""
    names = cache.get(KNOCKING)
    if not names:
        return []
    slot = int(time.time() / KNOCK_EVERY)
    return [name for name in names if cache.add(_key(name, "knock", slot), 1, 2)]


def knocked(provider: str, *, listening: bool | None) -> None:
    """A knock's answer: listening (close the circuit), refused (stay open, knock again),
    or no answer (``None``: stop knocking; the cool-down and its probe decide)."""
    if listening:
        reset(provider)
    elif listening is None:
        _knocking(provider, False)


def is_open(provider: str) -> bool:
    """Is the provider's circuit open now (no new recharge goes there)? A read only: unlike
    ``allow`` it never takes a half-open circuit's probe."""
    return bool(cache.get(_key(provider, "open")))


def circuit(provider: str) -> bool | None:
    """The provider's circuit now, read once: True closed, False open, None half-open (a call
    then needs ``allow``, which hands out the one probe)."""
    found = cache.get_many([_key(provider, "open"), _key(provider, "tripped")])
    if found.get(_key(provider, "open")):
        return False
    if found.get(_key(provider, "tripped")):
        return None
    return True


def allow(provider: str) -> bool:
    """May a new recharge be sent to this provider now? Closed: yes. Open: no. Half-open:
    the first caller gets the probe (for as long as one call may take), the others no."""
    if cache.get(_key(provider, "open")):
        return False
    if not cache.get(_key(provider, "tripped")):
        return True
    probe_for = int(settings.PROVIDER_TIMEOUT_SECONDS) + 5
    return bool(cache.add(_key(provider, "probe"), 1, probe_for))


@dataclass(frozen=True)
class Figures:
    state: str
    calls: int
    success_rate: float | None  # answers / calls over the window, None without calls
    p50_ms: int | None
    p95_ms: int | None


def _percentile(histogram: list[int], share: float) -> int | None:
    total = sum(histogram)
    if not total:
        return None
    wanted, seen = share * total, 0
    for index, count in enumerate(histogram):
        seen += count
        if seen >= wanted:
            return BOUNDS_MS[index] if index < len(BOUNDS_MS) else BOUNDS_MS[-1] * 2
    return None


def figures(provider: str) -> Figures:
    """The provider's state and its last 15 minutes (bucket upper bounds for percentiles)."""
    now = int(time.time() // 60)
    minutes = range(now - WINDOW_MINUTES + 1, now + 1)
    keys = [_key(provider, "m", m, kind) for m in minutes for kind in ("ok", "err")]
    keys += [_key(provider, "m", m, "l", i) for m in minutes for i in range(len(BOUNDS_MS) + 1)]
    keys += [_key(provider, name) for name in ("open", "tripped")]
    found = cache.get_many(keys)
    ok = sum(int(found.get(_key(provider, "m", m, "ok"), 0)) for m in minutes)
    err = sum(int(found.get(_key(provider, "m", m, "err"), 0)) for m in minutes)
    histogram = [
        sum(int(found.get(_key(provider, "m", m, "l", i), 0)) for m in minutes)
        for i in range(len(BOUNDS_MS) + 1)
    ]
    calls = ok + err
    rate = ok / calls if calls else None
    if found.get(_key(provider, "open")):
        state = OPEN
    elif found.get(_key(provider, "tripped")) or (
        rate is not None and calls >= 10 and rate < settings.PROVIDER_DEGRADED_BELOW
    ):
        state = DEGRADED
    else:
        state = HEALTHY
    return Figures(
        state=state,
        calls=calls,
        success_rate=None if rate is None else round(rate, 4),
        p50_ms=_percentile(histogram, 0.50),
        p95_ms=_percentile(histogram, 0.95),
    )
