"""Sending deliveries (docs/webhooks.md): signed, pinned to a checked address, retried.

``endpoint_drain`` sends an endpoint's due deliveries one after the other while it holds
that endpoint's lease, so a slow or dead receiver occupies at most one worker slot and never
delays another endpoint's deliveries (nor recharges: webhooks have their own queue). No
database lock is held while a receiver is called. A delivery is marked only after its
answer: a worker killed mid-send leaves it pending, and it is sent again (at least once).
"""

from __future__ import annotations

import functools
import logging
import random
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

import redis
from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.db.models import (
    Case,
    CharField,
    F,
    PositiveSmallIntegerField,
    Q,
    Value,
    When,
)
from django.urls import reverse
from django.utils import timezone

from accounts.services import email_queue_to_account
from emails.models import Email
from reseller.metrics import WEBHOOK_DELIVERY_SECONDS
from webhooks.client import RESPONSE_HEAD_BYTES, Answer, post
from webhooks.kept_endpoints import endpoints_changed
from webhooks.models import Delivery, DeliveryAttempt, Event, WebhookEndpoint
from webhooks.signature import HEADER, signature_header

logger = logging.getLogger(__name__)

# Seconds before retry n (n = failed attempts so far), then 12 h until three days are over.
RETRY_DELAYS = (20, 120, 600, 1800, 3600, 7200, 14400, 28800, 43200)


def retry_delay(failed_attempts: int) -> float:
    """Exponential backoff with ±20 % jitter: about 20 s, 2 min, 10 min, 30 min, 1 h … 12 h."""
    base = RETRY_DELAYS[min(max(failed_attempts, 1), len(RETRY_DELAYS)) - 1]
    return base * random.uniform(0.8, 1.2)  # noqa: S311 (jitter, not a secret)


def _lease_claim(endpoint_id: int) -> str | None:
    token = secrets.token_hex(16)
    now = timezone.now()
    claimed = (
        WebhookEndpoint.objects.filter(pk=endpoint_id, status=WebhookEndpoint.Status.ENABLED)
        .filter(Q(lease_until__isnull=True) | Q(lease_until__lt=now))
        .update(lease_token=token, lease_until=now + _lease_length())
    )
    return token if claimed else None


def _lease_length() -> timedelta:
    return timedelta(seconds=settings.WEBHOOK_TIMEOUT_SECONDS * 2 + 10)


def _lease_extend(endpoint_id: int, token: str) -> bool:
    return bool(
        WebhookEndpoint.objects.filter(
            pk=endpoint_id, lease_token=token, status=WebhookEndpoint.Status.ENABLED
        ).update(lease_until=timezone.now() + _lease_length())
    )


def _lease_release(endpoint_id: int, token: str) -> None:
    WebhookEndpoint.objects.filter(pk=endpoint_id, lease_token=token).update(
        lease_token="", lease_until=None
    )


def _due(endpoint_id: int, limit: int) -> list[int]:
    return list(
        Delivery.objects.filter(
            endpoint_id=endpoint_id,
            state=Delivery.State.PENDING,
            next_attempt_at__lte=timezone.now(),
        )
        .order_by("next_attempt_at", "id")
        .values_list("pk", flat=True)[:limit]
    )


WAKE_MARK_SECONDS = 30


def _wake_key(endpoint_id: int) -> str:
    return f"webhooks:wake:{endpoint_id}"


def wake_mark(endpoint_id: int) -> bool:
    """Note that a drain of this endpoint is published or running; False if one already is.

    The mark stays while a drain runs: events committed meanwhile publish nothing, the drain
    reads them. Before it leaves, the drain releases the lease, *then* clears the mark, *then*
    reads what is due once more, so a delivery committed before a suppressed wake-up is
    always seen. The mark expires by itself if its task is lost; the sweeper publishes
    regardless.
    """
    return bool(cache.add(_wake_key(endpoint_id), 1, timeout=WAKE_MARK_SECONDS))


def _poke_key(endpoint_id: int) -> str:
    prefix = settings.CACHES["default"].get("KEY_PREFIX", "reseller")
    return f"{prefix}:webhooks:poke:{endpoint_id}"


@functools.cache
def _redis():
    # A read may block for a whole linger (BLPOP): the socket's timeout is longer than that.
    return redis.Redis.from_url(
        settings.REDIS_URL,
        socket_connect_timeout=2,
        socket_timeout=settings.WEBHOOK_DRAIN_LINGER_SECONDS + 5,
    )


