"""The payment of an order: by wallet or by card, with what was refunded of it."""

from __future__ import annotations

from datetime import datetime

from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from reseller.ids import make_id
from reseller.money import MONEY


def new_payment_id() -> str:
    return make_id("pay")


class Payment(models.Model):
    class Method(models.TextChoices):
        WALLET = "wallet", _("Wallet")
        CARD = "card", _("Card")

    class Status(models.TextChoices):
        # The labels are what a consumer reads (pages, receipts); the API speaks the values.
        PENDING = "pending", _("Pending")
        CAPTURED = "captured", _("Paid")
        FAILED = "failed", _("Failed")
        REFUNDED = "refunded", _("Refunded")
        PARTIALLY_REFUNDED = "partially_refunded", _("Partially refunded")
        # A card payment not paid when its price hold ran out: never tried, or left waiting
        # for the bank (3-D Secure), whose PaymentIntent was then cancelled on Stripe.
        EXPIRED = "expired", _("Expired")
        # A card payment its buyer cancelled before paying it (nothing was charged).
        CANCELED = "canceled", _("Cancelled")

    public_id = models.CharField(_("public ID"), max_length=40, unique=True, default=new_payment_id)
    order = models.OneToOneField(
        "orders.Order", on_delete=models.PROTECT, related_name="payment", verbose_name=_("order")
    )
    account = models.ForeignKey(
        "accounts.Account",
        on_delete=models.PROTECT,
        related_name="payments",
        verbose_name=_("account"),
    )
    livemode = models.BooleanField(_("live mode"), default=True)
    method = models.CharField(_("method"), max_length=8, choices=Method.choices)
    status = models.CharField(
        _("status"), max_length=20, choices=Status.choices, default=Status.PENDING
    )
    amount = models.DecimalField(_("amount"), **MONEY)
    refunded_amount = models.DecimalField(_("refunded amount"), **MONEY, default=0)
    currency = models.CharField(_("currency"), max_length=3)
    wallet = models.ForeignKey(
        "wallet.Wallet",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="payments",
        verbose_name=_("wallet"),
    )
    # Card payments: the processor's objects and when the priced order stops being valid.
    setup_intent_id = models.CharField(_("setup intent ID"), max_length=128, blank=True)
    payment_intent_id = models.CharField(
        _("payment intent ID"), max_length=128, blank=True, db_index=True
    )
    expires_at = models.DateTimeField(_("expires at"), null=True, blank=True)
    failure_code = models.CharField(_("failure code"), max_length=64, blank=True)
    captured_at = models.DateTimeField(_("captured at"), null=True, blank=True)
    # A dispute or an early fraud warning on the card charge (docs/fraud.md), as Stripe last
    # told it: status ``warning`` (an early fraud warning) or the dispute's status, the amount
    # disputed (none for a warning) and the reason. Blank status: none.
    dispute_status = models.CharField(_("dispute status"), max_length=32, blank=True)
    dispute_amount = models.DecimalField(_("dispute amount"), **MONEY, null=True, blank=True)
    dispute_reason = models.CharField(_("dispute reason"), max_length=64, blank=True)
    created_at = models.DateTimeField(
        _("created at"), default=timezone.now, editable=False, db_index=True
    )
    updated_at = models.DateTimeField(_("updated at"), default=timezone.now)

    class Meta:
        verbose_name = _("payment")
        verbose_name_plural = _("payments")
        db_table = "orders_payment"  # the table it had in the orders app: no data moved
        constraints = [
            models.CheckConstraint(
                condition=models.Q(amount__gt=0), name="payment_amount_positive"
            ),
            models.CheckConstraint(
                condition=models.Q(refunded_amount__gte=0)
                & models.Q(refunded_amount__lte=models.F("amount")),
                name="payment_refund_within_amount",
            ),
        ]
        indexes = [models.Index(fields=["account", "livemode", "-id"], name="payment_history")]

    def __str__(self) -> str:
        return self.public_id

    @property
    def waiting_for_bank(self) -> bool:
        """A card payment whose charge waits for the bank (3-D Secure): pending, with the
        PaymentIntent of its current attempt (a failed attempt sets the payment ``failed``),
        within its price hold (after it, the PaymentIntent is cancelled)."""
        return self.status_shown == "waiting"

    def hold_over(self, now: datetime | None = None) -> bool:
        """Has an unpaid card payment's price hold ended (``expires_at``)? The sweeper then
        expires it within a minute; pages say so at once."""
        return self.expires_at is not None and self.expires_at <= (now or timezone.now())

    @property
    def finishable(self) -> bool:
        """Can its buyer still pay it: a card payment pending or failed, within its hold."""
        return (
            self.method == self.Method.CARD
            and self.status in (self.Status.PENDING, self.Status.FAILED)
            and self.expires_at is not None
            and not self.hold_over()
        )

    @property
    def status_label(self) -> str:
        """The status as its buyer reads it: a card payment not paid yet says where it is
        (waiting for the bank, not paid yet, or expired once its hold is over)."""
        shown = self.status_shown
        if shown == "waiting":
            return str(_("Waiting for your bank"))
        if shown == self.Status.PENDING and self.method == self.Method.CARD:
            return str(_("Not paid yet"))
        return str(self.Status(shown).label)

    @property
    def status_shown(self) -> str:
        """The status its buyer is shown (also the CSS class of its badge): ``waiting`` for a
        card payment waiting for the bank, ``expired`` for a pending one past its hold."""
        if self.method == self.Method.CARD and self.status == self.Status.PENDING:
            if self.hold_over():
                return self.Status.EXPIRED
            if self.payment_intent_id:
                return "waiting"
        return self.status
