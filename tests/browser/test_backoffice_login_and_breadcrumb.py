"""Issue 43, item 9, as staff see it in Chromium: the fraud review queue's breadcrumb has the
back office's style, and the login's code field is as wide as the email and password fields."""

from __future__ import annotations

import pytest

from tests.browser.staff_support import shot, sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_fraud_review_breadcrumb_is_styled_like_every_other_page(browser, site):
    context, page = sign_in(browser, site, width=1280)
    style = "() => getComputedStyle(document.querySelector('.breadcrumbs')).backgroundColor"
    try:
        page.goto(f"{site.url}/admin/recharges/recharge/")
        expected = page.evaluate(style)
        page.goto(f"{site.url}/admin/checkout/cardkeyfreeze/")
        assert page.evaluate(style) == expected != "rgba(0, 0, 0, 0)"
        home = page.locator(".breadcrumbs a").first.bounding_box()
        assert home is not None and home["x"] > 20  # inside the bar's padding, not at the edge
        shot(page, "backoffice-fraud-review-1280")
    finally:
        context.close()


@pytest.mark.parametrize("width", [1280, 390])
def test_the_logins_code_field_is_as_wide_as_the_email_and_password(browser, site, width):
    context = browser.new_context(locale="en-US", viewport={"width": width, "height": 900})
    page = context.new_page()
    try:
        page.goto(f"{site.url}/admin/login/")
        widths = [
            page.locator(f"#id_{name}").bounding_box()["width"]  # type: ignore[index]
            for name in ("username", "password", "otp_token")
        ]
        assert widths[0] == widths[1] == widths[2], widths
        shot(page, f"backoffice-login-{width}")
    finally:
        context.close()
