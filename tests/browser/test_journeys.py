"""One test per user journey, in a real browser (docs/contract.md §4, issue 8)."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest
from django.core import mail

from payments.models import Payment
from recharges.models import Recharge
from tests.browser.card_pages import log_in
from tests.card_support import DECLINED, THREE_D_SECURE, VISA
from tests.factories import PASSWORD, OperatorFactory, ProductFactory, UserFactory
from tests.helpers import link_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

NUMBER = "+525512345678"


@pytest.fixture
def catalog(db):
    operator = OperatorFactory(name="Telcel", slug="telcel")
    return ProductFactory(operator=operator, name="Telcel 100 MXN", retail_price=Decimal("5.00"))


@pytest.fixture
def shopper(db):
    return UserFactory(email="shopper@example.com")


def add_to_cart_from_the_catalog(page, site):
    page.goto(site.url)
    page.click("text=Browse the catalog")
    page.click("a.tile[href$='/catalog/MX/']")
    page.click("a.tile.operator")
    page.fill("input[name=recipient_number]", NUMBER)
    page.fill(".add-to-cart input[name=quantity]", "2")
    page.click(".add-to-cart button[type=submit]")
    page.wait_for_url(re.compile(r"/cart/$"))
    assert page.locator("[data-testid=cart-item]").count() == 1


def pay_by_card(page, number: str):
    page.click("text=Pay by card")
    page.wait_for_url(re.compile(r"/checkout/$"))
    assert "10.00 EUR" in page.inner_text("[data-testid=quote-total]")
    assert page.is_visible(".test-mode")
    page.fill("#card-element input[placeholder=number]", number)
    page.fill("#card-element input[placeholder=exp_month]", "12")
    page.fill("#card-element input[placeholder=exp_year]", "34")
    page.fill("#card-element input[placeholder=cvc]", "123")
    page.fill("#card-element input[placeholder=postal_code]", "42424")
    page.click("#pay-button")


def test_buy_a_top_up_by_card_from_home_to_receipt(page, site, catalog, shopper):
    log_in(page, site, shopper)
    add_to_cart_from_the_catalog(page, site)
    pay_by_card(page, VISA)
    page.wait_for_url(re.compile(r"/payments/pay_\w+/$"))
    assert page.inner_text("[data-testid=payment-status]") == "Paid"
    page.wait_for_function(
        "() => [...document.querySelectorAll('[data-testid=recharge-status]')]"
        ".every(e => e.textContent.trim() === 'Delivered')"
    )
    statuses = page.locator("[data-testid=recharge-status]").all_inner_texts()
    assert statuses == ["Delivered", "Delivered"]
    assert Recharge.objects.filter(status="delivered").count() == 2
    receipt = page.url
    page.click(".menu-toggle")  # a phone-sized page: the links are behind the menu
    page.click("nav >> text=Cart")
    assert "Your cart is empty" in page.inner_text("main")
    page.click(".menu-toggle")
    page.click("nav >> text=Payments")
    page.click('td a[href*="/payments/pay_"]')  # found later in the history: the receipt
    assert page.url == receipt
    assert page.locator("[data-testid=recharge-status]").all_inner_texts() == statuses


def test_three_d_secure_card_completes_after_authentication(page, site, catalog, shopper):
    log_in(page, site, shopper)
    add_to_cart_from_the_catalog(page, site)
    pay_by_card(page, THREE_D_SECURE)
    # localstripe asks once when the card is set up and once for the payment.
    page.click("text=Complete authentication")
    page.click("text=Complete authentication")
    page.wait_for_url(re.compile(r"/payments/pay_\w+/$"))
    assert page.inner_text("[data-testid=payment-status]") == "Paid"
    assert Payment.objects.get().status == "captured"


def test_declined_card_shows_the_reason_and_keeps_the_cart(page, site, catalog, shopper):
    log_in(page, site, shopper)
    add_to_cart_from_the_catalog(page, site)
    pay_by_card(page, DECLINED)
    error = page.locator("[data-testid=payment-error]")
    error.wait_for(state="visible")
    assert "declined" in error.inner_text()
    assert Payment.objects.get().status == "failed"
    assert not Recharge.objects.exists()
    # Same page, another card: the same payment goes through.
    page.fill("#card-element input[placeholder=number]", VISA)
    page.click("#pay-button")
    page.wait_for_url(re.compile(r"/payments/pay_\w+/$"))
    assert Payment.objects.get().status == "captured"


def test_declined_card_leaves_the_cart_for_later(page, site, catalog, shopper):
    log_in(page, site, shopper)
    add_to_cart_from_the_catalog(page, site)
    pay_by_card(page, DECLINED)
    page.locator("[data-testid=payment-error]").wait_for(state="visible")
    page.goto(f"{site.url}/cart/")
    assert page.locator("[data-testid=cart-item]").count() == 1


def test_sign_up_and_create_a_test_key_shown_once(page, site):
    page.goto(f"{site.url}/accounts/signup/")
    page.fill("input[name=email]", "newcomer@example.com")
    page.fill("input[name=password1]", PASSWORD)
    page.fill("input[name=password2]", PASSWORD)
    page.click("main button[type=submit]")
    page.wait_for_url(re.compile(r"/accounts/signup/sent/$"))
    page.goto(site.url + link_in(mail.outbox[-1], "/accounts/signup/confirm/"))
    page.click("main button[type=submit]")
    page.wait_for_url(re.compile(r"/accounts/profile/$"))
    page.goto(f"{site.url}/accounts/keys/new/")
    page.fill("input[name=name]", "Shop staging")
    page.select_option("select[name=mode]", "test")
    page.click("main button[type=submit]")
    key = page.input_value("#api-key-value")
    assert key.startswith("rsl_test_")
    page.click("text=I have copied it")
    assert key not in page.content()
    page.reload()
    assert key not in page.content()


def test_top_up_the_wallet_by_card(page, site, shopper):
    log_in(page, site, shopper)
    page.goto(f"{site.url}/wallet/")
    page.fill("#card-amount", "25.00")
    page.fill("#card-element input[placeholder=number]", VISA)
    page.fill("#card-element input[placeholder=exp_month]", "12")
    page.fill("#card-element input[placeholder=exp_year]", "34")
    page.fill("#card-element input[placeholder=cvc]", "123")
    page.click("#pay-button")
    page.wait_for_function(
        "() => document.querySelector('[data-testid=wallet-balance]').textContent.includes('25.00')"
    )
    assert page.locator("[data-testid=ledger-entry]").count() == 1
