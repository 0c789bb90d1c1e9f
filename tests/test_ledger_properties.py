"""The ledger under any interleaving (property-based, hypothesis): whatever sequence of top-ups,
orders, refunds, failed orders and refused transfers happens to a wallet, its balance equals the
sum of its entries, never goes below zero, and equals what a plain model of the money says."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.factories import UserFactory
from wallet.errors import InsufficientBalance
from wallet.models import LedgerEntry, Wallet
from wallet.selectors import ledger_mismatches
from wallet.services import (
    topup_reject,
    topup_request,
    wallet_debit,
    wallet_get_or_create,
    wallet_lock,
    wallet_refund,
    wallet_topup_manual,
)

pytestmark = pytest.mark.django_db

cents = st.integers(min_value=1, max_value=50_000).map(lambda c: Decimal(c) / 100)
operations = st.lists(
    st.one_of(
        st.tuples(st.just("topup"), cents),
        st.tuples(st.just("order"), cents),
        st.tuples(st.just("refund"), st.integers(min_value=0, max_value=30)),
        st.tuples(st.just("order_fails_midway"), cents),
        st.tuples(st.just("transfer_refused"), cents),
    ),
    max_size=25,
)


class Boom(Exception):
    """A failure after the debit, inside the order's transaction."""


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=operations)
def test_any_interleaving_keeps_balance_equal_to_its_entries_and_never_negative(steps):
    account = UserFactory().account
    wallet = wallet_get_or_create(account=account)
    expected = Decimal("0.00")
    debits: list[tuple[str, Decimal]] = []
    refunded: set[str] = set()
    for n, (kind, value) in enumerate(steps):
        if kind == "topup":
            wallet_topup_manual(account=account, amount=value)
            expected += value
        elif kind == "order":
            reference = f"pay-{wallet.pk}-{n}"
            try:
                with transaction.atomic():
                    wallet_debit(
                        wallet=wallet_lock(wallet_id=wallet.pk), amount=value, reference=reference
                    )
            except InsufficientBalance:
                assert value > expected  # refused only when it does not fit
            else:
                expected -= value
                debits.append((reference, value))
        elif kind == "refund" and debits:
            reference, amount = debits[value % len(debits)]
            _entry, created = wallet_refund(
                wallet_id=wallet.pk, amount=amount, reference=f"refund-{reference}"
            )
            assert created == (reference not in refunded)  # exactly once per payment
            if created:
                refunded.add(reference)
                expected += amount
        elif kind == "order_fails_midway":
            with pytest.raises(Boom), transaction.atomic():
                if value <= expected:
                    wallet_debit(
                        wallet=wallet_lock(wallet_id=wallet.pk), amount=value, reference=f"x-{n}"
                    )
                raise Boom()
        elif kind == "transfer_refused":
            topup = topup_request(account=account, amount=value, method="bank_transfer")
            topup_reject(topup_id=topup.pk, by=None)
        wallet.refresh_from_db()
        entries = sum(LedgerEntry.objects.filter(wallet=wallet).values_list("amount", flat=True))
        assert wallet.balance == entries == expected
        assert wallet.balance >= 0
    assert ledger_mismatches() == []
    assert Wallet.objects.filter(balance__lt=0).count() == 0
