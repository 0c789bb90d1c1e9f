"""Celery tasks of the card checkout."""

from __future__ import annotations

from celery import shared_task

from checkout.services import card_payments_expire


@shared_task(ignore_result=True)
def card_payments_expire_task() -> int:
    """Every minute (beat): abandoned card payments past their price hold become expired."""
    return card_payments_expire()
