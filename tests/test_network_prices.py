"""Price lists and what an account pays (contract section 18, "Price lists"; docs/network.md):
each level of a network pays its parent's price plus the markup of the list its parent gave
it, rounded up to the cent once; a top account pays the retail price less its discount, or
its platform list's markup; the catalog, quotes, carts and orders show the caller its own
price; lists are managed by their owners (staff: the platform's) and nobody else sees them."""

from __future__ import annotations

from decimal import ROUND_CEILING, ROUND_HALF_UP, Decimal
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from hypothesis import given
from hypothesis import strategies as st
from rest_framework.test import APIClient

from accounts.models import Account
from accounts.services import account_set_b2b
from catalog.models import Product
from network.models import PriceList, PriceListAssignment, PriceListRule
from network.price_lists import RuleSpec, price_list_assign, price_list_create
from network.prices import (
    AccountPrices,
    Level,
    ListRules,
    account_prices,
    account_prices_chain,
    account_unit_price,
)
from orders.models import Order
from reseller.errors import ValidationFailed
from tests.factories import (
    OperatorFactory,
    ProductFactory,
    RangeProductFactory,
    UserFactory,
    make_country,
    make_key,
)
from tests.helpers import assert_problem, bearer, client_for, fund

pytestmark = pytest.mark.django_db

CENT = Decimal("0.01")
LISTS = "/api/v1/network/price-lists"
B2B = "/api/v1/api-access/b2b/recharges"
CHECKOUT = "/api/v1/wallet/checkout"
QUOTE = "/api/v1/payments/quote"
CART_ITEMS = "/api/v1/cart/items"
PRODUCTS = "/api/v1/catalog/recharge-products"
NUMBER = "+525512345678"


def up(value: Decimal) -> Decimal:
    """An independent reckoning: rounded up to the cent."""
    return value.quantize(CENT, rounding=ROUND_CEILING)


def agent_of(parent: Account, **fields) -> Account:
    """An agent built directly (the agents API is another helper's): an account with a parent,
    one level below it."""
    return Account.objects.create(
        name=fields.pop("name", f"Agent of {parent.name}"),
        parent=parent,
        depth=parent.depth + 1,
        wallet_currency=parent.wallet_currency,
        **fields,
    )


def person_of(account: Account, role: str = "owner", **fields):
    return UserFactory(account=account, role=role, **fields)


def own_list(owner: Account | None, name: str, **rules: str) -> PriceList:
    """A list with rules given as country=…, operator=…, product=… (public ids, markups)."""
    specs = []
    for key, markup in rules.items():
        kind, _sep, value = key.partition("__")
        specs.append(RuleSpec(markup_percent=Decimal(markup), **{kind: value}))
    return price_list_create(owner=owner, name=name, rules=specs)


def web(user) -> APIClient:
    client = APIClient()
    client.credentials(**bearer(user))
    return client


@pytest.fixture
def tree():
    """top → agent (list +10 %) → sub-agent (list +5 %), each with an owner."""
    make_country("MX", "Mexico", "+52", "MXN")
    top_owner = UserFactory()
    top = top_owner.account
    agent = agent_of(top, name="Agent")
    sub = agent_of(agent, name="Sub-agent")
    top_list = price_list_create(
        owner=top, name="Agents", rules=[RuleSpec(markup_percent=Decimal(10), country="MX")]
    )
    agent_list = price_list_create(
        owner=agent, name="Shops", rules=[RuleSpec(markup_percent=Decimal(5), country="MX")]
    )
    price_list_assign(account=agent, price_list=top_list)
    price_list_assign(account=sub, price_list=agent_list)
    return {
        "top": top,
        "top_owner": top_owner,
        "agent": agent,
        "agent_owner": person_of(agent),
        "sub": sub,
        "sub_owner": person_of(sub),
        "top_list": top_list,
        "agent_list": agent_list,
    }


# -- the arithmetic -------------------------------------------------------------------------


def _product(price: Decimal) -> Product:
    return Product(pk=1, operator_id=1, country_id="MX", retail_price=price, retail_currency="EUR")


