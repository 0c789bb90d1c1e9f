"""Query filters of the catalog listings (django-filter), named exactly as on the wire.

An invalid or unknown value is a 400 ``validation_error`` naming the parameter; the views
also refuse parameters that are not listed here (a typo must not return everything).
"""

from __future__ import annotations

from decimal import Decimal

import django_filters
from django import forms
from django.db.models import BooleanField, Case, CharField, DecimalField, F, Value, When
from django.db.models.functions import Ceil
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from catalog import selectors
from catalog.detection import operators_detect
from catalog.errors import PhoneNumberError
from catalog.models import Country, Denomination, Operator, Product, ProductType
from catalog.phone import PhoneNumber, phone_parse


class CodeChoiceField(django_filters.fields.ModelChoiceField):
    """A model choice by code, case-insensitive (``mx`` is ``MX``)."""

    def to_python(self, value):
        if isinstance(value, str):
            value = value.strip().upper()
        return super().to_python(value)


class CountryFilter(django_filters.ModelChoiceFilter):
    field_class = CodeChoiceField

    def __init__(self, **kwargs):
        kwargs.setdefault("queryset", Country.objects.all())
        kwargs.setdefault("to_field_name", "code")
        kwargs.setdefault("error_messages", {"invalid_choice": _("Unknown country code.")})
        kwargs.setdefault("help_text", "ISO 3166-1 alpha-2 country code, e.g. `MX`.")
        super().__init__(**kwargs)


class PhoneFormField(forms.CharField):
    """Parses a number in international format into a ``PhoneNumber``.

    An unencoded ``+`` in a query string arrives as a space (``?phone=+52…`` reads
    `` 52…``): a value starting with one space and a digit is read with its plus back.
    """

    def __init__(self, **kwargs):
        kwargs["strip"] = False
        super().__init__(**kwargs)

    def to_python(self, value):
        value = super().to_python(value)
        if isinstance(value, str) and len(value) > 1 and value[0] == " " and value[1].isdigit():
            value = "+" + value[1:]
        value = value.strip() if isinstance(value, str) else value
        if not value:
            return None
        try:
            return phone_parse(value, field="phone")
        except PhoneNumberError as exc:
            raise forms.ValidationError(exc.message, code=exc.field_code) from exc


class PhoneFilter(django_filters.CharFilter):
    field_class = PhoneFormField


class PriceRangeForm(forms.Form):
    def clean(self):
        data = super().clean()
        low, high = data.get("minPrice"), data.get("maxPrice")
        if low is not None and high is not None and low > high:
            self.add_error(
                "maxPrice",
                forms.ValidationError(
                    _("maxPrice must not be below minPrice."), code="invalid_range"
                ),
            )
        return data


PRICE = DecimalField(max_digits=14, decimal_places=2)


def _price_at(end: str) -> Case:
    """A product's price in SQL: its price, or a range product's at ``range_<end>`` (A / rate
    + fee, rounded up to the cent, as ``Product.price_at``)."""
    amount = F(f"range_{end}") / F("pricing_rate") + F("pricing_fee")
    return Case(
        When(
            denomination=Denomination.RANGE,
            then=Ceil(amount * 100, output_field=PRICE) / 100,
        ),
        default=F("retail_price"),
        output_field=PRICE,
    )


def price_ends(queryset):
    """``price_low`` and ``price_high``: a fixed product's price twice, a range product's at
    the two ends of its range (null while it has no price line)."""
    return queryset.annotate(price_low=_price_at("min"), price_high=_price_at("max"))


class ProductFilter(django_filters.FilterSet):
    country = CountryFilter(field_name="country")
    operator = django_filters.ModelChoiceFilter(
        field_name="operator",
        queryset=Operator.objects.all(),
        to_field_name="public_id",
        error_messages={"invalid_choice": _("Unknown operator id.")},
        help_text="Operator id (`opr_…`) from `GET /catalog/operators`.",
    )
    type = django_filters.ChoiceFilter(
        field_name="product_type",
        choices=ProductType.choices,
        help_text="`airtime` or `data`.",
    )
    promotion = django_filters.ChoiceFilter(
        choices=[("true", "true"), ("false", "false")],
        method="filter_promotion",
        error_messages={"invalid_choice": _("Use true or false.")},
        help_text="`true`: only products with an active or scheduled promotion; "
        "`false`: only products without.",
    )
    # A range product's price at the smallest amount of its range and at the largest
    # (contract section 17): ``price_ends``.
    minPrice = django_filters.NumberFilter(  # the wire name
        method="filter_price_low",
        min_value=Decimal("0"),
        max_digits=12,
        decimal_places=2,
        help_text="Lowest retail price (inclusive), a decimal such as `5.00`.",
    )
    maxPrice = django_filters.NumberFilter(  # the wire name
        method="filter_price_high",
        min_value=Decimal("0"),
        max_digits=12,
        decimal_places=2,
        help_text="Highest retail price (inclusive).",
    )
    q = django_filters.CharFilter(
        method="filter_q",
        max_length=100,
        help_text="Text searched in product, operator and country names (English and the "
        "response language).",
    )

    class Meta:
        model = Product
        fields: list[str] = []
        form = PriceRangeForm

    def filter_price_low(self, queryset, name, value):
        return price_ends(queryset).filter(price_low__gte=value)

    def filter_price_high(self, queryset, name, value):
        return price_ends(queryset).filter(price_high__lte=value)

    def filter_promotion(self, queryset, name, value):
        return selectors.products_with_promotion(queryset, at=timezone.now(), has=value == "true")

    def filter_q(self, queryset, name, value):
        return selectors.product_search(queryset, text=value)


class OperatorFilterForm(forms.Form):
    def clean(self):
        data = super().clean()
        country, phone = data.get("country"), data.get("phone")
        if country is not None and isinstance(phone, PhoneNumber) and phone.country != country.code:
            self.add_error(
                "phone",
                forms.ValidationError(
                    _("This number is from %(number)s, not %(country)s."),
                    code="phone_country_mismatch",
                    params={"number": phone.country, "country": country.code},
                ),
            )
        return data


class OperatorFilter(django_filters.FilterSet):
    country = CountryFilter(field_name="country")
    phone = PhoneFilter(
        method="filter_phone",
        help_text="A mobile number in international format (`+52…`, URL-encode the plus as "
        "`%2B`): lists the operators of its country, the detected operator(s) first "
        "with `detected: true`.",
    )

    class Meta:
        model = Operator
        fields: list[str] = []
        form = OperatorFilterForm

    def filter_phone(self, queryset, name, value: PhoneNumber | None):
        if value is None:
            return queryset
        queryset = queryset.filter(country_id=value.country)
        detection = operators_detect(phone=value, operators=queryset)
        detected = [op.pk for op in detection.operators]
        return queryset.annotate(
            detected=Case(
                When(pk__in=detected, then=Value(True)),
                default=Value(False),
                output_field=BooleanField(),
            ),
            detected_by=Case(
                When(pk__in=detected, then=Value(detection.by)),
                default=Value(None),
                output_field=CharField(null=True),
            ),
        ).order_by("-detected", "name", "id")
