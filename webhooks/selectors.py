"""Reading webhook endpoints and deliveries: always within one account (others' are 404)."""

from __future__ import annotations

from datetime import timedelta

from django.db.models import Prefetch, QuerySet
from django.http import Http404
from django.utils import timezone

from accounts.models import Account
from webhooks.models import Delivery, DeliveryAttempt, WebhookEndpoint

DASHBOARD_DAYS = 30


def endpoints_of_account(*, account: Account) -> QuerySet[WebhookEndpoint]:
    return WebhookEndpoint.objects.filter(account=account).order_by("-livemode", "id")


def endpoint_of_account(*, account: Account, public_id: str) -> WebhookEndpoint:
    endpoint = WebhookEndpoint.objects.filter(account=account, public_id=public_id).first()
    if endpoint is None:
        raise Http404
    return endpoint


def delivery_of_endpoint(*, endpoint: WebhookEndpoint, public_id: str) -> Delivery:
    delivery = (
        Delivery.objects.select_related("endpoint")
        .filter(endpoint=endpoint, public_id=public_id)
        .first()
    )
    if delivery is None:
        raise Http404
    return delivery


def recent_deliveries(*, endpoint: WebhookEndpoint, limit: int = 100) -> list[Delivery]:
    """The endpoint's deliveries of the last 30 days, newest first, each with its last try."""
    since = timezone.now() - timedelta(days=DASHBOARD_DAYS)
    deliveries: list[Delivery] = list(
        Delivery.objects.filter(endpoint=endpoint, created_at__gte=since)
        .select_related("event")
        .prefetch_related(
            Prefetch("tries", queryset=DeliveryAttempt.objects.order_by("-id"), to_attr="all_tries")
        )
        .order_by("-id")[:limit]
    )
    for delivery in deliveries:
        delivery.last_try = delivery.all_tries[0] if delivery.all_tries else None  # type: ignore[attr-defined]
    return deliveries
