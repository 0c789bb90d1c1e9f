"""Webhook endpoints, the event outbox and its deliveries (docs/webhooks.md).

An ``Event`` is written in the same transaction as the change it reports, together with one
``Delivery`` per endpoint that wants it; workers send the deliveries after commit and retry
them until they succeed or are three days old. Each try is a ``DeliveryAttempt``.
"""

from __future__ import annotations

import secrets

from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from reseller import crypto
from reseller.ids import make_id


def new_endpoint_id() -> str:
    return make_id("we")


def new_event_id() -> str:
    return make_id("evt")


def new_delivery_id() -> str:
    return make_id("whd")


def new_secret() -> str:
    return f"whsec_{secrets.token_urlsafe(32)}"


class WebhookEndpoint(models.Model):
    class Status(models.TextChoices):
        ENABLED = "enabled", _("Enabled")
        DISABLED = "disabled", _("Disabled")

    public_id = models.CharField(
        _("public ID"), max_length=40, unique=True, default=new_endpoint_id
    )
    account = models.ForeignKey(
        "accounts.Account",
        on_delete=models.CASCADE,
        related_name="webhook_endpoints",
        verbose_name=_("account"),
    )
    livemode = models.BooleanField(_("live mode"))
    url = models.URLField(_("URL"), max_length=2048)
    description = models.CharField(_("description"), max_length=200, blank=True)
    # The event types it wants; empty means every type.
    events = models.JSONField(_("events"), default=list, blank=True)
    status = models.CharField(
        _("status"), max_length=8, choices=Status.choices, default=Status.ENABLED
    )
    disabled_reason = models.CharField(_("disabled reason"), max_length=255, blank=True)
    disabled_at = models.DateTimeField(_("disabled at"), null=True, blank=True)
    # Kept to sign: the receiver verifies with the same secret (docs/security.md).
    secret = models.CharField(_("secret"), max_length=80, default=new_secret)
    previous_secret = models.CharField(_("previous secret"), max_length=80, blank=True)
    previous_secret_expires_at = models.DateTimeField(
        _("previous secret expires at"), null=True, blank=True
    )
    # When its deliveries started failing without a success since (auto-disable after days).
    failing_since = models.DateTimeField(_("failing since"), null=True, blank=True)
    # One worker at a time sends to an endpoint: a slow one never holds more than one slot.
    lease_token = models.CharField(_("lease token"), max_length=32, blank=True)
    lease_until = models.DateTimeField(_("lease until"), null=True, blank=True)
    created_by = models.ForeignKey(
        "accounts.User",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("created by"),
    )
    created_at = models.DateTimeField(_("created at"), default=timezone.now, editable=False)
    updated_at = models.DateTimeField(_("updated at"), default=timezone.now)

    class Meta:
        verbose_name = _("webhook endpoint")
        verbose_name_plural = _("webhook endpoints")
        ordering = ["id"]
        indexes = [
            models.Index(fields=["account", "livemode", "status"], name="webhook_endpoint_emit")
        ]

    def __str__(self) -> str:
        return f"{self.public_id} {self.url}"

    def wants(self, event_type: str) -> bool:
        return not self.events or event_type in self.events

    def signing_secrets(self, now=None) -> list[str]:
        """The current secret, and the previous one during the 24 h after a rotation."""
        now = now or timezone.now()
        valid = [self.secret]
        expires = self.previous_secret_expires_at
        if self.previous_secret and expires and expires > now:
            valid.append(self.previous_secret)
        return valid


