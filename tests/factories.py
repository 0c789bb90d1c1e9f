from datetime import timedelta
from decimal import Decimal

import factory
from django.utils import timezone

from accounts import services
from accounts.models import Account, BillingProfile, User
from catalog.ids import operator_public_id, product_public_id, promotion_public_id
from catalog.models import Country, FxRate, Operator, Product, Promotion

PASSWORD = "correct-horse-battery-9"


class AccountFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Account
        skip_postgeneration_save = True

    name = factory.Sequence(lambda n: f"Account {n}")

    billing = factory.RelatedFactory("tests.factories.BillingFactory", "account")


class BillingFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = BillingProfile
        django_get_or_create = ("account",)


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = User
        skip_postgeneration_save = True

    email = factory.Sequence(lambda n: f"user{n}@example.com")
    first_name = "Test"
    last_name = "User"
    account = factory.SubFactory(AccountFactory)

    @factory.post_generation
    def password(obj, create, extracted, **kwargs):
        obj.set_password(extracted or PASSWORD)
        if create:
            obj.save(update_fields=["password"])


def make_key(user=None, *, mode="test", name="Shop", ip_whitelist=(), **limits):
    """A key of ``user``'s account made by the real service; returns (key, plaintext)."""
    user = user or UserFactory()
    key, plaintext = services.api_key_create(
        account=user.account, user=user, name=name, mode=mode, ip_whitelist=ip_whitelist
    )
    if limits:
        services.api_key_set_limits(
            key=key,
            rate_limit_per_minute=limits.get("rate_limit_per_minute"),
            max_units_per_request=limits.get("max_units_per_request"),
        )
    return key, plaintext


# -- catalog --------------------------------------------------------------------------------


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


class RangeProductFactory(ProductFactory):
    """A range product (contract section 17): any amount from 10.00 to 500.00 in steps of
    5.00 of the local currency, priced A / 20 + 0.50 EUR, rounded up to the cent."""

    denomination = "range"
    local_amount = None
    retail_price = None
    range_min = Decimal("10.00")
    range_max = Decimal("500.00")
    range_step = Decimal("5.00")
    pricing_rate = Decimal("20.00000000")
    pricing_fee = Decimal("0.50")


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
