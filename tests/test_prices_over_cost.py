"""Prices over cost (docs/contract.md §14, docs/pricing.md): staff price rules reprice their
products at once and after every catalog sync, the most specific rule wins, and a product whose
price leaves less than PRICE_MIN_MARGIN_PERCENT over its cheapest healthy route is not offered:
the catalog leaves it out and placing an order with it is 409 ``product_unavailable``.

The providers are the built-in simulator as provider rows: a sync prices each product's route at
``AIRTIME_SIMULATOR_COST_PERCENT`` of the product's retail price at that moment, so a sync at a
higher share is a provider raising its cost."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal
from io import StringIO

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.core.management import CommandError, call_command
from django.test import Client, override_settings
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rest_framework.test import APIClient

from backoffice.models import StaffAction
from catalog.models import Product
from catalog.services import fx_rate_set
from orders.models import Order
from tests.factories import OperatorFactory, ProductFactory, UserFactory, make_key
from tests.helpers import (
    assert_ledger_balanced,
    assert_problem,
    bearer,
    client_for,
    fund,
    second_factor_login,
)
from upstreams import health
from upstreams.models import PriceRule, Provider, Route
from upstreams.pricing import margin_enough, price_over_cost, products_reprice
from upstreams.services import catalog_sync

pytestmark = pytest.mark.django_db

PRODUCTS = "/api/v1/catalog/recharge-products"
B2B = "/api/v1/api-access/b2b/recharges"
QUOTE = "/api/v1/payments/quote"
WALLET_CHECKOUT = "/api/v1/wallet/checkout"
CART_ITEMS = "/api/v1/cart/items"
PREPARE = "/api/v1/payments/prepare"
NUMBER = "+525512345678"


def cli(*args) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue().strip()


def simulator(name: str, *, priority: int = 100) -> Provider:
    cli("create_provider", "--name", name, "--kind", "simulator", "--priority", str(priority))
    return Provider.objects.get(name=name)


def sync(provider: Provider, *, share: int) -> None:
    """The provider's catalog read with its cost at ``share`` percent of each retail price."""
    with override_settings(AIRTIME_SIMULATOR_COST_PERCENT=share):
        catalog_sync(provider=provider)


def fresh(product: Product) -> Product:
    return Product.objects.get(pk=product.pk)


def listed(product: Product) -> bool:
    client = APIClient()
    client.credentials(**bearer(UserFactory()))
    body = client.get(PRODUCTS, {"country": product.country_id, "limit": 100}).json()
    return product.public_id in {item["id"] for item in body["results"]}


def order_body(product: Product, quantity: int = 1) -> dict:
    return {
        "items": [
            {"productId": product.public_id, "recipientNumber": NUMBER, "quantity": quantity}
        ],
        "baseCurrency": "EUR",
    }


def b2b_client():
    user = UserFactory()
    from accounts.services import account_set_b2b

    account_set_b2b(account=user.account, is_b2b=True)
    fund(user, "100.00")
    _key, plaintext = make_key(user, mode="live")
    return user, client_for(plaintext)


# -- set_price_rule reprices at once --------------------------------------------------------------


def test_set_price_rule_reprices_the_product_at_once_over_its_cheapest_route():
    product = ProductFactory(retail_price=Decimal("5.00"))
    sync(simulator("sim-a"), share=80)  # cost 4.00 EUR
    sync(simulator("sim-b"), share=90)  # cost 4.50 EUR
    assert fresh(product).retail_price == Decimal("5.00")

    out = cli("set_price_rule", "--product", product.public_id, "--markup-percent", "12.5")

    assert out == (
        f"product {product.public_id} markup 12.50%: products repriced 1, changed 1, not offered 0"
    )
    product = fresh(product)
    assert (product.retail_price, product.offered) == (Decimal("4.50"), True)  # 4.00 x 1.125
    assert PriceRule.objects.get().markup_percent == Decimal("12.50")
    assert listed(product)


def test_a_rule_prices_over_the_cheapest_healthy_route_not_an_open_one():
    product = ProductFactory(retail_price=Decimal("5.00"))
    cheap = simulator("sim-a")
    sync(cheap, share=80)  # 4.00
    sync(simulator("sim-b"), share=90)  # 4.50
    health.trip(cheap.name)  # sim-a's circuit is open: new recharges skip it

    cli("set_price_rule", "--country", "mx", "--markup-percent", "10")

    assert fresh(product).retail_price == Decimal("4.95")  # 4.50 x 1.10


