"""Test keys simulate everything on an isolated balance (docs/contract.md §6)."""

import threading
import time
from datetime import timedelta
from decimal import Decimal

import pytest
import time_machine
from django.core.management import CommandError, call_command
from django.db import connection
from django.utils import timezone

from orders.models import IdempotencyRecord, Order
from recharges.models import Recharge
from sandbox.balances import SandboxBalanceCap, SandboxTopupLimit, sandbox_topup
from tests.factories import UserFactory, make_key
from tests.helpers import assert_ledger_balanced, assert_problem, client_for
from wallet.models import TopUp, Wallet
from wallet.services import wallet_topup_manual

pytestmark = pytest.mark.django_db
B2B = "/api/v1/api-access/b2b/recharges"
SANDBOX = "/api/v1/api-access/sandbox"


def order(product, number="+525512345678", quantity=1):
    return {
        "items": [
            {"productId": product.public_id, "recipientNumber": number, "quantity": quantity}
        ],
        "baseCurrency": "EUR",
    }


def sandbox_wallet(key) -> Wallet:
    return Wallet.objects.get(api_key=key, kind="sandbox")


def funded_test_key(user, amount="100"):
    key, plaintext = make_key(user, mode="test")
    sandbox_topup(key=key, amount=amount)
    return key, plaintext


# -- the balance ------------------------------------------------------------------------------


def test_a_sandbox_balance_starts_at_zero_in_eur(reseller):
    _key, plaintext = make_key(reseller, mode="test")
    body = client_for(plaintext).get(SANDBOX).json()
    assert body == {"balance": "0.00", "currency": "EUR", "recharges": []}
    assert client_for(plaintext).get("/api/v1/wallet/balance").json() == {
        "available": "0.00",
        "currency": "EUR",
        "livemode": False,
    }


@pytest.mark.parametrize("amount", ["10", "50", "100", "500", "50.00"])
def test_sandbox_additions_of_10_50_100_or_500_are_accepted(reseller, amount):
    key, _ = make_key(reseller, mode="test")
    assert sandbox_topup(key=key, amount=amount).balance == Decimal(amount)
    assert_ledger_balanced()


@pytest.mark.parametrize("amount", ["20", "0", "-10", "1000", "50.5", "abc"])
def test_other_sandbox_amounts_are_400(reseller, amount):
    key, _ = make_key(reseller, mode="test")
    with pytest.raises(Exception) as info:
        sandbox_topup(key=key, amount=amount)
    assert info.value.status == 400 and info.value.fields[0]["code"] == "invalid_amount"


def test_the_sandbox_balance_never_passes_1000(reseller):
    key, _ = make_key(reseller, mode="test")
    sandbox_topup(key=key, amount="500")
    sandbox_topup(key=key, amount="500")
    with pytest.raises(SandboxBalanceCap) as info:
        sandbox_topup(key=key, amount="10")
    assert info.value.code == "sandbox_balance_cap" and info.value.status == 400
    assert sandbox_wallet(key).balance == Decimal("1000.00")


def test_at_most_5_sandbox_additions_per_hour_per_key(reseller, time_machine):
    time_machine.move_to("2026-11-21 10:00:00Z", tick=False)
    key, _ = make_key(reseller, mode="test")
    other, _ = make_key(reseller, mode="test")
    for _ in range(5):
        sandbox_topup(key=key, amount="10")
    with pytest.raises(SandboxTopupLimit) as info:
        sandbox_topup(key=key, amount="10")
    assert info.value.status == 429 and info.value.code == "sandbox_topup_limit"
    assert int(info.value.headers["Retry-After"]) > 3000
    assert "in 60 min, at 11:00 UTC" in str(info.value.detail)  # when to try again
    sandbox_topup(key=other, amount="10")  # per key
    time_machine.move_to("2026-11-21 11:00:01Z", tick=False)
    sandbox_topup(key=key, amount="10")
    assert sandbox_wallet(key).balance == Decimal("60.00")


