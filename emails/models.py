"""The outbox of email the business sends on its own (docs/contract.md §12): receipts,
low-balance alerts, bank-transfer instructions, a webhook endpoint disabled. A row is written
in the transaction of the change it reports, so a crash between commit and send never loses a
message; workers send it.
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext_lazy as _


class Email(models.Model):
    class Kind(models.TextChoices):
        RECEIPT = "receipt"
        PIN_RECEIPT = "pin_receipt"  # a delivered PIN of a site order (contract section 17)
        BALANCE_LOW = "balance_low"
        ENDPOINT_DISABLED = "endpoint_disabled"
        BANK_TRANSFER = "bank_transfer"
        CARD_PURCHASES_FROZEN = "card_purchases_frozen"
        INVITATION = "invitation"  # a new agent's owner (contract section 18)

    kind = models.CharField(_("kind"), max_length=32, choices=Kind.choices)
    to = models.EmailField(_("to"), max_length=254)
    language = models.CharField(_("language"), max_length=8, default="en")
    # What the templates show, as the caller saw it in the transaction (JSON values only).
    context = models.JSONField(_("context"), default=dict)
    # What the message carries that must not be stored in clear (a PIN: contract section 17),
    # as a FIELD_ENCRYPTION_KEY token of its JSON, merged into the context when rendered and
    # forgotten once the message is sent.
    secret_context = models.TextField(_("secret context"), blank=True, default="")
    created_at = models.DateTimeField(_("created at"), default=timezone.now)
    # A worker sends when this is due; it moves it on (a lease) before sending, then to the
    # next retry on failure, so a crashed worker's message is sent again later.
    next_attempt_at = models.DateTimeField(_("next attempt at"), default=timezone.now)
    attempts = models.PositiveSmallIntegerField(_("attempts"), default=0)
    sent_at = models.DateTimeField(_("sent at"), null=True, blank=True)
    last_error = models.CharField(_("last error"), max_length=255, blank=True)

    class Meta:
        verbose_name = _("outgoing email")
        verbose_name_plural = _("outgoing emails")
        indexes = [
            models.Index(
                fields=["next_attempt_at"], condition=Q(sent_at__isnull=True), name="email_due"
            )
        ]

    def __str__(self) -> str:
        return f"{self.kind} to {self.to}"
