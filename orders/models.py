"""Carts, orders and their lines, Idempotency-Key answers and batches.

An order's payment is ``payments.Payment``, its recharges ``recharges.Recharge`` and the card
side of a card payment ``checkout.CardCheckout``."""

from __future__ import annotations

from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from reseller.idempotency import StoredAnswer
from reseller.ids import make_id
from reseller.money import MONEY


class IdempotencyRecord(StoredAnswer):
    """The stored answer of one Idempotency-Key of one account and mode, kept 24 hours
    (docs/orders.md). Written in the transaction of the operation it answers: a row exists
    only for a request that finished; a running one holds the key's lock instead."""

    class Meta:
        verbose_name = _("idempotency record")
        verbose_name_plural = _("idempotency records")
        constraints = [
            models.UniqueConstraint(
                fields=["account", "livemode", "key"], name="one_idempotency_key_per_scope"
            )
        ]


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


DEFAULT_SESSION = "default"  # the cart of a caller that names none when adding


class Cart(models.Model):
    """A caller-labelled cart (``sessionId``) of one account in one mode."""

    account = models.ForeignKey(
        "accounts.Account",
        on_delete=models.CASCADE,
        related_name="carts",
        verbose_name=_("account"),
    )
    livemode = models.BooleanField(_("live mode"), default=True)
    session_id = models.CharField(_("session ID"), max_length=100)
    created_at = models.DateTimeField(_("created at"), default=timezone.now, editable=False)
    updated_at = models.DateTimeField(_("updated at"), default=timezone.now)

    class Meta:
        verbose_name = _("cart")
        verbose_name_plural = _("carts")
        constraints = [
            models.UniqueConstraint(
                fields=["account", "livemode", "session_id"], name="one_cart_per_session"
            )
        ]

    def __str__(self) -> str:
        return f"cart {self.session_id} of {self.account}"


class CartItem(models.Model):
    public_id = models.CharField(
        _("public ID"), max_length=40, unique=True, default=new_cart_item_id
    )
    cart = models.ForeignKey(
        Cart, on_delete=models.CASCADE, related_name="items", verbose_name=_("cart")
    )
    product = models.ForeignKey(
        "catalog.Product", on_delete=models.PROTECT, related_name="+", verbose_name=_("product")
    )
    recipient_number = models.CharField(_("recipient number"), max_length=20)
    quantity = models.PositiveSmallIntegerField(_("quantity"))
    # The amount the recipient gets, in the product's local currency: chosen for a range
    # product, the face value for a fixed one (contract section 17).
    local_amount = models.DecimalField(_("local amount"), **MONEY, null=True, blank=True)
    # The extra fields the product needs (catalog.fields), clean: {"senderPhone": "+1…"}.
    fields = models.JSONField(_("fields"), default=dict, blank=True)
    created_at = models.DateTimeField(_("created at"), default=timezone.now, editable=False)

    class Meta:
        verbose_name = _("cart item")
        verbose_name_plural = _("cart items")
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

    public_id = models.CharField(_("public ID"), max_length=40, unique=True, default=new_order_id)
    account = models.ForeignKey(
        "accounts.Account",
        on_delete=models.PROTECT,
        related_name="orders",
        verbose_name=_("account"),
    )
    livemode = models.BooleanField(_("live mode"), default=True)
    channel = models.CharField(_("channel"), max_length=8, choices=Channel.choices)
    total = models.DecimalField(_("total"), **MONEY)
    currency = models.CharField(_("currency"), max_length=3)
    created_by = models.ForeignKey(
        "accounts.User",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("created by"),
    )
    api_key = models.ForeignKey(
        "accounts.ApiKey",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("API key"),
    )
    # ``whenPromotionScheduled`` (contract §5): "wait" (True, the default) holds recharges of a
    # product whose promotion starts soon until it starts; "sendNow" (False) sends them at once.
    promotion_wait = models.BooleanField(_("promotion wait"), default=True)
    # A guest's order (no user): where its receipts go, the one at payment and a PIN's
    # later (recharges.pins). Empty for an account's order: its user's address is used.
    receipt_email = models.EmailField(_("receipt email"), max_length=254, blank=True)
    receipt_language = models.CharField(_("receipt language"), max_length=5, blank=True)
    # The Idempotency-Key it was placed with (wallet checkout, B2B, a batch): the recharge
    # search's ``idempotencyKey`` finds it after the key's stored answer is purged (24 h).
    idempotency_key = models.CharField(
        _("idempotency key"), max_length=255, blank=True, default="", editable=False
    )
    created_at = models.DateTimeField(
        _("created at"), default=timezone.now, editable=False, db_index=True
    )

    class Meta:
        verbose_name = _("order")
        verbose_name_plural = _("orders")
        indexes = [
            models.Index(
                fields=["account", "livemode", "idempotency_key"],
                condition=~models.Q(idempotency_key=""),
                name="order_idempotency_key",
            )
        ]

    def __str__(self) -> str:
        return self.public_id


class OrderLine(models.Model):
    order = models.ForeignKey(
        Order, on_delete=models.CASCADE, related_name="lines", verbose_name=_("order")
    )
    product = models.ForeignKey(
        "catalog.Product", on_delete=models.PROTECT, related_name="+", verbose_name=_("product")
    )
    recipient_number = models.CharField(_("recipient number"), max_length=20)
    quantity = models.PositiveSmallIntegerField(_("quantity"))
    local_amount = models.DecimalField(_("local amount"), **MONEY, null=True, blank=True)
    fields = models.JSONField(_("fields"), default=dict, blank=True)
    unit_price = models.DecimalField(_("unit price"), **MONEY)
    line_total = models.DecimalField(_("line total"), **MONEY)
    promotion_name = models.CharField(_("promotion name"), max_length=200, blank=True)

    class Meta:
        verbose_name = _("order line")
        verbose_name_plural = _("order lines")
        ordering = ["id"]

    def __str__(self) -> str:
        return f"{self.quantity} x {self.product_id} to {self.recipient_number}"

    @property
    def face_value(self):
        """What each recharge of the line sends, in the product's local currency
        (``local_amount``, or the product's face value on lines older than ranges)."""
        return self.local_amount if self.local_amount is not None else self.product.local_amount


class Batch(models.Model):
    """Many recharges sent as one (docs/contract.md §13): one order, one debit, its recharges
    run by the processor; ``completed_at`` is set (and ``batch.completed`` emitted) once every
    recharge is final."""

    public_id = models.CharField(_("public ID"), max_length=40, unique=True, default=new_batch_id)
    account = models.ForeignKey(
        "accounts.Account", on_delete=models.PROTECT, related_name="+", verbose_name=_("account")
    )
    livemode = models.BooleanField(_("live mode"), default=True)
    order = models.OneToOneField(
        Order, on_delete=models.PROTECT, related_name="batch", verbose_name=_("order")
    )
    recharge_count = models.PositiveIntegerField(_("recharge count"))
    created_by = models.ForeignKey(
        "accounts.User",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("created by"),
    )
    api_key = models.ForeignKey(
        "accounts.ApiKey",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("API key"),
    )
    created_at = models.DateTimeField(_("created at"), default=timezone.now, editable=False)
    completed_at = models.DateTimeField(_("completed at"), null=True, blank=True)

    class Meta:
        verbose_name = _("batch")
        verbose_name_plural = _("batches")
        indexes = [
            models.Index(fields=["account", "livemode", "-id"], name="batch_recent"),
            models.Index(
                fields=["id"], condition=models.Q(completed_at__isnull=True), name="batch_running"
            ),
        ]

    def __str__(self) -> str:
        return self.public_id
