"""Carts, orders and their lines, Idempotency-Key answers, card checkouts and batches.

An order's payment is ``payments.Payment`` and its recharges ``recharges.Recharge``."""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from reseller.ids import make_id
from reseller.money import MONEY


class IdempotencyRecord(models.Model):
    """The stored answer of one Idempotency-Key of one account and mode, kept 24 hours
    (docs/orders.md). Written in the transaction of the operation it answers: a row exists
    only for a request that finished; a running one holds the key's lock instead."""

    account = models.ForeignKey("accounts.Account", on_delete=models.CASCADE, related_name="+")
    livemode = models.BooleanField()
    key = models.CharField(max_length=255)
    fingerprint = models.CharField(max_length=64, help_text="SHA-256 of method, path and body")
    response_status = models.PositiveSmallIntegerField()
    response_body = models.JSONField()
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["account", "livemode", "key"], name="one_idempotency_key_per_scope"
            )
        ]

    def __str__(self) -> str:
        return f"{self.key} ({self.response_status})"


def _id(prefix: str) -> str:
    return make_id(prefix)


def new_cart_item_id() -> str:
    return _id("itm")


def new_order_id() -> str:
    return _id("ord")


# Payments and recharges have their own apps now; these two stay for the migrations that
# name them as defaults.
def new_payment_id() -> str:
    return _id("pay")


def new_recharge_id() -> str:
    return _id("rch")


def new_batch_id() -> str:
    return _id("bat")


class Cart(models.Model):
    """A caller-labelled cart (``sessionId``) of one account in one mode."""

    account = models.ForeignKey("accounts.Account", on_delete=models.CASCADE, related_name="carts")
    livemode = models.BooleanField(default=True)
    session_id = models.CharField(max_length=100)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["account", "livemode", "session_id"], name="one_cart_per_session"
            )
        ]

    def __str__(self) -> str:
        return f"cart {self.session_id} of {self.account}"


class CartItem(models.Model):
    public_id = models.CharField(max_length=40, unique=True, default=new_cart_item_id)
    cart = models.ForeignKey(Cart, on_delete=models.CASCADE, related_name="items")
    product = models.ForeignKey("catalog.Product", on_delete=models.PROTECT, related_name="+")
    recipient_number = models.CharField(max_length=20)
    quantity = models.PositiveSmallIntegerField()
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(quantity__gte=1) & models.Q(quantity__lte=20),
                name="cart_item_quantity_1_20",
            )
        ]

    def __str__(self) -> str:
        return self.public_id


class Order(models.Model):
    class Channel(models.TextChoices):
        WALLET = "wallet", "Wallet checkout"
        B2B = "b2b", "B2B API"
        CARD = "card", "Card checkout"
        BATCH = "batch", "B2B batch"

    public_id = models.CharField(max_length=40, unique=True, default=new_order_id)
    account = models.ForeignKey("accounts.Account", on_delete=models.PROTECT, related_name="orders")
    livemode = models.BooleanField(default=True)
    channel = models.CharField(max_length=8, choices=Channel.choices)
    total = models.DecimalField(**MONEY)
    currency = models.CharField(max_length=3)
    created_by = models.ForeignKey(
        "accounts.User", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    api_key = models.ForeignKey(
        "accounts.ApiKey", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now, editable=False, db_index=True)

    def __str__(self) -> str:
        return self.public_id


class OrderLine(models.Model):
    order = models.ForeignKey(Order, on_delete=models.CASCADE, related_name="lines")
    product = models.ForeignKey("catalog.Product", on_delete=models.PROTECT, related_name="+")
    recipient_number = models.CharField(max_length=20)
    quantity = models.PositiveSmallIntegerField()
    unit_price = models.DecimalField(**MONEY)
    line_total = models.DecimalField(**MONEY)
    promotion_name = models.CharField(max_length=200, blank=True)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"{self.quantity} x {self.product_id} to {self.recipient_number}"


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
        Cart, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
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
    expires_at = models.DateTimeField()
    completed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=models.Q(payment__isnull=False, topup__isnull=True)
                | models.Q(payment__isnull=True, topup__isnull=False),
                name="card_checkout_pays_one_thing",
            )
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

    def __str__(self) -> str:
        return f"{self.event_id} {self.type}"


class Batch(models.Model):
    """Many recharges sent as one (docs/contract.md §13): one order, one debit, its recharges
    run by the processor; ``completed_at`` is set (and ``batch.completed`` emitted) once every
    recharge is final."""

    public_id = models.CharField(max_length=40, unique=True, default=new_batch_id)
    account = models.ForeignKey("accounts.Account", on_delete=models.PROTECT, related_name="+")
    livemode = models.BooleanField(default=True)
    order = models.OneToOneField(Order, on_delete=models.PROTECT, related_name="batch")
    recharge_count = models.PositiveIntegerField()
    created_by = models.ForeignKey(
        "accounts.User", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    api_key = models.ForeignKey(
        "accounts.ApiKey", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["account", "livemode", "-id"], name="batch_recent"),
            models.Index(
                fields=["id"], condition=models.Q(completed_at__isnull=True), name="batch_running"
            ),
        ]

    def __str__(self) -> str:
        return self.public_id
