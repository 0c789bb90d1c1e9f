"""The catalog's ``minPrice``/``maxPrice`` compare the price the response shows the caller
(contract sections 17 and 18; docs/catalog.md, "Price filters and the caller's own prices"):
an agent of a network, or a top account priced by a platform list, filters on its own price
(a range product on its own price at the two ends of its range), with ``count`` and the pages
right; everyone whose shown price is the retail price filters on the retail price, in SQL, as
before."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from hypothesis import example, given, settings
from hypothesis import strategies as st
from rest_framework.test import APIClient

from accounts.models import Account
from catalog.models import Operator, Product
from network.price_lists import RuleSpec, price_list_assign, price_list_create
from network.prices import AccountPrices, Level, ListRules
from tests.factories import (
    PASSWORD,
    OperatorFactory,
    ProductFactory,
    RangeProductFactory,
    UserFactory,
    make_country,
    make_key,
)
from tests.helpers import bearer, client_for

pytestmark = pytest.mark.django_db

PRODUCTS = "/api/v1/catalog/recharge-products"


def agent_of(parent: Account) -> Account:
    """An agent one level below ``parent`` (as tests/test_network_prices.py builds them)."""
    return Account.objects.create(
        name=f"Agent of {parent.name}",
        parent=parent,
        depth=parent.depth + 1,
        wallet_currency=parent.wallet_currency,
    )


def fixed(operator: Operator, retail: str) -> Product:
    return ProductFactory.create(operator=operator, retail_price=Decimal(retail))


def ranged(operator: Operator, *, low: str, high: str, step: str, fee: str) -> Product:
    """Priced A / 20 + fee, from ``low`` to ``high`` local units."""
    return RangeProductFactory.create(
        operator=operator,
        range_min=Decimal(low),
        range_max=Decimal(high),
        range_step=Decimal(step),
        pricing_rate=Decimal(20),
        pricing_fee=Decimal(fee),
    )


def listed(client: APIClient, **query: str) -> list[str]:
    response = client.get(PRODUCTS, {"country": "MX", "limit": "100", **query})
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["count"] == len(body["results"])
    return [item["id"] for item in body["results"]]


def paged(client: APIClient, **query: str) -> tuple[list[str], set[int]]:
    """Every page of one product (``limit=1``): the ids in order and the counts given."""
    ids, counts, page = [], set(), 1
    while True:
        params = {"country": "MX", "limit": "1", "page": str(page), **query}
        response = client.get(PRODUCTS, params)
        assert response.status_code == 200, response.content
        body = response.json()
        counts.add(body["count"])
        ids += [item["id"] for item in body["results"]]
        if not body["next"]:
            return ids, counts
        page += 1


@pytest.fixture
def mexico():
    return make_country("MX", "Mexico", "+52", "MXN")


# -- an agent at level 2 ------------------------------------------------------------------------


@pytest.fixture
def agent_catalog(mexico):
    """top → agent, whose list is MX +10 %, one operator at 0 % and one product at +20 %.

    Shown to the agent (retail → its price, rounded up to the cent):
    a 1.00 → 1.10, b 1.10 → 1.21, c 0.95 → 1.05 (1.045), d 1.01 → 1.12 (1.111),
    e 1.02 → 1.13 (1.122), g 0.90 → 1.08 (its own +20 %), h 1.08 → 1.08 (operator 0 %);
    range r_in: 1.00 → 1.10 at 10 MXN, 1.01 → 1.12 at 10.20 MXN;
    range r_out: 1.00 → 1.10 at 10 MXN, 1.02 → 1.13 at 10.40 MXN."""
    telcel = OperatorFactory(country=mexico, name="Telcel")
    movistar = OperatorFactory(country=mexico, name="Movistar")
    made = {
        "a": fixed(telcel, "1.00"),
        "b": fixed(telcel, "1.10"),
        "c": fixed(telcel, "0.95"),
        "d": fixed(telcel, "1.01"),
        "e": fixed(telcel, "1.02"),
        "g": fixed(telcel, "0.90"),
        "h": fixed(movistar, "1.08"),
        "r_in": ranged(telcel, low="10", high="10.20", step="0.20", fee="0.50"),
        "r_out": ranged(telcel, low="10", high="10.40", step="0.20", fee="0.50"),
    }
    top_owner = UserFactory()
    agent = agent_of(top_owner.account)
    agent_owner = UserFactory(account=agent, role="owner")
    agents = price_list_create(
        owner=top_owner.account,
        name="Agents",
        rules=[
            RuleSpec(markup_percent=Decimal(10), country="MX"),
            RuleSpec(markup_percent=Decimal(0), operator=movistar.public_id),
            RuleSpec(markup_percent=Decimal(20), product=made["g"].public_id),
        ],
    )
    price_list_assign(account=agent, price_list=agents)
    return {"products": made, "agent_owner": agent_owner, "top_owner": top_owner}


def agent_client(catalog, how: str) -> APIClient:
    owner = catalog["agent_owner"]
    if how == "key":
        _key, plaintext = make_key(owner, mode="live")
        return client_for(plaintext)
    client = APIClient()
    if how == "jwt":
        client.credentials(**bearer(owner))
    else:  # the site's session
        assert client.login(username=owner.email, password=PASSWORD)
    return client


def names(catalog, ids: list[str]) -> set[str]:
    by_id = {product.public_id: name for name, product in catalog["products"].items()}
    return {by_id[i] for i in ids}


@pytest.mark.parametrize("how", ["key", "jwt", "session"])
def test_an_agents_price_filters_compare_the_price_it_is_shown(agent_catalog, how):
    client = agent_client(agent_catalog, how)
    shown = {
        item["id"]: item["price"] for item in client.get(PRODUCTS, {"limit": 100}).json()["results"]
    }
    by_name = {name: shown[p.public_id] for name, p in agent_catalog["products"].items()}
    assert by_name == {
        "a": "1.10",
        "b": "1.21",
        "c": "1.05",
        "d": "1.12",
        "e": "1.13",
        "g": "1.08",
        "h": "1.08",
        "r_in": None,
        "r_out": None,
    }
    # The audit's case: nothing shown above maxPrice (retail would let b, e and r_out in).
    assert names(agent_catalog, listed(client, maxPrice="1.12")) == {*"acdgh", "r_in"}
    # Retail would keep b alone.
    assert names(agent_catalog, listed(client, minPrice="1.06")) == {*"abdegh", "r_in", "r_out"}
    both = listed(client, minPrice="1.06", maxPrice="1.12")
    assert names(agent_catalog, both) == {"a", "d", "g", "h", "r_in"}
    # Bounds on the agent's exact prices (inclusive), a range product at both ends.
    assert names(agent_catalog, listed(client, minPrice="1.05", maxPrice="1.05")) == {"c"}
    assert names(agent_catalog, listed(client, minPrice="1.10", maxPrice="1.12")) == {*"ad", "r_in"}
    assert listed(client, minPrice="1.14", maxPrice="1.20") == []


def test_an_agents_filtered_pages_and_count_are_right_one_product_a_page(agent_catalog):
    client = agent_client(agent_catalog, "jwt")
    everything = listed(client, minPrice="1.06", maxPrice="1.12")
    ids, counts = paged(client, minPrice="1.06", maxPrice="1.12")
    assert ids == everything  # the catalog's order, each once
    assert counts == {5}
    ids, counts = paged(client, maxPrice="1.12")
    assert len(ids) == 6 and counts == {6}


def test_the_top_of_an_agent_without_a_list_still_filters_on_retail(agent_catalog):
    client = APIClient()
    client.credentials(**bearer(agent_catalog["top_owner"]))
    retail = listed(client, minPrice="1.00", maxPrice="1.02")
    assert names(agent_catalog, retail) == {"a", "d", "e", "r_in", "r_out"}


# -- a top account priced by a platform list (a negative markup) ---------------------------------


@pytest.fixture
def platform_catalog(mexico):
    """A top account on the platform list MX -10 %: a 1.00 → 0.90, b 1.10 → 0.99,
    c 1.20 → 1.08, d 1.25 → 1.13 (1.125), e 1.22 → 1.10 (1.098); range r_in 1.12 → 1.01 at
    10 MXN, 1.22 → 1.10 at 12 MXN; range r_out 1.10 → 0.99 at 10 MXN, 1.11 → 1.00 (0.999) at
    10.20 MXN."""
    telcel = OperatorFactory(country=mexico, name="Telcel")
    made = {
        "a": fixed(telcel, "1.00"),
        "b": fixed(telcel, "1.10"),
        "c": fixed(telcel, "1.20"),
        "d": fixed(telcel, "1.25"),
        "e": fixed(telcel, "1.22"),
        "r_in": ranged(telcel, low="10", high="12", step="2", fee="0.62"),
        "r_out": ranged(telcel, low="10", high="10.20", step="0.20", fee="0.60"),
    }
    owner = UserFactory()
    gold = price_list_create(
        owner=None, name="Gold", rules=[RuleSpec(markup_percent=Decimal(-10), country="MX")]
    )
    price_list_assign(account=owner.account, price_list=gold)
    return {"products": made, "owner": owner}


def test_a_platform_listed_accounts_price_filters_compare_its_own_price(platform_catalog):
    _key, plaintext = make_key(platform_catalog["owner"], mode="live")
    client = client_for(plaintext)
    shown = {item["id"]: item["price"] for item in client.get(PRODUCTS).json()["results"]}
    products = platform_catalog["products"]
    assert [shown[products[n].public_id] for n in "abcde"] == [
        "0.90",
        "0.99",
        "1.08",
        "1.13",
        "1.10",
    ]
    # Retail would select a, b and r_out; the account's own prices select c, e and r_in.
    assert names(platform_catalog, listed(client, minPrice="1.00", maxPrice="1.10")) == {
        "c",
        "e",
        "r_in",
    }
    assert names(platform_catalog, listed(client, maxPrice="0.99")) == {"a", "b"}
    assert names(platform_catalog, listed(client, minPrice="1.10")) == {"d", "e"}
    ids, counts = paged(client, minPrice="1.00", maxPrice="1.10")
    assert names(platform_catalog, ids) == {"c", "e", "r_in"} and counts == {3}


# -- callers shown the retail price ------------------------------------------------------------


def test_an_account_shown_retail_prices_filters_on_them_in_sql(mexico):
    """A top account without a list sees retail prices (its discountPercent applies when it
    orders, contract section 4): its filters are today's, with no extra query."""
    telcel = OperatorFactory(country=mexico)
    made = {
        "a": fixed(telcel, "1.00"),
        "b": fixed(telcel, "1.10"),
        "c": fixed(telcel, "1.11"),
        "r": ranged(telcel, low="10", high="12", step="2", fee="0.50"),  # 1.00 .. 1.10
        "r_high": ranged(telcel, low="10", high="12.40", step="0.20", fee="0.50"),  # .. 1.12
    }
    owner = UserFactory()
    owner.account.discount_percent = Decimal("5.00")
    owner.account.save(update_fields=["discount_percent"])
    client = APIClient()
    client.credentials(**bearer(owner))
    catalog = {"products": made}
    assert names(catalog, listed(client, minPrice="1.00", maxPrice="1.10")) == {"a", "b", "r"}
    ids, counts = paged(client, minPrice="1.00", maxPrice="1.10")
    assert names(catalog, ids) == {"a", "b", "r"} and counts == {3}
    with CaptureQueriesContext(connection) as queries:
        listed(client, minPrice="1.00", maxPrice="1.10")
    reads = [q["sql"] for q in queries.captured_queries if 'FROM "catalog_product"' in q["sql"]]
    assert len(reads) == 2  # the count and the page, the bounds in their WHERE


