"""The providers' semaphore (upstreams/semaphore.py): a ceiling of calls in flight shared by
every worker, whose waiters are woken by a release rather than polling, in Redis and, without
Redis, in the process."""

import threading
import time

import pytest
from django.test import override_settings

from upstreams import semaphore

WAYS = [
    pytest.param({}, id="redis"),
    pytest.param({"REDIS_URL": ""}, id="in-process"),
]


def _holder(provider: str, *, limit: int, taken: threading.Event, release: threading.Event):
    def hold() -> None:
        with semaphore.provider_slot(provider, limit=limit, wait=1) as slot:
            assert slot
            taken.set()
            release.wait(10)

    return threading.Thread(target=hold)


@pytest.mark.parametrize("where", WAYS)
def test_a_waiter_gets_the_slot_as_soon_as_it_is_given_back(where):
    provider = f"sem-{time.monotonic_ns()}"
    with override_settings(**where):
        taken, release = threading.Event(), threading.Event()
        holder = _holder(provider, limit=1, taken=taken, release=release)
        holder.start()
        assert taken.wait(10)
        got: list[float] = []

        def wait_for_it() -> None:
            with semaphore.provider_slot(provider, limit=1, wait=30) as slot:
                got.append(time.monotonic() if slot else -1.0)

        waiter = threading.Thread(target=wait_for_it)
        waiter.start()
        released_at = time.monotonic()
        release.set()
        holder.join(10)
        waiter.join(10)
        # Woken by the release, long before its 30 s wait was over.
        assert got and got[0] > 0 and got[0] - released_at < 2.0
        assert semaphore.in_flight(provider) == 0


@pytest.mark.parametrize("where", WAYS)
def test_no_slot_within_the_wait_is_a_false_slot_and_the_ceiling_holds(where):
    provider = f"sem-{time.monotonic_ns()}"
    with override_settings(**where):
        taken, release = threading.Event(), threading.Event()
        holder = _holder(provider, limit=1, taken=taken, release=release)
        holder.start()
        assert taken.wait(10)
        with semaphore.provider_slot(provider, limit=1, wait=0.2) as slot:
            assert not slot and slot.paused_for == 0
        assert semaphore.in_flight(provider) == 1
        release.set()
        holder.join(10)
        with semaphore.provider_slot(provider, limit=1, wait=0.2) as slot:
            assert slot


@pytest.mark.parametrize("where", WAYS)
def test_a_pause_refuses_at_once_and_says_for_how_long(where):
    provider = f"sem-{time.monotonic_ns()}"
    with override_settings(**where):
        semaphore.pause(provider, 20)
        started = time.monotonic()
        with semaphore.provider_slot(provider, limit=5, wait=10) as slot:
            assert not slot and 15 < slot.paused_for <= 20
        assert time.monotonic() - started < 1.0  # not waited for
        semaphore.pause(provider, 5)  # a shorter Retry-After never cuts a pause short
        assert semaphore.paused_for(provider) > 15


def test_no_ceiling_holds_nothing():
    with semaphore.provider_slot("anything", limit=0, wait=0) as slot:
        assert slot
    assert semaphore.in_flight("anything") == 0
