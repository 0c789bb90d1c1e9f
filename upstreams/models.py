"""Upstream providers as data (docs/contract.md §14; docs/providers.md).

- ``Provider``: one account at an upstream aggregator (two Reloadly accounts are two rows),
  with its secrets (stored, never shown again), its priority, its ceiling of calls in flight
  and the balance last read from it.
- ``ProviderOperator``: an operator as the provider lists it, mapped to one catalog operator
  (by name at sync time, or by staff).
- ``Route``: one catalog product as one provider sells it, with what it costs us. A product
  sold by three providers has three routes; the processor sends each recharge by the
  cheapest healthy one (``upstreams.routing``).
- ``SkippedOffer``: an upstream product the last sync could not sell, with the reason.
- ``PriceRule``: a markup over the cheapest healthy route's cost for a country, an operator
  or a product; the most specific wins (``upstreams.pricing``, docs/pricing.md).
"""

from __future__ import annotations

from decimal import ROUND_CEILING, Decimal
from typing import Any

from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from reseller.money import MONEY

# A route's cost keeps the provider's precision (a 7.5% discount on 5.00 is 4.625).
COST: dict[str, Any] = {"max_digits": 14, "decimal_places": 4}


class Provider(models.Model):
    class Kind(models.TextChoices):
        SIMULATOR = "simulator", _("Simulator (built in)")
        RELOADLY = "reloadly", "Reloadly"
        DTONE = "dtone", "DT One"
        DING = "ding", "DingConnect"

    name = models.SlugField(_("name"), max_length=32, unique=True)
    kind = models.CharField(_("kind"), max_length=16, choices=Kind.choices)
    enabled = models.BooleanField(_("enabled"), default=True)
    priority = models.PositiveSmallIntegerField(
        _("priority"), default=100, help_text=_("Between routes of equal cost, lower goes first.")
    )
    base_url = models.URLField(_("API base URL"), blank=True)
    auth_url = models.URLField(_("auth URL"), blank=True)
    client_id = models.CharField(_("client id"), max_length=200, blank=True)
    # Secrets: written once, never shown again (forms and APIs show only whether one is set).
    client_secret = models.CharField(_("client secret"), max_length=500, blank=True)
    api_key = models.CharField(_("API key"), max_length=500, blank=True)
    api_secret = models.CharField(_("API secret"), max_length=500, blank=True)
    # Set by staff for a provider that calls back (DT One): the callback URL we send carries
    # it as HTTP Basic credentials, and a callback without them is refused (docs/providers.md).
    callback_secret = models.CharField(_("callback secret"), max_length=200, blank=True)
    currency = models.CharField(
        _("account currency"),
        max_length=3,
        blank=True,
        help_text=_("When the provider does not say."),
    )
    max_in_flight = models.PositiveIntegerField(
        _("calls in flight at most"), default=50, help_text=_("0: no ceiling.")
    )
    balance = models.DecimalField(_("balance"), **MONEY, null=True, blank=True)
    balance_currency = models.CharField(_("balance currency"), max_length=3, blank=True)
    balance_checked_at = models.DateTimeField(_("balance checked at"), null=True, blank=True)
    balance_alerted = models.BooleanField(
        _("balance alerted"), default=False
    )  # an alert sent since it last rose
    synced_at = models.DateTimeField(_("catalog synced at"), null=True, blank=True)
    created_at = models.DateTimeField(_("created at"), default=timezone.now, editable=False)
    updated_at = models.DateTimeField(_("updated at"), default=timezone.now)

    class Meta:
        verbose_name = _("provider")
        verbose_name_plural = _("providers")
        ordering = ["priority", "name"]

    def __str__(self) -> str:
        return self.name


