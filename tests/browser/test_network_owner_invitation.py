"""An agent nobody has joined gets a new invitation from the Network page, in Chromium in
English at 1280 px and in Spanish at 390 px: the row says where the invitation went, the
owner opens it, corrects the address and sends it; the page confirms, the new address gets
the email, and nothing scrolls sideways on the phone. Screenshots in test-artifacts/."""

from __future__ import annotations

import re

import pytest
from django.core import mail

from accounts.models import Invitation
from network.agents import agent_create
from tests.browser.card_pages import log_in
from tests.browser.test_buy_now_logged_out import no_sideways_scroll, shot
from tests.factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

JOURNEYS = [("en", 1280, 800), ("es", 390, 844)]
SAID = {
    "en": ("Invitation sent to luis@kiosco.exmaple", "We sent a new invitation to {}."),
    "es": ("Invitación enviada a luis@kiosco.exmaple", "Hemos enviado una invitación nueva a {}."),
}


@pytest.mark.parametrize(("language", "width", "height"), JOURNEYS)
def test_an_owner_sends_a_new_invitation_to_a_corrected_address(
    browser, site, language, width, height
):
    owner = UserFactory(email=f"inviter-{language}@example.com", language=language)
    agent = agent_create(
        parent=owner.account, by=owner, name="Kiosco Norte", owner_email="luis@kiosco.exmaple"
    )
    corrected = f"luis-{language}@kiosco.example"
    context = browser.new_context(locale=language, viewport={"width": width, "height": height})
    context.set_default_timeout(15_000)
    page = context.new_page()
    try:
        log_in(page, site, owner, language)
        page.goto(f"{site.url}/network/")
        sent_to, confirmed = SAID[language]
        invitation = page.locator("[data-testid=owner-invitation]")
        assert invitation.locator("summary").inner_text().strip() == sent_to
        invitation.locator("summary").click()
        field = invitation.locator("input[name=owner_email]")
        assert field.input_value() == "luis@kiosco.exmaple"
        field.fill(corrected)
        no_sideways_scroll(page)
        shot(page, f"network-invitation-form-{language}-{width}")
        invitation.locator("button[type=submit]").click()
        page.wait_for_url(re.compile(r"/network/$"))
        assert confirmed.format(corrected) in page.inner_text(".messages")
        summary = page.locator("[data-testid=owner-invitation] summary").inner_text()
        assert corrected in summary
        no_sideways_scroll(page)
        shot(page, f"network-invitation-done-{language}-{width}")
    finally:
        context.close()
    pending = Invitation.objects.filter(account=agent, accepted_at=None)
    assert list(pending.values_list("email", flat=True)) == [corrected]
    assert [message.to for message in mail.outbox][-1] == [corrected]
