"""Output shapes of the catalog (docs/contract.md §10) and input fields for other apps.

Field names are snake_case here and camelCase on the wire. Texts are in the request's
language (Accept-Language). Money is a decimal string beside its currency.

``ProductIdField`` and ``RecipientNumberField`` are for the orders app's input serializers:
they turn a ``productId`` into a ``Product`` and a ``recipientNumber`` into a ``PhoneNumber``,
with field errors (``unknown_product``, ``invalid_phone_number``) at the right path.
"""

from __future__ import annotations

from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from catalog import selectors
from catalog.benefits import BENEFIT_KINDS
from catalog.errors import PhoneNumberError, ProductNotFound
from catalog.models import Denomination, Product, ProductType, PromotionStatus
from catalog.phone import PhoneNumber, phone_parse
from catalog.pricing_hook import caller_prices_of


class CountryOut(serializers.Serializer):
    code = serializers.CharField(help_text="ISO 3166-1 alpha-2, e.g. `MX`.")
    name = serializers.CharField(source="name_localized")
    calling_code = serializers.CharField(help_text="With the plus sign, e.g. `+52`.")
    currency = serializers.CharField(help_text="ISO 4217 code of the local currency.")
    flag = serializers.CharField(help_text="The flag emoji.")


class OperatorRef(serializers.Serializer):
    id = serializers.CharField(source="public_id")
    name = serializers.CharField(source="name_localized")


class OperatorOut(serializers.Serializer):
    id = serializers.CharField(source="public_id", help_text="Opaque id, `opr_…`.")
    name = serializers.CharField(source="name_localized")
    country = serializers.CharField(source="country_id")
    color = serializers.CharField(help_text="Brand colour, `#rrggbb`.")
    logo_url = serializers.SerializerMethodField()
    detected = serializers.SerializerMethodField()

    @extend_schema_field({"type": ["string", "null"], "format": "uri"})  # null without a logo
    def get_logo_url(self, operator) -> str | None:
        return operator.logo_url or None

    detected_by = serializers.SerializerMethodField()

    def get_detected(self, operator) -> bool:
        """True when the request's `phone` belongs to this operator."""
        return bool(getattr(operator, "detected", False))

    @extend_schema_field({"type": ["string", "null"], "enum": ["provider", "prefix", None]})
    def get_detected_by(self, operator) -> str | None:
        """Who detected it: `provider` (a provider's number lookup: ported numbers too) or
        `prefix` (the number's range); null when not detected."""
        return getattr(operator, "detected_by", None) if self.get_detected(operator) else None


class PromotionOut(serializers.Serializer):
    id = serializers.CharField(source="public_id", help_text="Opaque id, `prm_…`.")
    name = serializers.CharField(source="name_localized")
    description = serializers.CharField(source="description_localized")
    terms = serializers.CharField(source="terms_localized", allow_blank=True)
    starts_at = serializers.DateTimeField()
    ends_at = serializers.DateTimeField()
    status = serializers.SerializerMethodField()

    @extend_schema_field(
        serializers.ChoiceField(choices=[PromotionStatus.ACTIVE, PromotionStatus.SCHEDULED])
    )
    def get_status(self, promotion) -> str:
        return promotion.status_at(self.context.get("at"))


class RangeOut(serializers.Serializer):
    """The amounts a range product takes: ``min``, ``min + step``, … up to ``max``."""

    min = serializers.DecimalField(source="range_min", max_digits=12, decimal_places=2)
    max = serializers.DecimalField(source="range_max", max_digits=12, decimal_places=2)
    step = serializers.DecimalField(source="range_step", max_digits=12, decimal_places=2)
    currency = serializers.CharField(source="local_currency")


class BenefitOut(serializers.Serializer):
    """One thing a data, bundle or PIN product gives (contract section 17, "Kinds")."""

    kind = serializers.ChoiceField(choices=list(BENEFIT_KINDS))
    amount = serializers.CharField(
        allow_null=True,
        help_text='A decimal number as a string (`"5"`, `"1.5"`); null when the provider '
        "gives no number or the benefit is unlimited.",
    )
    unit = serializers.CharField(
        allow_blank=True,
        help_text="`GB`/`MB` for data, `min` for voice, `SMS`, a currency code for credit.",
    )
    text = serializers.CharField(allow_blank=True, help_text="The provider's own words, or empty.")


class PricingOut(serializers.Serializer):
    """The price of a local amount A: ``A / rate + fee``, rounded up to the cent."""

    rate = serializers.DecimalField(source="pricing_rate", max_digits=18, decimal_places=8)
    fee = serializers.DecimalField(source="pricing_fee", max_digits=12, decimal_places=2)
    currency = serializers.CharField(source="retail_currency")


class CallerPriceField(serializers.DecimalField):
    """A fixed product's price for the caller: its own price where it is priced by a network
    (``catalog.pricing_hook``), else the catalog's retail price."""

    def get_attribute(self, instance):
        prices = caller_prices_of(self.context)
        return prices.price(instance) if prices is not None else instance.retail_price


