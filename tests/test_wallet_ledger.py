"""The wallet ledger (docs/contract.md §4): append-only, exact, never below zero."""

import threading
from decimal import Decimal

import pytest
from django.core.management import CommandError, call_command
from django.db import IntegrityError, connection, transaction

from reseller.errors import ApplicationError
from tests.factories import UserFactory
from tests.helpers import assert_ledger_balanced, second_factor_login
from wallet import services
from wallet.errors import InsufficientBalance, TopUpNotPending
from wallet.models import LedgerEntry, TopUp, Wallet

pytestmark = pytest.mark.django_db


def funded_wallet(amount="100.00"):
    user = UserFactory()
    services.wallet_topup_manual(account=user.account, amount=Decimal(amount))
    return Wallet.objects.get(account=user.account)


def debit(wallet_id, amount, reference):
    with transaction.atomic():
        wallet = services.wallet_lock(wallet_id=wallet_id)
        return services.wallet_debit(wallet=wallet, amount=Decimal(amount), reference=reference)


def test_approved_top_up_credits_the_wallet_once_even_if_approved_twice(user):
    topup = services.topup_request(
        account=user.account, amount=Decimal("50.00"), method=TopUp.Method.BANK_TRANSFER
    )
    assert Wallet.objects.get(account=user.account).balance == Decimal("0.00")
    services.topup_approve(topup_id=topup.pk)
    services.topup_approve(topup_id=topup.pk)
    wallet = Wallet.objects.get(account=user.account)
    assert wallet.balance == Decimal("50.00")
    assert wallet.entries.count() == 1
    assert_ledger_balanced()


def test_rejected_bank_top_up_credits_nothing_and_cannot_be_approved_later(user):
    topup = services.topup_request(
        account=user.account, amount=Decimal("50.00"), method=TopUp.Method.BANK_TRANSFER
    )
    services.topup_reject(topup_id=topup.pk, by=None, note="no transfer received")
    with pytest.raises(TopUpNotPending):
        services.topup_approve(topup_id=topup.pk)
    assert Wallet.objects.get(account=user.account).balance == Decimal("0.00")
    assert_ledger_balanced()


@pytest.mark.parametrize("amount", ["0", "-5", "1.001", "abc"])
def test_top_up_amount_must_be_positive_with_two_decimals(user, amount):
    with pytest.raises(ApplicationError):
        services.topup_request(account=user.account, amount=amount, method="manual")
    assert TopUp.objects.count() == 0


def test_debit_is_exact():
    wallet = funded_wallet("100.00")
    debit(wallet.pk, "12.34", "pay_1")
    wallet.refresh_from_db()
    assert wallet.balance == Decimal("87.66")
    entry = wallet.entries.get(kind="payment")
    assert entry.amount == Decimal("-12.34") and entry.balance_after == Decimal("87.66")
    assert_ledger_balanced()


def test_debit_above_the_balance_is_refused_and_writes_nothing():
    wallet = funded_wallet("10.00")
    with pytest.raises(InsufficientBalance) as info:
        debit(wallet.pk, "10.01", "pay_1")
    assert "10.00 EUR" in info.value.detail and "10.01 EUR" in info.value.detail
    wallet.refresh_from_db()
    assert wallet.balance == Decimal("10.00")
    assert wallet.entries.count() == 1
    assert_ledger_balanced()


def test_refund_of_a_recharge_happens_exactly_once():
    wallet = funded_wallet("20.00")
    debit(wallet.pk, "5.00", "pay_1")
    first, created_first = services.wallet_refund(
        wallet_id=wallet.pk, amount=Decimal("5.00"), reference="rch_1"
    )
    second, created_second = services.wallet_refund(
        wallet_id=wallet.pk, amount=Decimal("5.00"), reference="rch_1"
    )
    assert (created_first, created_second) == (True, False)
    assert first.pk == second.pk
    wallet.refresh_from_db()
    assert wallet.balance == Decimal("20.00")
    assert_ledger_balanced()


def test_ledger_entries_cannot_be_edited_or_deleted():
    wallet = funded_wallet()
    entry = wallet.entries.get()
    entry.amount = Decimal("1000.00")
    with pytest.raises(RuntimeError):
        entry.save()
    with pytest.raises(RuntimeError):
        entry.delete()
    assert wallet.entries.get().amount == Decimal("100.00")


