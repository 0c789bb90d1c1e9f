"""Reading a key's request log: always within the key, itself found within the account
(another account's key or request is 404)."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db.models import QuerySet
from django.http import Http404
from django.utils import timezone

from accounts.models import ApiKey
from requestlog.models import ApiRequest


def api_requests_of_key(
    *,
    key: ApiKey,
    request_id: str = "",
    status_from: int | None = None,
    status_to: int | None = None,
) -> QuerySet[ApiRequest]:
    """The key's requests of the retention period, newest first, with the filters given."""
    since = timezone.now() - timedelta(days=settings.REQUEST_LOG_RETENTION_DAYS)
    requests = ApiRequest.objects.filter(api_key=key, created_at__gte=since)
    if request_id:
        requests = requests.filter(request_id=request_id)
    if status_from is not None and status_to is not None:
        if status_from == status_to:
            requests = requests.filter(status=status_from)
        else:
            requests = requests.filter(status__gte=status_from, status__lte=status_to)
    return requests.order_by("-created_at", "-id").defer("request_body", "response_body")


def api_request_of_key(*, key: ApiKey, public_id: str) -> ApiRequest:
    found = ApiRequest.objects.filter(api_key=key, public_id=public_id).first()
    if found is None:
        raise Http404
    return found
