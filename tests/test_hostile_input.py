"""Bad input found by fuzzing the running API and the operator CLI: each is a clear 4xx
problem (or a one-line CLI error) that changes nothing. Each test failed before its fix."""

from __future__ import annotations

import io
from decimal import Decimal

import pytest
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from accounts.models import User
from accounts.services import account_set_b2b
from books.models import Entry as BooksEntry
from catalog.models import FxRate
from network.forms import TransferForm
from orders.amounts import amount_parse
from tests.factories import RangeProductFactory, make_key
from tests.helpers import assert_ledger_balanced, assert_problem, bearer, client_for
from tests.network_support import agent_of, balance, owner_of, top_account, transfer
from wallet.forms import ThresholdForm
from wallet.models import LedgerEntry, Wallet
from wallet.services import wallet_topup_manual

pytestmark = pytest.mark.django_db

ME = "/api/v1/auth/me"


@pytest.mark.parametrize(
    "body",
    [
        '{"user": {"language": "\\ud800"}}',  # a lone surrogate: echoed, it broke the renderer
        '{"user": {"firstName": "a\\udfffb"}}',
        '{"user": {"firstName": "x"}, "\\ud800": 1}',
    ],
)
def test_a_lone_surrogate_in_a_json_body_is_400_invalid_json(user_api, body):
    response = user_api.patch(ME, body, content_type="application/json")
    assert_problem(response, 400, "invalid_json")
    user_api.user.refresh_from_db()
    assert user_api.user.first_name != "x"


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity", "1e400", "-1e400"])
def test_numbers_json_has_not_are_400_invalid_json_and_change_nothing(user_api, number):
    """NaN and Infinity are not JSON (RFC 8259), and 1e400 is no number a double holds:
    Python's decoder took them, and a name became "nan" or "inf"."""
    before = user_api.user.first_name
    body = '{"user": {"firstName": NUMBER}}'.replace("NUMBER", number)
    response = user_api.patch(ME, body, content_type="application/json")
    problem = assert_problem(response, 400, "invalid_json")
    assert number.lstrip("-") in problem["detail"]
    user_api.user.refresh_from_db()
    assert user_api.user.first_name == before


