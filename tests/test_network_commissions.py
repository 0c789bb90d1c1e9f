"""Commissions (contract section 18, docs/network.md "Commissions"), end to end on a
three-level network: prices from the price lists, a purchase by the deepest agent, each
ancestor's commission to the cent in the delivery's transaction, the platform's books at the
top account's price, a reversal that takes them back exactly once, a failure that earns
nothing, and GET /network/commissions."""

from __future__ import annotations

from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import call_command

from books.models import Entry
from network.commissions import commissions_take_back
from network.models import Commission
from network.price_lists import RuleSpec, price_list_assign, price_list_create
from network.transfers import transfer_make
from recharges.models import Recharge
from recharges.reversals import recharge_reverse
from tests.factories import ProductFactory, UserFactory
from tests.helpers import REJECTS, assert_ledger_balanced, bearer, place, process
from tests.network_support import agent_of, balance, entries, owner_of, top_account
from wallet.models import LedgerEntry

pytestmark = pytest.mark.django_db

COMMISSIONS = "/api/v1/network/commissions"


def with_markup(owner, agent, product, markup: str) -> None:
    """``owner`` prices ``agent`` with a list of one rule: ``markup`` % on ``product``."""
    rules = [RuleSpec(markup_percent=Decimal(markup), product=product.public_id)]
    price_list = price_list_create(owner=owner, name=f"For {agent.name}", rules=rules)
    price_list_assign(account=agent, price_list=price_list)


@pytest.fixture
def network():
    """top (4 % discount) → agent (+10 %) → sub-agent (+5 %), for a 10.00 EUR product:
    top 9.60, agent ceil(10.56) = 10.56, sub-agent ceil(11.088) = 11.09. The sub-agent is
    funded down the chain by transfers."""
    product = ProductFactory(retail_price=Decimal("10.00"), retail_currency="EUR")
    top = top_account("100.00")
    top.discount_percent = Decimal("4")
    top.save(update_fields=["discount_percent"])
    agent = agent_of(top, name="Agent")
    sub = agent_of(agent, name="Sub-agent")
    with_markup(top, agent, product, "10")
    with_markup(agent, sub, product, "5")
    for parent, child, amount in ((top, agent, "50.00"), (agent, sub, "30.00")):
        transfer_make(parent=parent, agent_id=child.public_id, amount=Decimal(amount),
                      currency="EUR", direction="to_agent", memo="", by=None)  # fmt: skip
    return top, agent, sub, product


def buy(account, product, **kwargs) -> Recharge:
    order = place(owner_of(account), product, **kwargs)
    process(order)
    return order.recharges.get()


def commission_of(account) -> list[Decimal]:
    return [e.amount for e in entries(account, "commission")]


def sale_lines(recharge) -> dict[str, Decimal]:
    return {
        f"{line.kind}:{line.ledger}": line.amount
        for line in Entry.objects.filter(reference=recharge.public_id)
    }


def checks_pass() -> None:
    assert_ledger_balanced()
    for command, said in (("check_ledger", "ledger ok"), ("check_books", "books ok")):
        out = StringIO()
        call_command(command, stdout=out)
        assert said in out.getvalue()


def test_a_sub_agents_delivered_recharge_pays_each_ancestor_its_difference_to_the_cent(network):
    top, agent, sub, product = network
    recharge = buy(sub, product)
    assert recharge.status == Recharge.Status.DELIVERED
    assert recharge.amount == Decimal("11.09")  # what the sub-agent paid
    assert balance(sub) == Decimal("18.91")
    assert commission_of(agent) == [Decimal("0.53")]  # 11.09 - 10.56
    assert commission_of(top) == [Decimal("0.96")]  # 10.56 - 9.60
    assert commission_of(sub) == []
    assert balance(agent) == Decimal("20.53") and balance(top) == Decimal("50.96")
    (earned,) = entries(agent, "commission")
    assert earned.reference == recharge.ledger_reference
    assert recharge.public_id in earned.memo
    # The platform sold it at the top account's price.
    lines = sale_lines(recharge)
    assert lines["sale:customers"] == Decimal("9.60") and lines["sale:revenue"] == Decimal("-9.60")
    rows = {row.account_id: row for row in Commission.objects.filter(recharge=recharge.public_id)}
    assert rows[agent.pk].branch_id == sub.pk and rows[top.pk].branch_id == agent.pk
    assert {row.sale for row in rows.values()} == {Decimal("11.09")}
    checks_pass()