@given(
    price=st.decimals(min_value=Decimal("0.01"), max_value=Decimal("5000"), places=2),
    discount=st.decimals(min_value=Decimal(0), max_value=Decimal(100), places=2),
    markups=st.lists(
        st.decimals(min_value=Decimal(0), max_value=Decimal(1000), places=2),
        min_size=0,
        max_size=4,
    ),
    rate=st.decimals(min_value=Decimal("0.1"), max_value=Decimal("30"), places=8),
)
def test_each_level_rounds_up_once_from_its_parents_price_and_never_below_it(
    price, discount, markups, rate
):
    levels = (Level(1, None), *(Level(n + 2, n + 100) for n in range(len(markups))))
    rules = {n + 100: ListRules(products={1: m}) for n, m in enumerate(markups)}
    prices = AccountPrices(levels=levels, top_discount_percent=discount, rules=rules)
    chain = prices.chain(product=_product(price), local_amount=None, rate=rate)
    top = (price * rate * ((100 - discount) / Decimal(100))).quantize(CENT, ROUND_HALF_UP)
    assert chain[0].price == top  # the top account: section 4's arithmetic, unchanged
    assert len(chain) == len(markups) + 1
    for parent, child, markup in zip(chain, chain[1:], markups, strict=False):
        exact = parent.price * (100 + markup) / 100
        assert child.price == up(exact)
        assert exact <= child.price < exact + CENT
        assert child.price >= parent.price
    assert [p.account_id for p in chain] == [level.account_id for level in levels]


@given(
    price=st.decimals(min_value=Decimal("0.01"), max_value=Decimal("5000"), places=2),
    markup=st.decimals(min_value=Decimal("-99.99"), max_value=Decimal(1000), places=2),
)
def test_a_platform_list_rounds_the_top_price_up_and_may_go_under_retail(price, markup):
    prices = AccountPrices(
        levels=(Level(1, 7),), top_discount_percent=Decimal(50), rules={7: ListRules()}
    )
    prices.rules[7].countries["MX"] = markup
    (top,) = prices.chain(product=_product(price), local_amount=None, rate=Decimal(1))
    assert top.price == up(price * (100 + markup) / 100)  # the discount no longer applies


def test_the_most_specific_rule_of_a_list_wins():
    owner = UserFactory().account
    agent = agent_of(owner)
    telcel = OperatorFactory(slug="telcel")
    movistar = OperatorFactory(slug="movistar", country=telcel.country)
    chosen = ProductFactory(operator=telcel, retail_price=Decimal("10.00"))
    sibling = ProductFactory(operator=telcel, retail_price=Decimal("10.00"))
    other_operator = ProductFactory(operator=movistar, retail_price=Decimal("10.00"))
    colombia = OperatorFactory(country=make_country("CO", "Colombia", "+57", "COP"))
    other_country = ProductFactory(operator=colombia, retail_price=Decimal("10.00"))
    price_list = price_list_create(
        owner=owner,
        name="Mixed",
        rules=[
            RuleSpec(markup_percent=Decimal(10), country="MX"),
            RuleSpec(markup_percent=Decimal(5), operator=telcel.public_id),
            RuleSpec(markup_percent=Decimal("2.5"), product=chosen.public_id),
        ],
    )
    price_list_assign(account=agent, price_list=price_list)

    def price(product):
        return account_unit_price(account=agent, product=product, local_amount=None, rate=1)

    assert price(chosen) == Decimal("10.25")
    assert price(sibling) == Decimal("10.50")
    assert price(other_operator) == Decimal("11.00")
    assert price(other_country) == Decimal("10.00")  # no rule: the parent's price


def test_an_agent_without_a_list_pays_its_parents_price(product):
    top = UserFactory().account
    top.discount_percent = Decimal(10)
    top.save(update_fields=["discount_percent"])
    agent = agent_of(top)
    chain = account_prices_chain(account=agent, product=product, local_amount=None, rate=1)
    assert [(p.account_id, p.price) for p in chain] == [
        (top.pk, Decimal("4.50")),
        (agent.pk, Decimal("4.50")),
    ]


