"""Transfers and purchases on the same wallets at once (docs/network.md, "Lock order"): real
threads against PostgreSQL. Transfers in both directions between one parent and its agents,
and purchases by the parent and an agent, all started together: none deadlocks, no wallet
goes below zero, no cent is lost, and every wallet equals its ledger."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.db.models import Sum
from rest_framework.test import APIClient

from accounts.errors import SuspendedAbove
from accounts.services import STAFF_LEVEL, account_set_b2b, account_set_suspended
from network.agents import ACTIVE, SUSPENDED, agent_update
from network.models import Transfer
from tests.factories import ProductFactory, make_key
from tests.helpers import assert_ledger_balanced, bearer, client_for
from tests.network_support import (
    TRANSFERS,
    agent_of,
    balance,
    owner_of,
    run_concurrently,
    top_account,
)
from wallet.models import LedgerEntry, Wallet
from wallet.services import wallet_topup_manual

B2B = "/api/v1/api-access/b2b/recharges"


def buyer_key(account) -> str:
    account_set_b2b(account=account, is_b2b=True)
    _key, plaintext = make_key(owner_of(account), mode="live")
    return plaintext


@pytest.mark.django_db(transaction=True)
def test_twenty_concurrent_transfers_both_ways_and_purchases_never_deadlock_or_lose_a_cent():
    product = ProductFactory(retail_price=Decimal("5.00"))
    top = top_account("40.00")
    first, second = agent_of(top), agent_of(top)
    wallet_topup_manual(account=first, amount=Decimal("10.00"))
    wallet_topup_manual(account=second, amount=Decimal("10.00"))
    keys = {top.pk: buyer_key(top), first.pk: buyer_key(first)}
    parent_owner = owner_of(top)
    before = sum(balance(account) for account in (top, first, second))

    # (who buys) or (agent, direction, amount): more asked than the wallets hold, so some
    # of each kind are refused (402) while others pass, in whatever order the locks decide.
    plan = [
        (first, "to_agent", "9.00"),
        (first, "from_agent", "7.00"),
        (second, "to_agent", "8.00"),
        (second, "from_agent", "6.00"),
        ("buy", top),
        (first, "from_agent", "4.00"),
        (second, "to_agent", "3.00"),
        ("buy", first),
        (first, "to_agent", "6.00"),
        (second, "from_agent", "9.00"),
    ] * 2

    def act(n: int) -> int:
        step = plan[n]
        if step[0] == "buy":
            body = {
                "items": [
                    {
                        "productId": product.public_id,
                        "recipientNumber": "+525512345678",
                        "quantity": 1,
                    }
                ],
                "baseCurrency": "EUR",
            }
            client = client_for(keys[step[1].pk])
            return client.post(
                B2B, body, format="json", HTTP_IDEMPOTENCY_KEY=f"buy-{n}"
            ).status_code
        agent, direction, amount = step
        body = {
            "agent": agent.public_id,
            "amount": amount,
            "currency": "EUR",
            "direction": direction,
        }
        client = APIClient()
        return client.post(
            TRANSFERS, body, format="json", HTTP_IDEMPOTENCY_KEY=f"t-{n}", **bearer(parent_owner)
        ).status_code

    statuses = run_concurrently(len(plan), act)

    assert None not in statuses  # every thread finished: nothing hung on a lock
    assert set(statuses) <= {201, 402}, statuses  # a deadlock would be a 500
    bought = [status for step, status in zip(plan, statuses, strict=True) if step[0] == "buy"]
    assert 201 in bought and len(bought) < len(statuses) - 1
    made = Transfer.objects.count()
    assert made == sum(
        1 for step, status in zip(plan, statuses, strict=True) if step[0] != "buy" and status == 201
    )
    wallets = Wallet.objects.filter(account__in=[top, first, second], kind="live")
    assert all(wallet.balance >= 0 for wallet in wallets)
    # Transfers move money, purchases spend it: what is left is what was there less what was
    # paid, to the cent.
    paid = LedgerEntry.objects.filter(wallet__in=wallets, kind="payment").aggregate(
        total=Sum("amount")
    )["total"] or Decimal("0.00")
    refunded = LedgerEntry.objects.filter(wallet__in=wallets, kind="refund").aggregate(
        total=Sum("amount")
    )["total"] or Decimal("0.00")
    assert sum(wallet.balance for wallet in wallets) == before + paid + refunded
    moved_out = LedgerEntry.objects.filter(kind="transfer_out").count()
    moved_in = LedgerEntry.objects.filter(kind="transfer_in").count()
    assert moved_out == moved_in == made
    assert_ledger_balanced()


@pytest.mark.django_db(transaction=True)
def test_a_resume_racing_a_suspension_from_above_never_lifts_it():
    """The top suspends a sub-agent while the sub-agent's parent resumes it (the parent had
    suspended it first), at once, twenty times: whichever runs first, the top's suspension
    holds at the end (the parent's resume either came before it or is refused)."""
    top = top_account()
    agent = agent_of(top)
    sub = agent_of(agent)
    for _round in range(20):
        account_set_suspended(account=sub, suspended=True, by_depth=agent.depth)

        def act(n: int):
            if n == 0:
                return agent_update(account=top, agent=sub, status=SUSPENDED)
            try:
                return agent_update(account=agent, agent=sub, status=ACTIVE)
            except SuspendedAbove as exc:
                return exc

        results = run_concurrently(2, act)
        assert all(result is not None for result in results)
        sub.refresh_from_db()
        assert sub.suspended_at is not None and sub.suspended_by_depth == top.depth
        account_set_suspended(account=sub, suspended=False, by_depth=STAFF_LEVEL)
