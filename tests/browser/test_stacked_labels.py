"""On a phone a table becomes one card per row, each value after its label (issue 43, item
12): the label is in the site's words font, even where the value is a phone number or a
reference set in monospace (the receipt's "Number:" was monospace at 390 px)."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.db import transaction

from orders.models import Order
from orders.pricing import LineRequest
from orders.services import order_place_with_wallet
from tests.browser.card_pages import log_in
from tests.factories import ProductFactory, UserFactory
from wallet.services import wallet_topup_manual

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LABEL_FONTS = """() => {
  const text = getComputedStyle(document.body).fontFamily;
  return [...document.querySelectorAll('table.stack td[data-label]')].map(cell => {
    const label = getComputedStyle(cell, '::before');
    return {label: cell.dataset.label, font: label.fontFamily, size: label.fontSize,
            value: getComputedStyle(cell).fontFamily, text};
  });
}"""


def test_stacked_table_labels_are_words_not_monospace_at_390_px(browser, site):
    user = UserFactory(email="labels@example.com")
    wallet_topup_manual(account=user.account, amount=Decimal("100.00"))
    product = ProductFactory(retail_price=Decimal("5.00"), name="Telcel 100 MXN")
    with transaction.atomic():
        order = order_place_with_wallet(
            account=user.account,
            livemode=True,
            channel=Order.Channel.WALLET,
            lines=[LineRequest(product=product, recipient_number="+525512345678", quantity=2)],
            currency="EUR",
        )
    context = browser.new_context(locale="es-ES", viewport={"width": 390, "height": 844})
    context.add_cookies([{"name": "django_language", "value": "es", "url": site.url}])
    page = context.new_page()
    try:
        log_in(page, site, user)
        for path in (f"/payments/{order.payment.public_id}/", "/wallet/", "/payments/"):
            page.goto(f"{site.url}{path}")
            cells = page.evaluate(LABEL_FONTS)
            assert cells, path
            monospace = [c for c in cells if c["font"] != c["text"] or c["size"] != "16px"]
            assert monospace == [], (path, monospace)
        page.goto(f"{site.url}/payments/{order.payment.public_id}/")
        number = next(c for c in page.evaluate(LABEL_FONTS) if c["label"] == "Número")
        assert "monospace" in number["value"]  # the number itself stays monospace
    finally:
        context.close()
