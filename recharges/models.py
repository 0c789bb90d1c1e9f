"""Recharges (one top-up of one product to one number) and their history."""

from __future__ import annotations

from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from reseller.ids import make_id
from reseller.money import MONEY


def new_recharge_id() -> str:
    return make_id("rch")


class Recharge(models.Model):
    """One top-up of one product to one number: one row per unit of quantity."""

    class Status(models.TextChoices):
        QUEUED = "queued", _("Queued")
        WAITLISTED = "waitlisted", _("Waitlisted")
        DISPATCHED = "dispatched", _("Dispatched")
        DELIVERED = "delivered", _("Delivered")
        FAILED = "failed", _("Failed")
        # Delivered, then taken back by the provider (and refunded): contract §14.
        REVERSED = "reversed", _("Reversed")
        # Test mode only: the simulated outcomes of the sandbox (docs/contract.md §6).
        PROCESSING = "processing", _("Processing (sandbox)")
        SUCCESS = "success", _("Success (sandbox)")
        REJECTED = "rejected", _("Rejected (sandbox)")
        TIMEOUT = "timeout", _("Timeout (sandbox)")

    public_id = models.CharField(
        _("public ID"), max_length=40, unique=True, default=new_recharge_id
    )
    order = models.ForeignKey(
        "orders.Order", on_delete=models.PROTECT, related_name="recharges", verbose_name=_("order")
    )
    payment = models.ForeignKey(
        "payments.Payment",
        on_delete=models.PROTECT,
        related_name="recharges",
        verbose_name=_("payment"),
    )
    account = models.ForeignKey(
        "accounts.Account", on_delete=models.PROTECT, related_name="+", verbose_name=_("account")
    )
    livemode = models.BooleanField(_("live mode"), default=True)
    product = models.ForeignKey(
        "catalog.Product", on_delete=models.PROTECT, related_name="+", verbose_name=_("product")
    )
    recipient_number = models.CharField(_("recipient number"), max_length=20)
    amount = models.DecimalField(_("amount"), **MONEY)
    currency = models.CharField(_("currency"), max_length=3)
    # What the recipient gets, in the product's local currency (contract section 17): the
    # amount chosen for a range product, the face value of a fixed one. Null on rows older
    # than ranges: their product's face value.
    local_amount = models.DecimalField(_("local amount"), **MONEY, null=True, blank=True)
    # The extra fields its line carried (catalog.fields), sent to the provider under its own
    # names and shown back to the buyer.
    fields = models.JSONField(_("fields"), default=dict, blank=True)
    # The caller's own reference of a batch line (docs/contract.md §13); "" otherwise.
    reference = models.CharField(_("reference"), max_length=100, blank=True, default="")
    status = models.CharField(
        _("status"), max_length=12, choices=Status.choices, default=Status.QUEUED
    )
    failure_code = models.CharField(_("failure code"), max_length=64, blank=True)
    failure_message = models.CharField(_("failure message"), max_length=255, blank=True)
    waitlisted_until = models.DateTimeField(_("waitlisted until"), null=True, blank=True)
    # Held for a scheduled promotion of its product (contract §5 ``whenPromotionScheduled``:
    # "wait", the default) or sent at once without it ("sendNow": False).
    promotion_wait = models.BooleanField(_("promotion wait"), default=True)
    sandbox_ready_at = models.DateTimeField(
        _("sandbox ready at"),
        null=True,
        blank=True,
        help_text=_("Test mode: when a processing recharge succeeds"),
    )
    # Where it was sent: the provider's name (a ``Provider`` row's, or AIRTIME_PROVIDER's),
    # and the route when it went by one. A dispatched row names the one provider that may
    # hold it: it moves to another route only after a definite refusal (docs/providers.md).
    provider = models.CharField(_("provider"), max_length=32, blank=True)
    route = models.ForeignKey(
        "upstreams.Route",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("route"),
    )
    # What the provider debited us for it (reported, else the route's cost), once delivered.
    cost = models.DecimalField(_("cost"), max_digits=14, decimal_places=4, null=True, blank=True)
    cost_currency = models.CharField(_("cost currency"), max_length=3, blank=True)
    # What the recipient got, in the product's local currency, where the provider reports it
    # (Ding's ReceiveValue, of every delivery: for a range amount, the SendValue rounded up
    # to the cent may give a little more than asked for); null where the provider does not
    # say (it delivers the amount asked for).
    delivered_amount = models.DecimalField(_("delivered amount"), **MONEY, null=True, blank=True)
    # The price paid less the cost converted (FX table at delivery), in the order's currency.
    margin = models.DecimalField(_("margin"), **MONEY, null=True, blank=True)
    margin_currency = models.CharField(_("margin currency"), max_length=3, blank=True)
    provider_transaction_id = models.CharField(
        _("provider transaction ID"), max_length=128, blank=True
    )
    # The provider's answer, without any PIN (the adapters strip it).
    provider_response = models.JSONField(_("provider response"), null=True, blank=True)
    # A PIN product's code, once delivered (contract section 17): its JSON ``{"code",
    # "serial", "instructions", "valid_until"}`` encrypted with FIELD_ENCRYPTION_KEY
    # (recharges.pins, reseller.crypto); never in clear in any table. Staff see its last 4.
    pin_encrypted = models.TextField(_("encrypted PIN"), blank=True, default="")
    pin_last4 = models.CharField(_("PIN last 4 digits"), max_length=4, blank=True, default="")
    attempts = models.PositiveSmallIntegerField(_("attempts"), default=0)
    retries = models.PositiveSmallIntegerField(
        _("retries"), default=0, help_text=_("Staff retries after failure")
    )
    refunded = models.BooleanField(_("refunded"), default=False)
    # A card refund is recorded under the lock and sent to Stripe after commit; the Stripe
    # refund's id lands here (empty while owed: the sweeper sends it again, idempotently).
    card_refund_id = models.CharField(_("card refund ID"), max_length=64, blank=True)
    queued_at = models.DateTimeField(_("queued at"), null=True, blank=True)
    # When its message was published (fair dispatch, docs/processor.md): a live queued row
    # without it is in its account's backlog, released by the lane feeder a share at a time.
    released_at = models.DateTimeField(_("released at"), null=True, blank=True)
    dispatched_at = models.DateTimeField(_("dispatched at"), null=True, blank=True)
    delivered_at = models.DateTimeField(_("delivered at"), null=True, blank=True)
    failed_at = models.DateTimeField(_("failed at"), null=True, blank=True)
    reversed_at = models.DateTimeField(_("reversed at"), null=True, blank=True)
    created_at = models.DateTimeField(
        _("created at"), default=timezone.now, editable=False, db_index=True
    )
    updated_at = models.DateTimeField(_("updated at"), default=timezone.now)

    class Meta:
        verbose_name = _("recharge")
        verbose_name_plural = _("recharges")
        db_table = "orders_recharge"  # the table it had in the orders app: no data moved
        ordering = ["id"]
        indexes = [
            models.Index(fields=["status", "updated_at"], name="recharge_status_age"),
            models.Index(fields=["account", "livemode", "-id"], name="recharge_recent"),
            # The lookup's search by number (support's first question): no scan of the account.
            models.Index(
                fields=["account", "livemode", "recipient_number", "-id"],
                name="recharge_by_number",
            ),
            # "My failed recharges": the status filter reads its rows in order, no scan.
            models.Index(
                fields=["account", "livemode", "status", "-id"], name="recharge_by_status"
            ),
            # Fair dispatch: an account's backlog in id order, and its published-but-unclaimed
            # rows, without reading the rest of its queued rows (both small: queued only).
            models.Index(
                fields=["account", "id"],
                name="recharge_backlog",
                condition=models.Q(status="queued", livemode=True, released_at__isnull=True),
            ),
            models.Index(
                fields=["account"],
                name="recharge_released",
                condition=models.Q(status="queued", livemode=True, released_at__isnull=False),
            ),
        ]

    def __str__(self) -> str:
        return self.public_id

    @property
    def face_value(self):
        """What the recipient gets, in the product's local currency (``local_amount``, or the
        product's face value on rows older than ranges)."""
        return self.local_amount if self.local_amount is not None else self.product.local_amount

    @property
    def amount_delivered(self):
        """What the recipient got: the provider's figure where it reported one, else the
        face value."""
        return self.delivered_amount if self.delivered_amount is not None else self.face_value

    @property
    def ledger_reference(self) -> str:
        """The reference of this payment cycle's refund (a staff retry starts a new cycle)."""
        return self.public_id if not self.retries else f"{self.public_id}:r{self.retries}"


