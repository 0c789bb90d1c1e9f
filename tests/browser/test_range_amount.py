"""Buying any amount of a range product (issue 40, contract section 17), in Chromium, in
English, Spanish and French: the shopper types 150 MXN, reads the price the server computed,
tries an amount off the step and is told the range under the field, picks a preset, types 150
again, adds it to the cart and pays by card; the recharge sends 150 MXN. Every page of the
journey is kept at 1280 and 390 px in test-artifacts/ (range-*.png)."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest

from recharges.models import Recharge
from tests.browser.card_pages import log_in
from tests.browser.conftest import ARTIFACTS
from tests.browser.test_buy_now_logged_out import no_sideways_scroll, pay_with_card
from tests.factories import (
    OperatorFactory,
    ProductFactory,
    RangeProductFactory,
    UserFactory,
    make_country,
)
from tests.helpers import assert_ledger_balanced

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

JOURNEYS = [("en", 1280, 800), ("es", 390, 844), ("fr", 390, 844)]
PHONE = "%2B525512345678"
WIDTHS = (1280, 390)

# The words each language shows: the price of 150 MXN (150 / 20 + 0.50), the range refused.
WORDS = {
    "en": {"price": "You pay 8.00 EUR", "range": "from 10 to 1,000 MXN"},
    "es": {"price": "Pagas 8,00 EUR", "range": "de 10 a 1\u00a0000 MXN"},
    "fr": {"price": "Vous payez 8,00 EUR", "range": "de 10 à 1\u00a0000 MXN"},
}


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
    return RangeProductFactory(  # 10 to 1,000 MXN by 1; A / 20 + 0.50 EUR
        operator=operator,
        name="Telcel any amount",
        range_max=Decimal("1000.00"),
        range_step=Decimal("1.00"),
    )


def shots(page, name: str, height: int) -> None:
    """The page at both widths (then back to the journey's own)."""
    ARTIFACTS.mkdir(exist_ok=True)
    size = page.viewport_size
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": height})
        no_sideways_scroll(page)
        page.screenshot(path=str(ARTIFACTS / f"range-{name}-{width}.png"), full_page=True)
    page.set_viewport_size(size)


def price_shown(page, card, text: str) -> None:
    page.wait_for_function(
        "([card, text]) => document.querySelector(card + ' .amount-price').textContent === text",
        arg=[card, text],
    )


@pytest.mark.parametrize(("language", "width", "height"), JOURNEYS)
def test_buy_150_mxn_of_a_range_product_by_card(browser, site, telcel, language, width, height):
    words = WORDS[language]
    shopper = UserFactory(email=f"range-{language}@example.com", language=language)
    context = browser.new_context(locale=language, viewport={"width": width, "height": height})
    context.set_default_timeout(15_000)
    page = context.new_page()
    asked: list[str] = []
    page.on("request", lambda r: asked.append(r.url) if "/price?" in r.url else None)
    try:
        log_in(page, site, shopper)

        page.goto(f"{site.url}/catalog/MX/telcel/")  # no number yet: the card asks for one
        shots(page, f"no-number-{language}", height)
        page.goto(f"{site.url}/catalog/MX/telcel/?phone={PHONE}")
        card = f"li.product[id='{telcel.public_id}']"
        field = f"{card} input[name=local_amount]"
        assert words["range"] in page.inner_text(card)
        presets = page.locator(f"{card} .preset")
        assert presets.count() == 4 and presets.first.is_visible()

        # Typed key by key: one question once the typing pauses, and the server's answer.
        page.locator(field).press_sequentially("150", delay=40)
        price_shown(page, card, words["price"])
        assert len(asked) == 1 and asked[0].endswith("amount=150"), asked
        assert page.get_attribute(field, "aria-invalid") is None

        # Off the step: the range, under the field, tied to it.
        page.locator(field).fill("150.5")
        error = page.locator(f"{card} [data-testid=amount-error]")
        error.wait_for(state="visible")
        assert words["range"] in error.inner_text()
        assert page.get_attribute(field, "aria-invalid") == "true"
        assert page.locator(f"{card} .amount-price").inner_text() == ""
        shots(page, f"refused-{language}", height)

        # A preset fills the field and asks at once.
        presets.nth(2).click()  # 200
        assert page.input_value(field) == "200"
        assert presets.nth(2).get_attribute("aria-pressed") == "true"
        page.wait_for_function(
            "card => document.querySelector(card + ' .amount-price').textContent.includes('10')",
            arg=card,
        )
        assert error.is_hidden()

        page.locator(field).fill("150")
        price_shown(page, card, words["price"])
        shots(page, f"product-{language}", height)

        page.click(f"{card} form.add-to-cart button[type=submit]:not([name])")
        page.wait_for_url(re.compile(r"/cart/$"))
        amount = page.inner_text("[data-testid=cart-item-amount]")
        assert amount in ("150.00 MXN", "150,00 MXN"), amount
        assert page.inner_text("[data-testid=quote-total]").strip() in ("8.00 EUR", "8,00 EUR")
        shots(page, f"cart-{language}", height)

        page.click("main a.button[href$='/checkout/']")
        page.wait_for_url(re.compile(r"/checkout/$"))
        assert page.inner_text("[data-testid=line-amount]") == amount
        shots(page, f"checkout-{language}", height)
        pay_with_card(page)
        page.wait_for_url(re.compile(r"/payments/pay_\w+/$"))
        page.wait_for_function(
            "() => [...document.querySelectorAll('[data-testid=recharge-status]')]"
            ".every(e => e.classList.contains('status-delivered'))"
        )
        assert page.inner_text("[data-testid=recharge-amount]") == amount
        assert page.evaluate("document.documentElement.lang") == language
        shots(page, f"receipt-{language}", height)
    finally:
        context.close()
    (recharge,) = Recharge.objects.all()
    assert recharge.status == "delivered"
    assert recharge.product_id == telcel.pk and recharge.local_amount == Decimal("150.00")
    assert recharge.amount == Decimal("8.00") and recharge.currency == "EUR"
    assert_ledger_balanced()