class Event(models.Model):
    """The outbox: one row per event, written in the transaction of the change it reports."""

    public_id = models.CharField(_("public ID"), max_length=40, default=new_event_id)
    account = models.ForeignKey(
        "accounts.Account", on_delete=models.CASCADE, related_name="+", verbose_name=_("account")
    )
    livemode = models.BooleanField(_("live mode"))
    type = models.CharField(_("type"), max_length=40)
    # The exact JSON body sent (and signed): fixed when the event happens. An event that
    # carries a PIN (``recharge.delivered`` of a PIN product) holds it encrypted
    # (``sealed``: a FIELD_ENCRYPTION_KEY token of the body), opened only to be sent.
    body = models.TextField(_("body"))
    sealed = models.BooleanField(_("sealed"), default=False)
    created_at = models.DateTimeField(_("created at"), default=timezone.now, db_index=True)

    class Meta:
        verbose_name = _("webhook event")
        verbose_name_plural = _("webhook events")
        ordering = ["-id"]
        # A constraint rather than unique=True: no second (LIKE) index to write for every event.
        constraints = [
            models.UniqueConstraint(fields=["public_id"], name="webhook_event_public_id")
        ]

    def __str__(self) -> str:
        return f"{self.public_id} {self.type}"

    def body_to_send(self) -> str:
        """The body as sent: opened when sealed."""
        return crypto.decrypt(self.body) if self.sealed else self.body


class Delivery(models.Model):
    class State(models.TextChoices):
        PENDING = "pending", _("Pending")
        SUCCEEDED = "succeeded", _("Delivered")
        FAILED = "failed", _("Gave up")

    # Every event writes its deliveries and every answer rewrites them, so they carry only
    # the indexes something reads: the two foreign keys are served by the unique pair and by
    # the dashboard's (endpoint, -id), and public_id is unique without a LIKE index.
    public_id = models.CharField(_("public ID"), max_length=40, default=new_delivery_id)
    event = models.ForeignKey(
        Event,
        on_delete=models.CASCADE,
        related_name="deliveries",
        db_index=False,
        verbose_name=_("event"),
    )
    endpoint = models.ForeignKey(
        WebhookEndpoint,
        on_delete=models.CASCADE,
        related_name="deliveries",
        db_index=False,
        verbose_name=_("endpoint"),
    )
    state = models.CharField(
        _("state"), max_length=10, choices=State.choices, default=State.PENDING
    )
    attempts = models.PositiveIntegerField(_("attempts"), default=0)
    next_attempt_at = models.DateTimeField(_("next attempt at"), default=timezone.now)
    last_status_code = models.PositiveSmallIntegerField(
        _("last status code"), null=True, blank=True
    )
    last_error = models.CharField(_("last error"), max_length=255, blank=True)
    delivered_at = models.DateTimeField(_("delivered at"), null=True, blank=True)
    created_at = models.DateTimeField(_("created at"), default=timezone.now)
    updated_at = models.DateTimeField(_("updated at"), default=timezone.now)

    class Meta:
        verbose_name = _("webhook delivery")
        verbose_name_plural = _("webhook deliveries")
        ordering = ["-id"]
        constraints = [
            models.UniqueConstraint(fields=["event", "endpoint"], name="one_delivery_per_endpoint"),
            models.UniqueConstraint(fields=["public_id"], name="webhook_delivery_public_id"),
        ]
        indexes = [
            # The sweeper's question: what is due now? Only pending rows are indexed.
            models.Index(
                fields=["next_attempt_at"],
                name="webhook_delivery_due",
                condition=models.Q(state="pending"),
            ),
            models.Index(fields=["endpoint", "-id"], name="webhook_delivery_recent"),
        ]

    def __str__(self) -> str:
        return self.public_id


class DeliveryAttempt(models.Model):
    """One try of a delivery: what the receiver answered and how long it took."""

    delivery = models.ForeignKey(
        Delivery, on_delete=models.CASCADE, related_name="tries", verbose_name=_("delivery")
    )
    number = models.PositiveIntegerField(_("number"))
    status_code = models.PositiveSmallIntegerField(_("status code"), null=True, blank=True)
    latency_ms = models.PositiveIntegerField(_("latency (ms)"), default=0)
    response_head = models.CharField(_("response head"), max_length=500, blank=True)
    error = models.CharField(_("error"), max_length=255, blank=True)
    created_at = models.DateTimeField(_("created at"), default=timezone.now)

    class Meta:
        verbose_name = _("delivery attempt")
        verbose_name_plural = _("delivery attempts")
        ordering = ["-id"]

    def __str__(self) -> str:
        return f"{self.delivery_id} #{self.number}"

    @property
    def succeeded(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300
