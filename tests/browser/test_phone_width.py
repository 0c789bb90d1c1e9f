"""The site on a phone (issue 17): at 390 px wide nothing sticks out past the right edge and
the page never scrolls sideways: the money pages (defect 11), then every other page."""

from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path

import pytest
from django.contrib.auth.tokens import default_token_generator
from django.db import transaction
from django.test import Client
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

from accounts.services import account_set_b2b, api_key_create
from orders.models import Order
from orders.pricing import LineRequest
from orders.services import order_place_with_wallet
from requestlog.models import ApiRequest
from tests.browser.card_pages import log_in
from tests.factories import (
    OperatorFactory,
    ProductFactory,
    PromotionFactory,
    UserFactory,
    make_country,
    make_key,
)
from tests.helpers import second_factor_login
from wallet.services import wallet_topup_manual
from webhooks.models import Delivery, DeliveryAttempt, Event
from webhooks.services import endpoint_create

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
        log_in(page, site, user)
        for path in ("/wallet/", "/payments/", f"/payments/{order.payment.public_id}/", "/cart/"):
            page.goto(f"{site.url}{path}")
            found = page.evaluate(OVERFLOW)
            assert found["scroll"] <= found["width"], (path, found)
            assert found["out"] == [] and found["hidden"] == 0, (path, found)
    finally:
        context.close()


def _fits(page, path: str) -> None:
    """Nothing of ``path``'s page sticks out at the right edge; a screenshot if it does."""
    found = page.evaluate(OVERFLOW)
    if found["scroll"] > found["width"] or found["out"] or found["hidden"]:
        artifacts = Path(__file__).resolve().parents[2] / "test-artifacts"
        artifacts.mkdir(exist_ok=True)
        name = re.sub(r"[^a-z0-9]+", "-", path.lower()).strip("-") or "home"
        page.screenshot(path=str(artifacts / f"phone-390-{name}.png"), full_page=True)
    assert found["scroll"] <= found["width"], (path, found)
    assert found["out"] == [] and found["hidden"] == 0, (path, found)


