"""The card form as a person meets it (issue 43, item 2), in a real browser against
localstripe: it takes MM/YY and MM/YYYY (typed key by key, or whole in the month) and names the
field it refuses, in the page's language, never "Bad request"."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest

from payments.models import Payment
from tests.browser.card_pages import CARD, log_in, to_checkout, type_card
from tests.card_support import VISA
from tests.factories import OperatorFactory, ProductFactory, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def catalog(db):
    operator = OperatorFactory(name="Telcel", slug="telcel")
    return ProductFactory(operator=operator, name="Telcel 100 MXN", retail_price=Decimal("5.00"))


@pytest.fixture
def shopper(db):
    return UserFactory(email="shopper@example.com")


def test_a_four_digit_expiry_year_pays(page, site, catalog, shopper):
    """It failed with only "Bad request": localstripe's form put "30" of "2030" in the CVC."""
    log_in(page, site, shopper)
    to_checkout(page, site, catalog, quantity=1)
    type_card(page, number="4242 4242 4242 4242", year="2030")
    assert page.input_value(CARD.format("exp_year")) == "30"
    assert page.input_value(CARD.format("cvc")) == "123"
    page.click("#pay-button")
    page.wait_for_url(re.compile(r"/payments/pay_\w+/$"))
    assert Payment.objects.get().status == "captured"


def test_the_expiry_typed_whole_in_the_month_is_read_as_mm_yyyy(page, site, catalog, shopper):
    log_in(page, site, shopper)
    to_checkout(page, site, catalog, quantity=1)
    page.fill(CARD.format("number"), VISA)
    page.click(CARD.format("exp_month"))
    page.keyboard.type("12/2031")
    assert page.input_value(CARD.format("exp_month")) == "12"
    assert page.input_value(CARD.format("exp_year")) == "31"
    page.fill(CARD.format("cvc"), "123")
    page.click("#pay-button")
    page.wait_for_url(re.compile(r"/payments/pay_\w+/$"))
    assert Payment.objects.get().status == "captured"


def test_a_refused_card_field_is_named_in_spanish_and_nothing_is_charged(
    page, site, catalog, shopper
):
    log_in(page, site, shopper, language="es")
    to_checkout(page, site, catalog, quantity=1)
    assert page.get_attribute("html", "lang") == "es"
    type_card(page, cvc="12")
    page.click("#pay-button")
    error = page.locator("[data-testid=payment-error]")
    error.wait_for(state="visible")
    assert "código de seguridad (CVC)" in error.inner_text()
    assert page.get_attribute(CARD.format("cvc"), "aria-invalid") == "true"
    page.fill(CARD.format("exp_year"), "2019")
    page.fill(CARD.format("cvc"), "123")
    page.click("#pay-button")
    page.wait_for_function(
        "() => document.querySelector('[data-testid=payment-error]').textContent"
        ".includes('caducado')"
    )
    assert not Payment.objects.exists()  # refused before anything was prepared


def test_the_processors_own_refusal_is_named_not_bad_request(page, site, catalog, shopper):
    """What localstripe itself refuses (an expiry month it cannot read) reaches the buyer as
    the field to check, never "Bad request"."""
    log_in(page, site, shopper)
    to_checkout(page, site, catalog, quantity=1)
    type_card(page)
    # Past our own checks, localstripe answers as it does for a year it cannot take.
    page.route(
        re.compile(r".*/v1/setup_intents/.*/confirm"),
        lambda route: route.fulfill(
            status=400,
            content_type="application/json",
            headers={"Access-Control-Allow-Origin": "*"},
            body='{"error": {"type": "invalid_request_error", "message": "Bad request",'
            ' "code": "invalid_expiry_year"}}',
        ),
    )
    page.click("#pay-button")
    error = page.locator("[data-testid=payment-error]")
    error.wait_for(state="visible")
    assert "expiry date" in error.inner_text() and "Bad request" not in error.inner_text()


def test_the_pay_button_takes_clicks_only_once_the_card_script_runs(page, site, catalog, shopper):
    """Served disabled: a click while Stripe.js was still loading submitted the form to the
    page itself, a reload that paid nothing (seen when the machine was busy)."""
    log_in(page, site, shopper)
    page.route("**/static/js/checkout.js", lambda route: route.abort())
    to_checkout(page, site, catalog, quantity=1)
    assert page.is_disabled("#pay-button")
    page.unroute("**/static/js/checkout.js")
    page.reload()
    page.wait_for_selector("#pay-button:enabled")
    type_card(page)
    page.click("#pay-button")
    page.wait_for_url(re.compile(r"/payments/pay_\w+/$"))
    assert Payment.objects.get().status == "captured"
