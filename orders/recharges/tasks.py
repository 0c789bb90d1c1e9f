"""Celery tasks: thin wrappers that take ids and call the processor (safe to run twice)."""

from __future__ import annotations

import logging

from celery import shared_task

from orders.recharges import processor
from reseller.tasks import enqueue

logger = logging.getLogger(__name__)


@shared_task(acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def recharge_process_task(recharge_id: int) -> str:
    outcome = processor.recharge_process(recharge_id=recharge_id)
    if outcome.retry_in is not None:
        enqueue(recharge_process_task, recharge_id, countdown=outcome.retry_in)
    return outcome.status


@shared_task(ignore_result=True)
def recharges_sweep_task() -> dict[str, int]:
    """Every 30 s (beat): re-enqueue lost or stuck recharges and release opened waitlists."""
    from orders.recharges.sandbox import sandbox_settle

    sandbox_settle()
    due = processor.recharges_due()
    for recharge_id in due["waitlisted"]:
        processor.waitlist_release(recharge_id=recharge_id)
    for recharge_id in due["queued"] + due["dispatched"] + due["waitlisted"]:
        enqueue(recharge_process_task, recharge_id)
    counts = {name: len(ids) for name, ids in due.items()}
    if any(counts.values()):
        logger.info("sweeper re-enqueued %s", counts)
    return counts


@shared_task(ignore_result=True)
def sandbox_settle_task() -> int:
    """Test mode: processing recharges whose 10 seconds are over become success."""
    from orders.recharges.sandbox import sandbox_settle

    return sandbox_settle()
