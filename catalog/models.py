"""Countries, operators, recharge products, promotions and FX rates.

Money is ``NUMERIC(12,2)`` with its ISO 4217 currency beside it. Texts shown to people
(names, promotion descriptions and terms) are English in their column and translated in
``translations`` (see ``catalog.i18n``).
"""

from __future__ import annotations

from datetime import datetime
from decimal import ROUND_CEILING, Decimal
from typing import Any

from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator, RegexValidator
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from catalog.benefits import benefits_clean
from catalog.i18n import Localized, clean_translations
from catalog.ids import operator_public_id, product_public_id, promotion_public_id

currency_validator = RegexValidator(r"^[A-Z]{3}$", _("Use an ISO 4217 code such as EUR."))
country_code_validator = RegexValidator(r"^[A-Z]{2}$", _("Use an ISO 3166-1 alpha-2 code."))
colour_validator = RegexValidator(r"^#[0-9a-fA-F]{6}$", _("Use a colour such as #0a7d5a."))
prefix_validator = RegexValidator(r"^[0-9]{1,12}$")


class TranslatableModel(models.Model):
    """A model whose TRANSLATABLE_FIELDS have ``<field>_localized`` and JSON translations."""

    TRANSLATABLE_FIELDS: tuple[str, ...] = ("name",)

    translations = models.JSONField(
        _("translations"),
        default=dict,
        blank=True,
        help_text=_('Per language, e.g. {"es": {"name": "…"}, "fr": {"name": "…"}}.'),
    )

    class Meta:
        abstract = True

    def clean(self) -> None:
        super().clean()
        try:
            self.translations = clean_translations(
                self.translations, fields=self.TRANSLATABLE_FIELDS
            )
        except ValidationError as exc:
            raise ValidationError({"translations": exc.messages}) from exc


class Country(TranslatableModel):
    code = models.CharField(
        _("ISO code"),
        max_length=2,
        primary_key=True,
        validators=[country_code_validator],
        help_text=_("ISO 3166-1 alpha-2, e.g. MX."),
    )
    name = models.CharField(_("name"), max_length=100)
    calling_code = models.CharField(
        _("calling code"),
        max_length=5,
        validators=[RegexValidator(r"^\+[1-9][0-9]{0,3}$")],
        help_text=_("With the plus sign, e.g. +52."),
    )
    currency = models.CharField(_("currency"), max_length=3, validators=[currency_validator])
    active = models.BooleanField(_("active"), default=True)

    name_localized = Localized("name")

    class Meta:
        verbose_name = _("country")
        verbose_name_plural = _("countries")
        ordering = ["name"]

    def __str__(self) -> str:
        return f"{self.name} ({self.code})"

    @property
    def flag(self) -> str:
        """The flag emoji (two regional indicator symbols)."""
        return "".join(chr(0x1F1E6 + ord(letter) - ord("A")) for letter in self.code.upper())


class Operator(TranslatableModel):
    public_id = models.CharField(_("id"), max_length=40, unique=True, editable=False)
    country = models.ForeignKey(
        Country, on_delete=models.PROTECT, related_name="operators", verbose_name=_("country")
    )
    slug = models.SlugField(_("slug"), max_length=50, help_text=_("Unique within the country."))
    name = models.CharField(_("name"), max_length=100)
    color = models.CharField(
        _("brand colour"), max_length=7, default="#5f6b7a", validators=[colour_validator]
    )
    logo_url = models.URLField(_("logo URL"), blank=True)
    carrier_names = models.JSONField(
        _("carrier names"),
        default=list,
        blank=True,
        help_text=_(
            "Names the phonenumbers library gives this operator's ranges, e.g. "
            '["Reliance Jio"]. Used to detect the operator of a number.'
        ),
    )
    prefixes = models.JSONField(
        _("number prefixes"),
        default=list,
        blank=True,
        help_text=_(
            "National number prefixes (digits after the country calling code) of this "
            'operator, e.g. ["300", "301"]. They win over the carrier names.'
        ),
    )
    active = models.BooleanField(_("active"), default=True)

    name_localized = Localized("name")

    class Meta:
        verbose_name = _("operator")
        verbose_name_plural = _("operators")
        ordering = ["country_id", "name"]
        constraints = [
            models.UniqueConstraint(fields=["country", "slug"], name="operator_country_slug_unique")
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.country_id})"

    def save(self, *args, **kwargs) -> None:
        if not self.public_id:
            self.public_id = operator_public_id(self.country_id, self.slug)
        super().save(*args, **kwargs)

    def clean(self) -> None:
        super().clean()
        errors = {}
        if not isinstance(self.carrier_names, list) or not all(
            isinstance(name, str) and name.strip() for name in self.carrier_names
        ):
            errors["carrier_names"] = _("A list of names.")
        if not isinstance(self.prefixes, list) or not all(
            isinstance(p, str) and prefix_validator.regex.match(p)  # type: ignore[union-attr]
            for p in self.prefixes
        ):
            errors["prefixes"] = _("A list of digit strings.")
        if errors:
            raise ValidationError(errors)


