"""Simulated recharges of test keys (docs/contract.md §6). No provider is ever called.

The outcome is chosen by the last four digits of the recipient number:

    0002  rejected    the amount goes back to the sandbox balance at once
    0003  processing  for 10 seconds, then success
    0004  timeout     the amount goes back to the sandbox balance at once
    else  success

A PIN product's test recharge that succeeds (at once or after processing) carries a simulated
PIN (``recharges.pins.pin_simulated``), encrypted like a live one.

Outcomes are applied in the order's own transaction, so the 201 answer already shows them.
A processing row becomes success when its 10 seconds have passed: the delayed task enqueued
after the order settles it, and the beat sweeper settles any it missed (both write the move and
its ``recharge.delivered`` event). Reads never write: until a worker has moved a due row, every
reader presents it as it will be (``sandbox_due``, ``sandbox_present``, ``sandbox_settled_event``),
so the answer never depends on a worker being up.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Case, F, Q, Value, When
from django.utils import timezone
from django.utils.translation import gettext_lazy

from catalog.models import ProductType
from recharges.events import recharge_emit
from recharges.models import Recharge, RechargeEvent
from recharges.pins import PIN_FIELDS, pin_seal, pin_simulated
from recharges.processor import recharge_refund
from recharges.state import transition

S = Recharge.Status
PROCESSING_TIME = timedelta(seconds=10)
SETTLED_NOTE = "sandbox processing finished"
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
        elif recharge.product.product_type == ProductType.PIN:
            # A simulated PIN, shown once the recharge succeeds (contract section 17).
            pin_seal(recharge, pin_simulated())
            extra.update({field: getattr(recharge, field) for field in PIN_FIELDS})
        transition(recharge, outcome, note="sandbox simulation", extra_fields=extra)
        if outcome in MESSAGES:
            recharge_refund(recharge=recharge)
        recharge_emit(recharge)  # test endpoints get the same events as live ones
    return processing


def sandbox_settle() -> int:
    """Move every processing test recharge whose 10 seconds are over to success, with its
    event (the delayed task and the sweeper; never a read)."""
    settled = 0
    with transaction.atomic():
        due = Recharge.objects.filter(sandbox_due(timezone.now()))
        for recharge in due.select_for_update(of=("self",), skip_locked=True).order_by("id"):
            transition(recharge, S.SUCCESS, note=SETTLED_NOTE)
            recharge_emit(recharge)
            settled += 1
    return settled


# -- reads: a due row as it will be, without writing it --------------------------------------


def sandbox_due(now: datetime) -> Q:
    """The test recharges still ``processing`` whose 10 seconds were over at ``now``."""
    return Q(status=S.PROCESSING, livemode=False, sandbox_ready_at__lte=now)


def sandbox_status(now: datetime) -> Case:
    """A recharge's status as of ``now`` in SQL: a due processing row is ``success``."""
    return Case(When(sandbox_due(now), then=Value(S.SUCCESS)), default=F("status"))


def sandbox_present(recharges: Iterable[Recharge], *, now: datetime) -> list[Recharge]:
    """Show each due processing recharge as the settlement will leave it: ``success``, updated
    and delivered when its time was up. Only the loaded objects change (for rendering; they
    must not be saved). Returns the recharges it changed."""
    shown = []
    for recharge in recharges:
        ready_at = recharge.sandbox_ready_at
        if (
            recharge.status == S.PROCESSING
            and not recharge.livemode
            and ready_at is not None
            and ready_at <= now
        ):
            recharge.status = S.SUCCESS
            recharge.updated_at = recharge.delivered_at = ready_at
            shown.append(recharge)
    return shown


def sandbox_settled_event(recharge: Recharge) -> RechargeEvent:
    """The history row the settlement will write for a recharge ``sandbox_present`` changed
    (unsaved, to render)."""
    assert recharge.sandbox_ready_at is not None
    return RechargeEvent(
        recharge=recharge,
        from_status=S.PROCESSING,
        to_status=S.SUCCESS,
        note=SETTLED_NOTE,
        created_at=recharge.sandbox_ready_at,
    )


def sandbox_counts_present(
    counts: dict[str, int], *, order_id: int, now: datetime
) -> dict[str, int]:
    """Counts of an order's recharges by status (as ``batch_counts`` gives them) with its due
    processing rows counted as success."""
    if not counts.get(S.PROCESSING):
        return counts
    due = Recharge.objects.filter(sandbox_due(now), order_id=order_id).count()
    if not due:
        return counts
    shown = {**counts, S.SUCCESS: counts.get(S.SUCCESS, 0) + due}
    shown[S.PROCESSING] -= due
    if not shown[S.PROCESSING]:
        del shown[S.PROCESSING]
    return shown