def test_three_levels_round_up_at_each_level(tree):
    product = ProductFactory(retail_price=Decimal("4.99"))
    chain = account_prices_chain(account=tree["sub"], product=product, local_amount=None, rate=1)
    # 4.99; 4.99 * 1.10 = 5.489 -> 5.49; 5.49 * 1.05 = 5.7645 -> 5.77
    assert [p.price for p in chain] == [Decimal("4.99"), Decimal("5.49"), Decimal("5.77")]
    assert [p.account_id for p in chain] == [tree["top"].pk, tree["agent"].pk, tree["sub"].pk]


def test_loading_a_chain_costs_one_query_and_its_rules_one_more(
    tree, product, django_assert_num_queries
):
    with django_assert_num_queries(2):
        prices = account_prices(account=tree["sub"], products=[product])
    with django_assert_num_queries(0):
        prices.unit_price(product=product, local_amount=None, rate=Decimal(1))
    top = UserFactory().account
    with django_assert_num_queries(1):
        assert account_prices(account=top).plain


def test_a_top_account_with_a_platform_list_pays_its_markup_and_without_one_its_discount(
    product,
):
    user = UserFactory()
    top = user.account
    top.discount_percent = Decimal("10.00")
    top.save(update_fields=["discount_percent"])
    price = lambda: account_unit_price(  # noqa: E731
        account=top, product=product, local_amount=None, rate=Decimal("1.08")
    )
    assert price() == Decimal("4.86")  # 5.00 * 1.08 * 0.90, half up, as before networks
    platform = own_list(None, "Big resellers", country__MX="-3.5")
    price_list_assign(account=top, price_list=platform)
    assert price() == Decimal("5.22")  # 5.00 * 1.08 * 0.965 = 5.211 -> up: 5.22
    call_command("set_price_list", "--email", user.email, "--none", stdout=StringIO())
    assert price() == Decimal("4.86")


def test_a_range_guide_is_the_parents_guide_marked_up_level_by_level():
    """Contract section 18: an agent's ``pricing`` shows its parent's rate / (1 + m) and fee *
    (1 + m), the parent's as its catalog shows them (rounded): 0.08 * 1.05 shows 0.08 at the
    first level, so the second shows 0.08 * 1.03 = 0.0824 -> 0.08 (the whole chain's factor
    at once would say 0.0865 -> 0.09). A top account's discount is not in the guide (section
    17: before the account's discount)."""
    make_country("MX", "Mexico", "+52", "MXN")
    telcel = OperatorFactory(slug="telcel")
    top = UserFactory().account
    top.discount_percent = Decimal("10.00")
    top.save(update_fields=["discount_percent"])
    agent = agent_of(top, name="A")
    sub = agent_of(agent, name="A1")
    price_list_assign(account=agent, price_list=own_list(top, "Five", country__MX="5"))
    price_list_assign(account=sub, price_list=own_list(agent, "Three", country__MX="3"))
    ranged = RangeProductFactory(
        operator=telcel, pricing_rate=Decimal("18.51033186"), pricing_fee=Decimal("0.08")
    )
    first = account_prices(account=agent).pricing(ranged)
    second = account_prices(account=sub).pricing(ranged)
    assert first == (Decimal("17.62888749"), Decimal("0.08"))
    assert second == (Decimal("17.11542475"), Decimal("0.08"))


def test_the_worked_example_of_docs_network_md():
    """docs/network.md, "Worked example: three levels" and "Range products"."""
    make_country("MX", "Mexico", "+52", "MXN")
    telcel = OperatorFactory(slug="telcel")
    top = UserFactory().account
    norte = agent_of(top, name="Tienda Norte")
    kiosko = agent_of(norte, name="Kiosko 5")
    gold = own_list(None, "Gold", country__MX="-2")
    agents = price_list_create(
        owner=top,
        name="Agents",
        rules=[
            RuleSpec(markup_percent=Decimal(10), country="MX"),
            RuleSpec(markup_percent=Decimal(8), operator=telcel.public_id),
        ],
    )
    shops = own_list(norte, "Shops", country__MX="5")
    price_list_assign(account=top, price_list=gold)
    price_list_assign(account=norte, price_list=agents)
    price_list_assign(account=kiosko, price_list=shops)
    fixed = ProductFactory(operator=telcel, retail_price=Decimal("4.99"))
    chain = account_prices_chain(account=kiosko, product=fixed, local_amount=None, rate=1)
    assert [p.price for p in chain] == [Decimal("4.90"), Decimal("5.30"), Decimal("5.57")]
    ranged = RangeProductFactory(operator=telcel, pricing_rate=Decimal("18.3"))
    chain = account_prices_chain(account=kiosko, product=ranged, local_amount=100, rate=1)
    assert [p.price for p in chain] == [Decimal("5.86"), Decimal("6.33"), Decimal("6.65")]
    prices = account_prices(account=kiosko)
    assert prices.pricing(ranged) == (Decimal("16.46690423"), Decimal("0.56"))