class ProductType(models.TextChoices):
    """What a product gives (contract section 17, "Kinds")."""

    AIRTIME = "airtime", _("Airtime")
    DATA = "data", _("Data bundle")
    BUNDLE = "bundle", _("Bundle")  # data, minutes and/or SMS together
    # A code the customer enters (contract section 17, "PINs"), delivered encrypted at rest.
    PIN = "pin", _("PIN")


class Denomination(models.TextChoices):
    """How the amount the recipient gets is set (contract section 17)."""

    FIXED = "fixed", _("Fixed amount")
    RANGE = "range", _("Any amount in a range")


CENT = Decimal("0.01")

# The extra fields a line may carry (catalog.fields, contract section 17).
EXTRA_FIELDS = ("senderName", "senderPhone", "recipientEmail", "recipientName")


def ceil_cent(value: Decimal) -> Decimal:
    """``value`` rounded up to the cent (a range product's price of an amount)."""
    return value.quantize(CENT, rounding=ROUND_CEILING)


def on_step(amount: Decimal, *, low: Decimal, high: Decimal, step: Decimal) -> bool:
    """Is ``amount`` one of ``low``, ``low + step``, … up to ``high``?"""
    return low <= amount <= high and (amount - low) % step == 0


class Product(TranslatableModel):
    TRANSLATABLE_FIELDS = ("name", "description")

    public_id = models.CharField(_("id"), max_length=40, unique=True, editable=False)
    sku = models.CharField(
        _("SKU"),
        max_length=64,
        unique=True,
        help_text=_("The provider's product code; the key of catalog imports."),
    )
    operator = models.ForeignKey(
        Operator, on_delete=models.PROTECT, related_name="products", verbose_name=_("operator")
    )
    # Copied from the operator on save: the country filter and ordering stay on one table.
    country = models.ForeignKey(
        Country,
        on_delete=models.PROTECT,
        related_name="products",
        editable=False,
        verbose_name=_("country"),
    )
    name = models.CharField(_("name"), max_length=150)
    description = models.CharField(_("description"), max_length=300, blank=True)
    product_type = models.CharField(
        _("type"), max_length=10, choices=ProductType.choices, default=ProductType.AIRTIME
    )
    denomination = models.CharField(
        _("denomination"),
        max_length=5,
        choices=Denomination.choices,
        default=Denomination.FIXED,
        help_text=_("Fixed: one face value and price. Range: the buyer chooses the amount."),
    )
    local_amount = models.DecimalField(
        _("face value"),
        max_digits=12,
        decimal_places=2,
        null=True,
        blank=True,
        validators=[MinValueValidator(Decimal("0.01"))],
        help_text=_("What the recipient gets, in the local currency. Empty for a range."),
    )
    local_currency = models.CharField(
        _("local currency"), max_length=3, validators=[currency_validator]
    )
    retail_price = models.DecimalField(
        _("price"),
        max_digits=12,
        decimal_places=2,
        null=True,
        blank=True,
        validators=[MinValueValidator(Decimal("0.01"))],
        help_text=_("Empty for a range: its price comes from the rate and fee."),
    )
    # A range product (contract section 17): amounts range_min, range_min + range_step, …
    # up to range_max, in the local currency; the price of an amount A is
    # A / pricing_rate + pricing_fee, rounded up to the cent, in retail_currency.
    range_min = models.DecimalField(
        _("smallest amount"), max_digits=12, decimal_places=2, null=True, blank=True
    )
    range_max = models.DecimalField(
        _("largest amount"), max_digits=12, decimal_places=2, null=True, blank=True
    )
    range_step = models.DecimalField(
        _("amount step"), max_digits=12, decimal_places=2, null=True, blank=True
    )
    pricing_rate = models.DecimalField(
        _("rate"),
        max_digits=18,
        decimal_places=8,
        null=True,
        blank=True,
        help_text=_("Local currency per unit of the price's currency."),
    )
    pricing_fee = models.DecimalField(
        _("fee"), max_digits=12, decimal_places=2, null=True, blank=True
    )
    retail_currency = models.CharField(
        _("price currency"), max_length=3, default="EUR", validators=[currency_validator]
    )
    validity_days = models.PositiveIntegerField(
        _("validity (days)"), null=True, blank=True, help_text=_("Empty: does not expire.")
    )
    # What a data, bundle or PIN product gives (catalog.benefits): a list of
    # {"kind", "amount", "unit", "text"}, e.g. [{"kind": "data", "amount": "5", "unit": "GB",
    # "text": "5GB"}]; empty for airtime. Set by the sync from its provider's description.
    benefits = models.JSONField(
        _("benefits"),
        default=list,
        blank=True,
        help_text=_(
            'What it gives, e.g. [{"kind": "data", "amount": "5", "unit": "GB", "text": ""}]; '
            "kind: data, voice, sms, credit or other; amount a number as text, or null."
        ),
    )
    # What a line of it must carry besides the number (catalog.fields, contract section 17):
    # names from catalog.fields.FIELD_NAMES, e.g. ["senderPhone"]; set by the sync from its
    # routes' providers.
    required_fields = models.JSONField(
        _("required fields"),
        default=list,
        blank=True,
        help_text=_(
            "What a buyer must give besides the number: senderName, senderPhone, "
            "recipientEmail, recipientName."
        ),
    )
    active = models.BooleanField(_("active"), default=True)
    # False while its price leaves less than PRICE_MIN_MARGIN_PERCENT over its cheapest
    # healthy route's cost (docs/pricing.md): left out of the catalog, refused at checkout.
    # Written only by ``catalog.services.product_prices_set`` (upstreams.pricing decides).
    offered = models.BooleanField(
        _("offered"),
        default=True,
        editable=False,
        help_text=_("No: its price is too close to what its cheapest route costs."),
    )
    created_at = models.DateTimeField(_("created"), default=timezone.now, editable=False)
    updated_at = models.DateTimeField(_("updated"), default=timezone.now, editable=False)

    name_localized = Localized("name")
    description_localized = Localized("description")

    class Meta:
        verbose_name = _("recharge product")
        verbose_name_plural = _("recharge products")
        ordering = ["country_id", "operator_id", "product_type", "local_amount", "id"]
        indexes = [
            # The catalog listing: active products of a country in catalog order.
            models.Index(
                fields=["country", "operator", "product_type", "local_amount", "id"],
                condition=models.Q(active=True),
                name="product_active_listing_idx",
            ),
            models.Index(fields=["retail_price"], name="product_retail_price_idx"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(local_amount__gt=0), name="product_local_amount_positive"
            ),
            models.CheckConstraint(
                condition=models.Q(retail_price__gt=0), name="product_retail_price_positive"
            ),
            # A fixed product has its face value and price; a range its bounds and step.
            models.CheckConstraint(
                condition=(
                    models.Q(
                        denomination="fixed",
                        local_amount__isnull=False,
                        retail_price__isnull=False,
                    )
                    | models.Q(
                        denomination="range",
                        local_amount__isnull=True,
                        retail_price__isnull=True,
                        range_min__gt=0,
                        range_step__gt=0,
                        range_max__gte=models.F("range_min"),
                    )
                ),
                name="product_denomination_fields",
            ),
            models.CheckConstraint(
                condition=models.Q(pricing_rate__isnull=True) | models.Q(pricing_rate__gt=0),
                name="product_pricing_rate_positive",
            ),
            models.CheckConstraint(
                condition=models.Q(product_type__in=ProductType.values),
                name="product_type_known",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.public_id})"

    def save(self, *args, **kwargs) -> None:
        if not self.public_id:
            self.public_id = product_public_id(self.sku)
        self.country_id = self.operator.country_id
        update_fields = kwargs.get("update_fields")
        if update_fields is not None and {"operator", "operator_id"} & set(update_fields):
            kwargs["update_fields"] = {*update_fields, "country_id"}
        super().save(*args, **kwargs)

    @property
    def validity(self) -> str | None:
        """ISO 8601 duration (``P30D``), or None when the product does not expire."""
        return f"P{self.validity_days}D" if self.validity_days else None

    def clean(self) -> None:
        super().clean()
        errors: dict[str, Any] = {}
        if self.is_range:
            for name in ("local_amount", "retail_price"):
                if getattr(self, name) is not None:
                    errors[name] = _("Leave it empty for a range: the buyer chooses the amount.")
            for name in ("range_min", "range_max", "range_step"):
                value = getattr(self, name)
                if value is None or value <= 0:
                    errors[name] = _("A range needs it, over zero.")
            if (
                "range_max" not in errors
                and "range_min" not in errors
                and self.range_max < self.range_min  # type: ignore[operator]
            ):
                errors["range_max"] = _("It must not be under the smallest amount.")
        else:
            for name in ("local_amount", "retail_price"):
                if getattr(self, name) is None:
                    errors[name] = _("A fixed product needs it.")
        try:
            self.benefits = benefits_clean(self.benefits)
        except ValidationError as exc:
            errors["benefits"] = exc.messages
        if not isinstance(self.required_fields, list) or not set(self.required_fields) <= set(
            EXTRA_FIELDS
        ):
            errors["required_fields"] = _("A list of: %(names)s.") % {
                "names": ", ".join(EXTRA_FIELDS)
            }
        if errors:
            raise ValidationError(errors)

    @property
    def is_range(self) -> bool:
        return self.denomination == Denomination.RANGE

    def accepts(self, amount: Decimal | None) -> bool:
        """May a line ask for ``amount`` (None: the buyer gave none)? A range product needs an
        amount within its range and on a step; a fixed one none, or its own face value."""
        if not self.is_range:
            return amount is None or amount == self.local_amount
        if amount is None or self.range_min is None or self.range_max is None:
            return False
        return on_step(amount, low=self.range_min, high=self.range_max, step=self.step)

    @property
    def step(self) -> Decimal:
        return self.range_step or CENT

    def amount_of(self, amount: Decimal | None) -> Decimal:
        """The local amount a line of this product sends (``accepts`` checked first)."""
        if self.is_range:
            assert amount is not None
            return amount
        assert self.local_amount is not None
        return self.local_amount

    @property
    def priced(self) -> bool:
        """Has it a price (a range: a rate and a fee)?"""
        if self.is_range:
            return self.pricing_rate is not None and self.pricing_fee is not None
        return self.retail_price is not None

    def price_at(self, amount: Decimal | None) -> Decimal:
        """The price of one unit of ``amount`` (a fixed product: its price) in
        ``retail_currency``, before the account's discount."""
        if not self.is_range:
            assert self.retail_price is not None
            return self.retail_price
        assert amount is not None and self.pricing_rate and self.pricing_fee is not None
        return ceil_cent(amount / self.pricing_rate + self.pricing_fee)

    @property
    def min_price(self) -> Decimal | None:
        """The price at its smallest amount (a fixed product: its price)."""
        if not self.priced:
            return None
        return self.price_at(self.range_min if self.is_range else None)

    @property
    def max_price(self) -> Decimal | None:
        if not self.priced:
            return None
        return self.price_at(self.range_max if self.is_range else None)