class ProductOut(serializers.Serializer):
    id = serializers.CharField(source="public_id", help_text="Opaque id, `prd_…`.")
    name = serializers.CharField(source="name_localized")
    description = serializers.CharField(source="description_localized", allow_blank=True)
    type = serializers.ChoiceField(
        source="product_type",
        choices=ProductType.choices,
        help_text="`airtime` (credit on the line), `data`, `bundle` (data, minutes and/or SMS "
        "together) or `pin` (a code the customer enters).",
    )
    operator = OperatorRef()
    country = serializers.CharField(source="country_id")
    denomination = serializers.ChoiceField(
        choices=Denomination.choices,
        help_text="`fixed`: `localAmount` and `price` are set; `range`: the buyer chooses "
        "the amount within `range`, priced by `pricing`.",
    )
    local_amount = serializers.DecimalField(
        max_digits=12,
        decimal_places=2,
        allow_null=True,
        help_text="Face value the recipient gets; null for a range product.",
    )
    local_currency = serializers.CharField()
    price = CallerPriceField(
        source="retail_price",
        max_digits=12,
        decimal_places=2,
        allow_null=True,
        help_text="Retail price; null for a range product (see `pricing`). An agent of a "
        "reseller network (or an account priced by a platform price list) sees its own price.",
    )
    currency = serializers.CharField(source="retail_currency")
    range = serializers.SerializerMethodField()
    pricing = serializers.SerializerMethodField()
    required_fields = serializers.ListField(
        child=serializers.CharField(),
        help_text="What a line of it must carry in `fields` besides the number "
        "(`senderName`, `senderPhone`, `recipientEmail`, `recipientName`); empty for most.",
    )
    validity = serializers.CharField(
        allow_null=True, help_text="ISO 8601 duration such as `P30D`; null: no expiry."
    )
    validity_days = serializers.IntegerField(allow_null=True)
    benefits = BenefitOut(
        many=True,
        help_text="What a data, bundle or PIN product gives, where its provider says; empty "
        "for airtime.",
    )
    promotion = serializers.SerializerMethodField()

    @extend_schema_field(RangeOut(allow_null=True))
    def get_range(self, product):
        return RangeOut(product).data if product.is_range else None

    @extend_schema_field(PricingOut(allow_null=True))
    def get_pricing(self, product):
        if not (product.is_range and product.priced):
            return None
        prices = caller_prices_of(self.context)
        guide = prices.pricing(product) if prices is not None else None
        if guide is None:
            return PricingOut(product).data
        rate, fee = guide  # the caller's guide: quotes give an amount's exact price
        return PricingOut(
            {"pricing_rate": rate, "pricing_fee": fee, "retail_currency": product.retail_currency}
        ).data

    @extend_schema_field(PromotionOut(allow_null=True))
    def get_promotion(self, product):
        at = self.context.get("at") or timezone.now()
        promotion = selectors.product_promotion(product=product, at=at)
        if promotion is None:
            return None
        # Many products of a page share a promotion: render each one once per response.
        rendered = self.context.setdefault("_promotions", {})
        if promotion.pk not in rendered:
            rendered[promotion.pk] = PromotionOut(promotion, context={"at": at}).data
        return rendered[promotion.pk]


class FxRateOut(serializers.Serializer):
    base_currency = serializers.CharField()
    quote_currency = serializers.CharField()
    rate = serializers.DecimalField(max_digits=18, decimal_places=8)
    set_at = serializers.DateTimeField()


# --- input fields for other apps -----------------------------------------------------------


@extend_schema_field(
    {"type": "string", "example": "+5215512345678", "description": "International format."}
)
class RecipientNumberField(serializers.CharField):
    """A mobile number in international format; validated value: a ``PhoneNumber``.

    Errors carry the code ``invalid_phone_number``. The country check against a product
    belongs to the line's ``validate()``: call ``catalog.phone.phone_check_country`` and
    turn ``PhoneNumberError`` into ``{"recipient_number": [ErrorDetail(..., code)]}``
    with ``as_field_error``.
    """

    def __init__(self, **kwargs):
        kwargs.setdefault("max_length", 32)
        super().__init__(**kwargs)

    def run_validation(self, data=serializers.empty) -> PhoneNumber:
        value = super().run_validation(data)  # the string checks: required, blank, length
        if value in (None, ""):
            return value
        try:
            return phone_parse(value)
        except PhoneNumberError as exc:
            raise as_field_error(exc) from exc

    def to_representation(self, value) -> str:
        return str(value)


def as_field_error(exc: PhoneNumberError) -> serializers.ValidationError:
    """A ``PhoneNumberError`` as a DRF field error, code kept."""
    return serializers.ValidationError(exc.message, code=exc.field_code)


@extend_schema_field({"type": "string", "example": "prd_3kTMd2Yx8pQa1bWc9ZrE"})
class ProductIdField(serializers.Field):
    """An active product's public id; validated value: the ``Product`` (promotions loaded)."""

    default_error_messages = {
        "unknown_product": _("No active recharge product has this id."),
        "invalid": _("A product id is a string."),
    }

    def to_internal_value(self, data) -> Product:
        if not isinstance(data, str) or not data or len(data) > 40:
            self.fail("invalid")
        try:
            return selectors.product_get(product_id=data)
        except ProductNotFound:
            self.fail("unknown_product")

    def to_representation(self, value) -> str:
        return value.public_id if isinstance(value, Product) else str(value)
