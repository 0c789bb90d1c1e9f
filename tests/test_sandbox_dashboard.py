"""The key dashboard shows each test key's sandbox and adds fake euros to it."""

from decimal import Decimal

import pytest
from django.test import Client
from django.urls import reverse

from tests.factories import UserFactory, make_key
from wallet.models import Wallet

pytestmark = pytest.mark.django_db


def topup_url(key):
    return reverse("accounts:api-key-sandbox-topup", kwargs={"key_id": key.public_id})


def detail_url(key):
    return reverse("accounts:api-key", kwargs={"key_id": key.public_id})


def test_a_test_keys_page_shows_its_sandbox_balance_buttons_and_the_magic_endings(client, user):
    key, _ = make_key(user, mode="test")
    client.force_login(user)
    page = client.get(detail_url(key)).content.decode()
    assert "0.00 EUR" in page
    for amount in ("+10 EUR", "+50 EUR", "+100 EUR", "+500 EUR"):
        assert amount in page
    for ending in ("0002", "0003", "0004"):
        assert f"<code>{ending}</code>" in page
    # the cap is written as the balance is, not "1,000 EUR" beside "0.00 EUR"
    assert "at most 1000.00 EUR; 5 additions per hour" in page and "1,000" not in page


def test_a_sixth_addition_in_the_hour_says_when_the_next_one_is_possible(
    client, user, time_machine
):
    time_machine.move_to("2026-11-21 10:00:00Z", tick=False)
    key, _ = make_key(user, mode="test")
    client.force_login(user)
    for _ in range(5):
        client.post(topup_url(key), {"amount": "10"})
    time_machine.move_to("2026-11-21 10:20:00Z", tick=False)
    page = client.post(topup_url(key), {"amount": "10"}, follow=True).content.decode()
    assert "The next one is possible in 40 min, at 11:00 UTC." in page
    assert Wallet.objects.get(api_key=key).balance == Decimal("50.00")


def test_the_dashboard_button_adds_to_the_sandbox(client, user):
    key, _ = make_key(user, mode="test")
    client.force_login(user)
    response = client.post(topup_url(key), {"amount": "50"}, follow=True)
    assert Wallet.objects.get(api_key=key).balance == Decimal("50.00")
    assert "50.00 EUR" in response.content.decode()
    listing = client.get(reverse("accounts:api-keys")).content.decode()
    assert "50.00 EUR" in listing


def test_the_dashboard_refuses_other_amounts_and_changes_nothing(client, user):
    key, _ = make_key(user, mode="test")
    client.force_login(user)
    response = client.post(topup_url(key), {"amount": "75"}, follow=True)
    assert "10, 50, 100 or 500" in response.content.decode()
    assert not Wallet.objects.filter(api_key=key).exists() or Wallet.objects.get(
        api_key=key
    ).balance == Decimal("0.00")


def test_live_keys_have_no_sandbox(client, user):
    key, _ = make_key(user, mode="live")
    client.force_login(user)
    assert 'id="sandbox"' not in client.get(detail_url(key)).content.decode()
    client.post(topup_url(key), {"amount": "50"})
    assert not Wallet.objects.filter(api_key=key).exists()


def test_another_accounts_test_key_is_404(client, user):
    key, _ = make_key(UserFactory(), mode="test")
    client.force_login(user)
    assert client.get(detail_url(key)).status_code == 404
    assert client.post(topup_url(key), {"amount": "50"}).status_code == 404


def test_sandbox_buttons_require_csrf(user):
    key, _ = make_key(user, mode="test")
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    assert client.post(topup_url(key), {"amount": "50"}).status_code == 403


def test_sandbox_additions_do_not_appear_in_the_live_wallets_history(client, user):
    """Issue 17, defect 3: a test key's additions showed as approved live top-ups."""
    from decimal import Decimal

    from sandbox.balances import sandbox_topup
    from tests.factories import make_key
    from wallet.services import wallet_topup_manual

    key, _plaintext = make_key(user, mode="test")
    sandbox_topup(key=key, amount="50")
    wallet_topup_manual(account=user.account, amount=Decimal("12.34"))
    client.force_login(user)
    page = client.get("/wallet/").content.decode()
    assert "12.34" in page
    assert "50.00" not in page
