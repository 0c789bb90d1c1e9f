"""Range products (contract section 17, issue 40): the catalog shows a range product's range
and price line, the price line goes through the marked-up cheapest cost at both ends of the
range, routing takes the cheapest route that accepts the amount, and an amount no route serves
at PRICE_MIN_MARGIN_PERCENT is refused with 409 ``product_unavailable``.

Two provider rows sell one range product of 50 to 500 MXN (costs in EUR), crossing over at
100 MXN: "flat" charges a fee and less per peso (1.00 + 0.04 A), "lean" charges no fee and
more per peso (0.05 A). The cheapest cost is the lower of the two lines, so between the ends
the price line (a chord) runs under the marked-up cheapest cost: the margin is thinnest at the
crossing."""

from __future__ import annotations

from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import call_command
from django.test import override_settings
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from catalog.errors import ProductUnavailable
from catalog.models import CENT, Product, ceil_cent
from tests.factories import ProductFactory, RangeProductFactory, make_key
from tests.helpers import client_for
from upstreams.models import PriceRule, Provider, ProviderOperator, Route
from upstreams.pricing import amount_offered_check, price_line, products_reprice
from upstreams.routing import Router

pytestmark = pytest.mark.django_db

PRODUCTS = "/api/v1/catalog/recharge-products"


def anonymous():
    """A client of a test key (the catalog wants one)."""
    _key, plaintext = make_key()
    return client_for(plaintext)


def provider(name: str) -> Provider:
    call_command("create_provider", "--name", name, "--kind", "simulator")
    return Provider.objects.get(name=name)


def range_product(**overrides) -> Product:
    values = {
        "denomination": "range",
        "local_amount": None,
        "retail_price": None,
        "range_min": Decimal("50.00"),
        "range_max": Decimal("500.00"),
        "range_step": Decimal("1.00"),
        "name": "Telcel any amount",
    }
    values.update(overrides)
    return ProductFactory(**values)


def range_route(product: Product, row: Provider, *, fee: str, per_peso: str, **limits) -> Route:
    upstream = ProviderOperator.objects.create(
        provider=row,
        upstream_id=f"{row.name}-op",
        name=product.operator.name,
        country=product.country_id,
        operator=product.operator,
    )
    return Route.objects.create(
        provider=row,
        upstream_operator=upstream,
        product=product,
        cost=Decimal(fee),
        cost_per_unit=Decimal(per_peso),
        cost_currency="EUR",
        min_amount=limits.get("low", product.range_min),
        max_amount=limits.get("high", product.range_max),
        step=limits.get("step", product.range_step),
    )


@pytest.fixture
def crossing():
    """The range product and its two crossing routes, priced at a 10% markup."""
    product = range_product()
    range_route(product, provider("flat"), fee="1.00", per_peso="0.04")
    range_route(product, provider("lean"), fee="0.00", per_peso="0.05")
    PriceRule.objects.create(product=product, markup_percent=Decimal("10"))
    products_reprice(product_ids=[product.pk])
    product.refresh_from_db()
    return product


def test_the_price_line_goes_through_the_marked_up_cheapest_cost_at_both_ends(crossing):
    # At 50 MXN "lean" is cheaper (2.50 against 3.00); at 500 "flat" (21.00 against 25.00).
    assert crossing.priced and crossing.offered
    # The rate to eight places and the fee to the cent: within a cent of each point.
    assert abs(crossing.price_at(Decimal("50")) - Decimal("2.75")) <= CENT  # 2.50 x 1.10
    assert abs(crossing.price_at(Decimal("500")) - Decimal("23.10")) <= CENT  # 21.00 x 1.10
    # In between, A / rate + fee rounded up to the cent.
    amount = Decimal("150")
    assert crossing.price_at(amount) == ceil_cent(
        amount / crossing.pricing_rate + crossing.pricing_fee
    )


def test_the_catalog_shows_a_range_product_with_its_range_and_price_line(crossing):
    body = anonymous().get(PRODUCTS, {"country": "MX"}).json()
    (found,) = [p for p in body["results"] if p["id"] == crossing.public_id]
    assert found["denomination"] == "range"
    assert found["localAmount"] is None
    assert found["price"] is None
    assert found["range"] == {"min": "50.00", "max": "500.00", "step": "1.00", "currency": "MXN"}
    assert found["pricing"]["currency"] == "EUR"
    assert Decimal(found["pricing"]["rate"]) == crossing.pricing_rate
    assert Decimal(found["pricing"]["fee"]) == crossing.pricing_fee


