"""The number-first journey (issue 17), in Chromium at 1280x800 and 390x844, in English,
Spanish and French: home page number → the operator's amounts → "Buy now" → the 4242 card →
the receipt, delivered, a receipt by email, the number saved and offered again. A screenshot of
each journey's last page is kept in test-artifacts/."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest
from django.core import mail

from recharges.models import Recharge
from recipients.models import SavedRecipient
from tests.browser.conftest import ARTIFACTS
from tests.card_support import VISA
from tests.factories import PASSWORD, OperatorFactory, ProductFactory, UserFactory, make_country
from tests.helpers import assert_ledger_balanced

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# English words that must not show on the Spanish and French pages of the journey.
ENGLISH = [
    "Top up",
    "Buy now",
    "Add to cart",
    "Recipient gets",
    "Receipt",
    "Paid",
    "Delivered",
    "Pending",
    "Save",
    "Their mobile number",
]


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
    return operator


def visible_text(page) -> str:
    return page.inner_text("main")


@pytest.mark.parametrize(
    ("language", "width", "height"),
    [("en", 1280, 800), ("en", 390, 844), ("es", 390, 844), ("fr", 1280, 800)],
)
def test_number_first_from_home_to_a_saved_recipient(
    browser, site, telcel, language, width, height
):
    user = UserFactory(email=f"shopper-{language}-{width}@example.com", language=language)
    context = browser.new_context(locale=language, viewport={"width": width, "height": height})
    context.set_default_timeout(15_000)
    page = context.new_page()
    seen: list[str] = []
    try:
        page.goto(f"{site.url}/accounts/login/")
        page.fill("input[name=username]", user.email)
        page.fill("input[name=password]", PASSWORD)
        page.click("form:has(input[name=username]) button[type=submit]")
        page.wait_for_url(re.compile(r"/accounts/profile/$"))
        page.goto(site.url + "/")
        seen.append(visible_text(page))
        page.select_option("#topup-country", "MX")
        page.fill("#topup-phone", "55 1234 5678")
        page.click("[data-testid=number-first] button[type=submit]")
        page.wait_for_url(re.compile(r"/catalog/MX/telcel/\?phone=%2B525512345678$"))
        assert "+52 55 1234 5678" in page.inner_text("[data-testid=number-banner]")
        seen.append(visible_text(page))
        page.click(".add-to-cart button[name=then]")
        page.wait_for_url(re.compile(r"/checkout/\?cart=buy-now$"))  # its own one item
        seen.append(visible_text(page))
        page.fill("#card-element input[placeholder=number]", VISA)
        page.fill("#card-element input[placeholder=exp_month]", "12")
        page.fill("#card-element input[placeholder=exp_year]", "34")
        page.fill("#card-element input[placeholder=cvc]", "123")
        page.fill("#card-element input[placeholder=postal_code]", "42424")
        page.click("#pay-button")
        page.wait_for_url(re.compile(r"/payments/pay_\w+/$"))
        page.wait_for_function(
            "() => [...document.querySelectorAll('[data-testid=recharge-status]')]"
            ".every(e => e.classList.contains('status-delivered'))"
        )
        assert Recharge.objects.get(account=user.account).status == "delivered"
        (receipt,) = [m for m in mail.outbox if m.to == [user.email]]
        assert "+52 55 1234 5678" in receipt.body
        page.fill(".save-recipient input[name=name]", "Mamá")
        page.click(".save-recipient button[type=submit]")
        page.wait_for_url(re.compile(r"/payments/pay_\w+/$"))
        again = page.locator("[data-testid=top-up-again] a.button")
        assert "Mamá" in again.inner_text()
        assert SavedRecipient.objects.get(account=user.account).name == "Mamá"
        seen.append(visible_text(page))
        found = page.evaluate(
            "() => ({scroll: document.documentElement.scrollWidth,"
            " width: document.documentElement.clientWidth})"
        )
        assert found["scroll"] <= found["width"], found
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(
            path=str(ARTIFACTS / f"number-first-{language}-{width}.png"), full_page=True
        )
        again.click()
        page.wait_for_url(re.compile(r"/catalog/MX/telcel/\?phone=%2B525512345678$"))
        assert "Mamá" in page.inner_text("[data-testid=number-banner]")
        seen.append(visible_text(page))
    finally:
        context.close()
    if language != "en":
        for text in seen:
            english = [word for word in ENGLISH if re.search(rf"\b{word}\b", text)]
            assert english == [], (english, text[:400])
    assert_ledger_balanced()
