"""The card side of card payments and card top-ups, and the Stripe events already handled.

Both models moved here from the orders app with their tables (``Meta.db_table``)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from reseller.money import MONEY


class CardCheckout(models.Model):
    """The card side of one card payment or one card top-up (docs/contract.md §4).

    Exactly one of ``payment`` and ``topup`` is set. It holds the Stripe objects of the
    current attempt: a SetupIntent the browser confirms, then the PaymentIntent the server
    creates and confirms. A failed attempt clears them and leaves the checkout payable again
    until ``expires_at``; ``completed_at`` is set once, when the money is taken.
    """

    account = models.ForeignKey(
        "accounts.Account", on_delete=models.PROTECT, related_name="+", verbose_name=_("account")
    )
    payment = models.OneToOneField(
        "payments.Payment",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="card_checkout",
        verbose_name=_("payment"),
    )
    topup = models.OneToOneField(
        "wallet.TopUp",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="card",
        verbose_name=_("top-up"),
    )
    cart = models.ForeignKey(
        "orders.Cart",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("cart"),
    )
    amount = models.DecimalField(_("amount"), **MONEY)
    currency = models.CharField(_("currency"), max_length=3)
    setup_intent_id = models.CharField(_("setup intent ID"), max_length=128, blank=True)
    payment_intent_id = models.CharField(
        _("payment intent ID"), max_length=128, blank=True, db_index=True
    )
    attempts = models.PositiveSmallIntegerField(_("attempts"), default=0)
    # Set while a PaymentIntent is being created on Stripe (no row lock is held meanwhile):
    # a concurrent checkout sees the attempt in flight and answers ``processing``.
    attempt_started_at = models.DateTimeField(_("attempt started at"), null=True, blank=True)
    # The cart lines this payment pays for: exactly these leave the cart when it succeeds.
    cart_item_ids = models.JSONField(_("cart item IDs"), default=list, blank=True)
    failure_code = models.CharField(_("failure code"), max_length=64, blank=True)
    # The card purchase limits (checkout.limits, docs/fraud.md): the card's Stripe fingerprint
    # once known, and since when this payment counts (its charge in flight, then captured).
    # Cleared again when the attempt fails; a payment never confirmed never counts.
    card_fingerprint = models.CharField(_("card fingerprint"), max_length=64, blank=True)
    limit_counted_at = models.DateTimeField(_("limit counted at"), null=True, blank=True)
    limit_amount_eur = models.DecimalField(_("limit amount (EUR)"), **MONEY, null=True, blank=True)
    # The client address of the checkout that charged it (per-address limits, a guest's too).
    client_address = models.GenericIPAddressField(_("client address"), null=True, blank=True)
    # A guest's purchase (no account; owned by the house guest account, docs/site.md): where
    # the receipt goes and in which language.
    guest_email = models.EmailField(_("guest email"), max_length=254, blank=True)
    guest_language = models.CharField(_("guest language"), max_length=5, blank=True)
    expires_at = models.DateTimeField(_("expires at"))
    completed_at = models.DateTimeField(_("completed at"), null=True, blank=True)
    created_at = models.DateTimeField(_("created at"), default=timezone.now, editable=False)
    updated_at = models.DateTimeField(_("updated at"), default=timezone.now)

    class Meta:
        verbose_name = _("card checkout")
        verbose_name_plural = _("card checkouts")
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
            models.Index(
                fields=["client_address", "limit_counted_at"],
                name="cardcheckout_limit_address",
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

    event_id = models.CharField(_("event ID"), max_length=255, unique=True)
    type = models.CharField(_("type"), max_length=100)
    payment_intent_id = models.CharField(_("payment intent ID"), max_length=128, blank=True)
    received_at = models.DateTimeField(_("received at"), default=timezone.now, editable=False)

    class Meta:
        verbose_name = _("Stripe event")
        verbose_name_plural = _("Stripe events")
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
    # When staff sent the prefilled evidence to Stripe (checkout.review), and by whom.
    evidence_submitted_at = models.DateTimeField(null=True, blank=True)
    evidence_submitted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name = _("card dispute")
        verbose_name_plural = _("card disputes")
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
    # Staff reviewed it and blocked the account's card purchases for good (still frozen).
    blocked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = _("card freeze")
        verbose_name_plural = _("card freezes")
        db_table = "checkout_cardfreeze"

    def __str__(self) -> str:
        state = "unfrozen" if self.unfrozen_at else "frozen"
        return f"card purchases of {self.account_id} {state}"

    @property
    def frozen(self) -> bool:
        return self.unfrozen_at is None


# The card limits staff can set per account, each with the setting it overrides
# (docs/fraud.md): (field, setting).
CARD_LIMITS = (
    ("new_account_days", "CARD_LIMIT_NEW_ACCOUNT_DAYS"),
    ("new_account_per_day", "CARD_LIMIT_NEW_ACCOUNT_PER_DAY"),
    ("new_account_amount_per_day", "CARD_LIMIT_NEW_ACCOUNT_AMOUNT_PER_DAY"),
    ("per_number_per_day", "CARD_LIMIT_PER_NUMBER_PER_DAY"),
    ("per_card_per_day", "CARD_LIMIT_PER_CARD_PER_DAY"),
    ("per_account_per_hour", "CARD_LIMIT_PER_ACCOUNT_PER_HOUR"),
    ("per_address_per_day", "CARD_LIMIT_PER_ADDRESS_PER_DAY"),
    ("per_address_per_hour", "CARD_LIMIT_PER_ADDRESS_PER_HOUR"),
    ("first_purchase_amount", "CARD_LIMIT_FIRST_PURCHASE_AMOUNT"),
)


def _limit_field(help_text: Any, verbose_name: Any) -> models.PositiveIntegerField:
    return models.PositiveIntegerField(verbose_name, null=True, blank=True, help_text=help_text)


class CardLimitOverride(models.Model):
    """An account's own card limits, set by staff (back office, ``set_card_limits``): each
    field set replaces its setting for this account's card purchases; blank keeps the
    setting. The per-number, per-card and per-address counts stay across all accounts: the
    account's own value is the cap its purchases are held to."""

    account = models.OneToOneField(
        "accounts.Account",
        on_delete=models.CASCADE,
        related_name="card_limits",
        verbose_name=_("account"),
    )
    new_account_days = _limit_field(
        _("Days an account is new (CARD_LIMIT_NEW_ACCOUNT_DAYS)."),
        verbose_name=_("new account days"),
    )
    new_account_per_day = _limit_field(
        _("Card payments of a new account in 24 h."), verbose_name=_("new account per day")
    )
    new_account_amount_per_day = _limit_field(
        _("EUR paid by card by a new account in 24 h."),
        verbose_name=_("new account amount per day"),
    )
    per_number_per_day = _limit_field(
        _("Card-paid recharges to one number in 24 h."), verbose_name=_("per number per day")
    )
    per_card_per_day = _limit_field(
        _("Payments with one card in 24 h."), verbose_name=_("per card per day")
    )
    per_account_per_hour = _limit_field(
        _("Card payments of the account in one hour."), verbose_name=_("per account per hour")
    )
    per_address_per_day = _limit_field(
        _("Card payments from one client address in 24 h."), verbose_name=_("per address per day")
    )
    per_address_per_hour = _limit_field(
        _("Card payments from one client address in one hour."),
        verbose_name=_("per address per hour"),
    )
    first_purchase_amount = _limit_field(
        _("EUR of the account's first card payment."), verbose_name=_("first purchase amount")
    )
    note = models.CharField(_("note"), max_length=255, blank=True)
    updated_at = models.DateTimeField(_("updated at"), default=timezone.now)
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        verbose_name=_("updated by"),
    )

    class Meta:
        db_table = "checkout_cardlimitoverride"
        verbose_name = _("card limits of an account")
        verbose_name_plural = _("card limits of accounts")

    def __str__(self) -> str:
        return f"card limits of {self.account_id}"