def test_every_other_page_fits_a_390_px_phone_logged_out_and_logged_in(browser, site):
    """Long names on purpose: a long country and operator, a long key name and webhook URL.

    The API documentation is checked too, though its layout is Swagger UI's own (collapsed,
    as it opens)."""
    congo = make_country("CD", "Democratic Republic of the Congo", "+243", "CDF")
    OperatorFactory(country=congo, slug="vodacom", name="Vodacom Congo (RDC) S.A.", color="#e60000")
    mexico = make_country("MX", "Mexico", "+52", "MXN")
    telcel = OperatorFactory(
        country=mexico, slug="telcel", name="Telcel", color="#0f3c96", carrier_names=["Telcel"]
    )
    OperatorFactory(country=mexico, slug="att", name="AT&T", color="#009fdb")
    product = ProductFactory(operator=telcel, name="Telcel 500 MXN with 6 GB of data for 30 days")
    ProductFactory(operator=telcel, name="Telcel 100 MXN", product_type="data")
    PromotionFactory(
        operator=telcel, products=[product], name="Triple data on every top-up this weekend"
    )
    user = UserFactory(email="a.very.long.address.for.a.phone@subdomain.example.com")
    live, _ = api_key_create(
        account=user.account, user=user, name="Production server in Frankfurt", mode="live"
    )
    test_key, _ = api_key_create(account=user.account, user=user, name="Staging", mode="test")
    endpoint = endpoint_create(
        account=user.account,
        url="https://93.184.216.34/hooks/reseller/airtime-events/receive?source=reseller",
        livemode=True,
        description="Order updates for the accounting system",
    )
    event = Event.objects.create(
        account=user.account, livemode=True, type="recharge.delivered", body="{}"
    )
    delivery = Delivery.objects.create(event=event, endpoint=endpoint, state="failed", attempts=8)
    DeliveryAttempt.objects.create(
        delivery=delivery, number=8, status_code=500, latency_ms=1234,
        response_head="<!doctype html><html><head><title>Internal Server Error</title>" * 3,
    )  # fmt: skip
    uid = urlsafe_base64_encode(force_bytes(user.pk))
    token = default_token_generator.make_token(user)

    context = browser.new_context(locale="en-US", viewport={"width": 390, "height": 844})
    context.set_default_timeout(20_000)
    page = context.new_page()
    try:
        for path in (
            "/",
            "/catalog/",
            "/catalog/CD/",
            "/catalog/MX/",
            "/catalog/MX/telcel/",
            "/catalog/find/?phone=%2B525512345678",
            "/catalog/find/?phone=%2B33612345678",  # a country not sold
            "/accounts/login/",
            "/accounts/signup/",
            "/accounts/password-reset/",
            "/accounts/password-reset/sent/",
            "/accounts/password-reset/done/",
            f"/accounts/password-reset/{uid}/{token}/",  # the new password form
            "/accounts/password-reset/MQ/not-a-token/",  # the link is no longer valid
            "/api/v1/docs/",
            "/no-such-page/",
        ):
            page.goto(f"{site.url}{path}")
            if path == "/api/v1/docs/":
                page.wait_for_selector(".opblock-summary")
            _fits(page, path)

        log_in(page, site, user)
        page.goto(f"{site.url}/catalog/MX/telcel/")  # the cart, to reach the checkout
        form = page.locator("form.add-to-cart").first
        form.locator("input[name=recipient_number]").fill("+525512345678")
        with page.expect_navigation():
            form.locator("button[type=submit]").click()
        for path in (
            "/accounts/profile/",
            "/accounts/password/",
            "/accounts/keys/",
            "/accounts/keys/new/",
            f"/accounts/keys/{live.public_id}/",
            f"/accounts/keys/{test_key.public_id}/",  # with the sandbox balance
            f"/accounts/keys/{live.public_id}/revoke/",
            "/accounts/webhooks/",
            "/accounts/webhooks/new/",
            f"/accounts/webhooks/{endpoint.public_id}/",
            f"/accounts/webhooks/{endpoint.public_id}/delete/",
            "/catalog/MX/telcel/",
            "/cart/",  # with its line and quote
            "/checkout/",
            "/wallet/statement/",  # the period, the filters (a long key name), the totals
            "/wallet/statement/?from=2026-05-10&to=2026-05-01",  # a bad period's message
        ):
            page.goto(f"{site.url}{path}")
            assert page.url.endswith(path), (path, page.url)
            _fits(page, path)

        # The pages shown once, after a form: a new key and a new endpoint's secret.
        page.goto(f"{site.url}/accounts/keys/new/")
        page.fill("input[name=name]", "Shop integration for the Caribbean storefront")
        page.click("main button[type=submit]")
        page.wait_for_selector("#api-key-value")
        _fits(page, "/accounts/keys/new/ (created)")
        page.goto(f"{site.url}/accounts/webhooks/new/")
        page.fill("input[name=url]", "https://93.184.216.34/a/very/long/path/to/the/receiver/ok")
        page.click("main button[type=submit]")
        page.wait_for_selector("#webhook-secret")
        _fits(page, "/accounts/webhooks/new/ (secret)")
    finally:
        context.close()


def test_on_a_phone_the_header_is_one_line_and_a_menu_opens_the_links(browser, site):
    user = UserFactory(email="menu@example.com")
    context = browser.new_context(locale="en-US", viewport={"width": 390, "height": 844})
    page = context.new_page()
    try:
        log_in(page, site, user)
        header = page.locator("header.topbar").bounding_box()
        assert header is not None and header["height"] < 80  # brand and "Menu", one line
        assert not page.is_visible("nav >> text=Payments")
        page.click(".menu-toggle")
        assert page.get_attribute(".menu-toggle", "aria-expanded") == "true"
        page.click("nav >> text=Payments")
        page.wait_for_url(re.compile(r"/payments/$"))
        page.set_viewport_size({"width": 1280, "height": 800})
        assert page.is_visible("nav >> text=Wallet") and not page.is_visible(".menu-toggle")
    finally:
        context.close()