def test_disabling_the_cheap_provider_reprices_at_once_and_an_unprofitable_product_is_refused():
    """Contract section 14: a product whose price leaves less than the floor over its cheapest
    healthy route is not offered. Disabling a provider changes that route: it sold at a loss
    until the next sync."""
    product = ProductFactory(retail_price=Decimal("5.00"))
    cheap = simulator("sim-a")
    sync(cheap, share=80)  # 4.00 EUR
    sync(simulator("sim-b"), share=99)  # 4.95 EUR: 5.00 is 1 % over it, under the 3 % floor
    assert fresh(product).offered

    cli("set_provider", "--name", "sim-a", "--enabled", "false")

    assert not fresh(product).offered and not listed(product)
    _user, client = b2b_client()
    response = client.post(B2B, order_body(product), format="json", HTTP_IDEMPOTENCY_KEY="k1")
    assert_problem(response, 409, "product_unavailable")
    cli("set_provider", "--name", "sim-a", "--enabled", "true")
    assert fresh(product).offered and listed(product)
    assert_ledger_balanced()


def test_the_most_specific_rule_wins_whatever_order_they_are_set_in():
    own = ProductFactory(retail_price=Decimal("5.00"))
    sibling = ProductFactory(
        retail_price=Decimal("5.00"), operator=own.operator, local_amount=Decimal("200.00")
    )
    elsewhere = ProductFactory(retail_price=Decimal("5.00"))  # another operator, same country
    assert elsewhere.operator_id != own.operator_id and elsewhere.country_id == own.country_id
    sync(simulator("sim"), share=80)  # every one costs 4.00

    cli("set_price_rule", "--product", own.public_id, "--markup-percent", "5")
    cli("set_price_rule", "--operator", own.operator.public_id, "--markup-percent", "10")
    cli("set_price_rule", "--country", "MX", "--markup-percent", "20")

    assert fresh(own).retail_price == Decimal("4.20")  # its own rule
    assert fresh(sibling).retail_price == Decimal("4.40")  # its operator's
    assert fresh(elsewhere).retail_price == Decimal("4.80")  # its country's

    cli("set_price_rule", "--operator", own.operator.public_id, "--markup-percent", "15")
    assert fresh(own).retail_price == Decimal("4.20")
    assert fresh(sibling).retail_price == Decimal("4.60")
    assert PriceRule.objects.count() == 3  # setting a rule again changes it, adds none


def test_products_without_routes_keep_their_set_prices():
    routed = ProductFactory(retail_price=Decimal("5.00"))
    sync(simulator("sim"), share=80)
    demo = ProductFactory(retail_price=Decimal("7.77"))  # after the sync: no route

    out = cli("set_price_rule", "--country", "MX", "--markup-percent", "10")

    assert "products repriced 1," in out
    assert fresh(routed).retail_price == Decimal("4.40")
    demo = fresh(demo)
    assert (demo.retail_price, demo.offered) == (Decimal("7.77"), True)
    assert listed(demo)


def test_without_any_provider_a_rule_changes_no_price():
    product = ProductFactory(retail_price=Decimal("5.00"))
    out = cli("set_price_rule", "--country", "MX", "--markup-percent", "25")
    assert out.endswith("products repriced 0, changed 0, not offered 0")
    assert fresh(product).retail_price == Decimal("5.00")


# -- a sync that changes costs reprices, and never below the floor --------------------------------


def test_a_sync_that_raises_the_cost_reprices_the_products_under_a_rule():
    product = ProductFactory(retail_price=Decimal("5.00"))
    provider = simulator("sim")
    sync(provider, share=80)  # 4.00
    cli("set_price_rule", "--operator", product.operator.public_id, "--markup-percent", "10")
    assert fresh(product).retail_price == Decimal("4.40")

    sync(provider, share=100)  # the provider now charges 4.40 (all of today's price)

    assert Route.objects.get(product=product).cost == Decimal("4.4000")
    product = fresh(product)
    assert (product.retail_price, product.offered) == (Decimal("4.84"), True)  # 4.40 x 1.10