class RechargeEvent(models.Model):
    """The history of a recharge: every transition with its time and what caused it."""

    recharge = models.ForeignKey(
        Recharge, on_delete=models.CASCADE, related_name="events", verbose_name=_("recharge")
    )
    from_status = models.CharField(_("from status"), max_length=12, blank=True)
    to_status = models.CharField(_("to status"), max_length=12)
    note = models.CharField(_("note"), max_length=255, blank=True)
    actor = models.ForeignKey(
        "accounts.User",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("actor"),
    )
    created_at = models.DateTimeField(_("created at"), default=timezone.now, editable=False)

    class Meta:
        verbose_name = _("recharge event")
        verbose_name_plural = _("recharge events")
        db_table = "orders_rechargeevent"  # as in the orders app: no data moved
        ordering = ["id"]

    def __str__(self) -> str:
        return f"{self.from_status or '-'} -> {self.to_status}"


class RechargeAttempt(models.Model):
    """One call to a provider for a recharge (send or look-up) and what came of it: the
    history's "every attempt (provider, answer, time)", and the evidence of a failover."""

    class Outcome(models.TextChoices):
        DELIVERED = "delivered", _("Delivered")
        PENDING = "pending", _("Pending")
        REFUSED = "refused", _("Refused")  # a documented refusal: may go to the next route
        UNREACHABLE = "unreachable", _("Unreachable")  # not taken: may go to the next route
        UNCLEAR = "unclear", _("Unclear")  # may still deliver: settled at the same provider
        NOT_FOUND = "not_found", _("Not found")  # a look-up that found nothing
        REVERSED = "reversed", _("Reversed")

    recharge = models.ForeignKey(
        Recharge, on_delete=models.CASCADE, related_name="attempts_made", verbose_name=_("recharge")
    )
    provider = models.CharField(_("provider"), max_length=32)
    action = models.CharField(_("action"), max_length=8)  # "send" or "status"
    outcome = models.CharField(_("outcome"), max_length=12, choices=Outcome.choices)
    code = models.CharField(_("code"), max_length=64, blank=True)
    message = models.CharField(_("message"), max_length=255, blank=True)
    duration_ms = models.PositiveIntegerField(_("duration (ms)"), default=0)
    created_at = models.DateTimeField(_("created at"), default=timezone.now, editable=False)

    class Meta:
        verbose_name = _("recharge attempt")
        verbose_name_plural = _("recharge attempts")
        ordering = ["id"]
        indexes = [models.Index(fields=["recharge", "provider"], name="attempt_by_recharge")]

    def __str__(self) -> str:
        return f"{self.recharge_id} {self.action} {self.provider}: {self.outcome}"
