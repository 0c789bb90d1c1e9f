"""Issue 43, item 7, as a shopper sees it: the same top-up to the same number added to the cart
twice from the operator's page is one line of quantity 2, and the page says so."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest

from tests.browser.card_pages import log_in
from tests.factories import OperatorFactory, ProductFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

NUMBER = "+525512345678"


def add_from_the_operators_page(page, site, quantity: int) -> None:
    page.goto(f"{site.url}/catalog/MX/")
    page.click("a.tile.operator")
    page.fill("input[name=recipient_number]", NUMBER)
    page.fill(".add-to-cart input[name=quantity]", str(quantity))
    page.click(".add-to-cart button[type=submit]")
    page.wait_for_url(re.compile(r"/cart/$"))


def test_adding_the_same_top_up_twice_shows_one_line_of_2_then_refuses_past_20(page, site):
    operator = OperatorFactory(name="Telcel", slug="telcel")
    ProductFactory(operator=operator, name="Telcel 100 MXN", retail_price=Decimal("5.00"))
    shopper = UserFactory()
    log_in(page, site, shopper)

    add_from_the_operators_page(page, site, 1)
    add_from_the_operators_page(page, site, 1)
    assert page.locator("[data-testid=cart-item]").count() == 1
    assert page.input_value("[data-testid=cart-item] input[name=quantity]") == "2"
    assert "it now has 2 of this top-up for +52 55 1234 5678" in page.inner_text("main")
    assert "10.00 EUR" in page.inner_text("[data-testid=quote-total]")

    add_from_the_operators_page(page, site, 19)
    assert "add at most 18 more" in page.inner_text("main")
    assert page.input_value("[data-testid=cart-item] input[name=quantity]") == "2"
