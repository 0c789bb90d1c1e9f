"""Celery tasks of orders themselves (recharge tasks live in recharges.tasks)."""

from __future__ import annotations

from celery import shared_task

from network.transfers import transfer_keys_purge
from orders.batches import batches_complete
from orders.idempotency import purge_expired


@shared_task(ignore_result=True)
def idempotency_purge_task() -> int:
    """Hourly (beat): drop Idempotency-Key records past their 24 h (the orders' and the
    network transfers')."""
    return purge_expired() + transfer_keys_purge()


@shared_task(ignore_result=True)
def batches_complete_task() -> int:
    """Every few seconds (beat): batches whose recharges are all final become completed and
    emit ``batch.completed``."""
    return batches_complete()
