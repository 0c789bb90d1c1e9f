"""The Network page's money (contract section 18): an owner or finance member moves money to
or from a direct agent with the page's form, through the API's service and its
Idempotency-Key (one key per rendering of the form, so a second press moves nothing more),
and reads the commissions its branches earned it. Developers are refused, as on the API."""

from __future__ import annotations

import re
from datetime import timedelta
from decimal import Decimal

import pytest
from django.test import Client
from django.utils import timezone

from network import agents as network_agents
from network.models import Commission, Transfer, TransferKey
from network.price_lists import RuleSpec, price_list_assign, price_list_create
from recharges.models import Recharge
from tests.factories import ProductFactory, UserFactory
from tests.helpers import assert_ledger_balanced, place, process
from tests.network_support import agent_of, balance, entries, owner_of, top_account
from wallet.services import wallet_topup_manual

pytestmark = pytest.mark.django_db

PAGE = "/network/"
TRANSFER = "/network/transfer/"
KEY = re.compile(r'name="key" value="([^"]+)"')


def session_client(user, language: str = "en") -> Client:
    client = Client()
    client.force_login(user)
    client.cookies["django_language"] = language
    return client


def form_key(page) -> str:
    """The hidden Idempotency-Key of the page's transfer form (new at every rendering)."""
    found = KEY.findall(page.content.decode())
    assert len(found) == 1, found
    return found[0]


def text(response) -> str:
    return re.sub(r"\s+", " ", response.content.decode())


@pytest.fixture
def tree():
    """top (100.00 EUR) → agent "Kiosco Norte" (20.00 EUR); and another network's agent."""
    top = top_account("100.00")
    agent = agent_of(top, name="Kiosco Norte")
    wallet_topup_manual(account=agent, amount=Decimal("20.00"))
    stranger = agent_of(top_account("50.00"), name="Elsewhere")
    return top, agent, stranger


def send(client, agent, *, key, amount="30.00", direction="to_agent", memo="Float"):
    return client.post(
        TRANSFER,
        {"agent": agent.public_id, "amount": amount, "direction": direction, "memo": memo,
         "key": key},
    )  # fmt: skip


@pytest.mark.parametrize("role", ["owner", "finance"])
def test_an_owner_or_finance_member_funds_an_agent_from_the_page_and_the_ledger_balances(
    tree, role
):
    top, agent, _stranger = tree
    user = owner_of(top) if role == "owner" else UserFactory(account=top, role="finance")
    client = session_client(user)
    page = client.get(PAGE)
    assert page.status_code == 200
    sent = send(client, agent, key=form_key(page))
    assert sent.status_code == 302 and sent["Location"] == PAGE  # POST, redirect, GET
    assert balance(top) == Decimal("70.00") and balance(agent) == Decimal("50.00")
    (made,) = Transfer.objects.all()
    assert (made.parent, made.agent, made.direction, made.amount, made.memo, made.created_by) == (
        top, agent, "to_agent", Decimal("30.00"), "Float", user
    )  # fmt: skip
    (taken,) = entries(top, "transfer_out")
    assert taken.reference == made.public_id
    shown = text(client.get(PAGE))
    assert "30.00 EUR moved to Kiosco Norte." in shown
    assert "70.00 EUR" in shown and "50.00 EUR" in shown  # both balances, updated
    assert_ledger_balanced()


def test_taking_money_back_from_an_agent(tree):
    top, agent, _stranger = tree
    client = session_client(owner_of(top))
    sent = send(client, agent, key=form_key(client.get(PAGE)), amount="5.00",
                direction="from_agent", memo="")  # fmt: skip
    assert sent.status_code == 302
    assert balance(top) == Decimal("105.00") and balance(agent) == Decimal("15.00")
    assert "5.00 EUR taken back from Kiosco Norte." in text(client.get(PAGE))
    assert_ledger_balanced()


def test_the_same_form_sent_twice_moves_the_money_once(tree):
    top, agent, _stranger = tree
    client = session_client(owner_of(top))
    key = form_key(client.get(PAGE))
    first = send(client, agent, key=key)
    second = send(client, agent, key=key)
    assert first.status_code == second.status_code == 302
    assert Transfer.objects.count() == 1 and TransferKey.objects.count() == 1
    assert balance(top) == Decimal("70.00") and balance(agent) == Decimal("50.00")
    # Each rendering of the form carries a new key: the next transfer is a new one.
    again = client.get(PAGE)
    assert form_key(again) != key
    assert send(client, agent, key=form_key(again)).status_code == 302
    assert balance(top) == Decimal("40.00") and Transfer.objects.count() == 2
    assert_ledger_balanced()


def test_a_developer_is_refused_and_is_not_offered_the_forms(tree):
    top, agent, _stranger = tree
    developer = UserFactory(account=top, role="developer")
    client = session_client(developer)
    page = client.get(PAGE)
    assert page.status_code == 403
    assert KEY.findall(page.content.decode()) == [] and "<form" not in text(page).split("<main")[-1]
    refused = send(client, agent, key="site-made-up-key")
    assert refused.status_code == 403
    assert balance(top) == Decimal("100.00") and balance(agent) == Decimal("20.00")
    assert not Transfer.objects.exists() and not TransferKey.objects.exists()