# -- every order channel and the catalog -------------------------------------------------------


@pytest.fixture
def shop(tree):
    """The sub-agent, B2B, funded, with a live key."""
    sub = tree["sub"]
    account_set_b2b(account=sub, is_b2b=True)
    fund(tree["sub_owner"], "100.00")
    _key, plaintext = make_key(tree["sub_owner"], mode="live")
    return {"user": tree["sub_owner"], "key": client_for(plaintext), "web": web(tree["sub_owner"])}


def order_body(product, **line):
    return {
        "items": [
            {"productId": product.public_id, "recipientNumber": NUMBER, "quantity": 2, **line}
        ],
        "baseCurrency": "EUR",
    }


def test_an_agents_catalog_shows_its_own_price(tree, shop, product):
    # 5.00 -> 5.50 (agent) -> 5.78 (5.775 rounded up)
    listed = shop["web"].get(PRODUCTS).json()["results"]
    assert [p["price"] for p in listed if p["id"] == product.public_id] == ["5.78"]
    one = shop["web"].get(f"{PRODUCTS}/{product.public_id}").json()
    assert one["price"] == "5.78"
    assert web(tree["agent_owner"]).get(f"{PRODUCTS}/{product.public_id}").json()["price"] == (
        "5.50"
    )
    top = web(tree["top_owner"]).get(f"{PRODUCTS}/{product.public_id}").json()
    assert top["price"] == "5.00"  # a top account without a list: the catalog's, as before


def test_an_agents_quote_cart_wallet_checkout_and_b2b_order_use_its_price(shop, product):
    quote = shop["web"].post(QUOTE, order_body(product), format="json")
    assert quote.status_code == 200, quote.content
    assert quote.json()["lines"][0]["unitPrice"] == "5.78"
    assert quote.json()["total"] == "11.56"

    item = {
        "sessionId": "s1",
        "productId": product.public_id,
        "recipientNumber": NUMBER,
        "quantity": 2,
    }
    cart = shop["web"].post(CART_ITEMS, item, format="json")
    assert cart.status_code == 201, cart.content
    assert cart.json()["unitPrice"] == "5.78"

    paid = shop["web"].post(CHECKOUT, order_body(product), format="json")
    assert paid.status_code == 201, paid.content
    assert paid.json()["total"] == "11.56"

    b2b = shop["key"].post(B2B, order_body(product), format="json", HTTP_IDEMPOTENCY_KEY="a-1")
    assert b2b.status_code == 201, b2b.content
    assert b2b.json()["total"] == "11.56"
    orders = Order.objects.filter(account=shop["user"].account)
    assert sorted(o.total for o in orders) == [Decimal("11.56"), Decimal("11.56")]


def test_a_range_products_amount_and_pricing_guide_follow_the_chain(tree, shop):
    ranged = RangeProductFactory(pricing_rate=Decimal("18.3"))
    # 100 MXN: 100 / 18.3 + 0.50 = 5.9644 -> 5.97; agent 6.567 -> 6.57; sub 6.8985 -> 6.90
    quote = shop["web"].post(QUOTE, order_body(ranged, localAmount="100"), format="json")
    assert quote.status_code == 200, quote.content
    assert quote.json()["lines"][0]["unitPrice"] == "6.90"
    guide = shop["web"].get(f"{PRODUCTS}/{ranged.public_id}").json()
    assert guide["price"] is None
    # Each level shows its parent's rate / (1 + m) and fee * (1 + m), each rounded as shown.
    eight = Decimal("0.00000001")
    agent_rate = (Decimal("18.3") / Decimal("1.10")).quantize(eight, ROUND_HALF_UP)
    agent_fee = (Decimal("0.50") * Decimal("1.10")).quantize(CENT, ROUND_HALF_UP)
    assert guide["pricing"] == {
        "rate": str((agent_rate / Decimal("1.05")).quantize(eight, ROUND_HALF_UP)),
        "fee": str((agent_fee * Decimal("1.05")).quantize(CENT, ROUND_HALF_UP)),
        "currency": "EUR",
    }
    plain = web(UserFactory()).get(f"{PRODUCTS}/{ranged.public_id}").json()
    assert plain["pricing"] == {"rate": "18.30000000", "fee": "0.50", "currency": "EUR"}
    anonymous = APIClient().get(f"{PRODUCTS}/{ranged.public_id}")
    assert anonymous.status_code in (200, 401)