def test_database_refuses_a_negative_balance():
    wallet = funded_wallet("1.00")
    with pytest.raises(IntegrityError), transaction.atomic():
        Wallet.objects.filter(pk=wallet.pk).update(balance=Decimal("-0.01"))


def test_adjustment_is_a_new_entry_with_a_reason(staff):
    wallet = funded_wallet("10.00")
    services.wallet_adjust(
        wallet_id=wallet.pk, amount=Decimal("-2.50"), reason="bank fee", by=staff
    )
    wallet.refresh_from_db()
    assert wallet.balance == Decimal("7.50")
    assert wallet.entries.filter(kind="adjustment", created_by=staff).count() == 1
    assert_ledger_balanced()


def test_wallet_topup_command_prints_the_new_balance(capsys, user):
    call_command("wallet_topup", "--email", user.email, "--amount", "100.00")
    call_command("wallet_topup", "--email", user.email, "--amount", "25.50")
    assert capsys.readouterr().out.split("\n")[-2] == "125.50 EUR"
    assert_ledger_balanced()


def test_wallet_topup_command_refuses_bad_amounts(user):
    with pytest.raises(CommandError):
        call_command("wallet_topup", "--email", user.email, "--amount", "-3")
    with pytest.raises(CommandError):
        call_command("wallet_topup", "--email", "nobody@example.com", "--amount", "3")


@pytest.mark.parametrize("amount", ["nan", "snan", "1e400", "99999999999", "10000000000.00"])
def test_wallet_topup_command_refuses_amounts_no_money_column_holds_without_a_traceback(
    user, amount
):
    with pytest.raises(CommandError, match=r"positive number|at most 9999999999\.99"):
        call_command("wallet_topup", "--email", user.email, "--amount", amount)
    assert not TopUp.objects.filter(wallet__account=user.account).exists()
    assert_ledger_balanced()


@pytest.mark.parametrize("amount", ["1e400", "10000000000.00"])
def test_set_balance_threshold_command_refuses_amounts_no_money_column_holds(user, amount):
    with pytest.raises(CommandError, match=r"positive number|at most 9999999999\.99"):
        call_command("set_balance_threshold", "--email", user.email, "--amount", amount)
    assert Wallet.objects.get(account=user.account, kind="live").low_balance_threshold is None


def test_check_ledger_passes_when_balanced_and_fails_when_a_balance_is_tampered(capsys):
    wallet = funded_wallet("10.00")
    call_command("check_ledger")
    assert "ledger ok" in capsys.readouterr().out
    Wallet.objects.filter(pk=wallet.pk).update(balance=Decimal("11.00"))
    with pytest.raises(CommandError):
        call_command("check_ledger")


@pytest.mark.django_db(transaction=True)
def test_concurrent_debits_on_one_wallet_never_overdraw_it():
    """N threads each try to spend 3.00 of 10.00: exactly 3 succeed, 1.00 remains."""
    wallet = funded_wallet("10.00")
    outcomes = []
    barrier = threading.Barrier(8)

    def worker(n):
        try:
            barrier.wait()
            debit(wallet.pk, "3.00", f"pay_{n}")
            outcomes.append("ok")
        except InsufficientBalance:
            outcomes.append("402")
        finally:
            connection.close()

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["402"] * 5 + ["ok"] * 3
    wallet.refresh_from_db()
    assert wallet.balance == Decimal("1.00")
    assert LedgerEntry.objects.filter(wallet=wallet, kind="payment").count() == 3
    assert_ledger_balanced()


def test_staff_approves_a_bank_top_up_from_the_admin(client, staff, user):
    topup = services.topup_request(
        account=user.account, amount=Decimal("40.00"), method=TopUp.Method.BANK_TRANSFER
    )
    second_factor_login(client, staff)
    response = client.post(
        "/admin/wallet/topup/", {"action": "approve", "_selected_action": [topup.pk]}
    )
    assert response.status_code == 302
    topup.refresh_from_db()
    assert topup.status == "approved" and topup.decided_by == staff
    assert Wallet.objects.get(account=user.account).balance == Decimal("40.00")
    assert client.get("/admin/wallet/ledgerentry/").status_code == 200
    assert_ledger_balanced()