def _command(*args) -> str:
    """Run an operator command as the CLI does; its refusal is a CommandError (one line)."""
    out = io.StringIO()
    call_command(*args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


@pytest.mark.parametrize("amount", ["NaN", "sNaN", "99999999999999", "10000000000.00", "1e400"])
def test_wallet_topup_refuses_junk_and_overflowing_amounts_in_one_line(user, amount):
    with pytest.raises(CommandError) as refused:
        _command("wallet_topup", "--email", user.email, "--amount", amount)
    assert "\n" not in str(refused.value)
    assert LedgerEntry.objects.count() == 0
    assert_ledger_balanced()


@pytest.mark.parametrize("amount", ["99999999999999999", "10000000000", "1e400"])
def test_a_threshold_no_money_column_holds_is_refused_and_the_wallet_still_reads(user, amount):
    """It was stored: PostgreSQL refuses it with a traceback, and SQLite keeps a row it can
    no longer read, so every wallet request of the account answered 500."""
    with pytest.raises(CommandError) as refused:
        _command("set_balance_threshold", "--email", user.email, "--amount", amount)
    assert "\n" not in str(refused.value)
    assert Wallet.objects.get(account=user.account).low_balance_threshold is None
    assert _command("set_balance_threshold", "--email", user.email, "--amount", "9999999999.99")


@pytest.mark.parametrize(
    "query",
    [
        "admin/recharges?createdTo=9999-12-31",
        "admin/payments?createdTo=9999-12-31",
    ],
)
def test_a_date_at_the_end_of_the_calendar_is_400_not_500(staff, query):
    """The end of a day range is the next midnight: after 9999-12-31 there is none."""
    client = APIClient()
    client.credentials(**bearer(staff))
    body = assert_problem(client.get("/api/v1/" + query), 400, "validation_error")
    assert body["errors"][0]["field"] == "createdTo"


@pytest.mark.parametrize(
    "args",
    [
        ("--from", "EUR", "--to", "USD", "--rate", "1e400"),
        ("--from", "EUR", "--to", "eur", "--rate", "2"),  # CHECK fxrate_distinct_currencies
    ],
)
def test_set_fx_rate_refuses_in_one_line(args):
    with pytest.raises(CommandError) as refused:
        _command("set_fx_rate", *args)
    assert "\n" not in str(refused.value)
    assert not FxRate.objects.filter(quote_currency__in=["USD", "EUR"], base_currency="EUR")


@pytest.mark.parametrize("amount", ["1e400", "99999999999999999999", "-1000000000000"])
def test_fund_provider_refuses_what_the_books_cannot_hold_in_one_line(amount):
    _command("create_provider", "--name", "fz", "--kind", "simulator", "--currency", "EUR")
    with pytest.raises(CommandError) as refused:
        _command("fund_provider", "--provider", "fz", "--amount", amount)
    assert "\n" not in str(refused.value)
    assert not BooksEntry.objects.exists()


# Decimal() reads "1_000" as 1000 and other scripts' digits ("١٢٣") as 123: an amount of money
# is ASCII digits with an optional point, nothing else.
ODD_DIGITS = ["1_000", "1_0", "\u0661\u0662\u0663", "\uff11\uff10", " 1 0 ", "1e3", "0x10"]


@pytest.mark.parametrize("amount", ODD_DIGITS)
def test_a_transfer_of_an_amount_in_odd_digits_is_400_and_moves_nothing(api, amount):
    top = top_account("2000.00")
    agent = agent_of(top)
    response = transfer(
        api,
        owner_of(top),
        key="odd-digits",
        agent=agent.public_id,
        amount=amount,
        currency="EUR",
        direction="to_agent",
    )
    problem = assert_problem(response, 400, "validation_error")
    assert problem["errors"][0]["field"] == "amount"
    assert balance(top) == Decimal("2000.00") and balance(agent) == Decimal("0.00")
    assert_ledger_balanced()


@pytest.mark.parametrize("amount", ODD_DIGITS)
def test_a_range_amount_in_odd_digits_is_400_and_charges_nothing(user, amount):
    product = RangeProductFactory()
    account_set_b2b(account=user.account, is_b2b=True)
    wallet_topup_manual(account=user.account, amount=Decimal("100.00"))
    _key, plaintext = make_key(user, mode="live")
    line = {
        "productId": product.public_id,
        "recipientNumber": "+525512345678",
        "quantity": 1,
        "localAmount": amount,
    }
    response = client_for(plaintext).post(
        "/api/v1/api-access/b2b/recharges",
        {"items": [line], "baseCurrency": "EUR"},
        format="json",
        HTTP_IDEMPOTENCY_KEY="odd-range",
    )
    problem = assert_problem(response, 400, "validation_error")
    assert problem["errors"][0]["field"] == "items[0].localAmount", problem
    assert Wallet.objects.get(account=user.account, kind="live").balance == Decimal("100.00")


@pytest.mark.parametrize("amount", ["1_000", "\u0661\u0662\u0663"])
def test_the_sites_transfer_and_threshold_forms_refuse_odd_digits(amount):
    top = top_account("2000.00")
    agent = agent_of(top)
    data = {"agent": agent.public_id, "direction": "to_agent", "amount": amount, "key": "k1"}
    form = TransferForm(data, agents=[agent], currency="EUR")
    assert not form.is_valid() and list(form.errors) == ["amount"]
    threshold = ThresholdForm({"threshold": amount})
    assert not threshold.is_valid() and list(threshold.errors) == ["threshold"]
    assert amount_parse(amount) is None


@pytest.mark.parametrize(
    "args, said",
    [
        (["--email", "not-an-email", "--password", "pw-12345"], "is not an email address"),
        (["--email", "", "--password", "pw-12345"], "is not an email address"),
        (["--email", "ana@example.com", "--password", ""], "--password is empty"),
    ],
)
def test_create_user_refuses_a_bad_email_or_an_empty_password_in_one_line(args, said):
    with pytest.raises(CommandError, match=said):
        call_command("create_user", *args, stdout=io.StringIO())
    assert not User.objects.exists()


def test_create_api_key_refuses_an_empty_ip_rather_than_making_a_key_for_any_address(user):
    with pytest.raises(CommandError, match="--ip is empty"):
        call_command(
            "create_api_key", "--email", user.email, "--name", "till", "--mode", "live",
            "--ip", "10.0.0.1", "--ip", " ", stdout=io.StringIO(),
        )  # fmt: skip
    assert not user.account.api_keys.exists()


@pytest.mark.parametrize("amount", ["1_0", "\u0661\u0660", "1e1", ".5e2", 10, 10.5])
def test_a_card_topup_amount_is_a_plain_decimal_string_or_400(api, user, amount):
    """Money is a decimal string (contract: decimals, never floats): DRF's DecimalField read
    "1_0", Arabic-Indic digits and "1e1" as 10 and took a JSON number, so a card top-up of
    an amount nobody wrote was prepared. Refused as the transfers' amount is; nothing made."""
    from checkout.models import CardCheckout

    response = api.post(
        "/api/v1/wallet/topups/prepare", {"amount": amount}, format="json", **bearer(user)
    )
    assert_problem(response, 400, "validation_error")
    assert response.json()["errors"][0]["field"] == "amount"
    assert not CardCheckout.objects.exists()


def test_network_bodies_refuse_fields_they_do_not_take_and_change_nothing(api):
    """Every other request body refuses an unknown field (400 ``unknown_field``); the
    network's took one silently: ``{"stauts": "suspended"}`` answered 200 and left the agent
    active, a transfer's misspelt field was dropped and the money moved anyway."""
    from accounts.models import Account
    from network.models import PriceList, Transfer

    top = top_account("100.00")
    agent = agent_of(top)
    owner = owner_of(top)
    patched = api.patch(
        f"/api/v1/network/agents/{agent.public_id}",
        {"stauts": "suspended"},
        format="json",
        **bearer(owner),
    )
    assert_problem(patched, 400, "validation_error")
    assert patched.json()["errors"][0] == {
        "field": "stauts",
        "code": "unknown_field",
        "message": "This field is unknown or cannot be set.",
    }
    created = api.post(
        "/api/v1/network/agents",
        {"name": "Kiosk", "ownerEmail": "kiosk@example.com", "balance": "500.00"},
        format="json",
        **bearer(owner),
    )
    assert_problem(created, 400, "validation_error")
    moved = transfer(
        api,
        owner,
        key="extra",
        agent=agent.public_id,
        amount="10.00",
        currency="EUR",
        direction="to_agent",
        mmeo="float",
    )
    assert_problem(moved, 400, "validation_error")
    listed = api.post(
        "/api/v1/network/price-lists",
        {"name": "Retail", "rules": [{"country": "MX", "markupPercent": "5", "extra": 1}]},
        format="json",
        **bearer(owner),
    )
    assert_problem(listed, 400, "validation_error")
    assert listed.json()["errors"][0]["field"] == "rules[0].extra"
    agent.refresh_from_db()
    assert agent.suspended_at is None and not Account.objects.filter(name="Kiosk").exists()
    assert Transfer.objects.count() == 0 and balance(top) == Decimal("100.00")
    assert not PriceList.objects.exists()
