"""The request log of API keys (docs/request-log.md): one row per request a key made, kept
30 days (``REQUEST_LOG_RETENTION_DAYS``), written in batches off the request path."""

from __future__ import annotations

import secrets
import string

from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

# What is kept of each body, after redaction (requestlog.redact).
BODY_LIMIT = 8 * 1024
_BASE62 = string.ascii_letters + string.digits


def new_api_request_id() -> str:
    """``log_`` and 20 base62 characters, as ``reseller.ids.make_id`` makes them, from one
    random number rather than twenty draws (ids are made for every request logged)."""
    number = secrets.randbelow(62**20)
    chars = []
    for _position in range(20):
        number, digit = divmod(number, 62)
        chars.append(_BASE62[digit])
    return "log_" + "".join(chars)


class ApiRequest(models.Model):
    public_id = models.CharField(
        _("public ID"), max_length=40, unique=True, default=new_api_request_id
    )
    # No index of their own: every read starts from the key (the composite indexes below lead
    # with it), and each index is one more write per request logged.
    account = models.ForeignKey(
        "accounts.Account",
        on_delete=models.CASCADE,
        related_name="api_requests",
        db_index=False,
        verbose_name=_("account"),
    )
    api_key = models.ForeignKey(
        "accounts.ApiKey",
        on_delete=models.CASCADE,
        related_name="requests",
        db_index=False,
        verbose_name=_("API key"),
    )
    livemode = models.BooleanField(_("live"))
    method = models.CharField(_("method"), max_length=10)
    path = models.CharField(_("path"), max_length=500)
    query = models.TextField(_("query string"), blank=True)
    status = models.PositiveSmallIntegerField(_("status"))
    latency_ms = models.PositiveIntegerField(_("latency (ms)"))
    # The X-Request-Id of the answer (reseller.middleware.RequestIdMiddleware): the caller's
    # own when it sent a valid one, so not unique.
    request_id = models.CharField(_("request id"), max_length=128)
    idempotency_key = models.CharField(_("idempotency key"), max_length=255, blank=True)
    # The problem+json ``code`` of a 4xx or 5xx answer.
    error_code = models.CharField(_("error code"), max_length=64, blank=True)
    # Redacted, at most BODY_LIMIT characters; the sizes are of the bodies as sent.
    request_body = models.TextField(_("request body"), blank=True)
    request_bytes = models.PositiveIntegerField(_("request size (bytes)"), default=0)
    response_body = models.TextField(_("response body"), blank=True)
    response_bytes = models.PositiveIntegerField(_("response size (bytes)"), default=0)
    created_at = models.DateTimeField(_("time"), default=timezone.now, editable=False)

    class Meta:
        verbose_name = _("API request")
        verbose_name_plural = _("API requests")
        indexes = [
            # The key's page: newest first, by status, by request id; the pruning by age.
            models.Index(fields=["api_key", "-created_at"], name="apirequest_key_created"),
            models.Index(fields=["api_key", "status", "-created_at"], name="apirequest_key_status"),
            models.Index(fields=["api_key", "request_id"], name="apirequest_key_request_id"),
            models.Index(fields=["created_at"], name="apirequest_created"),
        ]

    def __str__(self) -> str:
        return f"{self.method} {self.path} {self.status}"

    @property
    def request_truncated(self) -> bool:
        return len(self.request_body) >= BODY_LIMIT

    @property
    def response_truncated(self) -> bool:
        return len(self.response_body) >= BODY_LIMIT
