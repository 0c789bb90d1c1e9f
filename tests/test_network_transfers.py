"""Transfers between a parent and a direct agent (contract section 18, docs/network.md
"Transfers"): both directions, at most once per Idempotency-Key, exact, a ledger entry on each
side shown in both statements, and a webhook to both accounts."""

from __future__ import annotations

import csv
import io
import json
from decimal import Decimal

import pytest

from network.models import Transfer, TransferKey
from tests.factories import UserFactory, make_key
from tests.helpers import assert_ledger_balanced, assert_problem, bearer, client_for
from tests.network_support import (
    TRANSFERS,
    agent_of,
    balance,
    entries,
    hook,
    owner_of,
    top_account,
    transfer,
)
from wallet.services import wallet_topup_manual
from webhooks.models import Event

pytestmark = pytest.mark.django_db


@pytest.fixture
def tree():
    """top (100.00 EUR) → agent (20.00 EUR) → grandchild; and another network's account."""
    top = top_account("100.00")
    agent = agent_of(top)
    wallet_topup_manual(account=agent, amount=Decimal("20.00"))
    grandchild = agent_of(agent)
    stranger = top_account("50.00")
    return top, agent, grandchild, stranger


def body(to, amount="30.00", direction="to_agent", **over):
    return {
        "agent": to.public_id,
        "amount": amount,
        "currency": "EUR",
        "direction": direction,
        "memo": "Float for November",
        **over,
    }


def test_a_transfer_to_a_direct_agent_moves_the_money_with_an_entry_on_each_side(api, tree):
    top, agent, _grandchild, _stranger = tree
    response = transfer(api, owner_of(top), key="t-1", **body(agent))
    assert response.status_code == 201, response.content
    out = response.json()
    assert out["id"].startswith("trf_")
    assert {k: out[k] for k in ("agent", "amount", "currency", "direction", "memo")} == {
        "agent": agent.public_id,
        "amount": "30.00",
        "currency": "EUR",
        "direction": "to_agent",
        "memo": "Float for November",
    }
    assert out["createdAt"].endswith("Z") and out["parent"] == top.public_id
    assert balance(top) == Decimal("70.00") and balance(agent) == Decimal("50.00")
    (taken,) = entries(top, "transfer_out")
    (given,) = entries(agent, "transfer_in")
    assert taken.amount == Decimal("-30.00") and given.amount == Decimal("30.00")
    assert taken.reference == given.reference == out["id"]
    assert taken.balance_after == Decimal("70.00") and given.balance_after == Decimal("50.00")
    transfer_row = Transfer.objects.get(public_id=out["id"])
    assert transfer_row.created_by == owner_of(top)
    assert_ledger_balanced()


def test_a_transfer_from_an_agent_takes_money_back_to_the_parent(api, tree):
    top, agent, _grandchild, _stranger = tree
    response = transfer(api, owner_of(top), key="back", **body(agent, "20.00", "from_agent"))
    assert response.status_code == 201, response.content
    assert response.json()["direction"] == "from_agent"
    assert balance(top) == Decimal("120.00") and balance(agent) == Decimal("0.00")
    assert [e.amount for e in entries(agent, "transfer_out")] == [Decimal("-20.00")]
    assert [e.amount for e in entries(top, "transfer_in")] == [Decimal("20.00")]
    assert_ledger_balanced()


def test_a_replayed_transfer_answers_the_first_answer_and_moves_money_once(api, tree):
    top, agent, _grandchild, _stranger = tree
    first = transfer(api, owner_of(top), key="same", **body(agent))
    again = transfer(api, owner_of(top), key="same", **body(agent))
    assert first.status_code == again.status_code == 201
    assert again.json() == first.json() and again["Idempotent-Replayed"] == "true"
    assert "Idempotent-Replayed" not in first
    assert Transfer.objects.count() == 1 and balance(top) == Decimal("70.00")
    other_body = transfer(api, owner_of(top), key="same", **body(agent, "31.00"))
    assert_problem(other_body, 422, "idempotency_key_reused")
    # The same key under another account is another request.
    own = transfer(api, owner_of(agent), key="same", **body(agent_of(agent)))
    assert own.status_code == 201 and "Idempotent-Replayed" not in own
    assert balance(agent) == Decimal("20.00")
    assert_ledger_balanced()


