"""Celery tasks of webhooks, on their own queue (WEBHOOK_QUEUE) so that slow receivers never
delay recharges: thin wrappers around ``webhooks.delivery``."""

from __future__ import annotations

import logging

from celery import shared_task

from reseller.tasks import enqueue
from webhooks import delivery

logger = logging.getLogger(__name__)


@shared_task(acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def endpoint_drain_task(endpoint_id: int) -> int:
    return delivery.endpoint_drain(endpoint_id, hand_back=_hand_back)


def _hand_back(endpoint_id: int) -> None:
    """A drain that spent its budget with more due: a new drain, behind the other endpoints."""
    endpoints_wake(endpoint_ids=[endpoint_id])


@shared_task(ignore_result=True)
def webhooks_sweep_task() -> int:
    """Every few seconds (beat): wake endpoints whose deliveries are due (retries, lost
    messages, a worker killed mid-send once its lease ran out)."""
    due = delivery.endpoints_due()
    endpoints_wake(endpoint_ids=due, force=True)
    return len(due)


@shared_task(ignore_result=True)
def webhooks_purge_task() -> int:
    return delivery.deliveries_purge()


def endpoints_wake(*, endpoint_ids: list[int], force: bool = False) -> None:
    """Publish a drain task per endpoint, unless one is already published and not started
    (``delivery.wake_pending``): a burst of events costs one task, not one each."""
    for endpoint_id in endpoint_ids:
        if not force and not delivery.wake_mark(endpoint_id):
            delivery.poke(endpoint_id)  # a drain is on its way or running: it reads this too
            continue
        try:
            enqueue(endpoint_drain_task, endpoint_id)
        except Exception:  # broker down: the sweeper finds the pending deliveries again
            logger.warning("could not wake webhook endpoint %s", endpoint_id, exc_info=True)
            return
