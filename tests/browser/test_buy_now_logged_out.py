"""A logged-out "Buy now" (issue 32, defect 3), in Chromium at 1280 and 390 px, in English and
Spanish: the chosen top-up survives a login, and a sign-up with its email confirmation, and
lands on the checkout of exactly that item; or a guest pays it by card with only an email and
gets the receipt page and the receipt email in their language. A screenshot of each journey's
last page is kept in test-artifacts/."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest
from django.core import mail

from catalog.models import Product
from checkout.models import CardCheckout
from emails.models import Email
from recharges.models import Recharge
from tests.browser.conftest import ARTIFACTS
from tests.card_support import VISA
from tests.factories import PASSWORD, OperatorFactory, ProductFactory, UserFactory, make_country
from tests.helpers import assert_ledger_balanced, link_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

JOURNEYS = [("en", 1280, 800), ("es", 390, 844)]
PHONE = "%2B525512345678"


@pytest.fixture
def telcel(db):
    mexico = make_country("MX", "Mexico", "+52", "MXN", translations={"es": {"name": "México"}})
    operator = OperatorFactory(country=mexico, name="Telcel", slug="telcel", prefixes=["55"])
    ProductFactory(
        operator=operator,
        name="Telcel 100 MXN",
        retail_price=Decimal("5.00"),
        local_amount=Decimal("100"),
        local_currency="MXN",
    )
    # A cheaper amount first on the page: "Buy now" must keep the one clicked, not the first.
    ProductFactory(
        operator=operator,
        name="Telcel 20 MXN",
        retail_price=Decimal("1.00"),
        local_amount=Decimal("20"),
        local_currency="MXN",
    )
    return operator


def open_page(browser, language: str, width: int, height: int):
    context = browser.new_context(locale=language, viewport={"width": width, "height": height})
    context.set_default_timeout(15_000)
    return context, context.new_page()


def buy_now_logged_out(page, site):
    """The operator page with a number, logged out: "Buy now" on the 100 MXN amount."""
    page.goto(f"{site.url}/catalog/MX/telcel/?phone={PHONE}")
    chosen = Product.objects.get(name="Telcel 100 MXN").public_id
    page.click(f"li.product:has(input[value={chosen}]) button[name=then]")
    page.wait_for_url(re.compile(r"/checkout/guest/$"))
    assert "+52 55 1234 5678" in page.inner_text("main")
    assert page.inner_text("[data-testid=quote-total]").strip() in ("5.00 EUR", "5,00 EUR")


def on_checkout_of_that_item(page):
    page.wait_for_url(re.compile(r"/checkout/\?cart=buy-now$"))
    text = page.inner_text("main")
    assert "+52 55 1234 5678" in text and "Telcel 100 MXN" in text
    assert page.inner_text("[data-testid=quote-total]").strip() in ("5.00 EUR", "5,00 EUR")


def no_sideways_scroll(page):
    found = page.evaluate(
        "() => ({scroll: document.documentElement.scrollWidth,"
        " width: document.documentElement.clientWidth})"
    )
    assert found["scroll"] <= found["width"], found


def shot(page, name: str):
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def pay_with_card(page):
    page.fill("#card-element input[placeholder=number]", VISA)
    page.fill("#card-element input[placeholder=exp_month]", "12")
    page.fill("#card-element input[placeholder=exp_year]", "34")
    page.fill("#card-element input[placeholder=cvc]", "123")
    page.fill("#card-element input[placeholder=postal_code]", "42424")
    page.click("#pay-button")


@pytest.mark.parametrize(("language", "width", "height"), JOURNEYS)
def test_logged_out_buy_now_then_login_opens_the_checkout_of_that_amount(
    browser, site, telcel, language, width, height
):
    user = UserFactory(email=f"returning-{language}-{width}@example.com", language=language)
    context, page = open_page(browser, language, width, height)
    try:
        buy_now_logged_out(page, site)
        page.click("[data-testid=guest-login]")
        page.wait_for_url(re.compile(r"/accounts/login/\?next="))
        page.fill("input[name=username]", user.email)
        page.fill("input[name=password]", PASSWORD)
        page.click("form:has(input[name=username]) button[type=submit]")
        on_checkout_of_that_item(page)
        assert page.evaluate("document.documentElement.lang") == language
        no_sideways_scroll(page)
        shot(page, f"buy-now-login-{language}-{width}")
    finally:
        context.close()


@pytest.mark.parametrize(("language", "width", "height"), JOURNEYS)
def test_logged_out_buy_now_then_sign_up_with_its_confirmation_opens_that_checkout(
    browser, site, telcel, language, width, height
):
    address = f"newcomer-{language}-{width}@example.com"
    context, page = open_page(browser, language, width, height)
    try:
        buy_now_logged_out(page, site)
        page.click("[data-testid=guest-signup]")
        page.wait_for_url(re.compile(r"/accounts/signup/\?next="))
        page.fill("input[name=email]", address)
        page.fill("input[name=first_name]", "Nia")
        page.fill("input[name=password1]", "a-long-passphrase-42")
        page.fill("input[name=password2]", "a-long-passphrase-42")
        page.click("main button[type=submit]")
        page.wait_for_url(re.compile(r"/accounts/signup/sent/$"))
        (confirmation,) = [m for m in mail.outbox if m.to == [address]]
        page.goto(site.url + link_in(confirmation, "/accounts/signup/confirm/"))
        page.click("main button[type=submit]")
        on_checkout_of_that_item(page)
        assert page.evaluate("document.documentElement.lang") == language
        no_sideways_scroll(page)
        shot(page, f"buy-now-signup-{language}-{width}")
    finally:
        context.close()


@pytest.mark.parametrize(("language", "width", "height"), JOURNEYS)
def test_a_guest_pays_by_card_and_gets_the_receipt_page_and_email_in_their_language(
    browser, site, telcel, language, width, height
):
    address = f"guest-{language}-{width}@example.com"
    context, page = open_page(browser, language, width, height)
    try:
        buy_now_logged_out(page, site)
        no_sideways_scroll(page)
        shot(page, f"guest-checkout-{language}-{width}")
        # A bad address is refused by the page before anything is sent.
        page.fill("#guest-email", "not-an-email")
        page.click("#pay-button")
        assert page.evaluate("document.getElementById('guest-email').validity.valid") is False
        # One the browser lets through is refused by the server, in words, before the card.
        page.fill("#guest-email", "guest@example")
        pay_with_card(page)
        page.wait_for_selector("[data-testid=payment-error]:not([hidden])")
        said = page.inner_text("[data-testid=payment-error]")
        assert ("válid" if language == "es" else "valid email") in said, said
        assert not CardCheckout.objects.exists()
        page.fill("#guest-email", address)
        page.click("#pay-button")
        page.wait_for_url(re.compile(r"/receipts/pay_\w+:[\w-]+/$"))
        page.wait_for_function(
            "() => [...document.querySelectorAll('[data-testid=recharge-status]')]"
            ".every(e => e.classList.contains('status-delivered'))"
        )
        assert page.evaluate("document.documentElement.lang") == language
        assert "+52 55 1234 5678" in page.inner_text("main")
        receipt_path = page.url.removeprefix(site.url)
        (recharge,) = Recharge.objects.all()
        assert recharge.status == "delivered" and recharge.product.name == "Telcel 100 MXN"
        email = Email.objects.get(kind=Email.Kind.RECEIPT)
        assert email.to == address and email.language == language
        (sent,) = [m for m in mail.outbox if m.to == [address]]
        assert receipt_path in sent.body
        assert ("Gracias" if language == "es" else "Thank you") in sent.body
        no_sideways_scroll(page)
        shot(page, f"guest-receipt-{language}-{width}")
    finally:
        context.close()
    assert_ledger_balanced()
