"""Celery tasks of recharges: thin wrappers that take ids and call the processor (safe to run
twice), and the ways recharges are handed to the workers: ``recharges_enqueue`` (published at
once) and ``recharges_feed`` (an account's lane, a share at a time: ``recharges.lanes``)."""

from __future__ import annotations

import logging
import random
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from celery import shared_task
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from recharges import group_commit, lanes, processor, reversals
from recharges.sandbox import PROCESSING_TIME, sandbox_settle
from reseller.tasks import enqueue
from upstreams import throttle
from upstreams.routing import routing_active

logger = logging.getLogger(__name__)


@shared_task(acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def recharge_process_task(
    recharge_id: int,
    attempt: int | None = None,
    quiet_since: float | None = None,
    lane: int | None = None,
) -> str:
    """One recharge, within the provider's ceiling of calls in flight: a thread waits a few
    seconds for a slot, then hands the recharge back to the queue for a little later.
    ``attempt``: set on a retry, the attempt it continues; ``quiet_since`` (a Unix time): set
    by the sweeper, the cutoff under which it found the row stuck (processor, step 1);
    ``lane``: the account whose lane published it (fair dispatch), topped up as this one is
    taken and again once it is done, so the lane never waits for the sweeper."""
    if lane is None:
        return _recharge_process(recharge_id, attempt, quiet_since, lane)
    lane_top_up(account_id=lane, taken=recharge_id)
    try:
        return _recharge_process(recharge_id, attempt, quiet_since, lane)
    finally:
        lane_top_up(account_id=lane)


def _recharge_process(
    recharge_id: int, attempt: int | None, quiet_since: float | None, lane: int | None
) -> str:
    outcome = None
    if attempt is None and quiet_since is None:
        # The common case, grouped with the process's other threads (it takes its own slot).
        outcome = group_commit.recharge_process_grouped(recharge_id=recharge_id)
    if outcome is None and routing_active():
        # By route: the processor takes the chosen provider's slot around its calls.
        outcome = processor.recharge_process(
            recharge_id=recharge_id,
            attempt=attempt,
            quiet_since=None if quiet_since is None else datetime.fromtimestamp(quiet_since, UTC),
        )
    if outcome is None:
        provider = settings.AIRTIME_PROVIDER
        with throttle.provider_slot(provider, wait=settings.PROVIDER_SLOT_WAIT_SECONDS) as held:
            if not held:
                later = 1.0 + random.uniform(0, 2.0)  # noqa: S311 (spreading, not a secret)
                again = (recharge_id, attempt, quiet_since, *([lane] if lane is not None else []))
                enqueue(recharge_process_task, *again, countdown=later)
                return "throttled"
            outcome = processor.recharge_process(
                recharge_id=recharge_id,
                attempt=attempt,
                quiet_since=(
                    None if quiet_since is None else datetime.fromtimestamp(quiet_since, UTC)
                ),
            )
    if outcome.retry_in is not None:
        again = (recharge_id, outcome.attempt, None, *([lane] if lane is not None else []))
        enqueue(recharge_process_task, *again, countdown=outcome.retry_in)
    logger.info("recharge %s: %s", recharge_id, outcome.status, extra={"recharge": recharge_id})
    return outcome.status


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
            def run_after_commit() -> None:
                for recharge_id in recharge_ids:
                    enqueue(recharge_process_task, recharge_id)

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