def poke(endpoint_id: int) -> None:
    """Tell a lingering drain of the endpoint that something was committed for it (the
    wake-up its mark suppressed): it reads at once instead of at the end of its linger."""
    if not settings.REDIS_URL or settings.WEBHOOK_DRAIN_LINGER_SECONDS <= 0:
        return
    key = _poke_key(endpoint_id)
    _redis().pipeline(transaction=False).lpush(key, 1).ltrim(key, 0, 0).expire(key, 60).execute()


BATCH = 25  # deliveries sent between two writes of their answers


@functools.cache
def _linger_slots() -> threading.BoundedSemaphore:
    """How many drains of this process may linger at once: the other threads stay free for
    endpoints that have something due (many quiet endpoints never fill the pool with waits)."""
    return threading.BoundedSemaphore(max(1, settings.WEBHOOK_DRAIN_LINGERING_MAX))


def endpoint_drain(
    endpoint_id: int,
    *,
    budget: int | None = None,
    linger: float | None = None,
    hand_back: Callable[[int], None] | None = None,
) -> int:
    """Send an endpoint's due deliveries; returns how many were tried.

    Returns at once when another worker holds the endpoint's lease: that worker looks for
    due deliveries again after releasing it, so none committed meanwhile is left behind.
    (The processor relies on this: it wakes no endpoint whose lease it saw held, having
    share-locked its row, which holds the release back until the deliveries are committed.)
    With nothing due, the holder waits ``WEBHOOK_DRAIN_LINGER_SECONDS`` once for more, when a
    lingering slot of this process is free: a steady stream of events is then sent in batches
    by one drain instead of one task per event. With its budget spent and more due, it gives
    the endpoint to ``hand_back`` (the task module's re-publish; this module imports no task)
    or, without one, leaves it to the sweeper.
    """
    budget = budget or settings.WEBHOOK_DRAIN_BUDGET
    linger = settings.WEBHOOK_DRAIN_LINGER_SECONDS if linger is None else linger
    tried = 0
    while True:
        token = _lease_claim(endpoint_id)
        if token is None:
            return tried
        lease = _Lease(endpoint_id, token)
        stop = False
        try:
            lingered = False
            while tried < budget and not stop:
                limit = min(BATCH, budget - tried)
                batch = _due_batch(endpoint_id, limit)
                if batch.due:
                    lingered = False
                    sent, stop = _send_batch(batch, lease)
                    tried += sent
                    if len(batch.due) == limit:
                        continue  # a full batch: more may be due already
                elif lingered:
                    break  # waited once, and nothing came
                # Nothing more was due when we read: wait once before reading again.
                if stop or not _linger(linger, lease, endpoint_id):
                    break
                lingered = True
        finally:
            _lease_release(endpoint_id, token)
            cache.delete(_wake_key(endpoint_id))
        if stop or not _due(endpoint_id, 1):
            return tried
        if tried >= budget:
            if hand_back is not None:
                hand_back(endpoint_id)
            return tried


def _linger(seconds: float, lease: _Lease, endpoint_id: int) -> bool:
    """Wait up to ``seconds`` for more deliveries, if a lingering slot of this process is free
    (False if not): until an event for the endpoint is committed (``poke``), or the time is
    up. Without Redis nothing can poke: no lingering."""
    if seconds <= 0 or not settings.REDIS_URL or not lease.renew_if_needed():
        return False
    slots = _linger_slots()
    if not slots.acquire(blocking=False):
        return False
    try:
        key = _poke_key(endpoint_id)
        client = _redis()
        client.delete(key)  # pokes for what we have just read
        client.blpop([key], timeout=seconds)
    finally:
        slots.release()
    return True


@dataclass(frozen=True)
class _Due:
    """A pending delivery as its send needs it."""

    pk: int
    public_id: str
    attempts: int
    created_at: datetime
    event_id: str  # the event's public id
    body: str
    # The event carries a secret (a PIN, sealed at rest): what the receiver answers is not
    # kept, since a receiver that echoes its body would write the PIN into our table.
    sealed: bool = False


@dataclass(frozen=True)
class _Batch:
    endpoint: WebhookEndpoint | None  # None when nothing is due
    due: list[_Due]