def test_a_transfer_needs_an_idempotency_key_and_stores_nothing_without_one(api, tree):
    top, agent, _grandchild, _stranger = tree
    assert_problem(
        transfer(api, owner_of(top), key="", **body(agent)), 400, "idempotency_key_required"
    )
    assert Transfer.objects.count() == 0 and TransferKey.objects.count() == 0


def test_a_transfer_the_giving_wallet_cannot_cover_is_402_and_moves_nothing(api, tree):
    top, agent, _grandchild, _stranger = tree
    refused = transfer(api, owner_of(top), key="big", **body(agent, "100.01"))
    assert_problem(refused, 402, "insufficient_balance")
    assert refused.json()["detail"].startswith(
        "Your balance 100.00 EUR is below the transfer's amount 100.01 EUR."
    )
    assert "order" not in refused.json()["detail"]  # a transfer, not an order to top up for
    # The agent's balance is never taken below zero either.
    back = transfer(api, owner_of(top), key="pull", **body(agent, "20.01", "from_agent"))
    assert_problem(back, 402, "insufficient_balance")
    assert back.json()["detail"].startswith(
        "The agent's balance 20.00 EUR is below the transfer's amount 20.01 EUR"
    )
    assert balance(top) == Decimal("100.00") and balance(agent) == Decimal("20.00")
    assert Transfer.objects.count() == 0
    assert entries(top, "transfer_out") == entries(agent, "transfer_out") == []
    # The refusal is the key's answer for a day, even once the wallet could pay.
    wallet_topup_manual(account=top, amount=Decimal("50.00"))
    replay = transfer(api, owner_of(top), key="big", **body(agent, "100.01"))
    assert replay.status_code == 402 and replay["Idempotent-Replayed"] == "true"
    assert replay["Content-Type"].startswith("application/problem+json")
    assert replay.json() == refused.json()
    assert transfer(api, owner_of(top), key="big-2", **body(agent, "100.01")).status_code == 201
    assert_ledger_balanced()


def test_a_transfer_in_another_currency_than_the_wallets_is_400_currency_mismatch(api, tree):
    top, agent, _grandchild, _stranger = tree
    refused = transfer(api, owner_of(top), key="usd", **body(agent, currency="USD"))
    assert_problem(refused, 400, "currency_mismatch")
    assert balance(top) == Decimal("100.00") and Transfer.objects.count() == 0


@pytest.mark.parametrize("who", ["grandchild", "stranger", "unknown", "itself"])
def test_a_transfer_with_anyone_but_a_direct_agent_is_404(api, tree, who):
    top, agent, grandchild, stranger = tree
    target = {"grandchild": grandchild, "stranger": stranger, "itself": top}.get(who)
    agent_id = target.public_id if target else "acc_doesnotexist000000"
    for direction in ("to_agent", "from_agent"):
        response = transfer(
            api, owner_of(top), key=f"{who}-{direction}",
            **body(agent, "1.00", direction, agent=agent_id),
        )  # fmt: skip
        assert_problem(response, 404, "not_found")
    # An agent cannot pull from its parent by naming it either.
    up = transfer(api, owner_of(agent), key="up", **body(top, "1.00", "from_agent"))
    assert_problem(up, 404, "not_found")
    assert Transfer.objects.count() == 0
    assert balance(top) == Decimal("100.00") and balance(grandchild) == Decimal("0.00")


def test_both_statements_show_the_transfer(api, tree):
    top, agent, _grandchild, _stranger = tree
    made = transfer(api, owner_of(top), key="s", **body(agent, "12.50")).json()
    for account, kind, amount in ((top, "transfer_out", "-12.50"), (agent, "transfer_in", "12.50")):
        user = owner_of(account)
        statement = api.get("/api/v1/wallet/statement", **bearer(user)).json()
        (row,) = [entry for entry in statement["data"] if entry["reference"] == made["id"]]
        assert row["kind"] == kind and row["amount"] == amount
        assert row["memo"] == "Float for November"
        response = api.get("/api/v1/wallet/statement?format=csv", **bearer(user))
        text = b"".join(response.streaming_content).decode()
        rows = list(csv.DictReader(io.StringIO(text)))
        (line,) = [r for r in rows if r["reference"] == made["id"]]
        assert line["kind"] == kind and line["amount"] == amount


