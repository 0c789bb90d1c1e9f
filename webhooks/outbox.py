"""Writing events: ``event_emit`` is called inside the transaction of the change it reports.

When the account has an enabled endpoint of the event's mode that wants its type, the event
row and one delivery per such endpoint are written there and then: if the transaction rolls
back, no event exists; if the process dies after the commit, the rows are there and the
sweeper sends them. After the commit, each endpoint's worker is woken up.

This module is the one writer of events and deliveries: ``event_emit`` for one event,
``events_emit_many`` for a batch (the processor's group commit), both through the ORM
(``bulk_create``: two statements whatever the batch).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder
from django.db import transaction
from django.utils import timezone

from reseller import crypto
from webhooks.kept_endpoints import endpoints_kept
from webhooks.models import Delivery, Event, WebhookEndpoint, new_event_id
from webhooks.tasks import endpoints_wake


def event_body(*, event_id: str, event_type: str, created_at, livemode: bool, data: dict) -> str:
    body = {
        "id": event_id,
        "type": event_type,
        "createdAt": created_at,
        "livemode": livemode,
        "data": data,
    }
    return json.dumps(body, cls=DjangoJSONEncoder, separators=(",", ":"), ensure_ascii=False)


def subscribers(*, account_id: int, livemode: bool, event_type: str) -> list[WebhookEndpoint]:
    """The account's enabled endpoints of this mode that want this type (one indexed query)."""
    return [
        endpoint
        for endpoint in WebhookEndpoint.objects.filter(
            account_id=account_id, livemode=livemode, status=WebhookEndpoint.Status.ENABLED
        ).only("id", "events")
        if endpoint.wants(event_type)
    ]


def subscribers_many(
    *, accounts: Iterable[tuple[int, bool]]
) -> dict[tuple[int, bool], list[WebhookEndpoint]]:
    """The enabled endpoints of many (account, livemode) pairs, in at most one query: for a
    batch of changes of several accounts (the processor's), the pairs this process keeps
    (``webhooks.kept_endpoints``) read from memory. Pairs without endpoints are left out."""
    pairs = set(accounts)
    if not pairs:
        return {}
    found = endpoints_kept.fetch(pairs, _subscribers_read)
    return {pair: list(endpoints) for pair, endpoints in found.items() if endpoints}


def _subscribers_read(
    pairs: set[tuple[int, bool]],
) -> dict[tuple[int, bool], tuple[WebhookEndpoint, ...]]:
    """One query: each pair's enabled endpoints (an empty tuple for a pair without)."""
    found: dict[tuple[int, bool], list[WebhookEndpoint]] = {pair: [] for pair in pairs}
    for endpoint in WebhookEndpoint.objects.filter(
        account_id__in={account_id for account_id, _livemode in pairs},
        status=WebhookEndpoint.Status.ENABLED,
    ).only("id", "events", "account_id", "livemode"):
        pair = (endpoint.account_id, endpoint.livemode)
        if pair in found:
            found[pair].append(endpoint)
    return {pair: tuple(endpoints) for pair, endpoints in found.items()}


def event_emit(
    *,
    account_id: int,
    livemode: bool,
    event_type: str,
    obj: dict[str, Any],
    extra: dict[str, Any] | None = None,
    endpoints: Sequence[WebhookEndpoint] | None = None,
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
    events_emit_many([(event, endpoints)])
    return event


def events_emit_many(items: Sequence[tuple[Event, Sequence[WebhookEndpoint]]]) -> None:
    """Write events built by ``event_new``, each with one pending delivery per endpoint
    given, in two ``bulk_create`` statements; wake each endpoint's worker after the commit.
    An event given without endpoints is not written."""
    items = [(event, endpoints) for event, endpoints in items if endpoints]
    if not items:
        return
    Event.objects.bulk_create([event for event, _endpoints in items])
    Delivery.objects.bulk_create(
        [
            Delivery(
                event=event,
                endpoint=endpoint,
                state=Delivery.State.PENDING,
                next_attempt_at=event.created_at,
                created_at=event.created_at,
                updated_at=event.created_at,
            )
            for event, endpoints in items
            for endpoint in endpoints
        ]
    )
    wake_after_commit(
        sorted({endpoint.pk for _event, endpoints in items for endpoint in endpoints})
    )


def event_new(
    *,
    account_id: int,
    livemode: bool,
    event_type: str,
    obj: dict[str, Any],
    extra: dict[str, Any] | None = None,
    secret: bool = False,
) -> Event:
    """An event with its body, not yet written (``events_emit_many``). ``secret``: the body
    carries a PIN, so it is stored encrypted (``Event.sealed``) and opened only to be sent."""
    now = timezone.now()
    event_id = new_event_id()
    body = event_body(
        event_id=event_id,
        event_type=event_type,
        created_at=now,
        livemode=livemode,
        data={"object": obj, **(extra or {})},
    )
    return Event(
        public_id=event_id,
        account_id=account_id,
        livemode=livemode,
        type=event_type,
        body=crypto.encrypt(body) if secret else body,
        sealed=secret,
        created_at=now,
    )


def wake_after_commit(endpoint_ids: list[int]) -> None:
    """Once the transaction commits, wake the workers of these endpoints' deliveries."""
    transaction.on_commit(lambda: endpoints_wake(endpoint_ids=endpoint_ids), robust=True)
