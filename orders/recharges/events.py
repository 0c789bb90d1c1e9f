"""The webhook events of recharges (docs/webhooks.md): written in the transaction that moves
the recharge, with the recharge as the lookup shows it (``GET /api-access/b2b/recharges/{id}``).

    delivered / success (sandbox)                  → recharge.delivered
    failed / rejected, timeout (sandbox), refunded → recharge.failed
    waitlisted                                     → recharge.waitlisted
"""

from __future__ import annotations

from typing import Any

from djangorestframework_camel_case.util import camelize

from orders.models import Recharge, RechargeEvent
from orders.serializers import recharge_detail
from webhooks.catalogue import RECHARGE_DELIVERED, RECHARGE_FAILED, RECHARGE_WAITLISTED
from webhooks.outbox import event_emit, subscribers

S = Recharge.Status
EVENT_OF_STATUS: dict[str, str] = {
    S.DELIVERED: RECHARGE_DELIVERED,
    S.SUCCESS: RECHARGE_DELIVERED,
    S.FAILED: RECHARGE_FAILED,
    S.REJECTED: RECHARGE_FAILED,
    S.TIMEOUT: RECHARGE_FAILED,
    S.WAITLISTED: RECHARGE_WAITLISTED,
}


def recharge_emit(recharge: Recharge) -> None:
    """Record the event of the status the (locked) recharge just reached, if it has one.

    Called after the move and, for a failure, after its refund, in the same transaction:
    the move wrote a history row, so the history is never empty.
    """
    event_type = EVENT_OF_STATUS.get(recharge.status)
    if event_type is None:
        return
    endpoints = subscribers(
        account_id=recharge.account_id, livemode=recharge.livemode, event_type=event_type
    )
    if not endpoints:
        return
    # The history, and on each row the two ids the recharge shows: one query. The product
    # came with the recharge's lock.
    history: list[Any] = list(
        RechargeEvent.objects.filter(recharge_id=recharge.pk)
        .order_by("id")
        .values_list(
            "from_status",
            "to_status",
            "note",
            "created_at",
            "recharge__order__public_id",
            "recharge__payment__public_id",
            named=True,
        )
    )
    obj = recharge_detail(
        recharge,
        order_id=history[0].recharge__order__public_id,
        payment_id=history[0].recharge__payment__public_id,
        events=history,
    )
    event_emit(
        account_id=recharge.account_id,
        livemode=recharge.livemode,
        event_type=event_type,
        obj=camelize(obj),
        endpoints=endpoints,
    )