def test_a_caller_without_credentials_gets_no_catalog(mexico):
    assert APIClient().get(PRODUCTS, {"maxPrice": "1.00"}).status_code == 401


# -- the SQL window holds every product a caller's bounds can select ------------------------------

MARKUP = st.decimals(min_value=Decimal("-99.99"), max_value=Decimal(1000), places=2)
AGENT_MARKUP = st.decimals(min_value=Decimal(0), max_value=Decimal(1000), places=2)


def _rules(draw, markup) -> ListRules:
    """A list with (maybe) a rule for product 1, its operator 1, its country MX, and for others."""
    maybe = st.none() | markup
    rules = ListRules()
    for scope in (rules.products, rules.operators):
        value = draw(maybe)
        if value is not None:
            scope[1] = value
    value = draw(maybe)
    if value is not None:
        rules.countries["MX"] = value
    for n, value in enumerate(draw(st.lists(markup, max_size=3))):
        rules.products[n + 2] = value
    return rules


@st.composite
def chains(draw) -> AccountPrices:
    top_list = draw(st.booleans())
    levels = [Level(1, 100 if top_list else None)]
    rules = {100: _rules(draw, MARKUP)} if top_list else {}
    for n in range(draw(st.integers(min_value=0, max_value=3))):
        has_list = draw(st.booleans())
        levels.append(Level(n + 2, n + 101 if has_list else None))
        if has_list:
            rules[n + 101] = _rules(draw, AGENT_MARKUP)
    discount = draw(st.decimals(min_value=Decimal(0), max_value=Decimal(100), places=2))
    return AccountPrices(levels=tuple(levels), top_discount_percent=discount, rules=rules)