_ENDPOINT_FIELDS = (
    "id",
    "public_id",
    "account_id",
    "url",
    "status",
    "secret",
    "previous_secret",
    "previous_secret_expires_at",
    "failing_since",
)


def _due_batch(endpoint_id: int, limit: int) -> _Batch:
    """The endpoint's next due deliveries, oldest first, each with its event and the endpoint
    as it is now (its status, URL and secrets are so read again for every batch): one query."""
    rows = list(
        Delivery.objects.filter(
            endpoint_id=endpoint_id,
            state=Delivery.State.PENDING,
            next_attempt_at__lte=timezone.now(),
        )
        .select_related("event", "endpoint")
        .only(
            "public_id",
            "attempts",
            "created_at",
            "event__public_id",
            "event__body",
            "event__sealed",
            *(f"endpoint__{field}" for field in _ENDPOINT_FIELDS),
        )
        .order_by("next_attempt_at", "id")[:limit]
    )
    if not rows:
        return _Batch(None, [])
    due = [
        _Due(
            row.pk,
            row.public_id,
            row.attempts,
            row.created_at,
            row.event.public_id,
            row.event.body_to_send(),
            row.event.sealed,
        )
        for row in rows
    ]
    return _Batch(rows[0].endpoint, due)


class _Lease:
    def __init__(self, endpoint_id: int, token: str) -> None:
        self.endpoint_id, self.token = endpoint_id, token
        self.until = timezone.now() + _lease_length()

    def renew_if_needed(self) -> bool:
        """Renew only when the lease could run out during the next call; False if it is lost
        (the endpoint was disabled meanwhile)."""
        if self.until - timezone.now() >= _lease_length() / 2:
            return True
        if not _lease_extend(self.endpoint_id, self.token):
            return False
        self.until = timezone.now() + _lease_length()
        return True


def _send_batch(batch: _Batch, lease: _Lease) -> tuple[int, bool]:
    """Send these deliveries in order, then write their answers; (sent, stop)."""
    endpoint = batch.endpoint
    if endpoint is None or endpoint.status != WebhookEndpoint.Status.ENABLED:
        return 0, True
    answers: list[tuple[_Due, Answer]] = []
    stop = False
    try:
        for due in batch.due:
            if not lease.renew_if_needed():
                stop = True
                break
            answers.append((due, _send(endpoint, due)))
    finally:
        _record(endpoint, answers)
    return len(answers), stop


def _send(endpoint: WebhookEndpoint, due: _Due) -> Answer:
    body = due.body.encode("utf-8")
    headers = {
        "Content-Type": "application/json",
        HEADER: signature_header(body, endpoint.signing_secrets(), int(time.time())),
        "Reseller-Event-Id": due.event_id,
        "Reseller-Delivery-Id": due.public_id,
    }
    return post(endpoint.url, body, headers)


def _record(endpoint: WebhookEndpoint, answers: list[tuple[_Due, Answer]]) -> None:
    """Write the answers of a batch in one transaction, without locks: the deliveries in one
    UPDATE (only those still pending: a resend may have reset one, which is harmless) and
    their attempts in one INSERT."""
    if not answers:
        return
    now = timezone.now()
    retry_until = timedelta(hours=settings.WEBHOOK_RETRY_HOURS)
    states: list[When] = []
    codes: list[When] = []
    errors: list[When] = []
    retries: list[When] = []
    delivered: list[When] = []
    tries: list[DeliveryAttempt] = []
    for due, answer in answers:
        WEBHOOK_DELIVERY_SECONDS.labels("ok" if answer.ok else "error").observe(
            answer.latency_ms / 1000
        )
        # With the drain task's request id: that of the request whose event woke it.
        logger.info(
            "webhook %s of event %s: %s",
            due.public_id,
            due.event_id,
            answer.status_code or answer.error[:80],
            extra={
                "webhook_delivery": due.public_id,
                "webhook_event": due.event_id,
                "webhook_endpoint": endpoint.pk,
                "status_code": answer.status_code,
                "latency_ms": answer.latency_ms,
            },
        )
        error = answer.error[:255]
        if answer.ok:
            state = Delivery.State.SUCCEEDED
            delivered.append(When(pk=due.pk, then=Value(now)))
        elif now - due.created_at >= retry_until:
            state = Delivery.State.FAILED
        else:
            state = Delivery.State.PENDING
            next_at = now + timedelta(seconds=retry_delay(due.attempts + 1))
            retries.append(When(pk=due.pk, then=Value(next_at)))
        states.append(When(pk=due.pk, then=Value(state)))
        if answer.status_code is not None:
            codes.append(When(pk=due.pk, then=Value(answer.status_code)))
        errors.append(When(pk=due.pk, then=Value(error)))
        tries.append(
            DeliveryAttempt(
                delivery_id=due.pk,
                number=due.attempts + 1,
                status_code=answer.status_code,
                latency_ms=answer.latency_ms,
                response_head="" if due.sealed else answer.head[:RESPONSE_HEAD_BYTES],
                error=error,
                created_at=now,
            )
        )
    changes = {
        "state": Case(*states, output_field=CharField()),
        "attempts": F("attempts") + 1,
        # NULL for the rest: no answer, no status code.
        "last_status_code": (
            Case(*codes, default=None, output_field=PositiveSmallIntegerField()) if codes else None
        ),
        "last_error": Case(*errors, output_field=CharField()),
        "updated_at": now,
    }
    if retries:
        changes["next_attempt_at"] = Case(*retries, default=F("next_attempt_at"))
    if delivered:
        changes["delivered_at"] = Case(*delivered, default=F("delivered_at"))
    with transaction.atomic():
        Delivery.objects.filter(
            pk__in=[due.pk for due, _answer in answers], state=Delivery.State.PENDING
        ).update(**changes)
        DeliveryAttempt.objects.bulk_create(tries)
    _endpoint_health(endpoint, ok=answers[-1][1].ok, now=now)