def test_a_transfer_emits_network_transfer_completed_to_both_accounts(api, tree):
    top, agent, _grandchild, _stranger = tree
    hook(top)
    hook(agent)
    made = transfer(api, owner_of(top), key="w", **body(agent)).json()
    events = Event.objects.filter(type="network.transfer.completed")
    assert sorted(e.account_id for e in events) == sorted([top.pk, agent.pk])
    for event in events:
        sent = json.loads(event.body)
        assert sent["livemode"] is True
        assert sent["data"]["object"]["id"] == made["id"]
        assert sent["data"]["object"]["amount"] == "30.00"
        assert sent["data"]["object"]["direction"] == "to_agent"


def test_the_transfer_list_shows_the_transfers_the_caller_is_a_side_of(api, tree):
    top, agent, _grandchild, _stranger = tree
    other = agent_of(top)
    to_agent = transfer(api, owner_of(top), key="a", **body(agent, "5.00")).json()
    to_other = transfer(api, owner_of(top), key="b", **body(other, "6.00")).json()
    mine = api.get(TRANSFERS, **bearer(owner_of(top))).json()
    assert [t["id"] for t in mine["results"]] == [to_other["id"], to_agent["id"]]
    assert mine["count"] == 2 and mine["page"] == 1
    theirs = api.get(TRANSFERS, **bearer(owner_of(agent))).json()
    assert [t["id"] for t in theirs["results"]] == [to_agent["id"]]
    assert_problem(
        api.get(TRANSFERS + "?agnet=x", **bearer(owner_of(top))), 400, "validation_error"
    )


def test_owners_and_finance_transfer_developers_and_test_keys_are_refused(api, tree):
    top, agent, _grandchild, _stranger = tree
    finance = UserFactory(account=top, role="finance")
    developer = UserFactory(account=top, role="developer")
    assert transfer(api, finance, key="f", **body(agent, "1.00")).status_code == 201
    assert_problem(
        transfer(api, developer, key="d", **body(agent, "1.00")), 403, "permission_denied"
    )
    assert_problem(api.get(TRANSFERS, **bearer(developer)), 403, "permission_denied")
    _key, test_key = make_key(owner_of(top), mode="test")
    by_test_key = client_for(test_key).post(
        TRANSFERS, body(agent, "1.00"), format="json", HTTP_IDEMPOTENCY_KEY="k"
    )
    assert_problem(by_test_key, 403, "permission_denied")
    _key, live_key = make_key(owner_of(top), mode="live")
    by_live_key = client_for(live_key).post(
        TRANSFERS, body(agent, "1.00"), format="json", HTTP_IDEMPOTENCY_KEY="k"
    )
    assert by_live_key.status_code == 201, by_live_key.content
    assert balance(agent) == Decimal("22.00")
    assert_ledger_balanced()