# A top account's discount rounding half up, then a large markup below it: 1.01 * 0.5 = 0.505
# -> 0.51, * 3 = 1.53, over 1.52 though 1.01 * 1.5 = 1.515 is not. The window's slack keeps it
# out of the sure ones.
DIVERGING = AccountPrices(
    levels=(Level(1, None), Level(2, 101)),
    top_discount_percent=Decimal(50),
    rules={101: ListRules(countries={"MX": Decimal(200)})},
)


@settings(max_examples=300)
@example(
    prices=DIVERGING,
    retail=Decimal("1.01"),
    low_offset=Decimal("-1.53"),
    high_offset=Decimal("-0.01"),
)
@given(
    prices=chains(),
    retail=st.decimals(min_value=Decimal("0.01"), max_value=Decimal("5000"), places=2),
    low_offset=st.decimals(min_value=Decimal(-3), max_value=Decimal("0.05"), places=2),
    high_offset=st.decimals(min_value=Decimal("-0.05"), max_value=Decimal(3), places=2),
)
def test_the_retail_window_holds_every_product_selected_and_sure_ones_are_within(
    prices, retail, low_offset, high_offset
):
    product = Product(
        pk=1, operator_id=1, country_id="MX", retail_price=retail, retail_currency="EUR"
    )
    shown = prices.price_at(product, None)
    assert shown is not None and shown == prices.price(product)
    low, high = shown + low_offset, shown + high_offset
    window = prices.retail_window(low=low, high=high)
    if low <= shown <= high:  # a product the caller's bounds select is never left out
        assert window.low is None or window.low <= retail
        assert window.high is None or retail <= window.high
    sure = (
        window.sure
        and (window.sure_low is None or retail >= window.sure_low)
        and (window.sure_high is None or retail <= window.sure_high)
    )
    if sure:
        assert low <= shown <= high  # one said to be sure is within


# -- cost -------------------------------------------------------------------------------------


def test_an_agents_filtered_list_costs_a_fixed_number_of_queries(
    agent_catalog, mexico, django_assert_max_num_queries
):
    client = agent_client(agent_catalog, "jwt")
    query = {"minPrice": "1.06", "maxPrice": "1.12"}
    with CaptureQueriesContext(connection) as small:
        assert len(listed(client, **query)) == 5
    operator = OperatorFactory(country=mexico)
    for k in range(60):
        fixed(operator, str(Decimal("0.90") + Decimal(k) / 100))
    with CaptureQueriesContext(connection) as large:
        many = listed(client, **query)
    assert len(large.captured_queries) == len(small.captured_queries)
    # user, the caller's chain, its list's rules, the country of the filter, the candidates'
    # prices, count, page, promotions, promotion products: one load of the caller's prices
    # serves the filters and the serializer.
    with django_assert_max_num_queries(9):
        assert listed(client, **query) == many
    network = [q for q in large.captured_queries if "network_" in q["sql"]]
    assert len(network) == 2