def _endpoint_health(endpoint: WebhookEndpoint, *, ok: bool, now: datetime) -> None:
    """Track how long an endpoint has been failing; disable it after WEBHOOK_DISABLE_AFTER_DAYS.
    Costs a statement only when something changes (the usual success costs none)."""
    endpoints = WebhookEndpoint.objects.filter(pk=endpoint.pk)
    if ok:
        if endpoint.failing_since is not None:
            endpoints.update(failing_since=None)
            endpoint.failing_since = None
        return
    if endpoint.failing_since is None:
        endpoints.filter(failing_since__isnull=True).update(failing_since=now)
        endpoint.failing_since = now
        return
    cutoff = now - timedelta(days=settings.WEBHOOK_DISABLE_AFTER_DAYS)
    if endpoint.failing_since > cutoff:
        return
    disabled = endpoints.filter(
        status=WebhookEndpoint.Status.ENABLED, failing_since__lte=cutoff
    ).update(
        status=WebhookEndpoint.Status.DISABLED,
        disabled_at=now,
        disabled_reason=(
            f"Disabled automatically: every delivery failed for "
            f"{settings.WEBHOOK_DISABLE_AFTER_DAYS} days."
        ),
        updated_at=now,
    )
    if disabled:
        endpoints_changed()  # update() sends no signal
        logger.warning("webhook endpoint %s disabled after failing for days", endpoint.pk)
        _tell_disabled(endpoint)


def _tell_disabled(endpoint: WebhookEndpoint) -> None:
    """Email the account that its endpoint was disabled (the dashboard says it too)."""
    email_queue_to_account(
        account_id=endpoint.account_id,
        kind=Email.Kind.ENDPOINT_DISABLED,
        context={
            "url": endpoint.url,
            "days": settings.WEBHOOK_DISABLE_AFTER_DAYS,
            "endpoint_path": reverse("webhooks:endpoint", args=[endpoint.public_id]),
        },
    )


def endpoints_due(*, limit: int = 500) -> list[int]:
    """Enabled endpoints with deliveries due now and no worker on them (the sweeper's list)."""
    now = timezone.now()
    return list(
        Delivery.objects.filter(
            state=Delivery.State.PENDING,
            next_attempt_at__lte=now,
            endpoint__status=WebhookEndpoint.Status.ENABLED,
        )
        .filter(Q(endpoint__lease_until__isnull=True) | Q(endpoint__lease_until__lt=now))
        .order_by()  # the model's ordering would make DISTINCT keep one row per delivery
        .values_list("endpoint_id", flat=True)
        .distinct()[:limit]
    )


def deliveries_purge(*, days: int = 30) -> int:
    """Forget events (and their deliveries) older than the dashboard shows."""
    cutoff = timezone.now() - timedelta(days=days)
    deleted, _ = Event.objects.filter(created_at__lt=cutoff).delete()
    return deleted