class CardKeyFreeze(models.Model):
    """A card (its Stripe fingerprint) or a recipient number frozen for card purchases by a
    dispute or an early fraud warning on a payment that used it, across all accounts, until
    staff review it (docs/fraud.md): unfrozen, or blocked for good. One row per card or
    number, kept after review and frozen again by the next dispute (unless blocked)."""

    class Kind(models.TextChoices):
        CARD = "card", _("Card")
        NUMBER = "number", _("Recipient number")

    class Status(models.TextChoices):
        FROZEN = "frozen", _("Frozen, to review")
        UNFROZEN = "unfrozen", _("Unfrozen")
        BLOCKED = "blocked", _("Blocked for good")

    kind = models.CharField(_("kind"), max_length=8, choices=Kind.choices)
    value = models.CharField(
        _("value"), max_length=64
    )  # the card's fingerprint or the E.164 number
    status = models.CharField(
        _("status"), max_length=8, choices=Status.choices, default=Status.FROZEN
    )
    reason = models.CharField(_("reason"), max_length=16)  # ``dispute`` or ``warning``
    cause = models.CharField(
        _("cause"), max_length=128, blank=True
    )  # the Stripe object that froze it
    account = models.ForeignKey(
        "accounts.Account", on_delete=models.PROTECT, related_name="+", verbose_name=_("account")
    )  # the account of the disputed payment
    checkout = models.ForeignKey(
        CardCheckout,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("checkout"),
    )  # the disputed payment
    frozen_at = models.DateTimeField(_("frozen at"), default=timezone.now)
    reviewed_at = models.DateTimeField(_("reviewed at"), null=True, blank=True)
    reviewed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        verbose_name=_("reviewed by"),
    )

    class Meta:
        db_table = "checkout_cardkeyfreeze"
        verbose_name = _("frozen card or number")
        verbose_name_plural = _("frozen cards and numbers")
        constraints = [
            models.UniqueConstraint(fields=["kind", "value"], name="card_key_freeze_once"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.value} {self.status}"
