"""The lock order in the processor's answer batch (docs/network.md, "Lock order"): a batch that
refunds one agent's failed recharge and books the commissions of its sub-agent's delivery
writes three wallets, and locks them from the top of the network down before it writes any.

Real threads and connections against PostgreSQL: another transaction holds the top account's
wallet (as a transfer from the top to the agent does, parent first), the batch waits for it,
and meanwhile the agent's wallet must still be free. A batch that refunded the agent first
would hold the agent's wallet while waiting for the top's: with that transfer waiting for the
agent's wallet, the two would deadlock and PostgreSQL would abort one of them."""

from __future__ import annotations

import threading
from decimal import Decimal

import psycopg
import pytest
from django.db import connection

from network.models import Commission
from network.price_lists import RuleSpec, price_list_assign, price_list_create
from network.transfers import transfer_make
from recharges.models import Recharge
from recharges.processor import Claim, answers_write, claims_write, provider_call
from tests.factories import ProductFactory
from tests.helpers import (
    REJECTS,
    assert_ledger_balanced,
    database_url,
    pids_waiting_on_locks,
    place,
)
from tests.network_support import agent_of, balance, owner_of, top_account
from tests.waiting import wait_until
from wallet.models import Wallet

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_batch_that_refunds_and_books_commissions_locks_the_wallets_top_down(publishing):
    product = ProductFactory(retail_price=Decimal("10.00"), retail_currency="EUR")
    top = top_account("100.00")
    agent = agent_of(top, name="Agent")
    sub = agent_of(agent, name="Sub-agent")
    for owner, child, markup in ((top, agent, "10"), (agent, sub, "5")):  # both earn on sub's sale
        rules = [RuleSpec(markup_percent=Decimal(markup), product=product.public_id)]
        price_list_assign(
            account=child, price_list=price_list_create(owner=owner, name="List", rules=rules)
        )
    for parent, child, amount in ((top, agent, "50.00"), (agent, sub, "20.00")):
        transfer_make(parent=parent, agent_id=child.public_id, amount=Decimal(amount),
                      currency="EUR", direction="to_agent", memo="", by=None)  # fmt: skip
    # Placed, not processed: their tasks wait in a queue of the test's own (``publishing``).
    failing = place(owner_of(agent), product, number=REJECTS).recharges.get()
    delivering = place(owner_of(sub), product).recharges.get()
    tickets = claims_write([Claim(failing.pk), Claim(delivering.pk)])
    calls = [provider_call(ticket) for ticket in tickets]  # the simulator: refused, delivered
    wallets = {
        account.pk: Wallet.objects.get(account=account, kind=Wallet.Kind.LIVE).pk
        for account in (top, agent)
    }
    outcome: dict = {}

    def batch() -> None:
        try:
            outcome["answers"] = answers_write(calls)
        except Exception as exc:  # the assertion below names it
            outcome["error"] = exc
        finally:
            connection.close()

    with (
        psycopg.connect(database_url(), autocommit=False) as holder,
        psycopg.connect(database_url(), autocommit=True) as watcher,
    ):
        holder.execute("SELECT id FROM wallet_wallet WHERE id = %s FOR UPDATE", [wallets[top.pk]])
        thread = threading.Thread(target=batch)
        thread.start()
        try:
            wait_until(
                lambda: pids_waiting_on_locks(watcher, besides=(holder.info.backend_pid,)),
                timeout=15,
                what="the batch to wait for the top account's wallet",
            )
            # The batch waits for the top's wallet and holds none below it: the agent's is free.
            with psycopg.connect(database_url(), autocommit=False) as other:
                other.execute(
                    "SELECT id FROM wallet_wallet WHERE id = %s FOR UPDATE NOWAIT",
                    [wallets[agent.pk]],
                )
                other.rollback()
        finally:
            holder.rollback()
            thread.join(timeout=30)

    assert "error" not in outcome, outcome
    failing.refresh_from_db()
    delivering.refresh_from_db()
    assert failing.status == Recharge.Status.FAILED and failing.refunded
    assert delivering.status == Recharge.Status.DELIVERED
    # The agent got its 11.00 back and earned on its sub-agent's 11.55; the top earned too.
    earned = {c.account_id: c.amount for c in Commission.objects.all()}
    assert earned == {agent.pk: Decimal("0.55"), top.pk: Decimal("1.00")}
    assert balance(agent) == Decimal("30.00") + earned[agent.pk]
    assert balance(top) == Decimal("50.00") + earned[top.pk]
    assert balance(sub) == Decimal("20.00") - delivering.amount
    assert_ledger_balanced()
