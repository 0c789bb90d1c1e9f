"""A product whose provider needs the sender's phone and the recipient's email (issue 40,
contract section 17, "Extra fields"), bought in Chromium in English at 1280 px and in Spanish
at 390 px: the card asks for both; a phone without its country code comes back refused under
its input with what was typed; fixed, "Buy now" pays by card, and the receipt shows the fields
given. The card and the receipt are kept at 1280 and 390 px in test-artifacts/ (fields-*.png)."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest

from recharges.models import Recharge
from tests.browser.card_pages import log_in
from tests.browser.conftest import ARTIFACTS
from tests.browser.test_buy_now_logged_out import no_sideways_scroll, pay_with_card
from tests.factories import OperatorFactory, ProductFactory, UserFactory, make_country
from tests.helpers import assert_ledger_balanced, typed_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

JOURNEYS = [("en", 1280, 800), ("es", 390, 844)]
PHONE = "%2B525512345678"
WIDTHS = (1280, 390)

WORDS = {
    "en": {
        "phone": "Sender's phone",
        "email": "Recipient's email",
        "refused": "The sender's phone number in international format, e.g. +14155550123.",
    },
    "es": {
        "phone": "Teléfono del remitente",
        "email": "Correo electrónico del destinatario",
        "refused": "El teléfono del remitente en formato internacional, p. ej. +14155550123.",
    },
}


@pytest.fixture
def nauta(db):
    mexico = make_country("MX", "Mexico", "+52", "MXN", translations={"es": {"name": "México"}})
    operator = OperatorFactory(country=mexico, name="Telcel", slug="telcel", prefixes=["55"])
    ProductFactory(operator=operator, name="Telcel 50 MXN", local_amount=Decimal("50"))
    return ProductFactory(
        operator=operator,
        name="Telcel 100 MXN",
        retail_price=Decimal("5.00"),
        local_amount=Decimal("100"),
        local_currency="MXN",
        required_fields=["senderPhone", "recipientEmail"],
    )


def shots(page, name: str, height: int) -> None:
    """The page at both widths (then back to the journey's own)."""
    ARTIFACTS.mkdir(exist_ok=True)
    size = page.viewport_size
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": height})
        no_sideways_scroll(page)
        page.screenshot(path=str(ARTIFACTS / f"fields-{name}-{width}.png"), full_page=True)
    page.set_viewport_size(size)


@pytest.mark.parametrize(("language", "width", "height"), JOURNEYS)
def test_a_sender_phone_is_asked_refused_then_paid_for(
    browser, site, nauta, language, width, height
):
    words = WORDS[language]
    shopper = UserFactory(email=f"fields-{language}@example.com", language=language)
    context = browser.new_context(locale=language, viewport={"width": width, "height": height})
    context.set_default_timeout(15_000)
    page = context.new_page()
    try:
        log_in(page, site, shopper)

        page.goto(f"{site.url}/catalog/MX/telcel/?phone={PHONE}")
        card = f"li.product[id='{nauta.public_id}']"
        phone = page.get_by_label(words["phone"])
        email = page.get_by_label(words["email"])
        assert phone.get_attribute("type") == "tel" and email.get_attribute("type") == "email"
        assert page.locator("input[name^='fields-']").count() == 2  # the other card asks none
        shots(page, f"card-{language}", height)

        phone.fill("415 555 0123")  # no country code
        email.fill("luis@example.cu")
        page.click(f"{card} button[value=checkout]")
        page.wait_for_url(re.compile(rf"fields_for={nauta.public_id}"))
        assert not typed_in(page.url, "415", "luis")  # the query's values, not the port or ids
        phone = page.get_by_label(words["phone"])
        assert phone.get_attribute("aria-invalid") == "true"
        assert phone.input_value() == "415 555 0123"
        assert page.get_by_label(words["email"]).input_value() == "luis@example.cu"
        error = page.locator(f"{card} [data-testid=field-error]")
        assert error.inner_text() == words["refused"]
        assert error.get_attribute("id") == phone.get_attribute("aria-describedby")
        shots(page, f"refused-{language}", height)

        phone.fill("+1 415 555 0123")
        page.click(f"{card} button[value=checkout]")
        page.wait_for_url(re.compile(r"/checkout/\?cart=buy-now$"))
        fields = page.locator("[data-testid=line-field]")
        assert words["phone"] in fields.first.inner_text()
        assert "+1 415-555-0123" in fields.first.inner_text()
        pay_with_card(page)
        page.wait_for_url(re.compile(r"/payments/pay_\w+/$"))
        page.wait_for_function(
            "() => [...document.querySelectorAll('[data-testid=recharge-status]')]"
            ".every(e => e.classList.contains('status-delivered'))"
        )
        shown = page.locator("[data-testid=line-field]").all_inner_texts()
        assert any(words["phone"] in t and "+1 415-555-0123" in t for t in shown), shown
        assert any(words["email"] in t and "luis@example.cu" in t for t in shown), shown
        shots(page, f"receipt-{language}", height)
    finally:
        context.close()
    (recharge,) = Recharge.objects.all()
    assert recharge.status == "delivered"
    assert recharge.fields == {"senderPhone": "+14155550123", "recipientEmail": "luis@example.cu"}
    assert_ledger_balanced()
