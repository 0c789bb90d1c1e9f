"""Catalog factories (factory_boy), for the catalog's tests and the apps that use products.

``ProductFactory()`` makes a product with its operator and country (Mexico by default);
``PromotionFactory(operator=..., products=[...])`` an active promotion unless told otherwise.
"""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import factory
from django.utils import timezone

from catalog.ids import operator_public_id, product_public_id, promotion_public_id
from catalog.models import Country, FxRate, Operator, Product, Promotion


class CountryFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Country
        django_get_or_create = ("code",)

    code = "MX"
    name = "Mexico"
    calling_code = "+52"
    currency = "MXN"
    translations = factory.LazyFunction(
        lambda: {"es": {"name": "México"}, "fr": {"name": "Mexique"}}
    )


class OperatorFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Operator
        django_get_or_create = ("country", "slug")

    country = factory.SubFactory(CountryFactory)
    slug = factory.Sequence(lambda n: f"operator-{n}")
    name = factory.Sequence(lambda n: f"Operator {n}")
    public_id = factory.LazyAttribute(lambda o: operator_public_id(o.country.code, o.slug))
    color = "#123456"


class ProductFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Product

    operator = factory.SubFactory(OperatorFactory)
    country = factory.LazyAttribute(lambda o: o.operator.country)
    sku = factory.Sequence(lambda n: f"TEST-SKU-{n}")
    public_id = factory.LazyAttribute(lambda o: product_public_id(o.sku))
    name = factory.Sequence(lambda n: f"Top-up {n}")
    product_type = "airtime"
    local_amount = Decimal("100.00")
    local_currency = factory.LazyAttribute(lambda o: o.operator.country.currency)
    retail_price = Decimal("5.00")
    retail_currency = "EUR"


class PromotionFactory(factory.django.DjangoModelFactory):
    """Active by default: started an hour ago, ends in a week."""

    class Meta:
        model = Promotion
        skip_postgeneration_save = True

    code = factory.Sequence(lambda n: f"promo-{n}")
    public_id = factory.LazyAttribute(lambda o: promotion_public_id(o.code))
    operator = factory.SubFactory(OperatorFactory)
    name = factory.Sequence(lambda n: f"Promotion {n}")
    description = "Double airtime."
    terms = "While it lasts."
    starts_at = factory.LazyFunction(lambda: timezone.now() - timedelta(hours=1))
    ends_at = factory.LazyAttribute(lambda o: o.starts_at + timedelta(days=7))

    @factory.post_generation
    def products(obj, create, extracted, **kwargs):
        if create and extracted:
            obj.products.set(extracted)


class FxRateFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = FxRate
        django_get_or_create = ("base_currency", "quote_currency")

    base_currency = "EUR"
    quote_currency = "USD"
    rate = Decimal("1.08000000")


def make_country(code: str, name: str, calling_code: str, currency: str, **kwargs) -> Country:
    return CountryFactory(
        code=code, name=name, calling_code=calling_code, currency=currency, **kwargs
    )
