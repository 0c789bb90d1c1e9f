"""The back office on a phone, in Spanish (issue 32, defects 6, 11 and 12): a staff user signs
in with the authenticator's code, and the index, the dashboard (with data in its charts) and a
list fit a 390 px screen without scrolling sideways."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from accounts.services import totp_device_enrol
from tests.factories import PASSWORD, ProductFactory, UserFactory
from tests.helpers import REJECTS, fund, place, process, rfc6238, secret_of

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
WIDTH = "() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]"


def test_staff_sign_in_with_their_code_and_the_back_office_fits_a_390_px_phone(browser, site):
    staff = UserFactory(is_staff=True, is_superuser=True)
    secret = secret_of(totp_device_enrol(user=staff).config_url)
    shop = UserFactory()
    fund(shop, "100.00")
    product = ProductFactory(retail_price=Decimal("5.00"))
    process(place(shop, product, quantity=3))
    process(place(shop, product, number=REJECTS))
    context = browser.new_context(locale="es-ES", viewport={"width": 390, "height": 844})
    context.add_cookies([{"name": "django_language", "value": "es", "url": site.url}])
    page = context.new_page()
    try:
        page.goto(f"{site.url}/admin/login/?next=/admin/")
        assert page.locator("select[name=otp_device]").count() == 0
        page.fill("input[name=username]", staff.email)
        page.fill("input[name=password]", PASSWORD)
        page.fill("input[name=otp_token]", rfc6238(secret))
        page.click("input[type=submit]")
        page.wait_for_url(f"{site.url}/admin/")
        assert "Administración de Django" not in page.content()
        for path in ("/admin/", "/admin/dashboard/", "/admin/recharges/recharge/"):
            page.goto(f"{site.url}{path}")
            scroll, width = page.evaluate(WIDTH)
            assert scroll <= width, (path, scroll, width)
        assert page.locator("ol.breadcrumbs").count() == 1
    finally:
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "backoffice-phone-es.png"), full_page=True)
        context.close()
