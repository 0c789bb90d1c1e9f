"""The webhook events of recharges (docs/webhooks.md): written in the transaction that moves
the recharge, with the recharge as the lookup shows it (``GET /api-access/b2b/recharges/{id}``).

    delivered / success (sandbox)                  → recharge.delivered
    failed / rejected, timeout (sandbox), refunded → recharge.failed
    waitlisted                                     → recharge.waitlisted
"""

from __future__ import annotations

from djangorestframework_camel_case.util import camelize

from orders.models import Recharge
from orders.serializers import RechargeDetailOut
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

    Called after the move and, for a failure, after its refund, in the same transaction.
    """
    event_type = EVENT_OF_STATUS.get(recharge.status)
    if event_type is None:
        return
    endpoints = subscribers(
        account_id=recharge.account_id, livemode=recharge.livemode, event_type=event_type
    )
    if not endpoints:
        return
    ids = Recharge.objects.select_related("order", "payment").only(
        "order__public_id", "payment__public_id"
    )
    related = ids.get(pk=recharge.pk)  # one query for both ids the recharge shows
    recharge.order, recharge.payment = related.order, related.payment
    event_emit(
        account_id=recharge.account_id,
        livemode=recharge.livemode,
        event_type=event_type,
        obj=camelize(RechargeDetailOut(recharge).data),
        endpoints=endpoints,
    )
