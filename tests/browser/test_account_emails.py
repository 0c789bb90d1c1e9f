"""Accounts that recover, in Chromium with mail written to files as ``EMAIL_URL=filemail://``
does (issue 17): sign up and confirm from the email file; forget the password, reset it from
the email file and log in with the new one. Screenshots of the last pages in test-artifacts/."""

from __future__ import annotations

import email
import email.policy
import re
from pathlib import Path

import pytest

from accounts.models import User
from tests.browser.conftest import ARTIFACTS

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

OLD = "first-passphrase-4711"
NEW = "second-passphrase-4712"


@pytest.fixture
def mail_dir(settings, tmp_path) -> Path:
    settings.MAILERS = {
        "default": {
            "BACKEND": "django.core.mail.backends.filebased.EmailBackend",
            "OPTIONS": {"file_path": str(tmp_path)},
        }
    }
    return tmp_path


def link_in_files(mail_dir: Path, to: str, path: str) -> str:
    """The newest email file to ``to`` holding a link to ``path``: that link's path."""
    for file in sorted(mail_dir.iterdir(), key=lambda f: f.stat().st_mtime, reverse=True):
        # A file holds the messages of one connection, each after a line of dashes.
        for raw in file.read_text().split("-" * 79):
            message = email.message_from_string(raw.strip(), policy=email.policy.default)
            if message["To"] != to:
                continue
            text = message.get_body(preferencelist=("plain",)).get_content()
            found = re.search(rf"https?://[^/\s]+({re.escape(path)}\S+/)", text)
            if found:
                return found.group(1)
    raise AssertionError(f"no email to {to} with a link to {path} in {mail_dir}")


@pytest.mark.parametrize(("language", "width", "height"), [("en", 1280, 800), ("es", 390, 844)])
def test_sign_up_confirm_forget_and_reset_the_password_from_the_email_files(
    browser, site, mail_dir, language, width, height
):
    address = f"nia-{language}@example.com"
    context = browser.new_context(locale=language, viewport={"width": width, "height": height})
    context.set_default_timeout(15_000)
    page = context.new_page()
    try:
        page.goto(f"{site.url}/accounts/signup/")
        page.fill("input[name=email]", address)
        page.fill("input[name=first_name]", "Nia")
        page.fill("input[name=password1]", OLD)
        page.fill("input[name=password2]", OLD)
        page.click("main button[type=submit]")
        page.wait_for_url(re.compile(r"/accounts/signup/sent/$"))
        assert address in page.inner_text("main")
        assert not User.objects.filter(email=address).exists()
        page.goto(site.url + link_in_files(mail_dir, address, "/accounts/signup/confirm/"))
        page.click("main button[type=submit]")
        page.wait_for_url(re.compile(r"/accounts/profile/$"))
        assert address in page.inner_text("main")
        page.screenshot(path=str(ARTIFACTS / f"signup-confirmed-{language}-{width}.png"))

        # Log out (behind the menu on a phone), then forget the password.
        if page.is_visible(".menu-toggle"):
            page.click(".menu-toggle")
        page.click("nav button[type=submit]")
        page.goto(f"{site.url}/accounts/login/")
        page.click("a[href='/accounts/password-reset/']")
        page.fill("input[name=email]", address)
        page.click("main button[type=submit]")
        page.wait_for_url(re.compile(r"/accounts/password-reset/sent/$"))
        page.goto(site.url + link_in_files(mail_dir, address, "/accounts/password-reset/"))
        page.fill("input[name=new_password1]", NEW)
        page.fill("input[name=new_password2]", NEW)
        page.click("main button[type=submit]")
        page.wait_for_url(re.compile(r"/accounts/password-reset/done/$"))
        page.goto(f"{site.url}/accounts/login/")
        page.fill("input[name=username]", address)
        page.fill("input[name=password]", NEW)
        page.click("main button[type=submit]")
        page.wait_for_url(re.compile(r"/accounts/profile/$"))
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / f"password-reset-{language}-{width}.png"))
    finally:
        context.close()
    user = User.objects.get(email=address)
    assert user.check_password(NEW) and not user.check_password(OLD)
    assert user.language == language
