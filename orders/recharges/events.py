"""The webhook events of recharges (docs/webhooks.md): written in the transaction that moves
the recharge, with the recharge as the lookup shows it (``GET /api-access/b2b/recharges/{id}``).

    delivered / success (sandbox)                  → recharge.delivered
    failed / rejected, timeout (sandbox), refunded → recharge.failed
    waitlisted                                     → recharge.waitlisted
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any, NamedTuple

from django.db import connection
from djangorestframework_camel_case.util import camelize

from catalog.models import Product
from orders.models import Order, Payment, Recharge, RechargeEvent
from orders.serializers import recharge_detail
from reseller.db import datetime_read, json_read, loaded
from webhooks.catalogue import RECHARGE_DELIVERED, RECHARGE_FAILED, RECHARGE_WAITLISTED
from webhooks.models import Event
from webhooks.outbox import (
    Target,
    event_new,
    event_write,
    events_emit_many,
    subscribers,
    subscribers_read,
)

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
    history = _history(recharge.pk)
    event = recharge_event((recharge, (history[0].order_id, history[0].payment_id), history))
    assert event is not None
    event_write(event, endpoints)


@functools.cache
def _camel(key: str) -> str:
    return next(iter(camelize({key: None})))


def camelized(value: Any) -> Any:
    """``camelize`` of the wire shape, each key converted once per process (the library's
    regular expressions, run for every key of every event, cost more than the rest of the
    event's body)."""
    if isinstance(value, dict):
        return {_camel(key): camelized(item) for key, item in value.items()}
    if isinstance(value, list):
        return [camelized(item) for item in value]
    return value


Read = tuple[Recharge, tuple[str, str], list["Step"]]


def recharges_emit(items: Sequence[tuple[Read, Sequence[Target]]]) -> None:
    """``recharge_emit`` for many (locked) recharges at once, the processor's batch: each
    read with ``recharge_read`` and given with its subscribers, their events and deliveries
    written in one statement."""
    events = []
    for read, endpoints in items:
        event = recharge_event(read)
        wanting = [e for e in endpoints if event is not None and e.wants(event.type)]
        if event is not None and wanting:
            events.append((event, wanting))
    events_emit_many(events)


def recharge_event(read: Read, *, created_at: datetime | None = None) -> Event | None:
    """The event of the status the recharge read has reached, built with its body (not yet
    written); None when the status has no event."""
    recharge, (order_id, payment_id), history = read
    event_type = EVENT_OF_STATUS.get(recharge.status)
    if event_type is None:
        return None
    obj = recharge_detail(recharge, order_id=order_id, payment_id=payment_id, events=history)
    return event_new(
        account_id=recharge.account_id,
        livemode=recharge.livemode,
        event_type=event_type,
        obj=camelized(obj),
        created_at=created_at,
    )


@dataclass(frozen=True)
class Draft:
    """What a recharge's event will show, read with the recharge when the processor claimed
    it (``draft_sql``), for an account that had an endpoint then: when the answer comes, its
    ``recharge.delivered`` event is built before the statement that moves the recharge, and
    written by that statement."""

    values: tuple  # RECHARGE_COLUMNS, as claimed
    lookup: Any  # as lookup_sql's JSON reads, as claimed
    claimed_at: datetime  # the time of the queued → dispatched row the claim wrote
    endpoint_ids: tuple[int, ...]  # the endpoints that wanted the event then


def draft_sql(alias: str, endpoints: str) -> str:
    """PostgreSQL: the columns ``draft_read`` takes, of the recharge row ``alias``: its
    ``RECHARGE_COLUMNS``, then its order's and payment's public ids and its history (as
    ``lookup_sql``), these three only when the SQL ``endpoints`` is not NULL (an account
    without endpoints costs the claim nothing)."""
    columns = ", ".join(f"{alias}.{column}" for column in RECHARGE_COLUMNS)
    hooked = [f"CASE WHEN {endpoints} IS NOT NULL THEN {part} END" for part in _ids_sql(alias)]
    return ", ".join([columns, *hooked])


def draft_read(
    columns: Sequence[Any],
    *,
    product: tuple[str, Decimal, str],
    endpoints: Any,
    claimed_at: datetime,
) -> Draft | None:
    """The ``Draft`` of a claimed recharge from the columns of ``draft_sql``, its product's
    public id and local amount, and its account's endpoints (the JSON of
    ``subscribers_sql``); None when none of them wants the ``recharge.delivered`` event."""
    if endpoints is None:
        return None
    wanting = subscribers_read(endpoints, event_type=RECHARGE_DELIVERED)
    if not wanting:
        return None
    width = len(RECHARGE_COLUMNS)
    order_id, payment_id, steps = columns[width:]
    return Draft(
        tuple(columns[:width]),
        (list(product), order_id, payment_id, json_read(steps)),
        claimed_at,
        tuple(endpoint.pk for endpoint in wanting),
    )


def draft_delivered(draft: Draft, *, transaction_id: str, note: str, now: datetime) -> Event:
    """The ``recharge.delivered`` event of a drafted recharge as the delivery write will leave
    it: delivered now, with the provider's reference, and its claim and delivery in its
    history. The same body ``recharges_emit`` builds from the rows after the write."""
    fields = dict(zip(RECHARGE_COLUMNS, draft.values, strict=True))
    fields.update(status=S.DELIVERED, updated_at=now, provider_transaction_id=transaction_id)
    read = recharge_read(
        [fields[column] for column in RECHARGE_COLUMNS],
        draft.lookup,
        then=[
            Step(S.QUEUED, S.DISPATCHED, "", draft.claimed_at),
            Step(S.DISPATCHED, S.DELIVERED, note, now),
        ],
    )
    event = recharge_event(read, created_at=now)
    assert event is not None
    return event


# The recharge's own columns ``recharge_detail`` reads, in the order ``recharge_read`` takes.
RECHARGE_COLUMNS = (
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


def lookup_sql(alias: str) -> str:
    """PostgreSQL: one JSON value with the rest of what the lookup shows of the recharge row
    ``alias`` (which has ``id``, ``product_id``, ``order_id`` and ``payment_id``): its
    product's public id and local amount, its order's and payment's public ids, and its
    history as the statement sees it (rows the statement writes itself are not in it)."""
    product = (
        "(SELECT json_build_array(p.public_id, p.local_amount::text, p.local_currency)"  # noqa: S608 (names from the models)
        f" FROM {Product._meta.db_table} p WHERE p.id = {alias}.product_id)"
    )
    return f"json_build_array({', '.join([product, *_ids_sql(alias)])})"


def _ids_sql(alias: str) -> tuple[str, str, str]:
    """The order's and payment's public ids and the history (JSON, oldest first) of the
    recharge row ``alias``. Scalar subqueries on primary keys: their plan never scans a
    table, whatever the planner's statistics say (joins planned for an array of ids of
    unknown length were hash joins over the whole order and payment tables)."""
    order, payment = Order._meta.db_table, Payment._meta.db_table
    history = RechargeEvent._meta.db_table
    return (
        f"(SELECT o.public_id FROM {order} o WHERE o.id = {alias}.order_id)",  # noqa: S608 (names from the models)
        f"(SELECT pay.public_id FROM {payment} pay WHERE pay.id = {alias}.payment_id)",  # noqa: S608 (names from the models)
        "(SELECT json_agg(json_build_array(e.from_status, e.to_status, e.note, e.created_at)"  # noqa: S608 (names from the models)
        f" ORDER BY e.id) FROM {history} e WHERE e.recharge_id = {alias}.id)",
    )


def recharge_read(values: Sequence[Any], lookup: Any, *, then: Sequence[Step] = ()) -> Read:
    """The recharge as ``recharge_detail`` reads it, from ``RECHARGE_COLUMNS`` and the JSON of
    ``lookup_sql``; ``then``: history rows written by the same statement, oldest first."""
    (product_id, local_amount, local_currency), order_id, payment_id, steps = json_read(lookup)
    recharge = loaded(Recharge, dict(zip(RECHARGE_COLUMNS, values, strict=True)))
    recharge.product = loaded(
        Product,
        {
            "id": None,
            "public_id": product_id,
            "local_amount": Decimal(local_amount),
            "local_currency": local_currency,
        },
    )
    history = [Step(a, b, note, datetime_read(at)) for a, b, note, at in steps or []]
    return recharge, (order_id, payment_id), [*history, *then]


class Step(NamedTuple):
    from_status: str
    to_status: str
    note: str
    created_at: datetime
    order_id: str = ""  # the public ids the recharge shows, on every row (``_history``)
    payment_id: str = ""


def _history(recharge_id: int) -> list[Step]:
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
        Step(from_status, to_status, note, datetime_read(at), order_id, payment_id)
        for from_status, to_status, note, at, order_id, payment_id in rows
    ]