@pytest.mark.parametrize(
    ("language", "direction", "said"),
    [
        ("en", "to_agent", "Your balance does not cover this transfer. Nothing was moved."),
        ("es", "to_agent", "Tu saldo no cubre esta transferencia. No se movió nada."),
        (
            "fr",
            "from_agent",
            "Le solde de l\u2019agent ne couvre pas ce montant. Rien n\u2019a été déplacé.",
        ),
    ],
)
def test_a_transfer_the_giving_wallet_cannot_cover_shows_the_error_and_moves_nothing(
    tree, language, direction, said
):
    top, agent, _stranger = tree
    client = session_client(owner_of(top), language)
    key = form_key(client.get(PAGE))
    refused = send(client, agent, key=key, amount="150.00", direction=direction)
    assert refused.status_code == 400
    shown = text(refused)
    assert said in shown
    assert 'value="150' in shown  # what was typed stays in the form
    assert form_key(refused) != key  # the refusal is the old key's answer: a new one to retry
    assert balance(top) == Decimal("100.00") and balance(agent) == Decimal("20.00")
    assert not Transfer.objects.exists()
    assert_ledger_balanced()


@pytest.mark.parametrize("amount", ["0", "-5", "abc", "1.005", "2000000"])
def test_a_bad_amount_is_shown_next_to_its_field_and_moves_nothing(tree, amount):
    top, agent, _stranger = tree
    client = session_client(owner_of(top))
    refused = send(client, agent, key=form_key(client.get(PAGE)), amount=amount)
    assert refused.status_code == 400
    assert 'id="id_amount"' in text(refused) and 'class="error"' in text(refused)
    assert balance(top) == Decimal("100.00") and not TransferKey.objects.exists()


def test_an_amount_in_the_users_language_is_read_as_such(tree):
    top, agent, _stranger = tree
    client = session_client(owner_of(top), "es")
    assert send(client, agent, key=form_key(client.get(PAGE)), amount="12,50").status_code == 302
    assert balance(agent) == Decimal("32.50")


def test_only_a_direct_agent_is_offered_and_another_is_refused(tree):
    top, agent, stranger = tree
    sub = agent_of(agent, name="Sub")
    client = session_client(owner_of(top))
    page = client.get(PAGE)
    assert agent.public_id in text(page) and sub.public_id not in text(page)
    for other in (stranger, sub):
        refused = send(client, other, key=form_key(client.get(PAGE)))
        assert refused.status_code == 400
    assert balance(top) == Decimal("100.00") and not Transfer.objects.exists()


def test_a_suspended_agent_can_still_be_funded_as_the_contract_says(tree):
    top, agent, _stranger = tree
    client = session_client(owner_of(top))
    client.post(f"/network/{agent.public_id}/status/", {"status": "suspended"})
    assert send(client, agent, key=form_key(client.get(PAGE))).status_code == 302
    assert balance(agent) == Decimal("50.00")
    assert_ledger_balanced()


def test_an_account_without_agents_is_not_offered_the_transfer_form():
    top = top_account("10.00")
    page = session_client(owner_of(top)).get(PAGE)
    assert KEY.findall(page.content.decode()) == []
    assert "Add an agent first" in text(page)


# -- commissions ----------------------------------------------------------------------------


def test_commissions_appear_on_the_page_after_a_delivered_agent_recharge(tree):
    top, agent, _stranger = tree
    product = ProductFactory(retail_price=Decimal("10.00"), retail_currency="EUR")
    rules = [RuleSpec(markup_percent=Decimal("10"), product=product.public_id)]
    price_list_assign(account=agent, price_list=price_list_create(owner=top, name="Shops",
                                                                  rules=rules))  # fmt: skip
    client = session_client(owner_of(top))
    assert "No commission yet." in text(client.get(PAGE))
    order = place(owner_of(agent), product)
    process(order)
    recharge = order.recharges.get()
    assert recharge.status == Recharge.Status.DELIVERED and recharge.amount == Decimal("11.00")
    shown = text(client.get(PAGE))
    row = re.search(r'<tr data-testid="commission">(.*?)</tr>', shown)
    assert row is not None
    assert recharge.public_id in row[1] and "Kiosco Norte" in row[1] and "1.00 EUR" in row[1]
    assert "This month so far: 1.00 EUR." in shown  # the API's report, for the month
    assert balance(top) == Decimal("101.00")
    assert_ledger_balanced()


def test_commissions_are_newest_first_and_paginated(tree):
    top, agent, _stranger = tree
    now = timezone.now()
    Commission.objects.bulk_create(
        Commission(account=top, branch=agent, buyer=agent, recharge=f"rch_{n:03d}",
                   reference=f"pay_{n:03d}", amount=Decimal("0.10"), sale=Decimal("1.10"),
                   currency="EUR", created_at=now - timedelta(minutes=n))
        for n in range(25)
    )  # fmt: skip
    client = session_client(owner_of(top))
    first = re.findall(r"rch_\d{3}", text(client.get(PAGE)))
    assert first == [f"rch_{n:03d}" for n in range(20)]
    second = re.findall(r"rch_\d{3}", text(client.get(PAGE, {"page": 2})))
    assert second == [f"rch_{n:03d}" for n in range(20, 25)]


@pytest.mark.parametrize(("language", "shown"), [("en", "50.00 EUR"), ("es", "50,00 EUR")])
def test_agents_balances_and_sales_are_shown_with_their_cents(tree, monkeypatch, language, shown):
    """SQLite (make run) gives the annotated balance and sales unquantized (50, 0): the table
    read "50 EUR" and "0 EUR" beside "1193.70 EUR". Every amount has its two decimals, written
    as the visitor's language writes them."""
    top, _agent, _stranger = tree
    real = network_agents.agents_direct

    def as_sqlite_returns_them(*, account):
        found = list(real(account=account))
        for each in found:
            each.balance, each.sales_30d = Decimal("50"), Decimal("0")
        return found

    monkeypatch.setattr(network_agents, "agents_direct", as_sqlite_returns_them)
    page = text(session_client(owner_of(top), language).get(PAGE))
    zero = "0.00 EUR" if language == "en" else "0,00 EUR"
    assert f'class="nowrap">{shown}</td>' in page and f'class="nowrap">{zero}</td>' in page
