"""Buying a PIN on the site (contract section 17, "PINs"): the receipt shows its buyer the
code, whole and copyable, with a word on who sees it, and it fits a phone."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest

from catalog.benefits import benefit
from recharges.models import Recharge
from recharges.pins import pin_body
from tests.browser.card_pages import log_in
from tests.factories import OperatorFactory, ProductFactory, UserFactory
from wallet.services import wallet_topup_manual

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

NUMBER = "+525512345678"


def test_buy_a_pin_on_the_site_and_read_it_on_the_receipt(browser, site, settings):
    settings.AIRTIME_PROVIDER = "simulator"  # it answers a simulated PIN for a PIN product
    telcel = OperatorFactory(name="Telcel", slug="telcel")
    ProductFactory(operator=telcel, name="Telcel 100 MXN")
    pin = ProductFactory(
        operator=telcel,
        sku="TELCEL-PIN-100",
        name="Telcel PIN 100 MXN",
        product_type="pin",
        benefits=[benefit("credit", "100", "MXN")],
        validity_days=180,
        retail_price=Decimal("5.24"),
    )
    buyer = UserFactory(email="pin-buyer@example.com")
    wallet_topup_manual(account=buyer.account, amount=Decimal("20.00"))
    context = browser.new_context(locale="en-US", viewport={"width": 390, "height": 844})
    context.set_default_timeout(10_000)
    context.grant_permissions(["clipboard-read", "clipboard-write"])
    page = context.new_page()
    try:
        log_in(page, site, buyer)
        page.goto(f"{site.url}/catalog/MX/telcel/")
        card = page.locator(f"#{pin.public_id}")
        assert "A PIN to enter on the phone" in card.inner_text()
        card.locator("input[name=recipient_number]").fill(NUMBER)
        card.locator(".add-to-cart button[type=submit]").click()
        page.wait_for_url(re.compile(r"/cart/$"))
        page.click("text=Pay from wallet")
        page.wait_for_url(re.compile(r"/payments/pay_\w+/$"))

        shown = page.locator("[data-testid=recharge-pin]")
        shown.wait_for()  # drawn with the page, or once the page follows the delivery
        recharge = Recharge.objects.get(product=pin)
        code = pin_body(recharge)["code"]
        assert page.locator("[data-testid=pin-code]").inner_text().replace(" ", "") == code
        assert "Shown only to you" in page.inner_text("[data-testid=pin-private]")
        # Whole on a phone: nothing of the page or of the code runs off the screen.
        assert page.evaluate(
            "() => document.documentElement.scrollWidth <= document.documentElement.clientWidth"
        )
        box = page.locator("[data-testid=pin-code]").bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390
        # "Copy" puts the whole code on the clipboard, without the gaps between its groups.
        page.click(".pin-copy")
        assert page.evaluate("() => navigator.clipboard.readText()") == code
        assert page.inner_text(".pin-copy") == "Copied"
    finally:
        context.close()
