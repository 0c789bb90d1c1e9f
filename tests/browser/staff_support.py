"""Staff in the browser: signing in to the back office with the second factor, and
screenshots of what they see (test-artifacts/, not committed)."""

from __future__ import annotations

from pathlib import Path

from accounts.services import totp_device_enrol
from tests.factories import PASSWORD, UserFactory
from tests.helpers import rfc6238, secret_of

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


def sign_in(browser, site, *, width: int, language: str = "en"):
    staff = UserFactory(is_staff=True, is_superuser=True)
    secret = secret_of(totp_device_enrol(user=staff).config_url)
    context = browser.new_context(locale="en-US", viewport={"width": width, "height": 900})
    context.set_default_timeout(10_000)
    context.add_cookies([{"name": "django_language", "value": language, "url": site.url}])
    page = context.new_page()
    page.goto(f"{site.url}/admin/login/?next=/admin/")
    page.fill("input[name=username]", staff.email)
    page.fill("input[name=password]", PASSWORD)
    page.fill("input[name=otp_token]", rfc6238(secret))
    page.click("input[type=submit]")
    page.wait_for_url(f"{site.url}/admin/")
    return context, page


def shot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)
