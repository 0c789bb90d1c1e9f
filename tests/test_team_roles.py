"""Team members (issue 18): an owner invites people by email with a role; each role is refused
what it must not do (403) on the pages, the API and the exports; an account keeps an owner."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
import time_machine
from django.core import mail
from django.utils import timezone
from rest_framework.test import APIClient

from accounts.models import Invitation, User
from accounts.services import account_set_b2b
from orders.models import Order
from sandbox.balances import sandbox_topup
from tests.factories import PASSWORD, UserFactory, make_key
from tests.helpers import assert_ledger_balanced, assert_problem, bearer, client_for, fund, link_in
from wallet.models import Wallet

pytestmark = pytest.mark.django_db

NEW_PASSWORD = "a-long-passphrase-42"


@pytest.fixture
def owner():
    user = UserFactory(email="owner@example.com")
    fund(user, "50.00")
    return user


def member(owner, role: str) -> User:
    return UserFactory(account=owner.account, role=role)


def test_an_owner_invites_a_developer_who_joins_with_that_role(client, owner):
    client.force_login(owner)
    response = client.post(
        "/accounts/team/invite/", {"email": "Dev@Example.com", "role": "developer"}
    )
    assert response["Location"] == "/accounts/team/"
    (message,) = mail.outbox
    assert message.to == ["dev@example.com"] and "developer" in message.body
    link = link_in(message, "/accounts/invitation/")
    assert "dev@example.com" in client.get("/accounts/team/").content.decode()  # pending
    client.logout()
    page = client.get(link).content.decode()
    assert owner.account.name in page
    joined = client.post(link, {"password1": NEW_PASSWORD, "password2": NEW_PASSWORD})
    assert joined["Location"] == "/accounts/profile/"
    dev = User.objects.get(email="dev@example.com")
    assert dev.account == owner.account and dev.role == "developer"
    assert dev.check_password(NEW_PASSWORD)
    client.logout()
    assert "expired or was already used" in client.get(link).content.decode()  # once
    assert User.objects.filter(account=owner.account).count() == 2


def test_inviting_again_replaces_the_pending_invitation(client, owner):
    client.force_login(owner)
    for role in ("developer", "finance"):
        client.post("/accounts/team/invite/", {"email": "twice@example.com", "role": role})
    (pending,) = Invitation.objects.all()
    assert pending.role == "finance"
    first, second = (link_in(m, "/accounts/invitation/") for m in mail.outbox)
    client.logout()
    assert "expired" in client.get(first).content.decode()
    assert "twice@example.com" in client.get(second).content.decode()


def test_an_invitation_expires_after_7_days(client, owner):
    client.force_login(owner)
    client.post("/accounts/team/invite/", {"email": "late@example.com", "role": "finance"})
    link = link_in(mail.outbox[0], "/accounts/invitation/")
    client.logout()
    with time_machine.travel(timezone.now() + timedelta(days=8), tick=False):
        response = client.post(link, {"password1": NEW_PASSWORD, "password2": NEW_PASSWORD})
    assert "expired" in response.content.decode()
    assert not User.objects.filter(email="late@example.com").exists()


def test_an_address_with_an_account_gets_a_note_not_a_link(client, owner):
    UserFactory(email="taken@example.com")
    client.force_login(owner)
    client.post("/accounts/team/invite/", {"email": "taken@example.com", "role": "developer"})
    (message,) = mail.outbox
    assert "/accounts/invitation/" not in message.body and "already has an account" in message.body
    assert not Invitation.objects.exists()


SITE_MONEY = ["/wallet/", "/payments/", "/cart/", "/checkout/"]
SITE_KEYS = ["/accounts/keys/", "/accounts/keys/new/", "/accounts/webhooks/"]
API_MONEY = ["/api/v1/wallet/balance", "/api/v1/wallet/statement", "/api/v1/payments/history",
             "/api/v1/cart"]  # fmt: skip


def test_a_developer_has_keys_webhooks_and_logs_but_no_money(client, owner):
    dev = member(owner, "developer")
    client.force_login(dev)
    for path in [*SITE_MONEY, "/accounts/team/"]:
        assert client.get(path).status_code == 403, path
    for path in [*SITE_KEYS, "/accounts/profile/"]:
        assert client.get(path).status_code == 200, path
    api = APIClient()
    for path in API_MONEY:
        response = api.get(path, **bearer(dev))
        assert response.status_code == 403, path
        assert response.json()["code"] == "permission_denied"
    assert api.get("/api/v1/auth/me", **bearer(dev)).status_code == 200
    nav = client.get("/accounts/profile/").content.decode()
    assert 'href="/wallet/"' not in nav and 'href="/accounts/keys/"' in nav


def test_finance_has_the_money_but_no_keys(client, owner):
    finance = member(owner, "finance")
    client.force_login(finance)
    for path in [*SITE_KEYS, "/accounts/team/"]:
        assert client.get(path).status_code == 403, path
    assert client.post("/accounts/keys/new/", {"name": "x", "mode": "test"}).status_code == 403
    for path in ["/wallet/", "/payments/"]:
        assert client.get(path).status_code == 200, path
    api = APIClient()
    assert api.get("/api/v1/wallet/balance", **bearer(finance)).status_code == 200
    statement = api.get("/api/v1/wallet/statement", {"format": "csv"}, **bearer(finance))
    assert statement.status_code == 200


def test_only_owners_manage_the_team(client, owner):
    dev = member(owner, "developer")
    client.force_login(dev)
    assert (
        client.post(
            "/accounts/team/invite/", {"email": "x@example.com", "role": "owner"}
        ).status_code
        == 403
    )
    assert (
        client.post(f"/accounts/team/{owner.public_id}/role/", {"role": "finance"}).status_code
        == 403
    )
    owner.refresh_from_db()
    assert owner.role == "owner" and mail.outbox == []


def test_an_account_keeps_an_owner_and_a_removed_member_cannot_log_in(client, owner):
    client.force_login(owner)
    response = client.post(
        f"/accounts/team/{owner.public_id}/role/", {"role": "developer"}, follow=True
    )
    assert "at least one owner" in response.content.decode()
    owner.refresh_from_db()
    assert owner.role == "owner"
    finance = member(owner, "finance")
    client.post(f"/accounts/team/{finance.public_id}/role/", {"role": "developer"})
    finance.refresh_from_db()
    assert finance.role == "developer"
    client.post(f"/accounts/team/{finance.public_id}/remove/")
    client.logout()
    assert not client.login(username=finance.email, password=PASSWORD)
    assert (
        APIClient()
        .post("/api/v1/auth/login", {"email": finance.email, "password": PASSWORD}, format="json")
        .status_code
        == 401
    )
    stranger = UserFactory()
    client.force_login(owner)
    assert client.post(f"/accounts/team/{stranger.public_id}/remove/").status_code == 404


B2B = "/api/v1/api-access/b2b/recharges"
KEY_MONEY = ["/api/v1/wallet/balance", "/api/v1/wallet/statement", "/api/v1/payments/history",
             "/api/v1/cart", "/api/v1/api-access/b2b/batches/bat_0000000000"]  # fmt: skip


def b2b_order(product) -> dict:
    items = [{"productId": product.public_id, "recipientNumber": "+525512345678", "quantity": 1}]
    return {"items": items, "baseCurrency": "EUR"}


def live_balance(user) -> Decimal:
    return Wallet.objects.get(account=user.account, kind="live").balance


def test_a_developers_live_key_can_neither_spend_nor_read_the_money(owner, product):
    account_set_b2b(account=owner.account, is_b2b=True)
    dev = member(owner, "developer")
    _key, plaintext = make_key(dev, mode="live")
    api = client_for(plaintext)
    for path in KEY_MONEY:
        assert_problem(api.get(path), 403, "permission_denied")
    spend = api.post(B2B, b2b_order(product), format="json", HTTP_IDEMPOTENCY_KEY="dev-1")
    body = assert_problem(spend, 403, "permission_denied")
    assert "money" in body["detail"]
    checkout = api.post("/api/v1/wallet/checkout", b2b_order(product), format="json")
    assert_problem(checkout, 403, "permission_denied")
    assert not Order.objects.exists() and live_balance(owner) == Decimal("50.00")
    # What the developer's own work needs still answers: the account and recharge lookups.
    assert api.get("/api/v1/auth/me").status_code == 200
    assert api.get(B2B).status_code == 200
    assert_ledger_balanced()


def test_an_owners_live_key_spends_and_reads_the_money(owner, product):
    account_set_b2b(account=owner.account, is_b2b=True)
    _key, plaintext = make_key(owner, mode="live")
    api = client_for(plaintext)
    assert api.get("/api/v1/wallet/balance").json()["available"] == "50.00"
    assert api.get("/api/v1/wallet/statement", {"format": "csv"}).status_code == 200
    spend = api.post(B2B, b2b_order(product), format="json", HTTP_IDEMPOTENCY_KEY="own-1")
    assert spend.status_code == 201, spend.content
    assert live_balance(owner) == Decimal("45.00")
    assert_ledger_balanced()


def test_a_live_key_follows_its_creators_role_when_it_changes(client, owner, product):
    account_set_b2b(account=owner.account, is_b2b=True)
    second = member(owner, "owner")
    _key, plaintext = make_key(second, mode="live")
    api = client_for(plaintext)
    assert api.get("/api/v1/wallet/balance").status_code == 200
    client.force_login(owner)
    client.post(f"/accounts/team/{second.public_id}/role/", {"role": "developer"})
    second.refresh_from_db()
    assert second.role == "developer"
    assert_problem(api.get("/api/v1/wallet/balance"), 403, "permission_denied")
    spend = api.post(B2B, b2b_order(product), format="json", HTTP_IDEMPOTENCY_KEY="dem-1")
    assert_problem(spend, 403, "permission_denied")
    assert live_balance(owner) == Decimal("50.00")


def test_a_developers_test_key_uses_its_sandbox_balance(owner, product):
    account_set_b2b(account=owner.account, is_b2b=True)
    dev = member(owner, "developer")
    key, plaintext = make_key(dev, mode="test")
    sandbox_topup(key=key, amount="50")
    api = client_for(plaintext)
    balance = api.get("/api/v1/wallet/balance").json()
    assert balance == {"available": "50.00", "currency": "EUR", "livemode": False}
    spend = api.post(B2B, b2b_order(product), format="json", HTTP_IDEMPOTENCY_KEY="sbx-1")
    assert spend.status_code == 201, spend.content
    assert live_balance(owner) == Decimal("50.00")  # the account's money is untouched
    assert_ledger_balanced()
