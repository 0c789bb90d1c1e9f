"""The site shows a signed-in account its own price before the cart (contract section 18: "The
catalog, quotes, carts and orders of an agent show its own price"; docs/network.md, "What the
site shows"): an operator's page (a fixed product's price, a range product's "from" price) and
the price of an amount typed (``/products/<id>/price``) are what the cart then charges, and, for
an agent or an account priced by a platform list, what the API catalog shows it. A visitor
without an account sees the catalog's retail prices, as before."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from accounts.models import Account
from catalog.models import Product
from network.price_lists import RuleSpec, price_list_assign, price_list_create
from tests.factories import (
    PASSWORD,
    OperatorFactory,
    ProductFactory,
    RangeProductFactory,
    UserFactory,
    make_country,
)
from tests.helpers import bearer

pytestmark = pytest.mark.django_db

NUMBER = "+525512345678"
PAGE = "/catalog/MX/telcel/"
PRODUCTS = "/api/v1/catalog/recharge-products"
QUOTE = "/api/v1/payments/quote"


@pytest.fixture
def telcel():
    mexico = make_country("MX", "Mexico", "+52", "MXN", translations={"es": {"name": "México"}})
    return OperatorFactory(country=mexico, name="Telcel", slug="telcel", prefixes=["55"])


@pytest.fixture
def fixed(telcel):
    return ProductFactory(operator=telcel, name="Telcel 100", retail_price=Decimal("4.99"))


@pytest.fixture
def ranged(telcel):
    """10 to 500 MXN in steps of 5, priced A / 20 + 0.50 EUR: 10 MXN is 1.00, 150 MXN 8.00."""
    return RangeProductFactory(operator=telcel, name="Telcel any amount")


def signed_in(user) -> Client:
    client = Client()
    assert client.login(username=user.email, password=PASSWORD)
    return client


def agent_of(parent: Account) -> Account:
    return Account.objects.create(
        name=f"Agent of {parent.name}",
        parent=parent,
        depth=parent.depth + 1,
        wallet_currency=parent.wallet_currency,
    )


def an_agent():
    """An agent at level 2, priced by its parent's list (MX +7 %)."""
    top = UserFactory().account
    agent = agent_of(top)
    markup = price_list_create(
        owner=top, name="Agents", rules=[RuleSpec(markup_percent=Decimal(7), country="MX")]
    )
    price_list_assign(account=agent, price_list=markup)
    return UserFactory(account=agent, role="owner")


def a_top_account_with_a_platform_list():
    """A top account priced by a platform list (MX -2 %: under retail)."""
    user = UserFactory()
    gold = price_list_create(
        owner=None, name="Gold", rules=[RuleSpec(markup_percent=Decimal(-2), country="MX")]
    )
    price_list_assign(account=user.account, price_list=gold)
    return user


def a_top_account_with_a_discount():
    """A top account without a list, with a 10 % ``discountPercent`` (contract section 4)."""
    user = UserFactory()
    Account.objects.filter(pk=user.account_id).update(discount_percent=Decimal(10))
    return user


# What each pays (docs/network.md, "The arithmetic"), in EUR: the fixed product (4.99), the
# range product at its smallest amount (10 MXN: 1.00) and at 150 MXN (8.00).
EXPECTED = {
    # 4.99 * 1.07 = 5.3393 -> up 5.34; 1.00 * 1.07 = 1.07; 8.00 * 1.07 = 8.56
    "agent": (an_agent, "5.34", "1.07", "8.56"),
    # 4.99 * 0.98 = 4.8902 -> up 4.90; 0.98; 7.84
    "platform list": (a_top_account_with_a_platform_list, "4.90", "0.98", "7.84"),
    # 4.99 * 0.90 = 4.491 -> half up 4.49; 0.90; 7.20
    "discount": (a_top_account_with_a_discount, "4.49", "0.90", "7.20"),
}


def card_price(html: str, product: Product) -> str:
    """The price on a product's card of an operator's page, as shown."""
    found = re.search(
        rf'id="{product.public_id}".*?<span class="price"[^>]*>([^<]*)</span>', html, re.S
    )
    assert found is not None, html
    return " ".join(found.group(1).split())


def typed_price(client, product: Product, amount: str) -> dict:
    response = client.get(f"/products/{product.public_id}/price", {"amount": amount})
    assert response.status_code == 200, response.content
    return response.json()


def api_price(user, product: Product) -> dict:
    client = APIClient()
    client.credentials(**bearer(user))
    response = client.get(f"{PRODUCTS}/{product.public_id}")
    assert response.status_code == 200, response.content
    return response.json()


