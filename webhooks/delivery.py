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

import httpx
from django.conf import settings
from django.core.cache import cache
from django.db.models import F, Q
from django.urls import reverse
from django.utils import timezone

from emails.models import Email
from emails.outbox import email_queue_to_account
from webhooks.models import Delivery, DeliveryAttempt, WebhookEndpoint
from webhooks.signature import HEADER, signature_header
from webhooks.targets import UnsafeTarget, resolve

logger = logging.getLogger(__name__)

# Seconds before retry n (n = failed attempts so far), then 12 h until three days are over.
RETRY_DELAYS = (20, 120, 600, 1800, 3600, 7200, 14400, 28800, 43200)
RESPONSE_HEAD_BYTES = 500
USER_AGENT = "reseller-webhooks/1"


def retry_delay(failed_attempts: int) -> float:
    """Exponential backoff with ±20 % jitter: about 20 s, 2 min, 10 min, 30 min, 1 h … 12 h."""
    base = RETRY_DELAYS[min(max(failed_attempts, 1), len(RETRY_DELAYS)) - 1]
    return base * random.uniform(0.8, 1.2)  # noqa: S311 (jitter, not a secret)


@dataclass(frozen=True)
class Answer:
    status_code: int | None
    latency_ms: int
    head: str
    error: str

    @property
    def ok(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300


@functools.cache
def _client() -> httpx.Client:
    """One client per process, shared by threads: no redirects, no proxies from the env."""
    timeout = settings.WEBHOOK_TIMEOUT_SECONDS
    return httpx.Client(
        follow_redirects=False,
        trust_env=False,
        timeout=httpx.Timeout(timeout, connect=min(timeout, 5.0)),
        limits=httpx.Limits(max_connections=100, max_keepalive_connections=20),
        headers={"User-Agent": USER_AGENT},
    )


def post(url: str, body: bytes, headers: dict[str, str]) -> Answer:
    """POST ``body`` to ``url`` at the address the SSRF check resolved; never raises."""
    started = time.monotonic()
    deadline = started + settings.WEBHOOK_TIMEOUT_SECONDS

    def elapsed() -> int:
        return int((time.monotonic() - started) * 1000)

    try:
        target = resolve(url)
    except UnsafeTarget as exc:
        return Answer(None, elapsed(), "", f"refused: {exc}"[:255])
    original = httpx.URL(url)
    pinned = original.copy_with(host=target.addresses[0])
    host_header = original.netloc.decode("ascii").rsplit("@", 1)[-1]
    extensions = {"sni_hostname": target.host} if target.scheme == "https" else {}
    try:
        with _client().stream(
            "POST",
            pinned,
            content=body,
            headers={**headers, "Host": host_header},
            extensions=extensions,
        ) as response:
            head = b""
            for chunk in response.iter_bytes():
                head += chunk
                if len(head) >= RESPONSE_HEAD_BYTES or time.monotonic() > deadline:
                    break
            text = head[:RESPONSE_HEAD_BYTES].decode("utf-8", errors="replace")
            return Answer(response.status_code, elapsed(), text, "")
    except httpx.TimeoutException:
        return Answer(None, elapsed(), "", "timeout")
    except httpx.HTTPError as exc:
        return Answer(None, elapsed(), "", f"{type(exc).__name__}: {exc}"[:255])


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


BATCH = 10  # deliveries sent between two writes of their answers


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
                due = _due_rows(endpoint_id, limit)
                if due:
                    lingered = False
                    sent, stop = _send_batch(due, lease)
                    tried += sent
                    if len(due) == limit:
                        continue  # a full batch: more may be due already
                elif lingered:
                    break  # waited once, and nothing came
                # Nothing more was due when we read: wait once before reading again.
                if stop or not _linger(linger, lease):
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


def _linger(seconds: float, lease: _Lease) -> bool:
    """Wait ``seconds`` for more deliveries if a lingering slot is free; False if not."""
    if seconds <= 0 or not lease.renew_if_needed():
        return False
    slots = _linger_slots()
    if not slots.acquire(blocking=False):
        return False
    try:
        time.sleep(seconds)
    finally:
        slots.release()
    return True


def _due_rows(endpoint_id: int, limit: int) -> list[Delivery]:
    return list(
        Delivery.objects.select_related("event", "endpoint")
        .filter(
            endpoint_id=endpoint_id,
            state=Delivery.State.PENDING,
            next_attempt_at__lte=timezone.now(),
        )
        .order_by("next_attempt_at", "id")[:limit]
    )


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


def _send_batch(due: list[Delivery], lease: _Lease) -> tuple[int, bool]:
    """Send these deliveries in order, then write their answers; (sent, stop)."""
    answers: list[tuple[Delivery, Answer]] = []
    stop = False
    try:
        for delivery in due:
            if not lease.renew_if_needed():
                stop = True
                break
            answer = _send(delivery)
            if answer is _STOP:
                stop = True
                break
            if answer is not None:
                answers.append((delivery, answer))
    finally:
        _record(answers)
    return len(answers), stop


_STOP = Answer(None, 0, "", "endpoint disabled")


def delivery_attempt(*, delivery_id: int) -> Answer | None:
    """Send one pending delivery now and record the answer; None if it is not pending."""
    delivery = Delivery.objects.select_related("event", "endpoint").get(pk=delivery_id)
    answer = _send(delivery)
    if answer is not None and answer is not _STOP:
        _record([(delivery, answer)])
    return answer


def _send(delivery: Delivery) -> Answer | None:
    if delivery.state != Delivery.State.PENDING:
        return None
    endpoint = delivery.endpoint
    if endpoint.status != WebhookEndpoint.Status.ENABLED:
        return _STOP
    body = delivery.event.body.encode("utf-8")
    headers = {
        "Content-Type": "application/json",
        HEADER: signature_header(body, endpoint.signing_secrets(), int(time.time())),
        "Reseller-Event-Id": delivery.event.public_id,
        "Reseller-Delivery-Id": delivery.public_id,
    }
    return post(endpoint.url, body, headers)


def _record(answers: list[tuple[Delivery, Answer]]) -> None:
    """Write the answers of a batch: the deliveries (only those still pending: a resend may
    have reset one, which is harmless) and their attempts, without locks. Successes with the
    same status code share one UPDATE, every attempt is in one INSERT."""
    if not answers:
        return
    now = timezone.now()
    pending = Delivery.objects.filter(state=Delivery.State.PENDING)
    succeeded: dict[int, list[int]] = {}
    for delivery, answer in answers:
        if answer.ok:
            succeeded.setdefault(answer.status_code or 200, []).append(delivery.pk)
            continue
        attempts = delivery.attempts + 1
        fields: dict = {
            "attempts": attempts,
            "last_status_code": answer.status_code,
            "last_error": answer.error[:255],
            "updated_at": now,
        }
        if now - delivery.created_at >= timedelta(hours=settings.WEBHOOK_RETRY_HOURS):
            fields["state"] = Delivery.State.FAILED
        else:
            fields["next_attempt_at"] = now + timedelta(seconds=retry_delay(attempts))
        pending.filter(pk=delivery.pk).update(**fields)
    for status_code, ids in succeeded.items():
        pending.filter(pk__in=ids).update(
            state=Delivery.State.SUCCEEDED,
            attempts=F("attempts") + 1,
            last_status_code=status_code,
            last_error="",
            delivered_at=now,
            updated_at=now,
        )
    DeliveryAttempt.objects.bulk_create(
        [
            DeliveryAttempt(
                delivery_id=delivery.pk,
                number=delivery.attempts + 1,
                status_code=answer.status_code,
                latency_ms=answer.latency_ms,
                response_head=answer.head[:RESPONSE_HEAD_BYTES],
                error=answer.error[:255],
                created_at=now,
            )
            for delivery, answer in answers
        ]
    )
    last_delivery, last_answer = answers[-1]
    _endpoint_health(last_delivery.endpoint, ok=last_answer.ok, now=now)


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
    from webhooks.models import Event

    cutoff = timezone.now() - timedelta(days=days)
    deleted, _ = Event.objects.filter(created_at__lt=cutoff).delete()
    return deleted
