"""Query filters of the catalog listings (django-filter), named exactly as on the wire.

An invalid or unknown value is a 400 ``validation_error`` naming the parameter; the views
also refuse parameters that are not listed here (a typo must not return everything).
"""

from __future__ import annotations

from decimal import Decimal

import django_filters
from django import forms
from django.db.models import BooleanField, Case, CharField, DecimalField, F, Q, Value, When
from django.db.models.functions import Ceil
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from accounts.authentication import request_livemode
from catalog import selectors
from catalog.detection import operators_detect
from catalog.errors import PhoneNumberError
from catalog.models import Country, Denomination, Operator, Product, ProductType
from catalog.phone import PhoneNumber, phone_parse
from catalog.pricing_hook import CallerPrices, RetailWindow, caller_prices_of_request


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


def _retail_between(queryset, low: Decimal | None, high: Decimal | None):
    """Products whose catalog price at the low end is ``low`` or more and at the high end
    ``high`` or less (None: no bound), in SQL."""
    queryset = price_ends(queryset)
    if low is not None:
        queryset = queryset.filter(price_low__gte=low)
    if high is not None:
        queryset = queryset.filter(price_high__lte=high)
    return queryset


# What the caller's prices read of a product (``network.prices.AccountPrices``): the price
# and price line, and the scopes of the price lists' rules. A field read beyond these would
# cost a query per product: tests/test_catalog_caller_price_filters.py counts them.
PRICED_FIELDS = (
    "id",
    "denomination",
    "retail_price",
    "range_min",
    "range_max",
    "pricing_rate",
    "pricing_fee",
    "operator_id",
    "country_id",
)


def _caller_within(
    prices: CallerPrices, product: Product, low: Decimal | None, high: Decimal | None
) -> bool:
    """Is the caller's price of the product within the bounds? A fixed product's is the
    ``price`` the serializer shows it; a range product's at ``range_min`` is compared with
    ``low`` and at ``range_max`` with ``high``. A product without a price never is."""
    if product.is_range:
        at_low = prices.price_at(product, product.range_min)
        at_high = prices.price_at(product, product.range_max)
    else:
        at_low = at_high = prices.price(product)
    if at_low is None or at_high is None:
        return False
    return (low is None or at_low >= low) and (high is None or at_high <= high)


def products_priced_between(
    queryset, *, low: Decimal | None, high: Decimal | None, prices: CallerPrices | None
):
    """The products of ``queryset`` whose price, as the caller is shown it, lies within
    ``[low, high]`` (contract sections 17 and 18; docs/catalog.md, "Price filters").

    ``prices`` None (the caller sees the catalog's prices): one SQL condition, as ever.
    Otherwise the caller's prices come from Python (``network.prices``, through the hook).
    Its ``retail_window`` splits the products by their catalog price, in SQL: those that
    cannot be within, those that surely are, and a band between, near the bounds. One query
    reads the band (only the fields that price a product, before any page is cut), each of
    its products is priced as the serializer prices it, and the result is the sure ones or
    the band's chosen ones, by id: the count and the page are then the queryset's, cut as
    ever."""
    if prices is None:
        return _retail_between(queryset, low, high)
    window = prices.retail_window(low=low, high=high)
    candidates = _retail_between(queryset, window.low, window.high)
    sure = _sure(window)
    band = candidates if sure is None else candidates.exclude(sure)
    band = band.select_related(None).only(*PRICED_FIELDS).order_by()
    chosen = Q(pk__in=[p.pk for p in band if _caller_within(prices, p, low, high)])
    return candidates.filter(chosen if sure is None else sure | chosen)


def _sure(window: RetailWindow) -> Q | None:
    """The SQL condition of the products surely within the caller's bounds (None: none)."""
    if not window.sure:
        return None
    ends: dict[str, Decimal] = {}
    if window.sure_low is not None:
        ends["price_low__gte"] = window.sure_low
    if window.sure_high is not None:
        ends["price_high__lte"] = window.sure_high
    return Q(**ends)


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
    # The price the response shows the caller; a range product's at the smallest amount of
    # its range and at the largest (contract sections 17 and 18): both bounds are applied
    # together in ``filter_queryset`` (``products_priced_between``).
    minPrice = django_filters.NumberFilter(  # the wire name
        method="filter_price",
        min_value=Decimal("0"),
        max_digits=12,
        decimal_places=2,
        help_text="Lowest price (inclusive), a decimal such as `5.00`: the `price` the "
        "response shows the caller (its own for an agent of a network), a range product's "
        "at the smallest amount of its range.",
    )
    maxPrice = django_filters.NumberFilter(  # the wire name
        method="filter_price",
        min_value=Decimal("0"),
        max_digits=12,
        decimal_places=2,
        help_text="Highest price (inclusive), as `minPrice`; a range product's at the "
        "largest amount of its range.",
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

    def filter_queryset(self, queryset):
        queryset = super().filter_queryset(queryset)
        low = self.form.cleaned_data.get("minPrice")
        high = self.form.cleaned_data.get("maxPrice")
        if low is None and high is None:
            return queryset
        # The prices the serializer shows, loaded once for the request (catalog.pricing_hook).
        prices = caller_prices_of_request(self.request)
        return products_priced_between(queryset, low=low, high=high, prices=prices)

    def filter_price(self, queryset, name, value):
        """The bounds are applied together, after the other filters: ``filter_queryset``."""
        return queryset

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
        livemode = request_livemode(self.request) if self.request is not None else True
        detection = operators_detect(phone=value, operators=queryset, livemode=livemode)
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
