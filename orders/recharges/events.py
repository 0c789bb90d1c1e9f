"""The webhook events of recharges (docs/webhooks.md): written in the transaction that moves
the recharge, with the recharge as the lookup shows it (``GET /api-access/b2b/recharges/{id}``).

    delivered / success (sandbox)                  → recharge.delivered
    failed / rejected, timeout (sandbox), refunded → recharge.failed
    waitlisted                                     → recharge.waitlisted
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import NamedTuple

from django.db import connection
from django.utils import timezone
from djangorestframework_camel_case.util import camelize

from orders.models import Order, Payment, Recharge, RechargeEvent
from orders.serializers import recharge_detail
from webhooks.catalogue import RECHARGE_DELIVERED, RECHARGE_FAILED, RECHARGE_WAITLISTED
from webhooks.models import WebhookEndpoint
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


def recharge_emit(recharge: Recharge, *, endpoints: list[WebhookEndpoint] | None = None) -> None:
    """Record the event of the status the (locked) recharge just reached, if it has one.

    Called after the move and, for a failure, after its refund, in the same transaction:
    the move wrote a history row, so the history is never empty. ``endpoints``: the
    subscribers when the caller has already read them (the group commit, for a batch).
    """
    event_type = EVENT_OF_STATUS.get(recharge.status)
    if event_type is None:
        return
    if endpoints is None:
        endpoints = subscribers(
            account_id=recharge.account_id, livemode=recharge.livemode, event_type=event_type
        )
    if not endpoints:
        return
    history = _history(recharge.pk)
    obj = recharge_detail(
        recharge,
        order_id=history[0].order_id,
        payment_id=history[0].payment_id,
        events=history,
    )
    event_emit(
        account_id=recharge.account_id,
        livemode=recharge.livemode,
        event_type=event_type,
        obj=camelize(obj),
        endpoints=endpoints,
    )


class _Step(NamedTuple):
    from_status: str
    to_status: str
    note: str
    created_at: datetime
    order_id: str  # the public ids the recharge shows, on every row
    payment_id: str


def _history(recharge_id: int) -> list[_Step]:
    """The recharge's history, oldest first, with its order's and payment's public ids: one
    plain query (through the ORM it cost the processor four times the CPU)."""
    sql = (
        "SELECT e.from_status, e.to_status, e.note, e.created_at, o.public_id, p.public_id"  # noqa: S608 (names from the models; the value is a parameter)
        f" FROM {RechargeEvent._meta.db_table} e"
        f" JOIN {Recharge._meta.db_table} r ON r.id = e.recharge_id"
        f" JOIN {Order._meta.db_table} o ON o.id = r.order_id"
        f" JOIN {Payment._meta.db_table} p ON p.id = r.payment_id"
        " WHERE e.recharge_id = %s ORDER BY e.id"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [recharge_id])
        rows = cursor.fetchall()
    return [
        _Step(from_status, to_status, note, _aware(at), order_id, payment_id)
        for from_status, to_status, note, at, order_id, payment_id in rows
    ]


def _aware(value: datetime | str) -> datetime:
    """PostgreSQL gives an aware datetime; SQLite a naive UTC one (or its text)."""
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return value if timezone.is_aware(value) else value.replace(tzinfo=UTC)