def test_a_sync_that_leaves_less_than_the_floor_withdraws_the_product_everywhere(stripe_local):
    product = ProductFactory(retail_price=Decimal("5.00"))
    provider = simulator("sim")
    sync(provider, share=95)  # 4.75: 5.26 % over cost, over the 3 % floor
    assert fresh(product).offered and listed(product)
    user, b2b = b2b_client()
    assert b2b.post(B2B, order_body(product), HTTP_IDEMPOTENCY_KEY="before").status_code == 201

    sync(provider, share=98)  # 4.90: 2.04 % over cost

    product = fresh(product)
    assert (product.retail_price, product.offered) == (Decimal("5.00"), False)
    assert not listed(product)
    detail = APIClient()
    detail.credentials(**bearer(user))
    assert_problem(detail.get(f"{PRODUCTS}/{product.public_id}"), 404, "not_found")
    orders = Order.objects.count()
    body = assert_problem(
        b2b.post(B2B, order_body(product), HTTP_IDEMPOTENCY_KEY="after"),
        409,
        "product_unavailable",
    )
    assert product.public_id in body["detail"]
    web = APIClient()
    web.credentials(**bearer(user))
    assert_problem(web.post(QUOTE, order_body(product), format="json"), 409, "product_unavailable")
    assert_problem(
        web.post(WALLET_CHECKOUT, order_body(product), format="json"), 409, "product_unavailable"
    )
    assert_problem(
        web.post(PREPARE, order_body(product), format="json"), 409, "product_unavailable"
    )
    assert_problem(
        web.post(
            CART_ITEMS,
            {"productId": product.public_id, "recipientNumber": NUMBER, "quantity": 1},
            format="json",
        ),
        409,
        "product_unavailable",
    )
    assert Order.objects.count() == orders  # nothing placed, nothing charged

    sync(provider, share=98)  # the simulator still sells it: still withdrawn, its route kept
    assert not fresh(product).offered and Route.objects.get(product=product).active


def test_a_rule_brings_a_withdrawn_product_back_over_the_floor_and_one_under_it_withdraws():
    product = ProductFactory(retail_price=Decimal("5.00"))
    provider = simulator("sim")
    sync(provider, share=98)  # 4.90 cost: withdrawn at its 5.00 price
    assert not fresh(product).offered

    out = cli("set_price_rule", "--product", product.public_id, "--markup-percent", "10")

    assert out.endswith("not offered 0")
    product = fresh(product)
    assert (product.retail_price, product.offered) == (Decimal("5.39"), True)  # 4.90 x 1.10
    assert listed(product)

    out = cli("set_price_rule", "--product", product.public_id, "--markup-percent", "2")
    assert out.endswith("not offered 1")
    product = fresh(product)
    assert (product.retail_price, product.offered) == (Decimal("5.00"), False)  # 4.90 x 1.02


@override_settings(PRICE_MIN_MARGIN_PERCENT=0)
def test_the_floor_is_a_setting():
    product = ProductFactory(retail_price=Decimal("5.00"))
    sync(simulator("sim"), share=98)
    assert fresh(product).offered


def test_the_cart_shows_a_withdrawn_product_and_checkout_refuses_it(stripe_local):
    product = ProductFactory(retail_price=Decimal("5.00"))
    provider = simulator("sim")
    sync(provider, share=90)
    user = UserFactory()
    fund(user, "50.00")
    web = APIClient()
    web.credentials(**bearer(user))
    added = {"productId": product.public_id, "recipientNumber": NUMBER, "quantity": 1}
    assert web.post(CART_ITEMS, added, format="json").status_code == 201

    sync(provider, share=99)

    cart = web.get("/api/v1/cart")
    assert cart.status_code == 200 and cart.json()["items"][0]["productId"] == product.public_id
    assert_problem(
        web.post(PREPARE, {"sessionId": "default"}, format="json"), 409, "product_unavailable"
    )
    assert_problem(
        web.post(QUOTE, {"sessionId": "default"}, format="json"), 409, "product_unavailable"
    )
    site = Client()
    site.force_login(user)
    page = site.get("/cart/")
    assert page.status_code == 200 and b'data-testid="cart-item-unavailable"' in page.content
    paid = site.post("/checkout/wallet/", follow=True)
    assert b"is not available at the moment" in paid.content
    assert not Order.objects.filter(account=user.account).exists()


