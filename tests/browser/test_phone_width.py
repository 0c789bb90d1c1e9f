"""The money pages on a phone (issue 17, defect 11): at 390 px wide nothing sticks out past the
right edge and the page never scrolls sideways."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest
from django.db import transaction

from orders.models import Order
from orders.pricing import LineRequest
from orders.services import order_place_with_wallet
from tests.factories import PASSWORD, ProductFactory, UserFactory
from wallet.services import wallet_topup_manual

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

OVERFLOW = """() => {
  const width = document.documentElement.clientWidth;
  const out = [...document.querySelectorAll('body *')].filter(e => {
    const box = e.getBoundingClientRect();
    return box.width > 0 && box.right > width + 1;
  }).map(e => e.tagName + '.' + e.className + ': ' + (e.textContent || '').trim().slice(0, 30));
  const hidden = [...document.querySelectorAll('.table-wrap')]
    .filter(w => w.scrollWidth > w.clientWidth + 1).length;  // columns only a swipe shows
  return {scroll: document.documentElement.scrollWidth, width, out, hidden};
}"""


def test_wallet_history_and_receipt_fit_a_390_px_phone(browser, site):
    user = UserFactory(email="phone@example.com")
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
    page = context.new_page()
    try:
        page.goto(f"{site.url}/accounts/login/")
        page.fill("input[name=username]", user.email)
        page.fill("input[name=password]", PASSWORD)
        page.click("main button[type=submit]")
        page.wait_for_url(re.compile(r"/accounts/profile/|/$"))
        for path in ("/wallet/", "/payments/", f"/payments/{order.payment.public_id}/", "/cart/"):
            page.goto(f"{site.url}{path}")
            found = page.evaluate(OVERFLOW)
            assert found["scroll"] <= found["width"], (path, found)
            assert found["out"] == [] and found["hidden"] == 0, (path, found)
    finally:
        context.close()