def test_price_filters_use_the_price_at_each_end_of_the_range(crossing):
    fixed = ProductFactory(operator=crossing.operator, retail_price=Decimal("10.00"))

    def listed(**query) -> set[str]:
        response = anonymous().get(PRODUCTS, {"country": "MX", **query})
        assert response.status_code == 200, response.content
        return {p["id"] for p in response.json()["results"]}

    # About 2.75 at 50 MXN and 23.10 at 500 MXN.
    low, high = crossing.min_price, crossing.max_price
    assert low is not None and high is not None
    assert crossing.public_id in listed(minPrice=str(low))
    assert crossing.public_id not in listed(minPrice=str(low + CENT))
    assert crossing.public_id in listed(maxPrice=str(high))
    assert crossing.public_id not in listed(maxPrice=str(high - CENT))
    assert listed(minPrice="5", maxPrice="20") == {fixed.public_id}


def test_routing_takes_the_cheapest_route_that_accepts_the_amount(crossing):
    router = Router([crossing])
    small = router.choose(crossing, amount=Decimal("60"))
    large = router.choose(crossing, amount=Decimal("400"))
    assert small is not None and large is not None
    assert (small.name, small.cost) == ("lean", Decimal("3.0000"))
    assert (large.name, large.cost) == ("flat", Decimal("17.0000"))


def test_a_route_that_does_not_take_the_amount_is_not_chosen(crossing):
    # "lean" only takes up to 80 MXN, in steps of 10 from 50.
    Route.objects.filter(provider__name="lean").update(max_amount=Decimal("80"), step=10)
    router = Router([crossing])
    assert router.choose(crossing, amount=Decimal("60")).name == "lean"
    assert router.choose(crossing, amount=Decimal("65")).name == "flat"  # off its step
    assert router.choose(crossing, amount=Decimal("90")).name == "flat"  # over its max


@override_settings(PRICE_MIN_MARGIN_PERCENT=5)
def test_an_amount_no_route_serves_over_the_floor_is_refused(crossing):
    # At the crossing (100 MXN, both cost 5.00) the chord prices 5.02: 0.4% over the cost.
    assert crossing.price_at(Decimal("100")) < Decimal("5.25")
    with pytest.raises(ProductUnavailable):
        amount_offered_check(product=crossing, amount=Decimal("100"))
    # At the ends the margin is the markup's 10%.
    amount_offered_check(product=crossing, amount=Decimal("50"))
    amount_offered_check(product=crossing, amount=Decimal("500"))


def test_an_amount_no_route_takes_is_refused(crossing):
    Route.objects.filter(product=crossing).update(max_amount=Decimal("300"))
    with pytest.raises(ProductUnavailable):
        amount_offered_check(product=crossing, amount=Decimal("400"))


def test_without_a_rule_the_default_markup_prices_the_line():
    product = range_product()
    range_route(product, provider("only"), fee="0.00", per_peso="0.05")
    with override_settings(PROVIDER_DEFAULT_MARKUP_PERCENT=20):
        products_reprice(product_ids=[product.pk])
    product.refresh_from_db()
    assert abs(product.price_at(Decimal("50")) - Decimal("3.00")) <= CENT  # 2.50 x 1.20
    assert abs(product.price_at(Decimal("500")) - Decimal("30.00")) <= CENT


def test_a_range_with_one_amount_is_priced_at_it():
    product = range_product(range_min=Decimal("100"), range_max=Decimal("100"))
    range_route(product, provider("only"), fee="0.50", per_peso="0.05")
    PriceRule.objects.create(product=product, markup_percent=Decimal("10"))
    products_reprice(product_ids=[product.pk])
    product.refresh_from_db()
    assert abs(product.price_at(Decimal("100")) - Decimal("6.05")) <= CENT  # 5.50 x 1.10


AMOUNTS = st.integers(min_value=1, max_value=5_000).map(Decimal)
PRICES = st.decimals(min_value=Decimal("0.01"), max_value=Decimal("10000"), places=4)


