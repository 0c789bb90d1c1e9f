"""The test-mode banner as a person meets it (issue 43, item 3), in a real browser against
localstripe: several cards that succeed, the fraud limits and how to lift them; another card of
the list pays as well."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest

from payments.models import Payment
from tests.browser.card_pages import log_in, to_checkout, type_card
from tests.factories import OperatorFactory, ProductFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def catalog(db):
    operator = OperatorFactory(name="Telcel", slug="telcel")
    return ProductFactory(operator=operator, name="Telcel 100 MXN", retail_price=Decimal("5.00"))


@pytest.fixture
def shopper(db):
    return UserFactory(email="shopper@example.com")


def test_the_test_mode_banner_lists_several_cards_and_the_limits(page, site, catalog, shopper):
    log_in(page, site, shopper)
    to_checkout(page, site, catalog, quantity=1)
    banner = page.inner_text("[data-testid=test-mode]").replace("\xa0", " ")
    for card in ("4242 4242 4242 4242", "5555 5555 5555 4444", "4000 0566 5566 5556"):
        assert card in banner
    assert "Fraud limits apply" in banner and "CARD_LIMITS_DEMO" in banner
    # Another card of the list pays as well (each has its own daily count).
    type_card(page, number="5555555555554444")
    page.click("#pay-button")
    page.wait_for_url(re.compile(r"/payments/pay_\w+/$"))
    assert Payment.objects.get().status == "captured"
