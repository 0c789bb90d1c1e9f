"""Issue 43, item 7: the same product to the same number added twice to a cart is one line of
quantity 2 (the API and the site alike), up to what a line holds (20); past it the add is
refused with a clear 400 naming the quantity, and the cart is left as it was."""

from __future__ import annotations

import threading
from decimal import Decimal

import pytest
from django.db import connection
from django.test import Client
from rest_framework.test import APIClient

from orders.models import CartItem
from tests.factories import ProductFactory, UserFactory
from tests.helpers import assert_problem, bearer

NUMBER = "+525512345678"
OTHER_NUMBER = "+525587654321"
ITEMS = "/api/v1/cart/items"


def add(client, product, *, quantity=1, number=NUMBER, session="default"):
    return client.post(
        ITEMS,
        {
            "sessionId": session,
            "productId": product.public_id,
            "recipientNumber": number,
            "quantity": quantity,
        },
        format="json",
    )


@pytest.fixture
def api(db):
    client = APIClient()
    client.user = UserFactory()
    client.credentials(**bearer(client.user))
    return client


@pytest.mark.django_db
def test_the_same_product_and_number_added_twice_is_one_line_of_quantity_2(api):
    product = ProductFactory(retail_price=Decimal("5.00"))
    first = add(api, product)
    again = add(api, product)
    assert first.status_code == again.status_code == 201
    assert again.json()["id"] == first.json()["id"]
    assert again.json()["quantity"] == 2 and again.json()["lineTotal"] == "10.00"
    cart = api.get("/api/v1/cart").json()
    assert [(i["id"], i["quantity"]) for i in cart["items"]] == [(first.json()["id"], 2)]
    assert cart["total"] == "10.00"


@pytest.mark.django_db
def test_another_number_another_product_or_another_cart_is_another_line(api):
    product, other = ProductFactory(), ProductFactory()
    add(api, product)
    add(api, product, number=OTHER_NUMBER)
    add(api, other)
    add(api, product, session="second")
    lines = CartItem.objects.filter(cart__session_id="default")
    assert sorted((i.product_id, i.recipient_number, i.quantity) for i in lines) == sorted(
        [(product.pk, NUMBER, 1), (product.pk, OTHER_NUMBER, 1), (other.pk, NUMBER, 1)]
    )
    assert CartItem.objects.filter(cart__session_id="second").count() == 1


@pytest.mark.django_db
def test_a_line_fills_up_to_20_and_past_it_the_add_is_a_400_that_changes_nothing(api):
    product = ProductFactory()
    add(api, product, quantity=18)
    problem = assert_problem(add(api, product, quantity=3), 400, "validation_error")
    assert problem["errors"][0]["field"] == "quantity"
    assert problem["errors"][0]["code"] == "max_value"
    assert "already has 18" in problem["detail"] and "at most 2 more" in problem["detail"]
    assert list(CartItem.objects.values_list("quantity", flat=True)) == [18]
    assert add(api, product, quantity=2).json()["quantity"] == 20
    full = assert_problem(add(api, product), 400, "validation_error")
    assert "this one is full" in full["detail"]
    assert list(CartItem.objects.values_list("quantity", flat=True)) == [20]


@pytest.mark.django_db
def test_the_refusal_speaks_the_callers_language(api):
    product = ProductFactory()
    add(api, product, quantity=20)
    problem = assert_problem(
        api.post(
            ITEMS,
            {"productId": product.public_id, "recipientNumber": NUMBER, "quantity": 1},
            format="json",
            HTTP_ACCEPT_LANGUAGE="es",
        ),
        400,
        "validation_error",
    )
    assert "Tu carrito ya tiene 20" in problem["detail"]


@pytest.fixture
def site(db):
    user = UserFactory()
    client = Client()
    client.force_login(user)
    return client


def site_add(client, product, quantity=1, number=NUMBER):
    return client.post(
        "/cart/add/",
        {"product": product.public_id, "recipient_number": number, "quantity": str(quantity)},
        follow=True,
    )


@pytest.mark.django_db
def test_the_sites_add_to_cart_twice_shows_one_line_of_2_and_says_so(site):
    product = ProductFactory(retail_price=Decimal("5.00"))
    site_add(site, product)
    page = site_add(site, product).content.decode()
    assert page.count('data-testid="cart-item"') == 1
    assert 'name="quantity" min="1" max="20" value="2"' in page
    assert "it now has 2 of this top-up" in page
    assert list(CartItem.objects.values_list("quantity", flat=True)) == [2]


@pytest.mark.django_db
def test_the_site_refuses_a_line_past_20_in_words_and_keeps_the_cart(site):
    product = ProductFactory()
    site_add(site, product, quantity=19)
    page = site_add(site, product, quantity=5).content.decode()
    assert "already has 19 of this top-up" in page and "add at most 1 more" in page
    assert list(CartItem.objects.values_list("quantity", flat=True)) == [19]


@pytest.mark.django_db(transaction=True)
def test_adds_of_one_line_at_the_same_time_add_up_on_one_line():
    user = UserFactory()
    product = ProductFactory()
    add(_client(user), product)  # the cart exists: the racers queue on its row lock
    start = threading.Barrier(6)
    statuses = []

    def racer():
        client = _client(user)
        start.wait()
        try:
            statuses.append(add(client, product, quantity=3).status_code)
        finally:
            connection.close()

    threads = [threading.Thread(target=racer) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # 1 + 6 x 3 = 19: every add fits, all on one line.
    assert sorted(statuses) == [201] * 6
    assert list(CartItem.objects.values_list("quantity", flat=True)) == [19]


def _client(user) -> APIClient:
    client = APIClient()
    client.credentials(**bearer(user))
    return client