# -- bad input ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--markup-percent", "10"), "one of the arguments"),
        (("--country", "MX", "--product", "prd_x", "--markup-percent", "10"), "not allowed with"),
        (("--country", "MX"), "--markup-percent"),
        (("--country", "ZZ", "--markup-percent", "10"), "no catalog country 'ZZ'"),
        (("--operator", "opr_nope", "--markup-percent", "10"), "no catalog operator 'opr_nope'"),
        (("--product", "prd_nope", "--markup-percent", "10"), "no catalog product 'prd_nope'"),
        (("--country", "MX", "--markup-percent", "ten"), "from 0 to 1000"),
        (("--country", "MX", "--markup-percent", "-1"), "from 0 to 1000"),
        (("--country", "MX", "--markup-percent", "1000.01"), "from 0 to 1000"),
        (("--country", "MX", "--markup-percent", "NaN"), "from 0 to 1000"),
        (("--country", " ", "--markup-percent", "10"), "exactly one of a country"),
    ],
)
def test_bad_set_price_rule_input_is_a_command_error_and_changes_nothing(args, message):
    product = ProductFactory(retail_price=Decimal("5.00"))
    sync(simulator("sim"), share=80)
    with pytest.raises(CommandError, match=message):
        cli("set_price_rule", *args)
    assert PriceRule.objects.count() == 0
    assert fresh(product).retail_price == Decimal("5.00")


# -- the back office ------------------------------------------------------------------------------


@pytest.fixture
def staff_client(staff) -> Client:
    client = Client()
    second_factor_login(client, staff)
    return client


def test_staff_add_a_price_rule_in_the_back_office_and_see_what_is_not_offered(staff_client):
    product = ProductFactory(retail_price=Decimal("5.00"))
    withdrawn = ProductFactory(retail_price=Decimal("5.00"))
    provider = simulator("sim")
    sync(provider, share=80)

    response = staff_client.post(
        "/admin/upstreams/pricerule/add/",
        {"product": product.pk, "markup_percent": "25"},
    )
    assert response.status_code == 302, response.content
    assert fresh(product).retail_price == Decimal("5.00")  # 4.00 x 1.25
    rule = PriceRule.objects.get()
    assert StaffAction.objects.filter(action="price_rule.set").count() == 1

    response = staff_client.post(
        f"/admin/upstreams/pricerule/{rule.pk}/change/", {"markup_percent": "1"}
    )
    assert response.status_code == 302, response.content
    assert (fresh(product).retail_price, fresh(product).offered) == (Decimal("4.04"), False)

    refused = staff_client.post(
        "/admin/upstreams/pricerule/add/",
        {"product": withdrawn.pk, "operator": withdrawn.operator.pk, "markup_percent": "5"},
    )
    assert refused.status_code == 200 and PriceRule.objects.count() == 1

    listing = staff_client.get("/admin/upstreams/pricerule/", follow=True).content.decode()
    assert "1 product is not offered" in listing
    products = staff_client.get("/admin/catalog/product/?active__exact=1&offered__exact=0")
    assert product.public_id in products.content.decode()
    assert withdrawn.public_id not in products.content.decode()

    staff_client.post(
        "/admin/upstreams/pricerule/",
        {"action": "delete_selected", ACTION_CHECKBOX_NAME: [rule.pk], "post": "yes"},
    )
    assert PriceRule.objects.count() == 0
    assert StaffAction.objects.filter(action="price_rule.delete").count() == 1
    # No rule: it keeps the price it has, 4.04, still under the floor over 4.00.
    assert (fresh(product).retail_price, fresh(product).offered) == (Decimal("4.04"), False)


def test_the_admin_api_lists_the_products_not_offered(staff):
    kept = ProductFactory(retail_price=Decimal("5.00"))
    dear = ProductFactory(retail_price=Decimal("5.00"), local_amount=Decimal("300.00"))
    provider = simulator("sim")
    sync(provider, share=90)
    cli("set_price_rule", "--product", dear.public_id, "--markup-percent", "1")
    client = APIClient()
    client.credentials(**bearer(staff))
    body = client.get("/api/v1/admin/products", {"offered": "false"}).json()
    assert [row["id"] for row in body["results"]] == [dear.public_id]
    assert body["results"][0]["offered"] is False
    offered = client.get("/api/v1/admin/products", {"offered": "true"}).json()["results"]
    assert [row["id"] for row in offered] == [kept.public_id]


