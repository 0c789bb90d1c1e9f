"""Simulated recharges of test keys (decisions.md section 6). No provider is ever called.

The outcome is chosen by the last four digits of the recipient number:

    0002  rejected    the amount goes back to the sandbox balance at once
    0003  processing  for 10 seconds, then success
    0004  timeout     the amount goes back to the sandbox balance at once
    else  success

Outcomes are applied in the order's own transaction, so the 201 answer already shows them.
A processing row becomes success when its 10 seconds have passed: a delayed task does it, and
every read of test recharges settles what is due first, so the answer never depends on a
worker being up.
"""

from __future__ import annotations

from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from orders.models import Recharge
from orders.recharges.state import transition

S = Recharge.Status
PROCESSING_TIME = timedelta(seconds=10)
ENDINGS = {"0002": S.REJECTED, "0003": S.PROCESSING, "0004": S.TIMEOUT}
MESSAGES = {
    S.REJECTED: ("rejected", "Sandbox: numbers ending in 0002 are rejected."),
    S.TIMEOUT: ("timeout", "Sandbox: numbers ending in 0004 time out."),
}


def sandbox_outcome(number: str) -> str:
    return ENDINGS.get(number[-4:], S.SUCCESS)


def sandbox_simulate(*, recharges: list[Recharge]) -> None:
    """Give each new test recharge its simulated outcome (inside the order transaction)."""
    from orders.recharges.processor import recharge_refund

    now = timezone.now()
    processing = False
    for recharge in recharges:
        outcome = sandbox_outcome(recharge.recipient_number)
        extra: dict = {"provider": "sandbox"}
        if outcome == S.PROCESSING:
            extra["sandbox_ready_at"] = now + PROCESSING_TIME
            processing = True
        if outcome in MESSAGES:
            extra["failure_code"], extra["failure_message"] = MESSAGES[outcome]
        transition(recharge, outcome, note="sandbox simulation", extra_fields=extra)
        if outcome in MESSAGES:
            recharge_refund(recharge=recharge)
    if processing:
        from orders.recharges.tasks import sandbox_settle_task
        from reseller.tasks import enqueue

        transaction.on_commit(
            lambda: enqueue(sandbox_settle_task, countdown=PROCESSING_TIME.total_seconds() + 0.5)
        )


def sandbox_settle() -> int:
    """Move every processing test recharge whose 10 seconds are over to success."""
    due = Recharge.objects.filter(
        status=S.PROCESSING, livemode=False, sandbox_ready_at__lte=timezone.now()
    )
    settled = 0
    with transaction.atomic():
        for recharge in due.select_for_update(of=("self",), skip_locked=True).order_by("id"):
            transition(recharge, S.SUCCESS, note="sandbox processing finished")
            settled += 1
    return settled