def test_sandbox_topup_command_follows_the_same_rules(reseller, capsys):
    key, _ = make_key(reseller, mode="test")
    call_command("sandbox_topup", "--prefix", key.prefix, "--amount", "50")
    assert capsys.readouterr().out.strip() == "50.00 EUR"
    with pytest.raises(CommandError, match="validation_error: Add 10, 50, 100 or 500"):
        call_command("sandbox_topup", "--prefix", key.prefix, "--amount", "30")
    live, _ = make_key(reseller, mode="live")
    with pytest.raises(CommandError, match="test_key_required"):
        call_command("sandbox_topup", "--prefix", live.prefix, "--amount", "50")


def test_sandbox_topup_command_takes_the_prefix_as_the_dashboard_shows_it(reseller, capsys):
    key, _ = make_key(reseller, mode="test")
    call_command("sandbox_topup", "--prefix", f"{key.prefix}…", "--amount", "10")
    assert capsys.readouterr().out.strip() == "10.00 EUR"


@pytest.mark.django_db(transaction=True)
def test_concurrent_sandbox_additions_respect_the_cap_exactly():
    user = UserFactory()
    key, _ = make_key(user, mode="test")
    sandbox_topup(key=key, amount="500")
    outcomes = []
    barrier = threading.Barrier(3)

    def add():
        try:
            barrier.wait()
            sandbox_topup(key=key, amount="500")  # exactly one fits under the cap
            outcomes.append("ok")
        except SandboxBalanceCap:
            outcomes.append("cap")
        finally:
            connection.close()

    threads = [threading.Thread(target=add) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["cap", "cap", "ok"]
    assert sandbox_wallet(key).balance == Decimal("1000.00")
    assert_ledger_balanced()


# -- simulated outcomes -------------------------------------------------------------------


@pytest.mark.parametrize(
    "ending, status, balance",
    [
        ("5678", "success", "95.00"),
        ("0002", "rejected", "100.00"),
        ("0004", "timeout", "100.00"),
        ("0003", "processing", "95.00"),
    ],
)
def test_outcome_by_the_last_four_digits(reseller, product, ending, status, balance):
    key, plaintext = funded_test_key(reseller)
    response = client_for(plaintext).post(
        B2B, order(product, f"+52551234{ending}"), HTTP_IDEMPOTENCY_KEY=f"t-{ending}"
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["livemode"] is False and body["recharges"][0]["status"] == status
    assert sandbox_wallet(key).balance == Decimal(balance)
    sandbox = client_for(plaintext).get(SANDBOX).json()
    assert sandbox["balance"] == balance
    assert sandbox["recharges"][0]["status"] == status
    assert_ledger_balanced()


def test_0003_processes_for_10_seconds_then_succeeds(reseller, product, time_machine):
    time_machine.move_to("2026-11-21 10:00:00Z", tick=False)
    _key, plaintext = funded_test_key(reseller)
    client = client_for(plaintext)
    client.post(B2B, order(product, "+525512340003"), HTTP_IDEMPOTENCY_KEY="slow")
    time_machine.move_to("2026-11-21 10:00:09Z", tick=False)
    assert client.get(SANDBOX).json()["recharges"][0]["status"] == "processing"
    time_machine.move_to("2026-11-21 10:00:10Z", tick=False)
    assert client.get(SANDBOX).json()["recharges"][0]["status"] == "success"


def test_reads_show_due_sandbox_recharges_settled_and_the_task_settles_every_keys(
    reseller, product, time_machine
):
    from accounts.services import account_set_b2b
    from recharges.tasks import sandbox_settle_task

    time_machine.move_to("2026-11-21 10:00:00Z", tick=False)
    stranger = UserFactory()
    account_set_b2b(account=stranger.account, is_b2b=True)
    _mine, mine_plaintext = funded_test_key(reseller)
    _theirs, theirs_plaintext = funded_test_key(stranger)
    _other, other_plaintext = funded_test_key(reseller)  # same account, another key
    for n, plaintext in enumerate((mine_plaintext, theirs_plaintext, other_plaintext)):
        answer = client_for(plaintext).post(
            B2B, order(product, "+525512340003"), HTTP_IDEMPOTENCY_KEY=f"slow-{n}"
        )
        assert answer.status_code == 201, answer.content
    time_machine.move_to("2026-11-21 10:00:11Z", tick=False)
    for plaintext in (mine_plaintext, theirs_plaintext, other_plaintext):
        seen = client_for(plaintext).get(SANDBOX).json()["recharges"]
        assert [r["status"] for r in seen] == ["success"]
        history = client_for(plaintext).get("/api/v1/payments/history").json()["results"]
        assert [r["status"] for r in history[0]["recharges"]] == ["success"]
    statuses = Recharge.objects.order_by("id").values_list("status", flat=True)
    assert list(statuses) == ["processing"] * 3  # reads write nothing
    assert sandbox_settle_task() == 3
    assert set(Recharge.objects.values_list("status", flat=True)) == {"success"}


def test_rejections_and_timeouts_give_the_amount_back_exactly(reseller, product):
    key, plaintext = funded_test_key(reseller, "50")
    body = {
        "items": [
            {"productId": product.public_id, "recipientNumber": "+525512340002", "quantity": 2},
            {"productId": product.public_id, "recipientNumber": "+525512340004", "quantity": 1},
            {"productId": product.public_id, "recipientNumber": "+525512345678", "quantity": 3},
        ],
        "baseCurrency": "EUR",
    }
    response = client_for(plaintext).post(B2B, body, HTTP_IDEMPOTENCY_KEY="mix")
    assert response.status_code == 201
    assert response.json()["payment"]["status"] == "partially_refunded"
    assert sandbox_wallet(key).balance == Decimal("35.00")  # 50 - 6x5 + 3x5
    assert_ledger_balanced()


def test_a_test_order_above_the_sandbox_balance_is_402(reseller, product):
    key, plaintext = funded_test_key(reseller, "10")
    assert_problem(
        client_for(plaintext).post(B2B, order(product, quantity=3), HTTP_IDEMPOTENCY_KEY="poor"),
        402,
        "insufficient_balance",
    )
    assert sandbox_wallet(key).balance == Decimal("10.00")


def test_a_new_test_keys_first_order_says_the_sandbox_starts_at_0_and_how_to_add(reseller, product):
    """Issue 32, defect 9: "insufficient_balance" alone left a new integrator guessing."""
    key, plaintext = make_key(reseller, mode="test")
    problem = assert_problem(
        client_for(plaintext).post(B2B, order(product), HTTP_IDEMPOTENCY_KEY="first"),
        402,
        "insufficient_balance",
    )
    assert "sandbox balance starts at 0" in problem["detail"]
    assert f"sandbox_topup --prefix {key.prefix} --amount 50" in problem["detail"]


# -- isolation ----------------------------------------------------------------------------


def test_a_test_order_leaves_the_live_wallet_untouched_and_reaches_no_provider(reseller, product):
    wallet_topup_manual(account=reseller.account, amount=Decimal("100.00"))
    _key, plaintext = funded_test_key(reseller)
    client_for(plaintext).post(B2B, order(product, quantity=2), HTTP_IDEMPOTENCY_KEY="iso")
    assert Wallet.objects.get(account=reseller.account, kind="live").balance == Decimal("100.00")
    recharges = Recharge.objects.filter(account=reseller.account)
    assert {r.provider for r in recharges} == {"sandbox"}
    assert not recharges.filter(livemode=True).exists()


def test_a_live_order_leaves_the_sandbox_untouched_and_live_keys_see_no_test_data(
    reseller, product
):
    wallet_topup_manual(account=reseller.account, amount=Decimal("100.00"))
    key, test_plaintext = funded_test_key(reseller)
    client_for(test_plaintext).post(B2B, order(product), HTTP_IDEMPOTENCY_KEY="t1")
    _live, live_plaintext = make_key(reseller, mode="live")
    live = client_for(live_plaintext)
    live.post(B2B, order(product), HTTP_IDEMPOTENCY_KEY="l1")
    assert sandbox_wallet(key).balance == Decimal("95.00")
    history = live.get("/api/v1/payments/history").json()
    assert history["count"] == 1 and history["results"][0]["livemode"] is True
    test_history = client_for(test_plaintext).get("/api/v1/payments/history").json()
    assert test_history["count"] == 1 and test_history["results"][0]["livemode"] is False
    assert live.get("/api/v1/wallet/balance").json()["available"] == "95.00"


def test_each_test_key_has_its_own_sandbox(reseller, product):
    _first, first_plaintext = funded_test_key(reseller, "100")
    _second, second_plaintext = make_key(reseller, mode="test")
    client_for(first_plaintext).post(B2B, order(product), HTTP_IDEMPOTENCY_KEY="k")
    assert client_for(second_plaintext).get(SANDBOX).json() == {
        "balance": "0.00",
        "currency": "EUR",
        "recharges": [],
    }


def test_the_sandbox_endpoint_needs_a_test_key(reseller, user_api):
    _live, plaintext = make_key(reseller, mode="live")
    assert_problem(client_for(plaintext).get(SANDBOX), 403, "test_key_required")
    assert_problem(user_api.get(SANDBOX), 403, "test_key_required")


# -- limits and idempotency -----------------------------------------------------------------


def test_test_keys_may_order_20_units_per_request(reseller, product):
    key, plaintext = funded_test_key(reseller, "500")
    client = client_for(plaintext)
    ok = client.post(B2B, order(product, quantity=20), HTTP_IDEMPOTENCY_KEY="u20")
    assert ok.status_code == 201
    body = {
        "items": [
            {"productId": product.public_id, "recipientNumber": "+525512345678", "quantity": 20},
            {"productId": product.public_id, "recipientNumber": "+525512345678", "quantity": 1},
        ],
        "baseCurrency": "EUR",
    }
    too_many = client.post(B2B, body, HTTP_IDEMPOTENCY_KEY="u21")
    assert_problem(too_many, 400, "validation_error")
    assert sandbox_wallet(key).balance == Decimal("400.00")


def test_test_keys_may_send_10_recharge_requests_per_minute(reseller, product):
    _key, plaintext = funded_test_key(reseller, "500")
    client = client_for(plaintext)
    # The limit counts per fixed minute: start at the first second of one (the clock moves
    # there and ticks on), so the requests never straddle two windows.
    with time_machine.travel((int(time.time()) // 60 + 1) * 60 + 1, tick=True):
        statuses = [
            client.post(B2B, order(product), HTTP_IDEMPOTENCY_KEY=f"r{n}").status_code
            for n in range(11)
        ]
        assert statuses == [201] * 10 + [429]
        last = client.post(B2B, order(product), HTTP_IDEMPOTENCY_KEY="r12")
    assert_problem(last, 429, "rate_limited")
    assert int(last["Retry-After"]) >= 1
    assert client.get(SANDBOX).status_code == 200  # reads are not recharge requests


def test_idempotency_replay_with_a_test_key(reseller, product):
    key, plaintext = funded_test_key(reseller)
    client = client_for(plaintext)
    first = client.post(B2B, order(product), HTTP_IDEMPOTENCY_KEY="same")
    again = client.post(B2B, order(product), HTTP_IDEMPOTENCY_KEY="same")
    assert again["Idempotent-Replayed"] == "true" and again.json() == first.json()
    assert sandbox_wallet(key).balance == Decimal("95.00")
    assert IdempotencyRecord.objects.get(key="same").livemode is False
    assert Order.objects.count() == 1


def test_the_same_idempotency_key_in_live_and_test_mode_is_two_requests(reseller, product):
    wallet_topup_manual(account=reseller.account, amount=Decimal("100.00"))
    _key, test_plaintext = funded_test_key(reseller)
    _live, live_plaintext = make_key(reseller, mode="live")
    for plaintext in (test_plaintext, live_plaintext):
        r = client_for(plaintext).post(B2B, order(product), HTTP_IDEMPOTENCY_KEY="both")
        assert r.status_code == 201 and "Idempotent-Replayed" not in r
    assert Order.objects.count() == 2


def test_the_sandbox_lists_the_latest_20_newest_first(reseller, product):
    _key, plaintext = funded_test_key(reseller, "500")
    client = client_for(plaintext)
    for n in range(2):
        client.post(B2B, order(product, quantity=15), HTTP_IDEMPOTENCY_KEY=f"many{n}")
    recharges = client.get(SANDBOX).json()["recharges"]
    assert len(recharges) == 20
    ids = [Recharge.objects.get(public_id=r["id"]).pk for r in recharges]
    assert ids == sorted(ids, reverse=True)


def test_sandbox_topups_are_recorded_as_sandbox_topups(reseller):
    key, _ = make_key(reseller, mode="test")
    sandbox_topup(key=key, amount="10")
    topup = TopUp.objects.get()
    assert topup.method == "sandbox" and topup.status == "approved"
    assert topup.created_at <= timezone.now() + timedelta(seconds=1)