class ProviderOperator(models.Model):
    """An operator as one provider lists it; ``operator`` is the catalog's, once mapped."""

    class MappedBy(models.TextChoices):
        NAME = "name", _("by name")
        STAFF = "staff", _("by staff")

    provider = models.ForeignKey(
        Provider, on_delete=models.CASCADE, related_name="operators", verbose_name=_("provider")
    )
    upstream_id = models.CharField(_("upstream ID"), max_length=64)
    name = models.CharField(_("name"), max_length=150)
    country = models.CharField(_("country"), max_length=2)
    operator = models.ForeignKey(
        "catalog.Operator",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("operator"),
    )
    mapped_by = models.CharField(_("mapped by"), max_length=8, choices=MappedBy.choices, blank=True)
    updated_at = models.DateTimeField(_("updated at"), default=timezone.now)

    class Meta:
        verbose_name = _("provider operator")
        verbose_name_plural = _("provider operators")
        ordering = ["provider", "country", "name"]
        constraints = [
            models.UniqueConstraint(
                fields=["provider", "upstream_id"], name="provider_operator_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.provider.name}:{self.upstream_id} {self.name}"


class Route(models.Model):
    """One catalog product as one provider sells it. ``cost``: what that provider debits
    our account for one unit, in its account's currency, as it documents it."""

    provider = models.ForeignKey(
        Provider, on_delete=models.CASCADE, related_name="routes", verbose_name=_("provider")
    )
    upstream_operator = models.ForeignKey(
        ProviderOperator,
        on_delete=models.CASCADE,
        related_name="routes",
        verbose_name=_("upstream operator"),
    )
    product = models.ForeignKey(
        "catalog.Product", on_delete=models.CASCADE, related_name="+", verbose_name=_("product")
    )
    sku = models.CharField(_("SKU"), max_length=64, blank=True)
    send_value = models.DecimalField(_("send value"), **MONEY, null=True, blank=True)
    send_currency = models.CharField(_("send currency"), max_length=3, blank=True)
    cost = models.DecimalField(_("cost"), **COST)
    cost_currency = models.CharField(_("cost currency"), max_length=3)
    # A range route (contract section 17) takes any local amount min_amount, min_amount +
    # step, … up to max_amount and costs ``cost + amount * cost_per_unit`` (cost_currency):
    # Reloadly's amount over its FX rate less its discount, DT One's amount over its
    # wholesale rate plus its fee, Ding's send value between its Minimum and Maximum.
    min_amount = models.DecimalField(_("min amount"), **MONEY, null=True, blank=True)
    max_amount = models.DecimalField(_("max amount"), **MONEY, null=True, blank=True)
    step = models.DecimalField(_("step"), **MONEY, null=True, blank=True)
    cost_per_unit = models.DecimalField(
        _("cost per unit"), max_digits=18, decimal_places=10, null=True, blank=True
    )
    # What to send in the provider's terms for an amount of a range route, where it wants
    # more than the local amount (Ding's SendValue): ``send_value`` for ``min_amount``, and
    # ``send_per_unit`` more for each unit above it (``send_value_at``). The simulator row
    # keeps here what each amount was worth when it first offered it (its cost is a share of
    # that: upstreams.adapters.simulator), and ignores it when it is sent.
    send_per_unit = models.DecimalField(
        _("send per unit"), max_digits=18, decimal_places=10, null=True, blank=True
    )
    # What this provider needs besides the number to sell it (catalog.fields.FIELD_NAMES).
    required_fields = models.JSONField(_("required fields"), default=list, blank=True)
    # The provider's own name of each field it takes, where it names them per product
    # (Ding's settings: ``{"senderName": "SenderName"}``); sent with the top-up.
    field_names = models.JSONField(_("field names"), default=dict, blank=True)
    active = models.BooleanField(_("active"), default=True)
    updated_at = models.DateTimeField(_("updated at"), default=timezone.now)

    class Meta:
        verbose_name = _("route")
        verbose_name_plural = _("routes")
        ordering = ["product", "cost"]
        constraints = [models.UniqueConstraint(fields=["provider", "product"], name="route_unique")]
        indexes = [models.Index(fields=["product", "active"], name="route_by_product")]

    def __str__(self) -> str:
        return f"{self.provider.name}: {self.product.name} ({self.cost} {self.cost_currency})"

    @property
    def is_range(self) -> bool:
        return self.cost_per_unit is not None

    def accepts(self, amount: Decimal | None) -> bool:
        """Does this route take ``amount`` (the local amount of a range product's line; None
        for a fixed product, which it sells as it is)?"""
        if not self.is_range:
            return True
        if amount is None or self.min_amount is None or self.max_amount is None:
            return False
        step = self.step or Decimal("0.01")
        return (
            self.min_amount <= amount <= self.max_amount and (amount - self.min_amount) % step == 0
        )

    def send_value_at(self, amount: Decimal | None) -> Decimal | None:
        """What to send for one unit of ``amount`` on a range route with ``send_per_unit``:
        ``send_value`` (what ``min_amount`` sends) plus the amount over ``min_amount`` times
        ``send_per_unit``, rounded up to the cent, so the recipient gets at least
        ``amount``; ``send_value`` itself elsewhere."""
        if (
            self.send_per_unit is None
            or amount is None
            or self.send_value is None
            or self.min_amount is None
        ):
            return self.send_value
        line = self.send_value + (amount - self.min_amount) * self.send_per_unit
        return line.quantize(Decimal("0.01"), rounding=ROUND_CEILING)

    def cost_at(self, amount: Decimal | None) -> Decimal:
        """What one unit of ``amount`` costs here, in ``cost_currency``."""
        if not self.is_range or amount is None:
            return self.cost
        assert self.cost_per_unit is not None
        return (self.cost + amount * self.cost_per_unit).quantize(Decimal("0.0001"))


class SkippedOffer(models.Model):
    """An upstream product the last catalog sync could not sell, and why (contract section
    17: the back office lists them). Each sync replaces its provider's rows."""

    provider = models.ForeignKey(
        Provider,
        on_delete=models.CASCADE,
        related_name="skipped_offers",
        verbose_name=_("provider"),
    )
    upstream_operator_id = models.CharField(_("upstream operator"), max_length=64, blank=True)
    operator_name = models.CharField(_("operator name"), max_length=150, blank=True)
    country = models.CharField(_("country"), max_length=2, blank=True)
    upstream_product_id = models.CharField(_("upstream product"), max_length=64, blank=True)
    name = models.CharField(_("name"), max_length=200, blank=True)
    reason = models.CharField(_("reason"), max_length=300)
    seen_at = models.DateTimeField(_("seen at"), default=timezone.now)

    class Meta:
        verbose_name = _("skipped offer")
        verbose_name_plural = _("skipped offers")
        ordering = ["provider", "country", "operator_name", "upstream_product_id"]

    def __str__(self) -> str:
        return f"{self.provider.name}: {self.name or self.upstream_product_id} ({self.reason})"


MARKUP_MAX = Decimal(1000)


class PriceRule(models.Model):
    """Price the products of a country, an operator or one product at ``markup_percent``
    over their cheapest healthy route's cost. Exactly one of the three is set; a product's
    rule beats its operator's, which beats its country's."""

    class Scope(models.TextChoices):
        PRODUCT = "product", _("product")
        OPERATOR = "operator", _("operator")
        COUNTRY = "country", _("country")

    country = models.ForeignKey(
        "catalog.Country",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="+",
        verbose_name=_("country"),
    )
    operator = models.ForeignKey(
        "catalog.Operator",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="+",
        verbose_name=_("operator"),
    )
    product = models.ForeignKey(
        "catalog.Product",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="+",
        verbose_name=_("product"),
    )
    markup_percent = models.DecimalField(
        _("markup (%)"),
        max_digits=7,
        decimal_places=2,
        validators=[MinValueValidator(Decimal(0)), MaxValueValidator(MARKUP_MAX)],
        help_text=_("Over the cheapest healthy route's cost, e.g. 12.5."),
    )
    created_at = models.DateTimeField(_("created at"), default=timezone.now, editable=False)
    updated_at = models.DateTimeField(_("updated at"), default=timezone.now)

    class Meta:
        verbose_name = _("price rule")
        verbose_name_plural = _("price rules")
        ordering = ["country_id", "operator_id", "product_id"]
        constraints = [
            models.CheckConstraint(
                condition=(
                    models.Q(country__isnull=False, operator__isnull=True, product__isnull=True)
                    | models.Q(country__isnull=True, operator__isnull=False, product__isnull=True)
                    | models.Q(country__isnull=True, operator__isnull=True, product__isnull=False)
                ),
                name="price_rule_one_scope",
            ),
            models.CheckConstraint(
                condition=models.Q(markup_percent__gte=0), name="price_rule_markup_not_negative"
            ),
            models.UniqueConstraint(
                fields=["country"],
                condition=models.Q(country__isnull=False),
                name="price_rule_country_unique",
            ),
            models.UniqueConstraint(
                fields=["operator"],
                condition=models.Q(operator__isnull=False),
                name="price_rule_operator_unique",
            ),
            models.UniqueConstraint(
                fields=["product"],
                condition=models.Q(product__isnull=False),
                name="price_rule_product_unique",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.scope} {self.target}: +{self.markup_percent}%"

    @property
    def scope(self) -> str:
        if self.product_id is not None:
            return self.Scope.PRODUCT
        if self.operator_id is not None:
            return self.Scope.OPERATOR
        return self.Scope.COUNTRY

    @property
    def target(self) -> str:
        """The public id of what it prices: ``prd_…``, ``opr_…`` or the country code."""
        if self.product is not None:
            return self.product.public_id
        if self.operator is not None:
            return self.operator.public_id
        return str(self.country_id)
