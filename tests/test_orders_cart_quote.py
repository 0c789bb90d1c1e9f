"""Carts and quotes."""

from decimal import Decimal

import pytest
from rest_framework.test import APIClient

from tests.factories import FxRateFactory, PromotionFactory, UserFactory, make_key
from tests.helpers import assert_problem, bearer

pytestmark = pytest.mark.django_db
NUMBER = "+525512345678"


def item(product, session="s1", quantity=2, number=NUMBER):
    return {
        "sessionId": session,
        "productId": product.public_id,
        "recipientNumber": number,
        "quantity": quantity,
    }


def test_cart_add_item_answers_201_and_the_cart_totals_it(user_api, product):
    response = user_api.post("/api/v1/cart/items", item(product))
    assert response.status_code == 201, response.content
    created = response.json()
    assert created["id"].startswith("itm_")
    assert created["unitPrice"] == "5.00" and created["lineTotal"] == "10.00"
    cart = user_api.get("/api/v1/cart?sessionId=s1").json()
    assert cart["sessionId"] == "s1" and cart["total"] == "10.00" and cart["currency"] == "EUR"
    assert [i["id"] for i in cart["items"]] == [created["id"]]


def test_cart_without_session_id_uses_the_default_cart(user_api, product):
    payload = item(product)
    del payload["sessionId"]
    user_api.post("/api/v1/cart/items", payload)
    assert len(user_api.get("/api/v1/cart").json()["items"]) == 1
    assert user_api.get("/api/v1/cart?sessionId=s1").json()["items"] == []


def test_cart_without_session_id_is_the_one_last_added_to(user_api, product):
    """Interface spec: ``GET /cart`` is the current cart, and ``sessionId`` a label the caller
    chose when adding. Asked without one, it is the cart the caller added to last."""
    created = user_api.post("/api/v1/cart/items", item(product, session="s1")).json()
    cart = user_api.get("/api/v1/cart").json()
    assert cart["sessionId"] == "s1" and [i["id"] for i in cart["items"]] == [created["id"]]
    assert cart["total"] == "10.00"
    user_api.get("/api/v1/cart?sessionId=s2")  # only looked at: not a change
    assert user_api.get("/api/v1/cart").json()["sessionId"] == "s1"
    other = {**item(product, session="s3"), "recipientNumber": "+525587654321"}
    user_api.post("/api/v1/cart/items", other)
    assert user_api.get("/api/v1/cart").json()["sessionId"] == "s3"
    user_api.post("/api/v1/cart/items", item(product, session="s1", quantity=1))
    cart = user_api.get("/api/v1/cart").json()
    assert cart["sessionId"] == "s1" and cart["items"][0]["quantity"] == 3


def test_cart_without_session_id_and_nothing_added_is_the_empty_default(user_api, user):
    cart = user_api.get("/api/v1/cart").json()
    assert cart["sessionId"] == "default" and cart["items"] == [] and cart["total"] == "0.00"
    _key, plaintext = make_key(user, mode="test")
    test_client = APIClient()
    test_client.credentials(HTTP_X_API_KEY=plaintext)
    assert test_client.get("/api/v1/cart").json()["livemode"] is False


def test_cart_item_delete_removes_it(user_api, product):
    item_id = user_api.post("/api/v1/cart/items", item(product)).json()["id"]
    assert user_api.delete(f"/api/v1/cart/items/{item_id}").status_code == 204
    assert user_api.get("/api/v1/cart?sessionId=s1").json()["items"] == []


def test_another_accounts_cart_item_is_404(user_api, product):
    other = APIClient()
    other.credentials(**bearer(UserFactory()))
    item_id = other.post("/api/v1/cart/items", item(product)).json()["id"]
    assert_problem(user_api.delete(f"/api/v1/cart/items/{item_id}"), 404, "not_found")
    assert len(other.get("/api/v1/cart?sessionId=s1").json()["items"]) == 1


def test_test_key_carts_are_separate_from_live_carts(user, product):
    _key, plaintext = make_key(user, mode="test")
    test_client = APIClient()
    test_client.credentials(HTTP_X_API_KEY=plaintext)
    web = APIClient()
    web.credentials(**bearer(user))
    web.post("/api/v1/cart/items", item(product))
    assert test_client.get("/api/v1/cart?sessionId=s1").json()["items"] == []
    assert test_client.get("/api/v1/cart?sessionId=s1").json()["livemode"] is False


