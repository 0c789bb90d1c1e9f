"""Simulated recharges of test keys (docs/contract.md section 6). No provider is ever called.

The outcome is chosen by the last four digits of the recipient number:

    0002  rejected    the amount goes back to the sandbox balance at once
    0003  processing  for 10 seconds, then success
    0004  timeout     the amount goes back to the sandbox balance at once
    else  success

Outcomes are applied in the order's own transaction, so the 201 answer already shows them.
A processing row becomes success when its 10 seconds have passed: a delayed task settles it,
the beat sweeper settles every key's, and a read of a key's test recharges first settles that
key's own (never other accounts'), so the answer never depends on a worker being up.
"""

from __future__ import annotations

from datetime import timedelta

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext_lazy

from recharges.events import recharge_emit
from recharges.models import Recharge
from recharges.processor import recharge_refund
from recharges.state import transition

S = Recharge.Status
PROCESSING_TIME = timedelta(seconds=10)
ENDINGS = {"0002": S.REJECTED, "0003": S.PROCESSING, "0004": S.TIMEOUT}
MESSAGES: dict[str, tuple[str, str]] = {
    S.REJECTED: ("rejected", "Sandbox: numbers ending in 0002 are rejected."),
    S.TIMEOUT: ("timeout", "Sandbox: numbers ending in 0004 time out."),
}


# What the key dashboard tells a developer about the endings (the same rules as ENDINGS).
GUIDE = [
    ("0002", gettext_lazy("rejected: the amount comes back to the sandbox balance")),
    ("0003", gettext_lazy("processing for 10 seconds, then success")),
    ("0004", gettext_lazy("timeout: the amount comes back to the sandbox balance")),
    ("…", gettext_lazy("any other ending succeeds")),
]


def sandbox_outcome(number: str) -> str:
    return ENDINGS.get(number[-4:], S.SUCCESS)


def sandbox_simulate(*, recharges: list[Recharge]) -> bool:
    """Give each new test recharge its simulated outcome (inside the order transaction).

    True when some are ``processing``: the caller enqueues ``sandbox_settle_task`` after commit.
    """
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
        recharge_emit(recharge)  # test endpoints get the same events as live ones
    return processing


def sandbox_settle(*, api_key=None) -> int:
    """Move processing test recharges whose 10 seconds are over to success: those of
    ``api_key`` only when given (a read of that key's data), else every key's (the sweeper)."""
    due = Recharge.objects.filter(
        status=S.PROCESSING, livemode=False, sandbox_ready_at__lte=timezone.now()
    )
    if api_key is not None:
        due = due.filter(order__api_key=api_key)
    settled = 0
    with transaction.atomic():
        for recharge in due.select_for_update(of=("self",), skip_locked=True).order_by("id"):
            transition(recharge, S.SUCCESS, note="sandbox processing finished")
            recharge_emit(recharge)
            settled += 1
    return settled
