"""Reseller networks (contract section 18, docs/network.md): price lists, their rules and
their assignment to accounts, and the transfers between a parent and its direct agents.

An agent is an ``accounts.Account`` with a ``parent`` (written by the accounts app); its
wallet, keys, team and recharges are those of any account. What the network adds is here."""

from __future__ import annotations

from decimal import Decimal

from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from reseller.idempotency import StoredAnswer
from reseller.ids import make_id
from reseller.money import MONEY

MARKUP_LIMIT = Decimal(1000)


def new_price_list_id() -> str:
    return make_id("prl")


def new_transfer_id() -> str:
    return make_id("trf")


class PriceList(models.Model):
    """A named set of markups over the seller's own price: an account's for its agents, or
    the platform's (``owner`` null, made by staff) for top accounts."""

    public_id = models.CharField(max_length=40, unique=True, default=new_price_list_id)
    owner = models.ForeignKey(
        "accounts.Account",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="+",
        verbose_name=_("owner"),
        help_text=_("Empty: the platform's, for top accounts."),
    )
    name = models.CharField(_("name"), max_length=100)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name = _("price list")
        verbose_name_plural = _("price lists")
        ordering = ["name", "id"]
        constraints = [
            models.UniqueConstraint(fields=["owner", "name"], name="price_list_name_per_owner"),
            models.UniqueConstraint(
                fields=["name"],
                condition=models.Q(owner__isnull=True),
                name="platform_price_list_name",
            ),
        ]

    def __str__(self) -> str:
        return self.name


