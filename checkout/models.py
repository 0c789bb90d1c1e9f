"""The card side of card payments and card top-ups, and the Stripe events already handled.

Both models moved here from the orders app with their tables (``Meta.db_table``)."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from reseller.money import MONEY


class CardCheckout(models.Model):
    """The card side of one card payment or one card top-up (docs/contract.md §4).

    Exactly one of ``payment`` and ``topup`` is set. It holds the Stripe objects of the
    current attempt: a SetupIntent the browser confirms, then the PaymentIntent the server
    creates and confirms. A failed attempt clears them and leaves the checkout payable again
    until ``expires_at``; ``completed_at`` is set once, when the money is taken.
    """

    account = models.ForeignKey("accounts.Account", on_delete=models.PROTECT, related_name="+")
    payment = models.OneToOneField(
        "payments.Payment",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="card_checkout",
    )
    topup = models.OneToOneField(
        "wallet.TopUp", null=True, blank=True, on_delete=models.CASCADE, related_name="card"
    )
    cart = models.ForeignKey(
        "orders.Cart", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    amount = models.DecimalField(**MONEY)
    currency = models.CharField(max_length=3)
    setup_intent_id = models.CharField(max_length=128, blank=True)
    payment_intent_id = models.CharField(max_length=128, blank=True, db_index=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    # Set while a PaymentIntent is being created on Stripe (no row lock is held meanwhile):
    # a concurrent checkout sees the attempt in flight and answers ``processing``.
    attempt_started_at = models.DateTimeField(null=True, blank=True)
    # The cart lines this payment pays for: exactly these leave the cart when it succeeds.
    cart_item_ids = models.JSONField(default=list, blank=True)
    failure_code = models.CharField(max_length=64, blank=True)
    # The card purchase limits (checkout.limits, docs/fraud.md): the card's Stripe fingerprint
    # once known, and since when this payment counts (its charge in flight, then captured).
    # Cleared again when the attempt fails; a payment never confirmed never counts.
    card_fingerprint = models.CharField(max_length=64, blank=True)
    limit_counted_at = models.DateTimeField(null=True, blank=True)
    limit_amount_eur = models.DecimalField(**MONEY, null=True, blank=True)
    # A guest's purchase (no account; owned by the house guest account, docs/site.md): where
    # the receipt goes and in which language, and the client address the guest limits count.
    guest_email = models.EmailField(max_length=254, blank=True)
    guest_language = models.CharField(max_length=5, blank=True)
    client_address = models.CharField(max_length=45, blank=True)
    expires_at = models.DateTimeField()
    completed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "orders_cardcheckout"  # moved from the orders app with its table
        constraints = [
            models.CheckConstraint(
                condition=models.Q(payment__isnull=False, topup__isnull=True)
                | models.Q(payment__isnull=True, topup__isnull=False),
                name="card_checkout_pays_one_thing",
            )
        ]
        indexes = [
            models.Index(
                fields=["limit_counted_at"],
                name="cardcheckout_limit_counted",
                condition=models.Q(limit_counted_at__isnull=False),
            ),
            models.Index(
                fields=["card_fingerprint", "limit_counted_at"],
                name="cardcheckout_limit_card",
                condition=models.Q(limit_counted_at__isnull=False),
            ),
        ]

    def __str__(self) -> str:
        return f"card checkout of {self.payment_id or self.topup_id}"

    @property
    def public_id(self) -> str:
        return self.payment.public_id if self.payment_id else self.topup.public_id  # type: ignore[union-attr]


class StripeEvent(models.Model):
    """A webhook event already handled: the unique id makes a replay do nothing."""

    event_id = models.CharField(max_length=255, unique=True)
    type = models.CharField(max_length=100)
    payment_intent_id = models.CharField(max_length=128, blank=True)
    received_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        db_table = "orders_stripeevent"  # moved from the orders app with its table

    def __str__(self) -> str:
        return f"{self.event_id} {self.type}"


class CardDispute(models.Model):
    """A Stripe dispute or early fraud warning on the charge of a card checkout
    (docs/fraud.md), one row per Stripe object, kept as the events last told it."""

    class Kind(models.TextChoices):
        DISPUTE = "dispute", "Dispute"
        WARNING = "warning", "Early fraud warning"

    stripe_id = models.CharField(max_length=128, unique=True)
    kind = models.CharField(max_length=8, choices=Kind.choices)
    checkout = models.ForeignKey(CardCheckout, on_delete=models.PROTECT, related_name="disputes")
    account = models.ForeignKey("accounts.Account", on_delete=models.PROTECT, related_name="+")
    charge_id = models.CharField(max_length=128, blank=True)
    # Stripe's dispute status (needs_response, under_review, won, lost …) or ``warning``.
    status = models.CharField(max_length=32)
    amount = models.DecimalField(**MONEY, null=True, blank=True)
    currency = models.CharField(max_length=3, blank=True)
    reason = models.CharField(max_length=64, blank=True)
    # Stripe's dispute fee (its balance transactions), in the dispute's currency, when given.
    fee = models.DecimalField(**MONEY, null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "checkout_carddispute"

    def __str__(self) -> str:
        return f"{self.kind} {self.stripe_id} {self.status}"


class CardFreeze(models.Model):
    """An account whose card purchases are frozen (a dispute or an early fraud warning) until
    staff unfreeze it. One row per account, kept after an unfreeze (``unfrozen_at``) and
    frozen again by the next dispute."""

    account = models.OneToOneField(
        "accounts.Account", on_delete=models.CASCADE, related_name="card_freeze"
    )
    reason = models.CharField(max_length=16)  # ``dispute`` or ``warning``
    cause = models.CharField(max_length=128, blank=True)  # the Stripe object that froze it
    frozen_at = models.DateTimeField(default=timezone.now)
    unfrozen_at = models.DateTimeField(null=True, blank=True)
    unfrozen_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )

    class Meta:
        db_table = "checkout_cardfreeze"

    def __str__(self) -> str:
        state = "unfrozen" if self.unfrozen_at else "frozen"
        return f"card purchases of {self.account_id} {state}"

    @property
    def frozen(self) -> bool:
        return self.unfrozen_at is None