def test_the_batch_team_request_log_and_staff_pages_fit_a_390_px_phone(browser, site, tmp_path):
    """Issue 32, defect 6: the batches page with "Which columns?" open (its sample file was
    454 px wide), a batch's confirmation and progress, the team, the request log, and the staff
    dashboard of the back office (435 px), in Spanish (the longer words)."""
    mexico = make_country("MX", "Mexico", "+52", "MXN")
    telcel = OperatorFactory(country=mexico, slug="telcel", name="Telcel")
    ProductFactory(
        operator=telcel, retail_price=Decimal("1.00"), local_amount=Decimal("100"),
        product_type="airtime", name="Telcel 100 MXN",
    )  # fmt: skip
    user = UserFactory(email="batches@example.com")
    UserFactory(email="a.developer.with.a.long.address@example.com", account=user.account,
                role="developer")  # fmt: skip
    account_set_b2b(account=user.account, is_b2b=True)
    wallet_topup_manual(account=user.account, amount=Decimal("100.00"))
    key, _plaintext = make_key(user, mode="live", name="Production server in Frankfurt")
    entry = ApiRequest.objects.create(
        account=user.account, api_key=key, livemode=True, method="POST",
        path="/api/v1/orders/ord_01JDX4V7Q8ZK3M2N5P6R/recharges/rch_01JDX4V7Q8ZK3M2N5P6R/retry",
        status=409, latency_ms=1234, request_id="req_01JDX4V7Q8ZK3M2N5P6R7S8T",
        idempotency_key="c0a8012e-7d1f-4b6e-9a3c-2f5e8d9b1a7c", error_code="idempotency_key_reused",
    )  # fmt: skip
    sample = tmp_path / "payroll.csv"
    sample.write_text(
        "recipientNumber,operator,amount,quantity,reference\n"
        "+525512345670,MX/telcel,100,1,payroll-0001\n+525512345671,MX/telcel,100,2,payroll-0002\n"
    )
    staff = UserFactory(email="staff@example.com", is_staff=True, is_superuser=True)
    admin = second_factor_login(Client(), staff)

    context = browser.new_context(locale="es-ES", viewport={"width": 390, "height": 844})
    context.set_default_timeout(20_000)
    context.add_cookies([{"name": "django_language", "value": "es", "url": site.url}])
    page = context.new_page()
    try:
        log_in(page, site, user)
        page.goto(f"{site.url}/batches/")
        page.click("details.help summary")
        assert page.is_visible("details.help pre")
        _fits(page, "/batches/ (Which columns? open)")
        page.set_input_files("#batch-file", str(sample))
        page.click("form.form button[type=submit]")
        page.wait_for_selector("[data-testid=batch-confirm]")
        _fits(page, "/batches/upload/ (the confirmation)")
        page.click("[data-testid=batch-confirm] button[type=submit]")
        page.wait_for_selector("#batch-progress")
        _fits(page, "/batches/<id>/")
        progress = page.evaluate(
            "() => { const s = getComputedStyle(document.getElementById('batch-progress'));"
            " return [s.appearance, s.accentColor]; }"
        )
        assert progress == ["none", "rgb(10, 125, 90)"]  # the site's green (--brand)
        for path in (
            "/batches/",
            "/accounts/team/",
            f"/accounts/keys/{key.public_id}/requests/",
            f"/accounts/keys/{key.public_id}/requests/{entry.public_id}/",
            "/wallet/",
        ):
            page.goto(f"{site.url}{path}")
            _fits(page, path)
        chart = page.evaluate(
            "() => [document.querySelector('.month-chart svg').getBoundingClientRect().width,"
            " document.querySelector('.month-totals').clientWidth]"
        )
        assert chart[0] >= chart[1] - 40, chart  # the chart spans its card (less its padding)

        context.add_cookies(
            [{"name": "sessionid", "value": admin.cookies["sessionid"].value, "url": site.url}]
        )
        page.goto(f"{site.url}/admin/dashboard/")
        page.wait_for_selector(".bo-dashboard")
        _fits(page, "/admin/dashboard/")
    finally:
        context.close()