def test_a_price_staff_type_in_the_product_page_is_checked_against_the_floor(staff_client):
    product = ProductFactory(retail_price=Decimal("5.00"))
    sync(simulator("sim"), share=80)  # 4.00
    data = {
        "operator": product.operator_id,
        "product_type": "airtime",
        "denomination": "fixed",
        "active": "on",
        "name": product.name,
        "description": "",
        "local_amount": "100.00",
        "local_currency": product.local_currency,
        "retail_price": "4.10",  # 2.5 % over 4.00
        "retail_currency": "EUR",
        "validity_days": "",
        "name_es": "",
        "name_fr": "",
        "description_es": "",
        "description_fr": "",
    }
    response = staff_client.post(f"/admin/catalog/product/{product.pk}/change/", data)
    assert response.status_code == 302, response.content
    assert (fresh(product).retail_price, fresh(product).offered) == (Decimal("4.10"), False)


# -- the arithmetic, for any cost, rate, markup and floor ------------------------------------------

costs = st.decimals(min_value=Decimal("0.0001"), max_value=Decimal("5000"), places=4)
rates = st.decimals(min_value=Decimal("0.2"), max_value=Decimal("25"), places=8)
percents = st.decimals(min_value=Decimal("0"), max_value=Decimal("200"), places=2)


@settings(max_examples=300, deadline=None)
@given(cost=costs, rate=rates, markup=percents, floor=percents)
def test_a_price_is_markup_over_the_converted_cost_to_the_cent_and_offered_only_over_the_floor(
    cost, rate, markup, floor
):
    price = price_over_cost(cost=cost, rate=rate, markup_percent=markup)
    exact = cost * rate * (1 + markup / 100)
    assert price == price.quantize(Decimal("0.01"))
    assert abs(price - exact) <= Decimal("0.005")
    assert price == exact.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
    offered = margin_enough(price=price, cost=cost * rate, floor_percent=floor)
    assert offered == (price >= cost * rate * (1 + floor / 100))
    if markup >= floor + 1 and cost * rate >= 1:  # a point over the floor beats any rounding
        assert offered


usd_costs = st.integers(min_value=50, max_value=200_000).map(lambda c: Decimal(c) / 100)
eur_per_usd = st.integers(min_value=50_000_000, max_value=150_000_000).map(
    lambda r: Decimal(r) / 100_000_000
)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(cost=usd_costs, rate=eur_per_usd, markup=percents, floor=percents)
def test_repricing_a_route_in_another_currency_never_offers_a_product_under_the_floor(
    cost, rate, markup, floor
):
    """A product priced in EUR sold through a provider charging USD: its price is the markup
    over the cost converted at the FX table's rate, to the cent; it is offered exactly when
    that price leaves the floor over the converted cost, and the catalog lists it then only."""
    fx_rate_set(base_currency="USD", quote_currency="EUR", rate=rate)
    operator = OperatorFactory()
    product = ProductFactory(operator=operator, retail_price=Decimal("1.00"))
    provider = Provider.objects.create(name=f"p{product.pk}", kind="simulator", currency="USD")
    upstream = provider.operators.create(upstream_id="1", name=operator.name, country="MX")
    Route.objects.create(
        provider=provider,
        upstream_operator=upstream,
        product=product,
        cost=cost,
        cost_currency="USD",
    )
    PriceRule.objects.create(product=product, markup_percent=markup)

    with override_settings(PRICE_MIN_MARGIN_PERCENT=float(floor)):
        products_reprice(product_ids=[product.pk])

    product = fresh(product)
    converted = cost * Decimal(rate).quantize(Decimal("0.00000001"))
    expected = (converted * (1 + markup / 100)).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
    assert product.retail_price == expected
    assert product.offered == (expected >= converted * (1 + floor / 100))
    if product.offered:
        assert product.retail_price >= converted * (1 + floor / 100)
    assert listed(product) == product.offered