class PriceListRule(models.Model):
    """A markup over the seller's price for a country, an operator or one product (exactly
    one); the most specific rule of a list wins, and no rule is 0."""

    price_list = models.ForeignKey(PriceList, on_delete=models.CASCADE, related_name="rules")
    country = models.ForeignKey(
        "catalog.Country", null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    operator = models.ForeignKey(
        "catalog.Operator", null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    product = models.ForeignKey(
        "catalog.Product", null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    markup_percent = models.DecimalField(
        _("markup (%)"),
        max_digits=7,
        decimal_places=2,
        validators=[MinValueValidator(-Decimal(100)), MaxValueValidator(MARKUP_LIMIT)],
    )

    class Meta:
        verbose_name = _("price list rule")
        verbose_name_plural = _("price list rules")
        ordering = ["price_list_id", "country_id", "operator_id", "product_id"]
        constraints = [
            models.CheckConstraint(
                condition=(
                    models.Q(country__isnull=False, operator__isnull=True, product__isnull=True)
                    | models.Q(country__isnull=True, operator__isnull=False, product__isnull=True)
                    | models.Q(country__isnull=True, operator__isnull=True, product__isnull=False)
                ),
                name="price_list_rule_one_scope",
            ),
            models.CheckConstraint(
                condition=models.Q(markup_percent__gt=-100),
                name="price_list_rule_markup_over_minus_100",
            ),
        ]

    def __str__(self) -> str:
        scope = self.product_id or self.operator_id or self.country_id
        return f"{self.price_list_id}: {scope} {self.markup_percent}%"


class PriceListAssignment(models.Model):
    """The list that prices an account: its parent's choice for an agent, staff's (a
    platform list) for a top account. None: an agent pays its parent's price; a top account
    keeps its ``discount_percent``."""

    account = models.OneToOneField(
        "accounts.Account", on_delete=models.CASCADE, primary_key=True, related_name="+"
    )
    price_list = models.ForeignKey(PriceList, on_delete=models.PROTECT, related_name="+")
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        verbose_name = _("price list assignment")
        verbose_name_plural = _("price list assignments")

    def __str__(self) -> str:
        return f"{self.account_id}: {self.price_list_id}"


class Transfer(models.Model):
    """Money moved between a parent's wallet and one of its direct agents' wallets, in one
    transaction with a ledger entry on each side (``transfer_out``, ``transfer_in``)."""

    class Direction(models.TextChoices):
        TO_AGENT = "to_agent", _("to the agent")
        FROM_AGENT = "from_agent", _("from the agent")

    public_id = models.CharField(
        _("public ID"), max_length=40, unique=True, default=new_transfer_id
    )
    parent = models.ForeignKey(
        "accounts.Account", on_delete=models.PROTECT, related_name="+", verbose_name=_("parent")
    )
    agent = models.ForeignKey(
        "accounts.Account", on_delete=models.PROTECT, related_name="+", verbose_name=_("agent")
    )
    direction = models.CharField(_("direction"), max_length=10, choices=Direction.choices)
    amount = models.DecimalField(_("amount"), **MONEY)
    currency = models.CharField(_("currency"), max_length=3)
    memo = models.CharField(_("memo"), max_length=200, blank=True)
    created_by = models.ForeignKey(
        "accounts.User",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("created by"),
    )
    created_at = models.DateTimeField(
        _("created at"), default=timezone.now, editable=False, db_index=True
    )

    class Meta:
        verbose_name = _("transfer")
        verbose_name_plural = _("transfers")
        ordering = ["-id"]
        constraints = [
            models.CheckConstraint(condition=models.Q(amount__gt=0), name="transfer_positive")
        ]

    def __str__(self) -> str:
        return self.public_id


class TransferKey(StoredAnswer):
    """The stored answer of one Idempotency-Key of ``POST /network/transfers``, kept 24 hours
    (``reseller.idempotency``, the mechanism orders use with ``orders.IdempotencyRecord``).
    Written in the transfer's transaction: a row exists only for a request that finished."""

    class Meta:
        verbose_name = _("transfer idempotency key")
        verbose_name_plural = _("transfer idempotency keys")
        constraints = [
            models.UniqueConstraint(
                fields=["account", "livemode", "key"], name="one_transfer_key_per_scope"
            )
        ]


class Commission(models.Model):
    """What one ancestor earned on one delivered recharge of its branch (contract section
    18, "Commissions"): its child's price less its own, credited to its wallet (a
    ``commission`` ledger entry with the same reference) in the delivery's transaction; taken
    back once (``commission_reversal``, ``reversed_at``) if the provider reverses the
    recharge. One row per ancestor and recharge, even at 0.00 (a list without markup), so
    the commissions report counts every sale of a branch."""

    account = models.ForeignKey(
        "accounts.Account", on_delete=models.PROTECT, related_name="+", verbose_name=_("earner")
    )
    # The earner's direct agent whose branch (it or its descendants) made the sale.
    branch = models.ForeignKey(
        "accounts.Account", on_delete=models.PROTECT, related_name="+", verbose_name=_("branch")
    )
    buyer = models.ForeignKey(
        "accounts.Account", on_delete=models.PROTECT, related_name="+", verbose_name=_("buyer")
    )
    # The recharge's public id, and the reference of its payment cycle (the ledger's).
    recharge = models.CharField(_("recharge"), max_length=40)
    reference = models.CharField(_("reference"), max_length=64)
    amount = models.DecimalField(_("commission"), **MONEY)
    sale = models.DecimalField(_("sale"), **MONEY, help_text=_("What the buyer paid."))
    currency = models.CharField(_("currency"), max_length=3)
    created_at = models.DateTimeField(
        _("created at"), default=timezone.now, editable=False, db_index=True
    )
    reversed_at = models.DateTimeField(_("taken back"), null=True, blank=True)

    class Meta:
        verbose_name = _("commission")
        verbose_name_plural = _("commissions")
        ordering = ["-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["account", "reference"], name="one_commission_per_ancestor_and_sale"
            ),
            models.CheckConstraint(
                condition=models.Q(amount__gte=0), name="commission_not_negative"
            ),
        ]
        indexes = [
            models.Index(fields=["account", "created_at"], name="commission_period"),
            models.Index(fields=["reference"], name="commission_by_sale"),
        ]

    def __str__(self) -> str:
        return f"{self.reference} → {self.account_id}: {self.amount} {self.currency}"