def test_an_agent_outside_the_branch_is_404_whatever_the_role_inside_it_the_role_is_403(api, tree):
    """Section 18: an id outside the caller's branch answers 404 whatever the role; inside
    it, a role that may not act gets 403. A transfer names its agent in the body."""
    top, agent, grandchild, stranger = tree
    developer = UserFactory(account=top, role="developer")
    other_agent = agent_of(stranger)
    for outside in (stranger, other_agent, top):
        assert_problem(transfer(api, developer, key="o", **body(outside, "1.00")), 404, "not_found")
    assert_problem(
        transfer(api, developer, key="u", **body(agent, "1.00", agent="acc_nosuchagent")),
        404,
        "not_found",
    )
    for inside in (agent, grandchild):
        assert_problem(
            transfer(api, developer, key="i", **body(inside, "1.00")), 403, "permission_denied"
        )
    # What cannot be an id is nowhere in the branch (a NUL byte reaches no database); an id
    # is read trimmed, as the serializer reads it.
    for named, status, code in (
        ("acc_x\u0000y", 404, "not_found"),
        ("not an id!", 404, "not_found"),
        (f"  {agent.public_id} ", 403, "permission_denied"),
        ("   ", 403, "permission_denied"),
    ):
        refused = transfer(api, developer, key="p", **body(agent, "1.00", agent=named))
        assert_problem(refused, status, code)
    as_text = api.post(
        TRANSFERS, "agent=x", content_type="text/plain", HTTP_IDEMPOTENCY_KEY="t",
        **bearer(developer),
    )  # fmt: skip
    assert_problem(as_text, 403, "permission_denied")
    without_agent = {k: v for k, v in body(agent, "1.00").items() if k != "agent"}
    assert_problem(transfer(api, developer, key="n", **without_agent), 403, "permission_denied")
    not_json = api.post(
        TRANSFERS, "{", content_type="application/json", HTTP_IDEMPOTENCY_KEY="j",
        **bearer(developer),
    )  # fmt: skip
    assert_problem(not_json, 403, "permission_denied")
    _key, developer_key = make_key(developer, mode="live")
    assert_problem(
        client_for(developer_key).post(
            TRANSFERS, body(other_agent, "1.00"), format="json", HTTP_IDEMPOTENCY_KEY="k"
        ),
        404,
        "not_found",
    )
    _key, test_key = make_key(owner_of(top), mode="test")
    for named, status, code in ((stranger, 404, "not_found"), (agent, 403, "permission_denied")):
        by_test_key = client_for(test_key).post(
            TRANSFERS, body(named, "1.00"), format="json", HTTP_IDEMPOTENCY_KEY="t"
        )
        assert_problem(by_test_key, status, code)
    # The owner: a deeper descendant is 404 (a transfer is with a DIRECT agent only).
    assert_problem(
        transfer(api, owner_of(top), key="g", **body(grandchild, "1.00")), 404, "not_found"
    )
    assert balance(agent) == Decimal("20.00") and balance(stranger) == Decimal("50.00")
    assert_ledger_balanced()


@pytest.mark.parametrize(
    "over, field",
    [
        ({"amount": "0.00"}, "amount"),
        ({"amount": "1.001"}, "amount"),
        ({"amount": 5}, "amount"),
        ({"direction": "sideways"}, "direction"),
        ({"currency": "eur"}, "currency"),
    ],
)
def test_a_transfer_body_that_is_not_valid_is_400_naming_the_field(api, tree, over, field):
    top, agent, _grandchild, _stranger = tree
    problem = assert_problem(
        transfer(api, owner_of(top), key="v", **body(agent, **over)), 400, "validation_error"
    )
    assert [error["field"] for error in problem["errors"]] == [field]
    assert TransferKey.objects.count() == 0


def test_a_key_an_order_used_is_422_on_a_transfer_and_the_other_way_round(api, tree, product):
    """One Idempotency-Key of an account and mode names one request, whichever endpoint
    answers it (contract section 5): the orders' and the transfers' stored answers are two
    tables, but a key one of them holds is a different body for the other, as it is between
    two order endpoints. Nothing moves the second time."""
    top, agent, _grandchild, _stranger = tree
    order = {
        "items": [
            {"productId": product.public_id, "recipientNumber": "+525512345678", "quantity": 1}
        ],
        "baseCurrency": "EUR",
    }
    placed = api.post(
        "/api/v1/wallet/checkout",
        order,
        format="json",
        HTTP_IDEMPOTENCY_KEY="shared",
        **bearer(owner_of(top)),
    )
    assert placed.status_code == 201, placed.content
    assert balance(top) == Decimal("95.00")
    assert_problem(
        transfer(api, owner_of(top), key="shared", **body(agent)), 422, "idempotency_key_reused"
    )
    assert Transfer.objects.count() == 0 and balance(top) == Decimal("95.00")

    moved = transfer(api, owner_of(top), key="moved", **body(agent))
    assert moved.status_code == 201, moved.content
    again = api.post(
        "/api/v1/wallet/checkout",
        order,
        format="json",
        HTTP_IDEMPOTENCY_KEY="moved",
        **bearer(owner_of(top)),
    )
    assert_problem(again, 422, "idempotency_key_reused")
    assert balance(top) == Decimal("65.00")
    assert_ledger_balanced()
