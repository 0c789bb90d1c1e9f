"""A paid order's recharges: written queued (one per unit of every line), then handed to the
processor after commit (at once, or a large order through its account's lane:
``recharges.lanes``), or, in test mode, given their simulated outcome at once; and, for the
apps above, a delivered recharge's reversal (``recharges.reversals``)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from payments.models import Payment
from recharges.lanes import dispatch_direct
from recharges.models import Recharge
from recharges.reversals import recharge_reversal_check, recharge_reverse
from recharges.sandbox import sandbox_simulate
from recharges.state import recharges_start
from recharges.tasks import recharges_enqueue, recharges_feed, sandbox_settle_later

FIRST_NOTE = "order placed"


__all__ = [
    "recharge_reversal_check",
    "recharge_reverse",
    "recharges_create",
]


def recharges_create(
    *,
    order: Any,
    payment: Payment,
    lines: list[Any],
    references: list[str] | None = None,
) -> list[Recharge]:
    """One queued recharge per unit of every line of ``order`` (an ``orders.Order``; its
    ``lines``, with their products), with its first history row. ``references``: the caller's
    reference of each line (a batch's), in the lines' order."""
    now = timezone.now()
    recharges = _recharges_new(
        order=order, payment=payment, lines=lines, references=references, now=now
    )
    released = order.livemode and dispatch_direct(account_id=order.account_id, count=len(recharges))
    if released:
        for recharge in recharges:
            recharge.released_at = now  # published at once, after commit
    recharges_start(recharges, note=FIRST_NOTE, now=now)
    if not order.livemode:
        # Test keys never reach the processor: the outcome is simulated in this transaction.
        if sandbox_simulate(recharges=recharges):
            transaction.on_commit(sandbox_settle_later)
        payment.refresh_from_db(fields=["status", "refunded_amount", "updated_at"])
        return recharges
    ids = [r.pk for r in recharges]
    if released:
        transaction.on_commit(lambda: recharges_enqueue(recharge_ids=ids))
    else:  # its account's lane: a share at a time (docs/processor.md "Fair dispatch")
        account_id = order.account_id
        transaction.on_commit(lambda: recharges_feed(account_id=account_id))
    return recharges


def _recharges_new(
    *,
    order: Any,
    payment: Payment,
    lines: list[Any],
    references: list[str] | None,
    now: datetime,
) -> list[Recharge]:
    """The order's recharges, not yet saved: one queued per unit of every line."""
    return [
        Recharge(
            order=order,
            payment=payment,
            account_id=order.account_id,
            livemode=order.livemode,
            product=line.product,
            recipient_number=line.recipient_number,
            # What the recipient gets: the amount chosen for a range product, the face value
            # of a fixed one (contract section 17).
            local_amount=line.product.amount_of(line.local_amount),
            fields=dict(getattr(line, "fields", None) or {}),
            amount=line.unit_price,
            currency=order.currency,
            reference=references[index] if references else "",
            promotion_wait=getattr(order, "promotion_wait", True),
            status=Recharge.Status.QUEUED,
            queued_at=now,
            created_at=now,
            updated_at=now,
        )
        for index, line in enumerate(lines)
        for _unit in range(line.quantity)
    ]
