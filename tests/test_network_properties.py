"""A network's money under any sequence (property-based, hypothesis; docs/network.md): whatever
transfers, purchases, deliveries, failures, reversals and price changes happen across a small
tree, every wallet equals its ledger, the books balance and agree with the wallets
(``check_books``), no wallet goes below zero except by a commission taken back after it was
spent, and no cent is lost: what the tree's wallets hold is what was put in less what the
platform booked as sold."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.db import transaction
from django.db.models import Sum
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from books.models import Entry
from checkout.books_check import books_check
from network.price_lists import RuleSpec, price_list_assign, price_list_create, price_list_update
from network.transfers import transfer_make
from recharges.models import Recharge
from recharges.reversals import recharge_reverse
from reseller.errors import ApplicationError
from tests.factories import ProductFactory
from tests.helpers import DELIVERS, REJECTS, place, process
from tests.network_support import agent_of, owner_of, top_account
from wallet.models import Wallet
from wallet.selectors import ledger_mismatches
from wallet.services import wallet_topup_manual

pytestmark = pytest.mark.django_db

# The tree: 0 top (3 % discount) → 1 agent (its list from the top) → 2 sub-agent (its list
# from the agent); 3 a second agent of the top, without a list.
PAIRS = ((0, 1), (1, 2), (0, 3))
cents = st.integers(min_value=1, max_value=4_000).map(lambda c: Decimal(c) / 100)
markups = st.integers(min_value=0, max_value=3_000).map(lambda m: Decimal(m) / 100)
transfer = st.tuples(st.just("transfer"), st.sampled_from(PAIRS), st.booleans(), cents)
# Mostly purchases by the agents (their commissions are the point), some failing; a
# purchase is processed at once ("buy") or later ("place", then "process"), so that prices
# may change between an order and its delivery.
buyers, outcomes = st.sampled_from((0, 1, 2, 2, 3)), st.sampled_from((True, True, False))
buy = st.tuples(st.just("buy"), buyers, outcomes)
place_ = st.tuples(st.just("place"), buyers, outcomes)
process_ = st.tuples(st.just("process"), st.integers(0, 10))
reverse = st.tuples(st.just("reverse"), st.integers(0, 10))
reprice = st.tuples(st.just("reprice"), st.sampled_from((1, 2)), markups)
steps = st.lists(
    st.one_of(transfer, buy, buy, place_, process_, reverse, reverse, reprice),
    min_size=8,
    max_size=40,
)


def processed(recharge: Recharge) -> list[Recharge]:
    """Run the processor on it: [it] when delivered, [] when it failed (and was refunded)."""
    process(recharge.order)
    recharge.refresh_from_db()
    return [recharge] if recharge.status == Recharge.Status.DELIVERED else []


def lists_for(tree, product) -> dict[int, object]:
    """Each priced agent's list, made and assigned by its parent (starting at +10 %, +5 %)."""
    made = {}
    for index, parent, markup in ((1, 0, "10"), (2, 1, "5")):
        rules = [RuleSpec(markup_percent=Decimal(markup), product=product.public_id)]
        made[index] = price_list_create(owner=tree[parent], name=f"L{index}", rules=rules)
        price_list_assign(account=tree[index], price_list=made[index])
    return made


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plan=steps)
def test_any_sequence_across_a_tree_keeps_wallets_and_books_balanced(plan):
    product = ProductFactory(retail_price=Decimal("7.35"), retail_currency="EUR")
    top = top_account()
    top.discount_percent = Decimal("3")
    top.save(update_fields=["discount_percent"])
    tree = [top]
    tree.append(agent_of(top))
    tree.append(agent_of(tree[1]))
    tree.append(agent_of(top))
    lists = lists_for(tree, product)
    put_in = Decimal("0.00")
    for account in tree:
        wallet_topup_manual(account=account, amount=Decimal("30.00"))
        put_in += Decimal("30.00")
    placed: list[Recharge] = []  # waiting for the processor
    delivered: list[Recharge] = []  # (maybe reversed later)

    for step in plan:
        kind = step[0]
        if kind == "transfer":
            (parent, agent), to_agent, amount = step[1], step[2], step[3]
            try:
                with transaction.atomic():  # as the API's request: a refusal rolls back
                    transfer_make(
                        parent=tree[parent],
                        agent_id=tree[agent].public_id,
                        amount=amount,
                        currency="EUR",
                        direction="to_agent" if to_agent else "from_agent",
                        memo="",
                        by=None,
                    )
            except ApplicationError as refused:
                assert refused.code == "insufficient_balance"
        elif kind in ("buy", "place"):
            who, delivers = tree[step[1]], step[2]
            try:
                order = place(owner_of(who), product, number=DELIVERS if delivers else REJECTS)
            except ApplicationError as refused:
                assert refused.code == "insufficient_balance"
            else:
                placed.append(order.recharges.get())
                if kind == "buy":
                    delivered += processed(placed.pop())
        elif kind == "process" and placed:
            delivered += processed(placed.pop(step[1] % len(placed)))
        elif kind == "reverse" and delivered:
            recharge = delivered[step[1] % len(delivered)]
            recharge_reverse(recharge_id=recharge.pk, source="property")
        elif kind == "reprice":
            index, markup = step[1], step[2]
            rules = [RuleSpec(markup_percent=markup, product=product.public_id)]
            price_list_update(price_list=lists[index], name=f"L{index}", rules=rules)

    assert ledger_mismatches() == []
    assert books_check() == []
    wallets = Wallet.objects.filter(account__in=tree, kind=Wallet.Kind.LIVE)
    assert all(wallet.balance >= -wallet.dispute_owed for wallet in wallets)
    # No cent lost: the tree holds what was put in, less what is still paid for recharges in
    # flight, less what the platform booked as sold (the top account's price of each sale).
    ids = [r.public_id for r in Recharge.objects.filter(account__in=tree)]
    sold = Entry.objects.filter(reference__in=ids, ledger=Entry.Ledger.CUSTOMERS).aggregate(
        total=Sum("amount")
    )["total"] or Decimal("0.00")
    in_flight = sum((r.amount for r in placed), Decimal("0.00"))
    held = sum((wallet.balance for wallet in wallets), Decimal("0.00"))
    assert held == put_in - in_flight - sold
