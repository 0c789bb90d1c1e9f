"""Managing webhook endpoints (the dashboard and the CLI share these) and re-sending."""

from __future__ import annotations

from datetime import timedelta

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from accounts.models import Account, User
from reseller.errors import ValidationFailed
from webhooks.catalogue import EVENT_TYPES, WEBHOOK_TEST
from webhooks.models import Delivery, Event, WebhookEndpoint, new_secret
from webhooks.outbox import event_emit, wake_after_commit
from webhooks.targets import UnsafeTarget, check_url

MAX_ENDPOINTS_PER_ACCOUNT = 16
ROTATION_OVERLAP = timedelta(hours=24)


def _invalid(field: str, message: str) -> ValidationFailed:
    return ValidationFailed(fields=[{"field": field, "code": "invalid", "message": message}])


def _clean(url: str, events: list[str]) -> tuple[str, list[str]]:
    url = url.strip()
    if len(url) > 2048:
        raise _invalid("url", _("The URL is too long."))
    try:
        check_url(url)
    except UnsafeTarget as exc:
        raise _invalid("url", str(exc)) from exc
    unknown = sorted(set(events) - set(EVENT_TYPES))
    if unknown:
        raise _invalid("events", _("Unknown event type: %(type)s.") % {"type": unknown[0]})
    return url, sorted(set(events))


def endpoint_create(
    *,
    account: Account,
    url: str,
    livemode: bool,
    events: list[str] | None = None,
    description: str = "",
    user: User | None = None,
) -> WebhookEndpoint:
    """A new enabled endpoint; its ``secret`` is shown to the user once, right now."""
    url, events = _clean(url, events or [])
    if WebhookEndpoint.objects.filter(account=account).count() >= MAX_ENDPOINTS_PER_ACCOUNT:
        raise _invalid(
            "url",
            _("An account may have at most %(max)d endpoints.")
            % {"max": MAX_ENDPOINTS_PER_ACCOUNT},
        )
    return WebhookEndpoint.objects.create(
        account=account,
        url=url,
        livemode=livemode,
        events=events,
        description=description.strip()[:200],
        created_by=user,
    )


def endpoint_update(
    *,
    endpoint: WebhookEndpoint,
    url: str,
    events: list[str],
    description: str,
    enabled: bool,
) -> WebhookEndpoint:
    url, events = _clean(url, events)
    now = timezone.now()
    endpoint.url = url
    endpoint.events = events
    endpoint.description = description.strip()[:200]
    if enabled and endpoint.status != WebhookEndpoint.Status.ENABLED:
        endpoint.status = WebhookEndpoint.Status.ENABLED
        endpoint.disabled_reason = ""
        endpoint.disabled_at = None
        endpoint.failing_since = None
    elif not enabled and endpoint.status == WebhookEndpoint.Status.ENABLED:
        endpoint.status = WebhookEndpoint.Status.DISABLED
        endpoint.disabled_reason = _("Disabled by you.")
        endpoint.disabled_at = now
    endpoint.updated_at = now
    endpoint.save()
    if endpoint.status == WebhookEndpoint.Status.ENABLED:
        wake_after_commit([endpoint.pk])
    return endpoint


def endpoint_rotate_secret(*, endpoint: WebhookEndpoint) -> str:
    """A new secret; the old one still signs (beside it) for 24 hours. Returns the new one."""
    with transaction.atomic():
        endpoint = WebhookEndpoint.objects.select_for_update().get(pk=endpoint.pk)
        endpoint.previous_secret = endpoint.secret
        endpoint.previous_secret_expires_at = timezone.now() + ROTATION_OVERLAP
        endpoint.secret = new_secret()
        endpoint.updated_at = timezone.now()
        endpoint.save(
            update_fields=["previous_secret", "previous_secret_expires_at", "secret", "updated_at"]
        )
    return endpoint.secret


def endpoint_delete(*, endpoint: WebhookEndpoint) -> None:
    endpoint.delete()


def delivery_resend(*, delivery: Delivery) -> Delivery:
    """Send a delivery again now, whatever became of it (the dashboard's "resend")."""
    if delivery.endpoint.status != WebhookEndpoint.Status.ENABLED:
        raise _invalid("endpoint", _("Enable the endpoint before resending to it."))
    now = timezone.now()
    Delivery.objects.filter(pk=delivery.pk).update(
        state=Delivery.State.PENDING, next_attempt_at=now, updated_at=now
    )
    wake_after_commit([delivery.endpoint.pk])
    delivery.refresh_from_db()
    return delivery


@transaction.atomic
def endpoint_send_test(*, endpoint: WebhookEndpoint) -> Event:
    """A ``webhook.test`` event to this endpoint only, to check the receiver end to end."""
    if endpoint.status != WebhookEndpoint.Status.ENABLED:
        raise _invalid("endpoint", _("Enable the endpoint before sending it a test event."))
    event = event_emit(
        account_id=endpoint.account_id,
        livemode=endpoint.livemode,
        event_type=WEBHOOK_TEST,
        obj={
            "object": "webhook_endpoint",
            "id": endpoint.public_id,
            "url": endpoint.url,
            "message": "A test event sent from the dashboard.",
        },
        endpoints=[endpoint],
    )
    assert event is not None
    return event
