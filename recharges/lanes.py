"""Fair dispatch: one lane per account (docs/processor.md "Fair dispatch").

A live recharge is *released* when its message is published (``released_at`` set). A small
order's recharges are released as they are written and published at once, as before. A
larger order (a batch, a big API order) leaves its recharges queued and unreleased: its
account's *backlog*. The feeder (``lane_feed``) keeps at most ``DISPATCH_ACCOUNT_SHARE`` of an
account's released recharges waiting to be claimed, releasing the oldest of its backlog (id
order: the account's order) as the others are claimed. Another account's order so waits behind
one share of each backlogged account, never behind a whole backlog.

Exactly-once does not depend on any of this: the processor claims a row only from ``queued``
under its lock, so a row published twice is sent once, and a row never published is found by
the sweeper (it feeds every backlogged account, and re-enqueues released rows left queued).
Test-mode rows never reach a lane: the sandbox settles them in their order's transaction.
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from recharges.models import Recharge
from recharges.state import recharges_release
from reseller.db import advisory_key, advisory_xact_lock
from upstreams import semaphore

S = Recharge.Status


def _live_queued() -> QuerySet[Recharge]:
    return Recharge.objects.filter(status=S.QUEUED, livemode=True)


def lane_lock_id(account_id: int) -> int:
    """The advisory lock that makes one feeder at a time release an account's backlog."""
    return advisory_key("dispatch-lane", account_id)


def backlog_exists(*, account_id: int) -> bool:
    return _live_queued().filter(account_id=account_id, released_at__isnull=True).exists()


def backlog_accounts(*, limit: int = 1000) -> list[int]:
    """The accounts with recharges waiting in their lanes (the sweeper feeds each)."""
    rows = _live_queued().filter(released_at__isnull=True).order_by().values_list("account_id")
    return [account_id for (account_id,) in rows.distinct()[:limit]]


def slot_waiters(account_id: int) -> str:
    """The group an account's recharges wait for a provider slot as (``semaphore``)."""
    return f"account-{account_id}"


def pending_count(*, account_id: int, taken: int | None = None) -> int:
    """An account's recharges waiting: released and not yet claimed (``taken``: one a worker
    holds now), or claimed and waiting for a provider slot (the processor claims a recharge
    before it waits for its provider: dispatched, not yet sent)."""
    rows = _live_queued().filter(account_id=account_id, released_at__isnull=False)
    if taken is not None:
        rows = rows.exclude(pk=taken)
    return rows.count() + semaphore.waiting(slot_waiters(account_id))


def backlog_stuck(*, before) -> list[int]:
    """Unreleased recharges queued since before ``before``: waiting in their lanes (the
    sweeper counts them with the stuck ones; it feeds their lanes, never re-enqueues them)."""
    rows = _live_queued().filter(released_at__isnull=True, updated_at__lt=before)
    return list(rows.values_list("pk", flat=True)[:1000])


def lanes_of(recharge_ids: list[int]) -> dict[int, int]:
    """Each recharge's account: the lane a re-enqueued message tops up once done."""
    rows = Recharge.objects.filter(pk__in=recharge_ids).values_list("pk", "account_id")
    return dict(rows)


def dispatch_direct(*, account_id: int, count: int) -> bool:
    """May a new order of ``count`` live recharges be published at once? Yes when small and its
    account has no backlog (its order then waits behind that backlog, in its lane), and
    always when tasks run inline (the tests': a task runs as it is published, no queue). The
    embedded default's thread pool is a queue like a broker's: lanes there too."""
    if settings.CELERY_TASK_ALWAYS_EAGER and not settings.TASKS_IN_PROCESS_THREADED:
        return True
    return count <= settings.DISPATCH_DIRECT_MAX and not backlog_exists(account_id=account_id)


def lane_feed(
    *, account_id: int, publish: Callable[[list[int]], list[int]], taken: int | None = None
) -> list[int]:
    """Top the account's lane up to its share: release its oldest unreleased recharges and
    ``publish`` them (in id order; returns those it published, stopping at a failure). Only
    when at most half a share is left waiting, so a busy lane is topped up in bunches; one
    feeder at a time per account (an advisory lock, not waited for: the holder is feeding),
    publishing under the lock so that two feeders never interleave an account's messages.
    A top-up skipped here is done by the next lane task's, at worst by the sweeper. Returns
    the ids released."""
    share = settings.DISPATCH_ACCOUNT_SHARE
    if pending_count(account_id=account_id, taken=taken) > share // 2:
        return []
    with transaction.atomic():
        if not advisory_xact_lock(lane_lock_id(account_id)):
            return []  # another feeder is topping this lane up now (waiting would hold threads)
        room = share - pending_count(account_id=account_id, taken=taken)
        if room <= 0:
            return []
        backlog = _live_queued().filter(account_id=account_id, released_at__isnull=True)
        ids = list(backlog.order_by("pk").values_list("pk", flat=True)[:room])
        if not ids:
            return []
        # Published, then marked: a row a worker claimed meanwhile has left ``queued`` and is
        # left alone; a crash in between leaves rows published but unmarked, fed again later
        # (a second message is harmless: the processor claims a row once).
        published = publish(ids)
        recharges_release(published, now=timezone.now())
        return published