def test_a_b2b_order_of_a_top_account_without_a_list_costs_at_most_one_more_query(
    reseller, product, django_assert_max_num_queries
):
    fund(reseller, "100.00")
    _key, plaintext = make_key(reseller, mode="live")
    client = client_for(plaintext)
    client.post(B2B, order_body(product), format="json", HTTP_IDEMPOTENCY_KEY="warm")
    with CaptureQueriesContext(connection) as queries:
        response = client.post(B2B, order_body(product), format="json", HTTP_IDEMPOTENCY_KEY="b")
    assert response.status_code == 201, response.content
    # (The key's read also asks the transfers' stored answers, in the same query: not pricing.)
    network = [
        q["sql"]
        for q in queries.captured_queries
        if "network_" in q["sql"] and "network_transferkey" not in q["sql"]
    ]
    assert len(network) == 1  # the chain and its assignment; no rules without a list
    with django_assert_max_num_queries(BASELINE_B2B_QUERIES + 2):
        response = client.post(B2B, order_body(product), format="json", HTTP_IDEMPOTENCY_KEY="c")
    assert response.status_code == 201, response.content


# Queries of a warm B2B order of one line before price lists (measured on the parent commit).
BASELINE_B2B_QUERIES = 14


# -- the API --------------------------------------------------------------------------------


def test_an_owner_creates_reads_replaces_and_deletes_a_list(tree):
    client = web(tree["top_owner"])
    telcel = OperatorFactory(slug="telcel")
    body = {
        "name": "Shops",
        "rules": [
            {"country": "mx", "markupPercent": "5"},
            {"operator": telcel.public_id, "markupPercent": "4.25"},
        ],
    }
    created = client.post(LISTS, body, format="json")
    assert created.status_code == 201, created.content
    found = created.json()
    assert found["id"].startswith("prl_") and found["name"] == "Shops"
    assert found["rules"] == [
        {"country": "MX", "markupPercent": "5.00"},
        {"operator": telcel.public_id, "markupPercent": "4.25"},
    ]
    listed = client.get(LISTS).json()
    assert listed["count"] == 2 and {r["name"] for r in listed["results"]} == {"Agents", "Shops"}
    assert client.get(f"{LISTS}/{found['id']}").json() == found

    replaced = client.put(
        f"{LISTS}/{found['id']}",
        {"name": "Corner shops", "rules": [{"country": "MX", "markupPercent": "7"}]},
        format="json",
    )
    assert replaced.status_code == 200, replaced.content
    assert replaced.json()["rules"] == [{"country": "MX", "markupPercent": "7.00"}]
    assert PriceListRule.objects.filter(price_list__public_id=found["id"]).count() == 1
    # What a GET gave, changed and sent back whole: its own id is taken, another's is not.
    edited = {**replaced.json(), "name": "Corner shops 2"}
    assert client.put(f"{LISTS}/{found['id']}", edited, format="json").json() == edited
    other = {**edited, "id": tree["top_list"].public_id}
    body = assert_problem(
        client.put(f"{LISTS}/{found['id']}", other, format="json"), 400, "validation_error"
    )
    assert [e["field"] for e in body["errors"]] == ["id"]

    assert client.delete(f"{LISTS}/{found['id']}").status_code == 204
    assert client.get(f"{LISTS}/{found['id']}").status_code == 404


def test_a_list_in_use_cannot_be_deleted(tree):
    client = web(tree["top_owner"])
    assert_problem(client.delete(f"{LISTS}/{tree['top_list'].public_id}"), 409, "price_list_in_use")
    assert PriceList.objects.filter(pk=tree["top_list"].pk).exists()


