"""Celery tasks of recharges: thin wrappers that take ids and call the processor (safe to run
twice), and the ways recharges are handed to the workers: ``recharges_enqueue`` (published at
once) and ``recharges_feed`` (an account's lane, a share at a time: ``recharges.lanes``)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from celery import shared_task
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from recharges import lanes, processor, reversals
from recharges.sandbox import PROCESSING_TIME, sandbox_settle
from reseller.tasks import enqueue

logger = logging.getLogger(__name__)


@shared_task(acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def recharge_process_task(
    recharge_id: int,
    attempt: int | None = None,
    quiet_since: float | None = None,
    lane: int | None = None,
) -> str:
    """One recharge through the processor's one path (``processor.recharge_process``), run
    again later when it says so. ``attempt``: set on a retry, the attempt it continues;
    ``quiet_since`` (a Unix time): set by the sweeper or a provider's callback, the cutoff
    under which it takes an in-flight row over; ``lane``: the account whose lane published
    it (fair dispatch), topped up as this one is taken and again once it is done, so the
    lane never waits for the sweeper."""
    if lane is not None:
        lane_top_up(account_id=lane, taken=recharge_id)
    try:
        progress = processor.recharge_process(
            recharge_id=recharge_id,
            attempt=attempt,
            quiet_since=None if quiet_since is None else datetime.fromtimestamp(quiet_since, UTC),
        )
        if progress.retry_in is not None:
            again = (recharge_id, progress.attempt, None, *([lane] if lane is not None else []))
            enqueue(recharge_process_task, *again, countdown=progress.retry_in)
    finally:
        if lane is not None:
            lane_top_up(account_id=lane)
    logger.info("recharge %s: %s", recharge_id, progress.status, extra={"recharge": recharge_id})
    return progress.status


@shared_task(acks_late=True, ignore_result=True)
def recharge_reversal_check_task(recharge_id: int, source: str = "look-up") -> bool:
    """Ask a delivered recharge's provider whether it took it back (a callback said something
    about it); reverse and refund it if so. Safe to run twice."""
    return reversals.recharge_reversal_check(recharge_id=recharge_id, source=source)


@shared_task(ignore_result=True)
def recharges_sweep_task() -> dict[str, int]:
    """Every 30 s (beat): re-enqueue lost or stuck recharges, feed the accounts' lanes (one
    share each, never a whole backlog) and release opened waitlists."""
    sandbox_settle()
    now = timezone.now()
    due = processor.recharges_due(now=now)
    # Found queued too long but never published: waiting in their lanes (counted, not sent).
    waiting = lanes.backlog_stuck(
        before=now - timedelta(seconds=settings.RECHARGE_STUCK_QUEUED_SECONDS)
    )
    for recharge_id in due["waitlisted"]:
        processor.waitlist_release(recharge_id=recharge_id)
        enqueue(recharge_process_task, recharge_id)
    # Lost messages, sent again with their lane: once done, each tops its account's lane up.
    lane_of = lanes.lanes_of(due["queued"])
    for recharge_id in due["queued"]:
        enqueue(recharge_process_task, recharge_id, None, None, lane_of.get(recharge_id))
    # Lanes whose top-up was lost (a worker killed, a broker hiccup): one share each, never a
    # whole backlog.
    fed = sum(len(lane_top_up(account_id=account_id)) for account_id in lanes.backlog_accounts())
    stuck = now - timedelta(seconds=settings.RECHARGE_STUCK_DISPATCHED_SECONDS)
    for recharge_id in due["dispatched"]:
        enqueue(recharge_process_task, recharge_id, None, stuck.timestamp())
    for recharge_id in due["card_refunds"]:
        processor.card_refund_send(recharge_id=recharge_id)
    # "queued": every recharge found queued too long, the lost messages (sent again) and those
    # waiting in a lane (fed a share per account: "fed" is how many were published).
    counts = {name: len(ids) for name, ids in due.items()} | {"fed": fed}
    counts["queued"] += len(waiting)
    if any(counts.values()):
        logger.info("sweeper re-enqueued %s", counts)
    return counts


@shared_task(ignore_result=True)
def sandbox_settle_task() -> int:
    """Test mode: processing recharges whose 10 seconds are over become success."""
    return sandbox_settle()


def lane_top_up(*, account_id: int, taken: int | None = None) -> list[int]:
    """Fair dispatch: top the account's lane up to its share (``lanes.lane_feed``); the ids
    published. Never raises: a lane not topped up now is fed by the sweeper."""
    try:
        return lanes.lane_feed(
            account_id=account_id, publish=_lane_publish(account_id), taken=taken
        )
    except Exception:
        logger.warning("could not feed the lane of account %s", account_id, exc_info=True)
        return []


def _lane_publish(account_id: int) -> Callable[[list[int]], list[int]]:
    def publish(recharge_ids: list[int]) -> list[int]:
        if settings.CELERY_TASK_ALWAYS_EAGER:
            # In this process the task would run inside the feeder's transaction: after it.
            # With its lane, so that the pool's task tops the lane up as a worker's does.
            def run_after_commit() -> None:
                for recharge_id in recharge_ids:
                    enqueue(recharge_process_task, recharge_id, None, None, account_id)

            transaction.on_commit(run_after_commit)
            return recharge_ids
        published = []
        for recharge_id in recharge_ids:
            try:
                enqueue(recharge_process_task, recharge_id, None, None, account_id)
            except Exception:  # broker down: the sweeper feeds the lane again
                logger.warning("could not publish recharge %s", recharge_id, exc_info=True)
                break
            published.append(recharge_id)
        return published

    return publish


def recharges_feed(*, account_id: int) -> None:
    """After an order too large to publish at once commits: start its account's lane."""
    lane_top_up(account_id=account_id)


def recharges_enqueue(*, recharge_ids: list[int]) -> None:
    """Hand recharges to the processor; a lost message is found again by the sweeper."""
    for recharge_id in recharge_ids:
        try:
            enqueue(recharge_process_task, recharge_id)
        except Exception:  # broker down: the periodic sweeper re-enqueues queued rows
            logger.warning(
                "could not enqueue recharge %s; the sweeper will retry", recharge_id, exc_info=True
            )
            return


def sandbox_settle_later() -> None:
    """After an order with ``0003`` test recharges commits: settle them when their time is up."""
    enqueue(sandbox_settle_task, countdown=PROCESSING_TIME.total_seconds() + 0.5)