def test_a_reversal_takes_every_commission_back_exactly_once(network):
    top, agent, sub, product = network
    recharge = buy(sub, product)
    assert recharge_reverse(recharge_id=recharge.pk, source="test") is True
    assert balance(sub) == Decimal("30.00")
    assert balance(agent) == Decimal("20.00") and balance(top) == Decimal("50.00")
    assert [e.amount for e in entries(agent, "commission_reversal")] == [Decimal("-0.53")]
    assert [e.amount for e in entries(top, "commission_reversal")] == [Decimal("-0.96")]
    lines = sale_lines(recharge)
    assert lines["reversal:customers"] == Decimal("-9.60")
    # Retried, noticed again: nothing more.
    assert recharge_reverse(recharge_id=recharge.pk, source="again") is False
    commissions_take_back(reference=recharge.ledger_reference, recharge=recharge.public_id)
    assert LedgerEntry.objects.filter(kind="commission_reversal").count() == 2
    assert balance(agent) == Decimal("20.00") and balance(top) == Decimal("50.00")
    checks_pass()


def test_a_reversal_after_the_commission_was_spent_leaves_the_ancestor_owing_it(network):
    top, agent, sub, product = network
    recharge = buy(sub, product)
    transfer_make(parent=top, agent_id=agent.public_id, amount=Decimal("20.53"),
                  currency="EUR", direction="from_agent", memo="", by=None)  # fmt: skip
    assert balance(agent) == Decimal("0.00")
    recharge_reverse(recharge_id=recharge.pk, source="test")
    assert balance(agent) == Decimal("-0.53")  # owed, as after a lost dispute
    transfer_make(parent=top, agent_id=agent.public_id, amount=Decimal("1.00"),
                  currency="EUR", direction="to_agent", memo="", by=None)  # fmt: skip
    assert balance(agent) == Decimal("0.47")
    checks_pass()


def test_a_failed_recharge_earns_nothing(network):
    top, agent, sub, product = network
    recharge = buy(sub, product, number=REJECTS)
    assert recharge.status == Recharge.Status.FAILED
    assert balance(sub) == Decimal("30.00")
    assert commission_of(agent) == commission_of(top) == []
    assert Commission.objects.count() == 0
    assert not Entry.objects.filter(reference=recharge.public_id).exists()
    checks_pass()


def test_an_agents_own_purchase_pays_only_its_ancestors_and_a_top_accounts_pays_none(network):
    top, agent, sub, product = network
    buy(agent, product)  # 10.56
    assert commission_of(top) == [Decimal("0.96")] and commission_of(sub) == []
    buy(top, product)  # 9.60: a top account's purchase is the platform's sale at its price
    assert commission_of(top) == [Decimal("0.96")]
    checks_pass()


def test_the_commissions_report_shows_each_direct_agents_branch(api, network):
    top, agent, sub, product = network
    sibling = agent_of(top, name="Sibling")  # no list: pays the top's price, earns it nothing
    transfer_make(parent=top, agent_id=sibling.public_id, amount=Decimal("20.00"),
                  currency="EUR", direction="to_agent", memo="", by=None)  # fmt: skip
    buy(sub, product)
    buy(agent, product)
    buy(sibling, product)
    reversed_one = buy(sub, product)
    recharge_reverse(recharge_id=reversed_one.pk, source="test")

    report = api.get(COMMISSIONS, **bearer(owner_of(top))).json()
    assert report["currency"] == "EUR" and report["from"] <= report["to"]
    assert report["agents"] == [
        {"agent": agent.public_id, "recharges": 2, "sales": "21.65", "commission": "1.92"},
        {"agent": sibling.public_id, "recharges": 1, "sales": "9.60", "commission": "0.00"},
    ]  # the order GET /network/agents lists them in
    assert report["total"] == "1.92"
    mid = api.get(COMMISSIONS, **bearer(owner_of(agent))).json()
    assert mid["agents"] == [
        {"agent": sub.public_id, "recharges": 1, "sales": "11.09", "commission": "0.53"}
    ]
    assert api.get(COMMISSIONS, **bearer(owner_of(sub))).json()["agents"] == []
    # A direct agent whose branch sold nothing has its row, of zeros.
    idle = agent_of(top, name="Idle")
    zeros = {"recharges": 0, "sales": "0.00", "commission": "0.00"}
    listed = api.get(COMMISSIONS, **bearer(owner_of(top))).json()["agents"]
    assert listed[2] == {"agent": idle.public_id, **zeros} and len(listed) == 3
    # Another period: every direct agent, nothing sold.
    past = api.get(COMMISSIONS + "?from=2020-01-01&to=2020-01-31", **bearer(owner_of(top)))
    assert past.json()["agents"] == [
        {"agent": agent_id, **zeros}
        for agent_id in (agent.public_id, sibling.public_id, idle.public_id)
    ]
    assert past.json()["total"] == "0.00"
    developer = UserFactory(account=top, role="developer")
    assert api.get(COMMISSIONS, **bearer(developer)).status_code == 403
    checks_pass()
