"""The API keys page, side by side on a desktop: cards of one row start at the same height
(the second key's card was 24 px lower than the first), and a test key's sandbox balance is
written as the visitor's language writes amounts ("0,00 EUR" in Spanish, not "0.00")."""

from __future__ import annotations

import re

import pytest

from tests.browser.card_pages import log_in
from tests.factories import UserFactory, make_key

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

TOPS = (
    "() => [...document.querySelectorAll('.cards > .card')].map(c => c.getBoundingClientRect().top)"
)


@pytest.mark.parametrize(("language", "zero"), [("en", "0.00 EUR"), ("es", "0,00 EUR")])
def test_key_cards_of_one_row_line_up_and_the_sandbox_balance_is_localized(
    browser, site, language, zero
):
    user = UserFactory(email=f"keys-{language}@example.com")
    make_key(user, mode="test", name="Sandbox")
    make_key(user, mode="live", name="Production server")
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.add_cookies([{"name": "django_language", "value": language, "url": site.url}])
    page = context.new_page()
    try:
        log_in(page, site, user)
        page.goto(f"{site.url}/accounts/keys/")
        tops = page.evaluate(TOPS)
        assert len(tops) == 2 and abs(tops[0] - tops[1]) < 1, tops
        balance = page.locator(".card p", has_text=re.compile("Sandbox balance|Saldo de sandbox"))
        assert balance.inner_text().replace("\u00a0", " ").endswith(zero)
    finally:
        context.close()
