"""The webhook events of recharges (docs/webhooks.md): written in the transaction that moves
the recharge, with the recharge as the lookup shows it (``GET /api-access/b2b/recharges/{id}``,
rendered by the same serializer, ``RechargeDetailOut``).

    delivered / success (sandbox)                  → recharge.delivered
    failed / rejected, timeout (sandbox), refunded → recharge.failed
    waitlisted                                     → recharge.waitlisted
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from django.db.models import Prefetch
from djangorestframework_camel_case.util import camelize

from recharges.models import Recharge, RechargeEvent
from recharges.serializers import RechargeDetailOut
from webhooks.catalogue import (
    RECHARGE_DELIVERED,
    RECHARGE_FAILED,
    RECHARGE_REVERSED,
    RECHARGE_WAITLISTED,
)
from webhooks.models import Event, WebhookEndpoint
from webhooks.outbox import event_new, events_emit_many, subscribers_many

S = Recharge.Status
EVENT_OF_STATUS: dict[str, str] = {
    S.DELIVERED: RECHARGE_DELIVERED,
    S.SUCCESS: RECHARGE_DELIVERED,
    S.FAILED: RECHARGE_FAILED,
    S.REJECTED: RECHARGE_FAILED,
    S.TIMEOUT: RECHARGE_FAILED,
    S.WAITLISTED: RECHARGE_WAITLISTED,
    S.REVERSED: RECHARGE_REVERSED,
}


def recharge_emit(recharge: Recharge) -> None:
    """Record the event of the status the (locked) recharge just reached, if it has one.

    Called after the move and, for a failure, after its refund, in the same transaction:
    the move wrote a history row, so the history is never empty.
    """
    recharges_emit([recharge])


def recharges_emit(recharges: Sequence[Recharge]) -> None:
    """``recharge_emit`` for many (locked) recharges at once, the processor's batch: one
    query for their accounts' endpoints; for those that have one wanting the event, one read
    of the recharges as the lookup shows them, and their events and deliveries written in
    two statements."""
    moved = [r for r in recharges if r.status in EVENT_OF_STATUS]
    endpoints = subscribers_many(accounts={(r.account_id, r.livemode) for r in moved})
    wanting: dict[int, list[WebhookEndpoint]] = {}
    for recharge in moved:
        event_type = EVENT_OF_STATUS[recharge.status]
        targets = [
            e
            for e in endpoints.get((recharge.account_id, recharge.livemode), [])
            if e.wants(event_type)
        ]
        if targets:
            wanting[recharge.pk] = targets
    if not wanting:
        return
    events_emit_many(
        [(recharge_event(recharge), wanting[recharge.pk]) for recharge in lookups(list(wanting))]
    )


def lookups(ids: Sequence[int]) -> list[Recharge]:
    """The recharges as the lookup renders them: with their product, order, payment and
    history (two queries), in the order of ``ids``."""
    found = {
        recharge.pk: recharge
        for recharge in Recharge.objects.filter(pk__in=ids)
        .select_related("product", "order", "payment")
        .prefetch_related(Prefetch("events", queryset=RechargeEvent.objects.order_by("id")))
    }
    return [found[pk] for pk in ids if pk in found]


def recharge_event(recharge: Recharge) -> Event:
    """The event of the status the recharge has reached (``lookups``' shape), built with its
    body, not yet written."""
    body = camelized(RechargeDetailOut(recharge).data)
    return event_new(
        account_id=recharge.account_id,
        livemode=recharge.livemode,
        event_type=EVENT_OF_STATUS[recharge.status],
        obj=body,
        secret=body.get("pin") is not None,  # stored encrypted, opened to be sent
    )


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
