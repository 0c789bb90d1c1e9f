"""A second card purchase over a lowered new-account cap is refused on the checkout page with
a readable message, in English and in Spanish (docs/fraud.md)."""

from __future__ import annotations

import re
from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone, translation

from payments.models import Payment
from tests.browser.card_pages import log_in
from tests.card_support import VISA
from tests.factories import OperatorFactory, ProductFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

NUMBER = "+525512345678"
REFUSAL = (
    "A new account can pay by card at most %(count)d time in 24 hours. "
    "Nothing was charged; you can pay by card again %(when)s."
)


@pytest.fixture
def catalog(db):
    operator = OperatorFactory(name="Telcel", slug="telcel")
    return ProductFactory(operator=operator, name="Telcel 100 MXN", retail_price=Decimal("5.00"))


@pytest.fixture
def shopper(db):
    return UserFactory(email="shopper@example.com")


def refusal_start(language: str) -> tuple[str, str]:
    """The page's lead sentence and the start of the API's detail, in ``language`` (as the
    catalogs translate them)."""
    with translation.override(language):
        lead = translation.gettext("For your security, card purchases are limited.")
        detail = translation.ngettext(REFUSAL, REFUSAL.replace("time ", "times "), 1)
    return lead, detail.split("%(when)s")[0] % {"count": 1, "when": ""}


def add_to_cart_from_the_catalog(page, site):
    page.goto(site.url)
    page.click("text=Browse the catalog")
    page.click("a.tile[href$='/catalog/MX/']")
    page.click("a.tile.operator")
    page.fill("input[name=recipient_number]", NUMBER)
    page.fill(".add-to-cart input[name=quantity]", "2")
    page.click(".add-to-cart button[type=submit]")
    page.wait_for_url(re.compile(r"/cart/$"))


def pay_by_card(page):
    page.click("text=Pay by card")
    page.wait_for_url(re.compile(r"/checkout/$"))
    fill_card(page)
    page.click("#pay-button")


def buy_once(page, site, user):
    log_in(page, site, user)
    add_to_cart_from_the_catalog(page, site)
    pay_by_card(page)
    page.wait_for_url(re.compile(r"/payments/pay_\w+/$"))
    assert Payment.objects.get().status == "captured"
    add_to_cart_from_the_catalog(page, site)


def fill_card(page):
    page.fill("#card-element input[placeholder=number]", VISA)
    page.fill("#card-element input[placeholder=exp_month]", "12")
    page.fill("#card-element input[placeholder=exp_year]", "34")
    page.fill("#card-element input[placeholder=cvc]", "123")
    page.fill("#card-element input[placeholder=postal_code]", "42424")


def test_second_card_purchase_over_the_new_account_cap_is_refused_readably(
    page,
    site,
    catalog,
    shopper,
    settings,
):
    settings.CARD_LIMIT_NEW_ACCOUNT_PER_DAY = 1
    buy_once(page, site, shopper)
    pay_by_card(page)
    error = page.locator("[data-testid=payment-error]")
    error.wait_for(state="visible")
    lead, detail = refusal_start("en")
    text = error.inner_text()
    assert text.startswith(lead) and detail in text, text
    # Tomorrow's time says which day it is (issue 43, item 12); only a refusal made the day
    # after the purchase (both around midnight UTC) lifts the same day, and says no day.
    lifts = Payment.objects.get().created_at + timedelta(hours=24)
    day = r"(on \w+ \d+ )?" if lifts.date() == timezone.now().date() else r"on \w+ \d+ "
    assert re.search(rf"again in \d+ h \d+ min \({day}at \d\d:\d\d UTC\)", text), text
    assert "/checkout/" in page.url  # still on the page, nothing charged
    assert Payment.objects.count() == 1


def test_the_refusal_reads_in_spanish(page, site, catalog, shopper, settings):
    settings.CARD_LIMIT_NEW_ACCOUNT_PER_DAY = 1
    buy_once(page, site, shopper)
    page.context.add_cookies([{"name": "django_language", "value": "es", "url": site.url}])
    page.goto(f"{site.url}/checkout/")
    assert page.get_attribute("html", "lang") == "es"
    fill_card(page)
    page.click("#pay-button")
    error = page.locator("[data-testid=payment-error]")
    error.wait_for(state="visible")
    lead, detail = refusal_start("es")
    text = error.inner_text()
    assert text.startswith(lead) and detail in text, text
    assert Payment.objects.count() == 1