def test_a_parents_negative_markup_is_a_validation_error(tree):
    client = web(tree["top_owner"])
    response = client.post(
        LISTS, {"name": "Cheap", "rules": [{"country": "MX", "markupPercent": "-1"}]}, format="json"
    )
    body = assert_problem(response, 400, "validation_error")
    assert body["errors"][0]["field"] == "rules[0].markupPercent"
    assert not PriceList.objects.filter(name="Cheap").exists()


@pytest.mark.parametrize(
    "rules, field",
    [
        ([{"country": "ZZ", "markupPercent": "1"}], "rules[0].country"),
        ([{"operator": "opr_nope", "markupPercent": "1"}], "rules[0].operator"),
        ([{"country": "MX", "product": "prd_x", "markupPercent": "1"}], "rules[0]"),
        (
            [{"country": "MX", "markupPercent": "1"}, {"country": "MX", "markupPercent": "2"}],
            "rules[1].country",
        ),
        ([{"country": "MX", "markupPercent": "1001"}], "rules[0].markupPercent"),
    ],
)
def test_bad_rules_are_named(tree, rules, field):
    make_country("MX", "Mexico", "+52", "MXN")
    response = web(tree["top_owner"]).post(LISTS, {"name": "Bad", "rules": rules}, format="json")
    body = assert_problem(response, 400, "validation_error")
    assert field in [e["field"] for e in body["errors"]]


def test_a_name_is_unique_per_owner_only(tree):
    taken = web(tree["top_owner"]).post(LISTS, {"name": "Agents", "rules": []}, format="json")
    assert assert_problem(taken, 400, "validation_error")["errors"][0]["field"] == "name"
    other = web(tree["agent_owner"]).post(LISTS, {"name": "Agents", "rules": []}, format="json")
    assert other.status_code == 201


def test_another_accounts_list_is_404_and_an_agent_cannot_read_the_list_it_is_priced_by(tree):
    assigned = tree["top_list"].public_id
    agent = web(tree["agent_owner"])
    assert_problem(agent.get(f"{LISTS}/{assigned}"), 404, "not_found")
    assert_problem(
        agent.put(f"{LISTS}/{assigned}", {"name": "Mine"}, format="json"), 404, "not_found"
    )
    assert_problem(agent.delete(f"{LISTS}/{assigned}"), 404, "not_found")
    assert [r["name"] for r in agent.get(LISTS).json()["results"]] == ["Shops"]
    stranger = web(UserFactory())
    assert_problem(stranger.get(f"{LISTS}/{assigned}"), 404, "not_found")
    assert stranger.get(LISTS).json()["count"] == 0


def test_finance_manages_lists_developers_are_refused(tree):
    top = tree["top"]
    finance = web(person_of(top, role="finance"))
    assert finance.get(LISTS).status_code == 200
    assert finance.post(LISTS, {"name": "By finance"}, format="json").status_code == 201
    developer_user = person_of(top, role="developer")
    developer = web(developer_user)
    assert_problem(developer.get(LISTS), 403, "permission_denied")
    assert_problem(
        developer.post(LISTS, {"name": "By dev"}, format="json"), 403, "permission_denied"
    )
    _key, plaintext = make_key(developer_user, mode="live")
    assert_problem(client_for(plaintext).get(LISTS), 403, "permission_denied")
    _key, test_key = make_key(tree["top_owner"], mode="test")
    assert_problem(client_for(test_key).get(LISTS), 403, "permission_denied")
    _key, live_key = make_key(tree["top_owner"], mode="live")
    assert client_for(live_key).get(LISTS).json()["count"] == 2
    assert APIClient().get(LISTS).status_code == 401


