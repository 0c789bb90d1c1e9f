"""A 3-D Secure payment left unfinished as a person meets it (issue 43, item 1), in a real
browser against localstripe: found again in the history as "Waiting for your bank", finished
from its page with the bank's check, or cancelled there, which frees its place in the limits."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest

from payments.models import Payment
from recharges.models import Recharge
from tests.browser.card_pages import log_in, to_checkout, type_card
from tests.card_support import THREE_D_SECURE
from tests.factories import OperatorFactory, ProductFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def catalog(db):
    operator = OperatorFactory(name="Telcel", slug="telcel")
    return ProductFactory(operator=operator, name="Telcel 100 MXN", retail_price=Decimal("5.00"))


@pytest.fixture
def shopper(db):
    return UserFactory(email="shopper@example.com")


def abandon_3d_secure(page, site, catalog, shopper, language="en"):
    """Pay with the 3-D Secure card, confirm the card, then leave the payment's check open."""
    log_in(page, site, shopper, language)
    to_checkout(page, site, catalog)
    type_card(page, number=THREE_D_SECURE)
    page.click("#pay-button")
    page.click("text=Complete authentication")  # the card's setup
    page.locator("text=Complete authentication").wait_for()  # the payment's: left open
    payment = Payment.objects.get()
    assert payment.waiting_for_bank
    page.goto(f"{site.url}/payments/")
    return payment


def test_an_abandoned_3d_secure_payment_is_found_and_finished_from_its_page(
    page, site, catalog, shopper
):
    payment = abandon_3d_secure(page, site, catalog, shopper)
    assert "Waiting for your bank" in page.inner_text("main")
    page.click(f'td a[href="/payments/{payment.public_id}/"]')
    assert page.inner_text("[data-testid=payment-heading]") == "Waiting for your bank"
    assert page.title().startswith("Waiting for your bank")
    assert "Paid by" not in page.inner_text("main")
    page.click("text=Finish payment >> nth=-1")
    page.click("text=Complete authentication")
    page.wait_for_function(
        "() => document.querySelector('[data-testid=payment-status]').textContent === 'Paid'"
    )
    assert page.inner_text("[data-testid=payment-heading]") == "Receipt"
    assert Payment.objects.get().status == "captured"
    assert Recharge.objects.count() == 3


def test_an_abandoned_3d_secure_payment_is_cancelled_from_its_page_in_spanish(
    page, site, catalog, shopper
):
    payment = abandon_3d_secure(page, site, catalog, shopper, language="es")
    assert "Esperando a tu banco" in page.inner_text("main")
    page.goto(f"{site.url}/payments/{payment.public_id}/")
    page.click("[data-testid=cancel-payment]")
    page.wait_for_function(
        "() => document.querySelector('[data-testid=payment-heading]').textContent"
        ".includes('Pago cancelado')"
    )
    assert "no se ha cobrado nada" in page.inner_text("[data-testid=payment-explained]")
    assert page.locator("[data-testid=finish-payment]").count() == 0
    payment.refresh_from_db()
    assert payment.status == "canceled"
    # Its place in the limits is free: the cart's three recharges can be paid at once.
    page.goto(f"{site.url}/checkout/")
    type_card(page)
    page.click("#pay-button")
    page.wait_for_url(re.compile(r"/payments/pay_\w+/$"))
    assert Payment.objects.filter(status="captured").count() == 1