@settings(max_examples=300, deadline=None)
@given(low=AMOUNTS, span=AMOUNTS, price_low=PRICES, extra=PRICES)
def test_the_line_prices_each_end_within_a_cent_of_its_point(low, span, price_low, extra):
    high = low + span
    price_high = price_low + extra
    rate, fee = price_line(low=low, high=high, price_low=price_low, price_high=price_high)
    for amount, point in ((low, price_low), (high, price_high)):
        priced = ceil_cent(amount / rate + fee)
        # The fee's rounding (half a cent), the price's rounding up (a cent), and what the
        # rate's eighth decimal place makes of the amount.
        slack = (amount / rate) * (Decimal("1e-8") / rate)
        assert -(CENT / 2) - slack <= priced - point <= CENT + CENT / 2 + slack


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(amount=st.integers(min_value=50, max_value=500).map(Decimal))
def test_routing_chooses_the_cheaper_cost_at_every_amount(crossing, amount):
    target = Router([crossing]).choose(crossing, amount=amount)
    flat, lean = Decimal("1.00") + amount * Decimal("0.04"), amount * Decimal("0.05")
    assert target is not None
    assert target.cost == min(flat, lean)
    assert target.name == ("lean" if lean < flat else "flat" if flat < lean else target.name)


def test_the_worked_example_of_docs_pricing(crossing):
    """docs/pricing.md, "Worked example: two providers crossing over", figure by figure."""
    assert crossing.pricing_rate == Decimal("22.11302211")
    assert crossing.pricing_fee == Decimal("0.49")
    assert crossing.price_at(Decimal("150")) == Decimal("7.28")
    target = Router([crossing]).choose(crossing, amount=Decimal("150"))
    assert target is not None and (target.name, target.cost) == ("flat", Decimal("7.0000"))
    assert crossing.price_at(Decimal("100")) == Decimal("5.02")
    with override_settings(PRICE_MIN_MARGIN_PERCENT=3), pytest.raises(ProductUnavailable):
        amount_offered_check(product=crossing, amount=Decimal("100"))


def test_the_catalog_lists_a_products_required_fields():
    product = ProductFactory(required_fields=["senderPhone", "recipientEmail"])
    found = anonymous().get(f"{PRODUCTS}/{product.public_id}").json()
    assert found["requiredFields"] == ["senderPhone", "recipientEmail"]


def test_a_simulator_row_keeps_a_range_price_where_it_is_sync_after_sync():
    """The simulator row's cost of a range comes from what each amount was worth when it
    first offered it, not from the price (which is set from that cost): five syncs leave the
    price line where the first put it, and a new AIRTIME_SIMULATOR_COST_PERCENT still moves
    the cost (and the price with it) in proportion."""
    product = RangeProductFactory()  # A / 20 + 0.50 EUR
    provider("sim")

    def sync() -> tuple[Decimal, Decimal]:
        call_command("sync_provider_catalog", "--provider", "sim", stdout=StringIO())
        product.refresh_from_db()
        return product.pricing_rate, product.pricing_fee

    first = sync()
    route = Route.objects.get(provider__name="sim", product=product)
    assert route.send_value == Decimal("1.00") and route.send_per_unit == Decimal("0.05")
    assert route.cost_at(Decimal("100.00")) == Decimal("5.0600")  # 92 % of 5.50
    assert [sync() for _ in range(4)] == [first] * 4
    with override_settings(AIRTIME_SIMULATOR_COST_PERCENT=46):
        sync()
    route.refresh_from_db()
    assert route.cost_at(Decimal("100.00")) == Decimal("2.5300")  # 46 % of 5.50
    assert route.send_value == Decimal("1.00")


@pytest.mark.parametrize("moved_to", ["50.00", "5.00"])
def test_a_simulator_rows_range_costs_the_same_at_each_amount_when_the_range_moves(moved_to):
    """Another provider's route (or staff) moves the range's smallest amount: the simulator's
    worth is a line through its first offer, so each amount costs what it did."""
    product = RangeProductFactory()  # A / 20 + 0.50 EUR, from 10
    provider("sim")
    call_command("sync_provider_catalog", "--provider", "sim", stdout=StringIO())
    route = Route.objects.get(provider__name="sim", product=product)
    before = {amount: route.cost_at(Decimal(amount)) for amount in ("50.00", "100.00", "500.00")}
    Product.objects.filter(pk=product.pk).update(range_min=Decimal(moved_to))
    call_command("sync_provider_catalog", "--provider", "sim", stdout=StringIO())
    route.refresh_from_db()
    assert route.min_amount == Decimal(moved_to) and route.cost >= 0
    assert {amount: route.cost_at(Decimal(amount)) for amount in before} == before