def api_quote(user, product: Product, amount: str) -> str:
    """The unit price of one ``amount`` of ``product`` in an API quote for ``user``."""
    client = APIClient()
    client.credentials(**bearer(user))
    line = {"productId": product.public_id, "recipientNumber": NUMBER, "quantity": 1}
    body = {"items": [{**line, "localAmount": amount}], "baseCurrency": "EUR"}
    response = client.post(QUOTE, body, format="json")
    assert response.status_code == 200, response.content
    return response.json()["lines"][0]["unitPrice"]


def cart_unit_prices(client) -> list[str]:
    """The unit prices the site's cart charges, in the order of its lines."""
    html = client.get("/cart/").content.decode()
    return re.findall(r"· ([\d.]+) EUR each", html)


def add(client, product: Product, amount: str | None = None) -> None:
    data = {"product": product.public_id, "recipient_number": NUMBER, "quantity": "1"}
    if amount is not None:
        data["local_amount"] = amount
    response = client.post("/cart/add/", {**data, "next": PAGE})
    assert response.status_code == 302 and response["Location"] == "/cart/", response


@pytest.mark.parametrize("who", EXPECTED)
def test_the_operator_page_and_the_typed_amount_show_what_the_cart_charges(who, fixed, ranged):
    make_user, fixed_price, from_price, at_150 = EXPECTED[who]
    user = make_user()
    client = signed_in(user)

    html = client.get(PAGE, {"phone": NUMBER}).content.decode()
    assert card_price(html, fixed) == f"{fixed_price} EUR"
    assert card_price(html, ranged) == f"from {from_price} EUR"
    assert typed_price(client, ranged, "150")["price"] == at_150
    assert typed_price(client, ranged, "10")["price"] == from_price

    add(client, fixed)
    add(client, ranged, "10")
    add(client, ranged, "150")
    assert cart_unit_prices(client) == [fixed_price, from_price, at_150]


@pytest.mark.parametrize("who", ["agent", "platform list"])
def test_an_account_priced_by_a_list_sees_on_the_site_what_the_api_catalog_shows_it(
    who, fixed, ranged
):
    make_user, fixed_price, from_price, _at_150 = EXPECTED[who]
    user = make_user()
    html = signed_in(user).get(PAGE).content.decode()
    assert api_price(user, fixed)["price"] == fixed_price
    assert card_price(html, fixed) == f"{fixed_price} EUR"
    # A range product: the API's exact price of its smallest amount is a quote's (its catalog
    # `pricing` is the caller's guide, a cent off at most since each level rounds).
    assert api_quote(user, ranged, "10") == from_price
    assert card_price(html, ranged) == f"from {from_price} EUR"
    pricing = api_price(user, ranged)["pricing"]
    guide = Decimal(10) / Decimal(pricing["rate"]) + Decimal(pricing["fee"])
    assert abs(guide - Decimal(from_price)) <= Decimal("0.01")


def test_a_discounted_top_account_sees_its_discount_on_the_site_and_retail_in_the_api(
    fixed,
):
    """The API catalog shows such an account the catalog's prices (contract section 17: "before
    the account's discount"); the site, which says what it pays, shows it less its discount."""
    user = a_top_account_with_a_discount()
    assert api_price(user, fixed)["price"] == "4.99"
    assert card_price(signed_in(user).get(PAGE).content.decode(), fixed) == "4.49 EUR"


def test_a_visitor_without_an_account_sees_retail_prices(client, fixed, ranged):
    html = client.get(PAGE, {"phone": NUMBER}).content.decode()
    assert card_price(html, fixed) == "4.99 EUR"
    assert card_price(html, ranged) == "from 1.00 EUR"
    assert typed_price(client, ranged, "150")["price"] == "8.00"


def test_the_spanish_page_shows_the_agents_price_in_spanish(fixed, ranged):
    client = signed_in(an_agent())
    html = client.get(PAGE, headers={"Accept-Language": "es"}).content.decode()
    assert card_price(html, fixed) == "5,34 EUR"
    assert card_price(html, ranged) == "desde 1,07 EUR"


def test_an_agents_page_prices_every_product_in_two_queries(telcel, fixed, ranged):
    """The account's chain and its lists' rules are loaded once for the page, whatever the
    number of products on it."""
    client = signed_in(an_agent())
    client.get(PAGE)  # warm: the session, the translations
    for n in range(6):
        ProductFactory(operator=telcel, local_amount=Decimal(200 + n))
    with CaptureQueriesContext(connection) as queries:
        html = client.get(PAGE).content.decode()
    assert card_price(html, fixed) == "5.34 EUR"
    network = [q["sql"] for q in queries.captured_queries if "network_" in q["sql"]]
    assert len(network) == 2, network