class PromotionStatus(models.TextChoices):
    SCHEDULED = "scheduled", _("Scheduled")
    ACTIVE = "active", _("Active")
    ENDED = "ended", _("Ended")


class Promotion(TranslatableModel):
    """An operator's promotion, on all its products or only on the ones listed.

    It runs in the half-open window ``[starts_at, ends_at)``: scheduled before, active from
    ``starts_at``, ended from ``ends_at``. The status is derived from the clock, never stored.
    """

    TRANSLATABLE_FIELDS = ("name", "description", "terms")

    public_id = models.CharField(_("id"), max_length=40, unique=True, editable=False)
    code = models.SlugField(
        _("code"), max_length=80, unique=True, help_text=_("Internal unique name.")
    )
    operator = models.ForeignKey(
        Operator, on_delete=models.PROTECT, related_name="promotions", verbose_name=_("operator")
    )
    products = models.ManyToManyField(
        Product,
        related_name="promotions",
        blank=True,
        verbose_name=_("products"),
        help_text=_("Empty: every product of the operator."),
    )
    name = models.CharField(_("name"), max_length=150)
    description = models.TextField(_("description"))
    terms = models.TextField(_("terms"), blank=True)
    starts_at = models.DateTimeField(_("starts at"))
    ends_at = models.DateTimeField(_("ends at"))

    name_localized = Localized("name")
    description_localized = Localized("description")
    terms_localized = Localized("terms")

    class Meta:
        verbose_name = _("promotion")
        verbose_name_plural = _("promotions")
        ordering = ["starts_at", "id"]
        indexes = [models.Index(fields=["operator", "ends_at"], name="promotion_operator_end_idx")]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(ends_at__gt=models.F("starts_at")),
                name="promotion_ends_after_start",
            )
        ]

    def __str__(self) -> str:
        return self.name

    def save(self, *args, **kwargs) -> None:
        if not self.public_id:
            self.public_id = promotion_public_id(self.code)
        super().save(*args, **kwargs)

    def clean(self) -> None:
        super().clean()
        if self.starts_at and self.ends_at and self.ends_at <= self.starts_at:
            raise ValidationError({"ends_at": _("The end must be after the start.")})

    def status_at(self, at: datetime | None = None) -> str:
        at = at or timezone.now()
        if at < self.starts_at:
            return PromotionStatus.SCHEDULED
        if at < self.ends_at:
            return PromotionStatus.ACTIVE
        return PromotionStatus.ENDED

    @property
    def status(self) -> str:
        return self.status_at()


class FxRate(models.Model):
    """1 ``base_currency`` = ``rate`` ``quote_currency``, as set at ``set_at``."""

    base_currency = models.CharField(
        _("from"), max_length=3, validators=[currency_validator], default="EUR"
    )
    quote_currency = models.CharField(_("to"), max_length=3, validators=[currency_validator])
    rate = models.DecimalField(
        _("rate"),
        max_digits=18,
        decimal_places=8,
        validators=[MinValueValidator(Decimal("0.00000001"))],
    )
    set_at = models.DateTimeField(_("set at"), default=timezone.now)

    class Meta:
        verbose_name = _("FX rate")
        verbose_name_plural = _("FX rates")
        ordering = ["base_currency", "quote_currency"]
        constraints = [
            models.UniqueConstraint(
                fields=["base_currency", "quote_currency"], name="fxrate_pair_unique"
            ),
            models.CheckConstraint(condition=models.Q(rate__gt=0), name="fxrate_rate_positive"),
            models.CheckConstraint(
                condition=~models.Q(base_currency=models.F("quote_currency")),
                name="fxrate_distinct_currencies",
            ),
        ]

    def __str__(self) -> str:
        return f"1 {self.base_currency} = {self.rate} {self.quote_currency}"
