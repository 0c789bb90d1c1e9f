"""Writing events: ``event_emit`` is called inside the transaction of the change it reports.

When the account has an enabled endpoint of the event's mode that wants its type, the event
row and one delivery per such endpoint are written there and then: if the transaction rolls
back, no event exists; if the process dies after the commit, the rows are there and the
sweeper sends them. After the commit, each endpoint's worker is woken up.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any, NamedTuple

from django.core.serializers.json import DjangoJSONEncoder
from django.db import connection, transaction
from django.utils import timezone

from reseller.db import json_read
from webhooks.models import Delivery, Event, WebhookEndpoint, new_delivery_id, new_event_id


def event_body(*, event_id: str, event_type: str, created_at, livemode: bool, data: dict) -> str:
    body = {
        "id": event_id,
        "type": event_type,
        "createdAt": created_at,
        "livemode": livemode,
        "data": data,
    }
    return json.dumps(body, cls=DjangoJSONEncoder, separators=(",", ":"), ensure_ascii=False)


class Subscriber(NamedTuple):
    """An endpoint as the outbox needs it: its id and the event types it wants (all when
    empty), without a model instance (the processor reads them for every batch)."""

    pk: int
    events: list[str]

    def wants(self, event_type: str) -> bool:
        return not self.events or event_type in self.events


Target = Subscriber | WebhookEndpoint  # whom an event is written for


def subscribers(*, account_id: int, livemode: bool, event_type: str) -> list[WebhookEndpoint]:
    """The account's enabled endpoints of this mode that want this type (one indexed query)."""
    return [
        endpoint
        for endpoint in WebhookEndpoint.objects.filter(
            account_id=account_id, livemode=livemode, status=WebhookEndpoint.Status.ENABLED
        ).only("id", "events")
        if endpoint.wants(event_type)
    ]


def subscribers_sql(alias: str) -> str:
    """PostgreSQL: the enabled endpoints of the account and mode of the row ``alias`` (which
    has ``account_id`` and ``livemode``) as one JSON value, NULL when it has none: a scalar
    subquery on the endpoints' (account, livemode, status) index, for a statement that
    writes a batch of changes and wants their subscribers in the same round trip."""
    return (
        "(SELECT json_agg(json_build_array(w.id, w.events))"  # noqa: S608 (names from the model; the status is ours)
        f" FROM {WebhookEndpoint._meta.db_table} w"
        f" WHERE w.account_id = {alias}.account_id AND w.livemode = {alias}.livemode"
        f" AND w.status = '{WebhookEndpoint.Status.ENABLED}')"
    )


def subscribers_read(value: Any, *, event_type: str) -> list[Subscriber]:
    """``subscribers`` from the JSON of ``subscribers_sql``."""
    wanting = [Subscriber(pk, events) for pk, events in json_read(value) or []]
    return [endpoint for endpoint in wanting if endpoint.wants(event_type)]


def event_emit(
    *,
    account_id: int,
    livemode: bool,
    event_type: str,
    obj: dict[str, Any],
    extra: dict[str, Any] | None = None,
    endpoints: Sequence[Target] | None = None,
) -> Event | None:
    """Record one event for the endpoints that want it; None when no endpoint does.

    ``obj`` is the object the event is about, already in its wire shape (camelCase), and
    ``extra`` more keys beside it under ``data``. ``endpoints`` overrides the subscription
    (the dashboard's test event goes to one endpoint).
    """
    if endpoints is None:
        endpoints = subscribers(account_id=account_id, livemode=livemode, event_type=event_type)
    if not endpoints:
        return None
    event = event_new(
        account_id=account_id, livemode=livemode, event_type=event_type, obj=obj, extra=extra
    )
    event_write(event, endpoints)
    return event


