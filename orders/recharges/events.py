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

from catalog.models import Product
from orders.models import Order, Payment, Recharge, RechargeEvent
from orders.serializers import recharge_detail
from reseller.db import json_read
from webhooks.catalogue import RECHARGE_DELIVERED, RECHARGE_FAILED, RECHARGE_WAITLISTED
from webhooks.models import WebhookEndpoint
from webhooks.outbox import event_emit, event_new, events_emit_many, subscribers

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


def recharges_emit(
    recharge_ids: list[int], endpoints_of: dict[tuple[int, bool], list[WebhookEndpoint]]
) -> None:
    """``recharge_emit`` for many (locked) recharges at once, the processor's batch: their
    rows with their histories read in one plain query, their events and deliveries written in
    one statement. ``endpoints_of``: the subscribers by (account, livemode), already read."""
    items = []
    for recharge, (order_id, payment_id), history in _rows(recharge_ids):
        event_type = EVENT_OF_STATUS.get(recharge.status)
        endpoints = endpoints_of.get((recharge.account_id, recharge.livemode), [])
        wanting = [e for e in endpoints if event_type is not None and e.wants(event_type)]
        if not wanting or event_type is None:
            continue
        obj = recharge_detail(recharge, order_id=order_id, payment_id=payment_id, events=history)
        event = event_new(
            account_id=recharge.account_id,
            livemode=recharge.livemode,
            event_type=event_type,
            obj=camelize(obj),
        )
        items.append((event, wanting))
    events_emit_many(items)


_COLUMNS = (
    "id",
    "public_id",
    "account_id",
    "livemode",
    "recipient_number",
    "amount",
    "currency",
    "status",
    "failure_code",
    "failure_message",
    "provider_transaction_id",
    "created_at",
    "updated_at",
)


def _rows(recharge_ids: list[int]) -> list[tuple[Recharge, tuple[str, str], list[_Step]]]:
    """The recharges as ``recharge_detail`` reads them (with their product's public id and
    local amount), their order's and payment's public ids, and their histories, oldest
    first: one plain query."""
    history = RechargeEvent._meta.db_table
    columns = ", ".join(f"r.{column}" for column in _COLUMNS)
    sql = (
        f"SELECT {columns}, p.public_id, p.local_amount, p.local_currency,"  # noqa: S608 (names from the models; values are parameters)
        " o.public_id, pay.public_id,"
        " (SELECT json_agg(json_build_array(e.from_status, e.to_status, e.note, e.created_at)"
        f" ORDER BY e.id) FROM {history} e WHERE e.recharge_id = r.id)"
        f" FROM {Recharge._meta.db_table} r"
        f" JOIN {Product._meta.db_table} p ON p.id = r.product_id"
        f" JOIN {Order._meta.db_table} o ON o.id = r.order_id"
        f" JOIN {Payment._meta.db_table} pay ON pay.id = r.payment_id"
        " WHERE r.id = ANY(%s) ORDER BY r.id"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [recharge_ids])
        rows = cursor.fetchall()
    found = []
    for row in rows:
        values = dict(zip(_COLUMNS, row[: len(_COLUMNS)], strict=True))
        product_id, local_amount, local_currency, order_id, payment_id, steps = row[len(_COLUMNS) :]
        recharge = Recharge(**values)
        recharge.product = Product(
            public_id=product_id, local_amount=local_amount, local_currency=local_currency
        )
        found.append(
            (
                recharge,
                (order_id, payment_id),
                [
                    _Step(a, b, note, _aware(at), "", "")
                    for a, b, note, at in json_read(steps) or []
                ],
            )
        )
    return found


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
