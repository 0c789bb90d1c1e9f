"""Celery tasks of recharges: thin wrappers that take ids and call the processor (safe to run
twice), and ``recharges_enqueue``, the one way recharges are handed to the workers."""

from __future__ import annotations

import logging
import random
from datetime import UTC, datetime, timedelta

from celery import shared_task
from django.conf import settings
from django.utils import timezone

from recharges import group_commit, processor, reversals
from recharges.sandbox import PROCESSING_TIME, sandbox_settle
from reseller.tasks import enqueue
from upstreams import throttle
from upstreams.routing import routing_active

logger = logging.getLogger(__name__)


@shared_task(acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def recharge_process_task(
    recharge_id: int, attempt: int | None = None, quiet_since: float | None = None
) -> str:
    """One recharge, within the provider's ceiling of calls in flight: a thread waits a few
    seconds for a slot, then hands the recharge back to the queue for a little later.
    ``attempt``: set on a retry, the attempt it continues; ``quiet_since`` (a Unix time): set
    by the sweeper, the cutoff under which it found the row stuck (processor, step 1)."""
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
                enqueue(recharge_process_task, recharge_id, attempt, quiet_since, countdown=later)
                return "throttled"
            outcome = processor.recharge_process(
                recharge_id=recharge_id,
                attempt=attempt,
                quiet_since=(
                    None if quiet_since is None else datetime.fromtimestamp(quiet_since, UTC)
                ),
            )
    if outcome.retry_in is not None:
        enqueue(recharge_process_task, recharge_id, outcome.attempt, countdown=outcome.retry_in)
    return outcome.status


@shared_task(acks_late=True, ignore_result=True)
def recharge_reversal_check_task(recharge_id: int, source: str = "look-up") -> bool:
    """Ask a delivered recharge's provider whether it took it back (a callback said something
    about it); reverse and refund it if so. Safe to run twice."""
    return reversals.recharge_reversal_check(recharge_id=recharge_id, source=source)


@shared_task(ignore_result=True)
def recharges_sweep_task() -> dict[str, int]:
    """Every 30 s (beat): re-enqueue lost or stuck recharges and release opened waitlists."""
    sandbox_settle()
    now = timezone.now()
    due = processor.recharges_due(now=now)
    for recharge_id in due["waitlisted"]:
        processor.waitlist_release(recharge_id=recharge_id)
    for recharge_id in due["queued"] + due["waitlisted"]:
        enqueue(recharge_process_task, recharge_id)
    stuck = now - timedelta(seconds=settings.RECHARGE_STUCK_DISPATCHED_SECONDS)
    for recharge_id in due["dispatched"]:
        enqueue(recharge_process_task, recharge_id, None, stuck.timestamp())
    for recharge_id in due["card_refunds"]:
        processor.card_refund_send(recharge_id=recharge_id)
    counts = {name: len(ids) for name, ids in due.items()}
    if any(counts.values()):
        logger.info("sweeper re-enqueued %s", counts)
    return counts


@shared_task(ignore_result=True)
def sandbox_settle_task() -> int:
    """Test mode: processing recharges whose 10 seconds are over become success."""
    return sandbox_settle()


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