def events_emit_many(items: Sequence[tuple[Event, Sequence[Target]]]) -> None:
    """PostgreSQL: ``event_emit`` for many events at once (the processor's group commit): each
    ``Event`` built with its body, written with its deliveries in one statement, one wake-up
    per endpoint after the commit. The values go as arrays: the statement's text is the same
    for any batch, so it is parsed and planned once per connection."""
    items = [(event, endpoints) for event, endpoints in items if endpoints]
    if not items:
        return
    events = [event for event, _endpoints in items]
    deliveries = [(event, endpoint) for event, endpoints in items for endpoint in endpoints]
    with connection.cursor() as cursor:
        cursor.execute(
            f"WITH e AS (INSERT INTO {Event._meta.db_table}"  # noqa: S608 (names from the models; values are parameters)
            " (public_id, account_id, livemode, type, body, created_at)"
            " SELECT * FROM unnest(%s::text[], %s::bigint[], %s::boolean[], %s::text[],"
            " %s::text[], %s::timestamptz[]) RETURNING id, public_id),"
            f" d AS (INSERT INTO {Delivery._meta.db_table}"
            " (public_id, event_id, endpoint_id, state, attempts, next_attempt_at,"
            " last_error, created_at, updated_at)"
            " SELECT v.public_id, e.id, v.endpoint_id, %s, 0, v.at, '', v.at, v.at"
            " FROM e JOIN unnest(%s::text[], %s::text[], %s::bigint[], %s::timestamptz[])"
            " AS v(event_public_id, public_id, endpoint_id, at)"
            " ON v.event_public_id = e.public_id RETURNING 1)"
            " SELECT e.id, e.public_id, (SELECT count(*) FROM d) FROM e",
            [
                [event.public_id for event in events],
                [event.account_id for event in events],
                [event.livemode for event in events],
                [event.type for event in events],
                [event.body for event in events],
                [event.created_at for event in events],
                Delivery.State.PENDING,
                [event.public_id for event, _endpoint in deliveries],
                [new_delivery_id() for _delivery in deliveries],
                [endpoint.pk for _event, endpoint in deliveries],
                [event.created_at for event, _endpoint in deliveries],
            ],
        )
        rows = cursor.fetchall()
    ids = {public_id: pk for pk, public_id, _count in rows}
    if len(ids) != len(items) or rows[0][2] != len(deliveries):
        raise RuntimeError("the events were not all written")  # rolls their change back
    for event in events:
        event.pk = ids[event.public_id]
        event._state.adding = False
        event._state.db = connection.alias
    wake_after_commit(sorted({endpoint.pk for _event, endpoint in deliveries}))


def deliveries_add(event: Event, endpoints: Sequence[Target]) -> None:
    """Deliveries of an event already written in this transaction, to more endpoints."""
    with connection.cursor() as cursor:
        _deliveries_insert(cursor, [(event, endpoints)])
    wake_after_commit([endpoint.pk for endpoint in endpoints])


def _deliveries_insert(cursor, items: Sequence[tuple[Event, Sequence[Target]]]) -> None:
    """One pending delivery per (event, endpoint), in one statement."""
    rows = [
        (event, endpoint, connection.ops.adapt_datetimefield_value(event.created_at))
        for event, endpoints in items
        for endpoint in endpoints
    ]
    cursor.execute(
        f"INSERT INTO {Delivery._meta.db_table}"  # noqa: S608 (names from the models; values are parameters)
        " (public_id, event_id, endpoint_id, state, attempts, next_attempt_at,"
        " last_error, created_at, updated_at) VALUES "
        + ", ".join(["(%s, %s, %s, %s, 0, %s, '', %s, %s)"] * len(rows)),
        [
            value
            for event, endpoint, at in rows
            for value in (
                new_delivery_id(),
                event.pk,
                endpoint.pk,
                Delivery.State.PENDING,
                at,
                at,
                at,
            )
        ],
    )


def event_new(
    *,
    account_id: int,
    livemode: bool,
    event_type: str,
    obj: dict[str, Any],
    extra: dict[str, Any] | None = None,
    created_at: datetime | None = None,
) -> Event:
    """An event with its body, not yet written (``event_write``, ``events_emit_many``)."""
    now = created_at or timezone.now()
    event_id = new_event_id()
    return Event(
        public_id=event_id,
        account_id=account_id,
        livemode=livemode,
        type=event_type,
        body=event_body(
            event_id=event_id,
            event_type=event_type,
            created_at=now,
            livemode=livemode,
            data={"object": obj, **(extra or {})},
        ),
        created_at=now,
    )


def event_write(event: Event, endpoints: Sequence[Target]) -> None:
    """Write an event built by ``event_new`` and its deliveries in two plain statements, and
    wake the endpoints' workers after the commit.

    The processor does this for every recharge it finishes one at a time for an account with
    an endpoint: written through the ORM, the two inserts cost it three times the CPU. Every
    column is named; the tests of the outbox read these rows back through the models.
    """
    at = connection.ops.adapt_datetimefield_value(event.created_at)
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {Event._meta.db_table}"  # noqa: S608 (names from the models; values are parameters)
            " (public_id, account_id, livemode, type, body, created_at)"
            " VALUES (%s, %s, %s, %s, %s, %s) RETURNING id",
            [event.public_id, event.account_id, event.livemode, event.type, event.body, at],
        )
        event.pk = cursor.fetchone()[0]
        _deliveries_insert(cursor, [(event, endpoints)])
    event._state.adding = False
    event._state.db = connection.alias
    wake_after_commit([endpoint.pk for endpoint in endpoints])


def wake_after_commit(endpoint_ids: list[int]) -> None:
    """Once the transaction commits, wake the workers of these endpoints' deliveries."""
    from webhooks.tasks import endpoints_wake

    transaction.on_commit(lambda: endpoints_wake(endpoint_ids=endpoint_ids), robust=True)