def test_cart_item_carries_livemode_of_the_key_that_added_it(user, user_api, product):
    """Contract section 1: every object that exists in both modes carries ``livemode``."""
    _key, plaintext = make_key(user, mode="test")
    test_client = APIClient()
    test_client.credentials(HTTP_X_API_KEY=plaintext)
    added = test_client.post("/api/v1/cart/items", item(product))
    assert added.status_code == 201, added.content
    assert added.json()["livemode"] is False
    assert test_client.get("/api/v1/cart?sessionId=s1").json()["items"][0]["livemode"] is False
    assert user_api.post("/api/v1/cart/items", item(product)).json()["livemode"] is True
    assert user_api.get("/api/v1/cart?sessionId=s1").json()["items"][0]["livemode"] is True


@pytest.mark.parametrize(
    "change, field",
    [
        ({"recipientNumber": "12345"}, "recipientNumber"),
        ({"quantity": 21}, "quantity"),
        ({"productId": "prd_nope"}, "productId"),
        ({"price": "1.00"}, "price"),
    ],
)
def test_cart_refuses_bad_items(user_api, product, change, field):
    body = assert_problem(
        user_api.post("/api/v1/cart/items", {**item(product), **change}), 400, "validation_error"
    )
    assert body["errors"][0]["field"] == field


def test_quote_for_items_in_eur(user_api, product):
    body = user_api.post(
        "/api/v1/payments/quote",
        {
            "items": [{"productId": product.public_id, "recipientNumber": NUMBER, "quantity": 3}],
            "baseCurrency": "EUR",
        },
    ).json()
    assert body["total"] == "15.00" and body["currency"] == "EUR" and body["fxRate"] is None
    assert body["lines"][0]["lineTotal"] == "15.00"
    assert body["expiresAt"].endswith("Z")


def test_a_quote_carries_the_callers_livemode(user, user_api, product):
    """Contract section 1: an object of both modes carries ``livemode``; a test key's quote
    and a live one's were otherwise the same."""
    _key, plaintext = make_key(user, mode="test")
    test_client = APIClient()
    test_client.credentials(HTTP_X_API_KEY=plaintext)
    request = {
        "items": [{"productId": product.public_id, "recipientNumber": NUMBER, "quantity": 1}]
    }
    assert user_api.post("/api/v1/payments/quote", request).json()["livemode"] is True
    assert test_client.post("/api/v1/payments/quote", request).json()["livemode"] is False


def test_quote_converts_with_the_fx_rate_it_shows(user_api, product):
    FxRateFactory(base_currency="EUR", quote_currency="USD", rate=Decimal("1.08"))
    body = user_api.post(
        "/api/v1/payments/quote",
        {
            "items": [{"productId": product.public_id, "recipientNumber": NUMBER, "quantity": 3}],
            "baseCurrency": "USD",
        },
    ).json()
    assert body["currency"] == "USD"
    assert body["lines"][0]["unitPrice"] == "5.40" and body["total"] == "16.20"
    assert body["fxRate"]["from"] == "EUR" and body["fxRate"]["to"] == "USD"
    assert Decimal(body["fxRate"]["rate"]) == Decimal("1.08")


def test_quote_of_a_cart_shows_the_promotion(user_api, product):
    PromotionFactory(operator=product.operator, name="Double airtime")
    user_api.post("/api/v1/cart/items", item(product, quantity=1))
    body = user_api.post("/api/v1/payments/quote", {"sessionId": "s1"}).json()
    assert body["total"] == "5.00"
    assert body["lines"][0]["promotion"]["name"] == "Double airtime"
    assert body["lines"][0]["promotion"]["status"] == "active"


def test_quote_in_an_unknown_currency_is_400(user_api, product):
    body = assert_problem(
        user_api.post(
            "/api/v1/payments/quote",
            {
                "items": [
                    {"productId": product.public_id, "recipientNumber": NUMBER, "quantity": 1}
                ],
                "baseCurrency": "XYZ",
            },
        ),
        400,
        "validation_error",
    )
    assert body["errors"][0]["field"] == "baseCurrency"


def test_quote_needs_either_a_cart_or_items(user_api):
    assert_problem(user_api.post("/api/v1/payments/quote", {}), 400, "validation_error")
