"""An owner funds an agent from the Network page (contract section 18), in Chromium in English
at 1280 px and in Spanish at 390 px: the form moves the money once, the page comes back with
the confirmation and both balances updated, and nothing scrolls sideways on the phone. A
screenshot of the page before and after is kept in test-artifacts/."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest

from network.models import Transfer
from tests.browser.card_pages import log_in
from tests.browser.test_buy_now_logged_out import no_sideways_scroll, shot
from tests.factories import UserFactory
from tests.helpers import assert_ledger_balanced
from tests.network_support import agent_of, balance
from wallet.services import wallet_topup_manual

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

JOURNEYS = [("en", 1280, 800, "25.50", "Float for the weekend"), ("es", 390, 844, "25,50", "")]
SAID = {
    "en": ("25.50 EUR moved to Kiosco Norte.", "74.50 EUR", "35.50 EUR"),
    "es": ("25,50 EUR enviados a Kiosco Norte.", "74,50 EUR", "35,50 EUR"),
}


@pytest.mark.parametrize(("language", "width", "height", "amount", "memo"), JOURNEYS)
def test_an_owner_funds_an_agent_from_the_network_page(
    browser, site, language, width, height, amount, memo
):
    owner = UserFactory(email=f"network-{language}@example.com", language=language)
    wallet_topup_manual(account=owner.account, amount=Decimal("100.00"))
    agent = agent_of(owner.account, name="Kiosco Norte")
    wallet_topup_manual(account=agent, amount=Decimal("10.00"))
    context = browser.new_context(locale=language, viewport={"width": width, "height": height})
    context.set_default_timeout(15_000)
    page = context.new_page()
    try:
        log_in(page, site, owner, language)
        page.goto(f"{site.url}/network/")
        assert page.evaluate("document.documentElement.lang") == language
        form = page.locator("[data-testid=transfer] form")
        form.locator("select[name=agent]").select_option(agent.public_id)
        form.locator("input[value=to_agent]").check()
        form.locator("input[name=amount]").fill(amount)
        form.locator("input[name=memo]").fill(memo)
        no_sideways_scroll(page)
        shot(page, f"network-transfer-form-{language}-{width}")
        form.locator("button[type=submit]").click()
        page.wait_for_url(re.compile(r"/network/$"))
        confirmation, own, agents = SAID[language]
        assert confirmation in page.inner_text(".messages")
        assert page.inner_text("[data-testid=own-balance]").strip() == own
        assert agents in page.inner_text("[data-testid=agent]")
        no_sideways_scroll(page)
        shot(page, f"network-transfer-done-{language}-{width}")
    finally:
        context.close()
    assert balance(owner.account) == Decimal("74.50") and balance(agent) == Decimal("35.50")
    assert Transfer.objects.get().memo == memo
    assert_ledger_balanced()