def test_a_list_outside_the_account_is_404_whatever_the_role_its_own_403_for_a_role_refused(
    tree,
):
    """Contract section 18: an id outside the caller's branch answers 404 whatever the role;
    inside it, a role (or a test key) that may not act gets 403."""
    top = tree["top"]
    own = tree["top_list"].public_id
    elsewhere = web(UserFactory()).post(LISTS, {"name": "Theirs", "rules": []}, format="json")
    theirs = elsewhere.json()["id"]
    developer_user = person_of(top, role="developer")
    _key, developer_key = make_key(developer_user, mode="live")
    _key, test_key = make_key(tree["top_owner"], mode="test")
    for client in (web(developer_user), client_for(developer_key), client_for(test_key)):
        for missing in (theirs, "prl_nope"):
            assert_problem(client.get(f"{LISTS}/{missing}"), 404, "not_found")
            assert_problem(
                client.put(f"{LISTS}/{missing}", {"name": "X"}, format="json"), 404, "not_found"
            )
            assert_problem(client.delete(f"{LISTS}/{missing}"), 404, "not_found")
        assert_problem(client.get(f"{LISTS}/{own}"), 403, "permission_denied")
        assert_problem(
            client.put(f"{LISTS}/{own}", {"name": "X", "rules": []}, format="json"),
            403,
            "permission_denied",
        )
        assert_problem(client.delete(f"{LISTS}/{own}"), 403, "permission_denied")
    assert PriceList.objects.filter(public_id=own, name="Agents").exists()
    assert PriceList.objects.filter(public_id=theirs).exists()


def test_a_staff_key_manages_the_platforms_lists_with_negative_markups(staff, tree):
    _key, plaintext = make_key(staff, mode="live")
    client = client_for(plaintext)
    created = client.post(
        LISTS, {"name": "Gold", "rules": [{"country": "MX", "markupPercent": "-4"}]}, format="json"
    )
    assert created.status_code == 201, created.content
    assert PriceList.objects.get(public_id=created.json()["id"]).owner is None
    assert [r["name"] for r in client.get(LISTS).json()["results"]] == ["Gold"]
    assert client.get(f"{LISTS}/{tree['top_list'].public_id}").status_code == 404


# -- assigning ------------------------------------------------------------------------------


def test_a_parent_assigns_only_its_own_lists_to_its_direct_agents(tree):
    with pytest.raises(ValidationFailed):  # the parent's parent's list
        price_list_assign(account=tree["sub"], price_list=tree["top_list"])
    platform = own_list(None, "Platform")
    with pytest.raises(ValidationFailed):
        price_list_assign(account=tree["agent"], price_list=platform)
    with pytest.raises(ValidationFailed):  # staff's lists go to top accounts, an agent's not
        price_list_assign(account=tree["top"], price_list=tree["agent_list"])
    price_list_assign(account=tree["top"], price_list=platform)
    price_list_assign(account=tree["agent"], price_list=None)
    assert not PriceListAssignment.objects.filter(account=tree["agent"]).exists()


def test_set_price_list_assigns_a_platform_list_to_a_top_account(tree):
    platform = own_list(None, "Gold", country__MX="-2")
    out = StringIO()
    call_command(
        "set_price_list", "--email", tree["top_owner"].email, "--price-list", "Gold", stdout=out
    )
    assert "Gold" in out.getvalue() and platform.public_id in out.getvalue()
    assert PriceListAssignment.objects.get(account=tree["top"]).price_list == platform
    with pytest.raises(CommandError, match="no platform price list"):
        call_command("set_price_list", "--email", tree["top_owner"].email, "--price-list", "Agents")
    with pytest.raises(CommandError, match="parent"):
        call_command("set_price_list", "--email", tree["agent_owner"].email, "--price-list", "Gold")
    with pytest.raises(CommandError, match="no user"):
        call_command("set_price_list", "--email", "nobody@example.org", "--none")
    call_command("set_price_list", "--email", tree["top_owner"].email, "--none", stdout=out)
    assert not PriceListAssignment.objects.filter(account=tree["top"]).exists()


def test_a_staff_caller_the_back_office_refuses_cannot_probe_the_platforms_list_ids(staff, tree):
    """Staff pass the back office's checks before any list is looked up: a staff test key
    gets 403 for a platform list's id and for one that does not exist alike."""
    _key, live = make_key(staff, mode="live")
    platform = client_for(live).post(LISTS, {"name": "Gold", "rules": []}, format="json")
    assert platform.status_code == 201, platform.content
    _key, test_key = make_key(staff, mode="test")
    for list_id in (platform.json()["id"], "prl_nope"):
        assert_problem(client_for(test_key).get(f"{LISTS}/{list_id}"), 403, "permission_denied")
