"""The card's refusals in the buyer's words and language, naming the field (issue 43, item 2):
the card form carries a message per field (checkout.js shows the one Stripe.js's error names),
and a declined charge says why when the bank's code names a field or a reason. The form in a
browser (MM/YY and MM/YYYY, a field named before anything is sent):
tests/browser/test_card_form.py."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.test import Client
from django.utils import translation

from payments.errors import card_declined
from tests.factories import PASSWORD, ProductFactory
from tests.fraud_support import NUMBER, age, shopper


@pytest.fixture
def product():
    return ProductFactory(retail_price=Decimal("5.00"))


def checkout_page(language: str, product) -> str:
    buyer = shopper()
    age(buyer.user, 30)
    site = Client(headers={"Accept-Language": language})
    assert site.login(username=buyer.user.email, password=PASSWORD)
    site.post(
        "/cart/add/",
        {"product": product.public_id, "recipient_number": NUMBER, "quantity": "1"},
    )
    return site.get("/checkout/").content.decode()


@pytest.mark.django_db
def test_the_card_form_carries_each_fields_message_in_the_page_language(product, stripe_local):
    text = checkout_page("es", product)
    assert "data-msg-expiry=" in text and "MM/AA o MM/AAAA" in text
    assert "data-msg-cvc=" in text and "data-msg-number=" in text


@pytest.mark.parametrize(
    ("code", "words"),
    [
        ("expired_card", "expired"),
        ("incorrect_cvc", "security code (CVC)"),
        ("incorrect_number", "card number"),
        ("insufficient_funds", "insufficient funds"),
        ("do_not_honor", "Your card was declined."),
    ],
)
def test_a_decline_says_why_and_names_the_field(code, words):
    with translation.override("en"):
        error = card_declined(code)
    assert error.code == "card_declined" and error.status == 402
    assert words in error.detail and "Nothing was charged" in error.detail
