"""Disputes, early fraud warnings and refunds from Stripe's signed events (docs/fraud.md;
contract: decisions section 16), against the real webhook endpoint and a real localstripe.

The events are built here and signed with the webhook secret, as Stripe signs them; they
arrive in every order and each twice.
"""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from checkout.models import CardDispute, StripeEvent
from emails.models import Email
from payments.models import Payment
from recharges.models import Recharge
from tests.fraud_support import (
    CLOSED,
    CREATED,
    MX_NUMBER,
    WARNED,
    card_payment,
    dispute,
    early_fraud_warning,
    event,
    post_event,
)
from tests.helpers import assert_ledger_balanced, assert_problem, bearer
from wallet.models import LedgerEntry, TopUp, Wallet

pytestmark = pytest.mark.django_db

PREPARE = "/api/v1/payments/prepare"
CHECKOUT = "/api/v1/payments/checkout"


# -- signed events ---------------------------------------------------------------------------


# -- a card payment with queued recharges ---------------------------------------------------


@pytest.fixture
def shopper(user):
    client = APIClient()
    client.credentials(**bearer(user))
    client.user = user
    return client


def prepare_status(shopper, product) -> int:
    return shopper.post(
        PREPARE,
        {
            "items": [
                {"productId": product.public_id, "recipientNumber": MX_NUMBER, "quantity": 1}
            ],
            "baseCurrency": "EUR",
        },
        format="json",
    ).status_code


# (events in the order they arrive, what the payment shows in the end)
ORDERS = {
    "created then closed": (
        [(CREATED, "needs_response"), (CLOSED, "lost")],
        {"status": "lost", "amount": "10.00", "reason": "fraudulent"},
    ),
    "closed before created": (
        [(CLOSED, "lost"), (CREATED, "needs_response")],
        {"status": "lost", "amount": "10.00", "reason": "fraudulent"},
    ),
    "warning then dispute": (
        [(WARNED, None), (CREATED, "needs_response")],
        {"status": "needs_response", "amount": "10.00", "reason": "fraudulent"},
    ),
    "dispute then warning": (
        [(CREATED, "needs_response"), (WARNED, None)],
        {"status": "needs_response", "amount": "10.00", "reason": "fraudulent"},
    ),
    "warning alone": (
        [(WARNED, None)],
        {"status": "warning", "amount": None, "reason": "made_with_stolen_card"},
    ),
    "won": (
        [(CREATED, "needs_response"), (CLOSED, "won")],
        {"status": "won", "amount": "10.00", "reason": "fraudulent"},
    ),
}


@pytest.mark.parametrize("order", list(ORDERS))
def test_dispute_events_in_any_order_and_twice_are_handled_once(
    order, client, shopper, user, product, stripe_local, django_capture_on_commit_callbacks
):
    payment = card_payment(shopper, product, stripe_local)
    assert shopper.get(f"/api/v1/payments/{payment.public_id}").json()["dispute"] is None
    pi = payment.payment_intent_id
    arrivals, shown = ORDERS[order]
    events = [
        event(
            kind, early_fraud_warning(pi) if kind == WARNED else dispute(pi, status=s, amount=1000)
        )
        for kind, s in arrivals
    ]
    with django_capture_on_commit_callbacks(execute=True):
        for sent in events:
            first = post_event(client, sent)
            assert first.status_code == 200, first.content
            assert first.json() == {"received": True, "replayed": False}
        for sent in events:  # Stripe delivers each again
            again = post_event(client, sent)
            assert again.status_code == 200 and again.json()["replayed"] is True
    assert StripeEvent.objects.count() == len(events)

    body = shopper.get(f"/api/v1/payments/{payment.public_id}").json()
    assert body["dispute"] == shown
    # The recharges not yet sent are cancelled and refunded to the card, once.
    assert {(r["status"], r["failureCode"]) for r in body["recharges"]} == {
        ("failed", "payment_disputed")
    }
    payment.refresh_from_db()
    assert payment.status == "refunded" and payment.refunded_amount == Decimal("10.00")
    refunds = stripe_local.refunds(pi)
    assert sorted(r["amount"] for r in refunds) == [500, 500]
    assert Recharge.objects.filter(payment=payment, refunded=True).count() == 2

    # The account is frozen for card purchases; its owner is told, once per dispute/warning.
    response = shopper.post(
        PREPARE,
        {
            "items": [
                {"productId": product.public_id, "recipientNumber": MX_NUMBER, "quantity": 1}
            ],
            "baseCurrency": "EUR",
        },
        format="json",
    )
    assert_problem(response, 403, "card_purchases_frozen")
    assert Payment.objects.count() == 1  # nothing written
    assert Email.objects.filter(kind="card_purchases_frozen", to=user.email).count() == 1
    call_command("unfreeze_account", "--email", user.email.upper())
    assert prepare_status(shopper, product) == 201
    assert_ledger_balanced()


def test_the_freeze_email_is_in_the_owners_language(client, shopper, user, product, stripe_local):
    user.language = "es"
    user.save(update_fields=["language"])
    payment = card_payment(shopper, product, stripe_local, quantity=1)
    post_event(client, event(WARNED, early_fraud_warning(payment.payment_intent_id)))
    email = Email.objects.get(kind="card_purchases_frozen")
    assert email.language == "es" and email.context["reason"] == "warning"
    assert email.context["reference"] == payment.public_id

    from emails.services import render

    message = render(email)
    assert payment.public_id in message.body


def test_a_dispute_after_staff_unfroze_freezes_again(client, shopper, user, product, stripe_local):
    payment = card_payment(shopper, product, stripe_local, quantity=1)
    pi = payment.payment_intent_id
    post_event(client, event(WARNED, early_fraud_warning(pi)))
    call_command("unfreeze_account", "--email", user.email)
    assert prepare_status(shopper, product) == 201
    # The same warning's dispute: a new Stripe object, a new review.
    post_event(client, event(CREATED, dispute(pi, status="needs_response", amount=500)))
    assert prepare_status(shopper, product) == 403
    # A later event of that same dispute after a second review does not freeze again.
    call_command("unfreeze_account", "--email", user.email)
    post_event(client, event(CLOSED, dispute(pi, status="won", amount=500)))
    assert prepare_status(shopper, product) == 201
    assert Email.objects.filter(kind="card_purchases_frozen").count() == 2


def test_unfreeze_account_cli(user, capsys):
    call_command("unfreeze_account", "--email", user.email)
    assert "not frozen" in capsys.readouterr().out
    with pytest.raises(CommandError):
        call_command("unfreeze_account", "--email", "nobody@example.com")


def test_a_dispute_leaves_a_dispatched_or_delivered_recharge_alone(
    client, shopper, product, stripe_local
):
    payment = card_payment(shopper, product, stripe_local, quantity=1)
    recharge = payment.recharges.get()
    Recharge.objects.filter(pk=recharge.pk).update(status="dispatched")
    post_event(
        client,
        event(CREATED, dispute(payment.payment_intent_id, status="needs_response", amount=500)),
    )
    recharge.refresh_from_db()
    assert recharge.status == "dispatched" and not recharge.refunded
    assert stripe_local.refunds(payment.payment_intent_id) == []


def test_an_event_for_a_charge_we_do_not_know_is_acknowledged(client, db, stripe_local):
    response = post_event(
        client, event(CREATED, dispute("pi_unknown", status="needs_response", amount=5))
    )
    assert response.status_code == 200
    assert StripeEvent.objects.count() == 1 and CardDispute.objects.count() == 0


def test_charge_refunded_is_recorded_once_and_changes_nothing(
    client, shopper, product, stripe_local
):
    payment = card_payment(shopper, product, stripe_local, quantity=1)
    charge = {
        "id": "ch_1",
        "object": "charge",
        "amount": 500,
        "amount_refunded": 500,
        "refunded": True,
        "currency": "eur",
        "payment_intent": payment.payment_intent_id,
        "metadata": {"paymentId": payment.public_id},
    }
    sent = event("charge.refunded", charge)
    assert post_event(client, sent).json()["replayed"] is False
    assert post_event(client, sent).json()["replayed"] is True
    assert payment.recharges.get().status == "queued"
    assert prepare_status(shopper, product) == 201


@pytest.mark.parametrize(
    "change",
    [
        {"payment_intent": 12},
        {"payment_intent": ["pi_x"]},
        {"amount": "1000"},
        {"amount": -5},
        {"amount": True},
        {"status": None},
        {"status": 3},
        {"reason": {"x": 1}},
        {"id": None},
        {"id": "x" * 500},
        {"metadata": "nope"},
        {"balance_transactions": "nope"},
        {"balance_transactions": [{"fee": "x"}, 3]},
        {"charge": {"no": "id"}},
    ],
)
def test_a_malformed_signed_dispute_event_is_never_a_5xx(
    change, client, shopper, product, stripe_local
):
    payment = card_payment(shopper, product, stripe_local, quantity=1)
    obj = {**dispute(payment.payment_intent_id, status="needs_response", amount=500), **change}
    response = post_event(client, event(CREATED, obj))
    assert response.status_code < 500, response.content
    if response.status_code >= 400:
        assert response["Content-Type"].startswith("application/problem+json")
        assert StripeEvent.objects.count() == 0
    assert_ledger_balanced()


def test_a_malformed_signed_warning_is_never_a_5xx(client, db, stripe_local):
    for obj in ({"id": 3}, {"id": "issfr_x", "fraud_type": 7}, {"id": "issfr_y", "charge": 5}):
        response = post_event(client, event(WARNED, obj))
        assert response.status_code in (200, 400), response.content
        if response.status_code == 400:
            assert response.json()["code"] == "validation_error"


# -- a lost dispute of a card top-up whose money was spent ----------------------------------


def card_topup(shopper, stripe_local, amount="25.00") -> TopUp:
    body = shopper.post("/api/v1/wallet/topups/prepare", {"amount": amount}, format="json").json()
    stripe_local.browser_confirm_setup(body["setupClientSecret"])
    done = shopper.post("/api/v1/wallet/topups/checkout", {"topupId": body["topupId"]})
    assert done.status_code == 200, done.content
    return TopUp.objects.get(public_id=body["topupId"])


def wallet_order(shopper, product, quantity):
    return shopper.post(
        "/api/v1/wallet/checkout",
        {
            "items": [
                {"productId": product.public_id, "recipientNumber": MX_NUMBER, "quantity": quantity}
            ],
            "baseCurrency": "EUR",
        },
        format="json",
    )


def test_a_lost_dispute_of_a_spent_card_topup_leaves_the_wallet_owing(
    client, shopper, user, product, stripe_local
):
    topup = card_topup(shopper, stripe_local, "25.00")
    assert wallet_order(shopper, product, 4).status_code == 201  # 20.00 spent
    pi = topup.external_reference
    created = event(CREATED, dispute(pi, status="needs_response", amount=2500, dispute_id="dp_t"))
    lost = event(CLOSED, dispute(pi, status="lost", amount=2500, dispute_id="dp_t", fee=1500))
    for sent in (lost, created, lost, created):  # closed first, each twice
        assert post_event(client, sent).status_code == 200

    wallet = Wallet.objects.get(account=user.account, kind="live")
    assert wallet.balance == Decimal("-20.00") and wallet.dispute_owed == Decimal("20.00")
    debts = LedgerEntry.objects.filter(wallet=wallet, kind="dispute")
    assert [(d.amount, d.reference) for d in debts] == [(Decimal("-25.00"), topup.public_id)]
    assert shopper.get("/api/v1/wallet/balance").json()["available"] == "-20.00"
    row = CardDispute.objects.get(stripe_id="dp_t")
    assert (row.status, row.amount, row.fee) == ("lost", Decimal("25.00"), Decimal("15.00"))

    # Spending is refused until the debt is repaid; card purchases are frozen meanwhile.
    assert_problem(wallet_order(shopper, product, 1), 402, "insufficient_balance")
    assert_problem(
        shopper.post("/api/v1/wallet/topups/prepare", {"amount": "5.00"}, format="json"),
        403,
        "card_purchases_frozen",
    )
    from wallet.services import wallet_topup_manual

    wallet_topup_manual(account=user.account, amount=Decimal("15.00"))  # a bank transfer
    wallet.refresh_from_db()
    assert wallet.balance == Decimal("-5.00") and wallet.dispute_owed == Decimal("5.00")
    assert_problem(wallet_order(shopper, product, 1), 402, "insufficient_balance")
    wallet_topup_manual(account=user.account, amount=Decimal("10.00"))
    wallet.refresh_from_db()
    assert wallet.balance == Decimal("5.00") and wallet.dispute_owed == Decimal("0.00")
    assert wallet_order(shopper, product, 1).status_code == 201
    call_command("check_ledger")
    assert_ledger_balanced()


def test_a_won_dispute_of_a_card_topup_takes_nothing(client, shopper, user, stripe_local):
    topup = card_topup(shopper, stripe_local, "10.00")
    pi = topup.external_reference
    post_event(client, event(CREATED, dispute(pi, status="needs_response", amount=1000)))
    post_event(client, event(CLOSED, dispute(pi, status="won", amount=1000)))
    assert Wallet.objects.get(account=user.account).balance == Decimal("10.00")
    assert not LedgerEntry.objects.filter(kind="dispute").exists()
    assert_ledger_balanced()


def test_staff_unfreeze_from_the_back_office(client, shopper, user, staff, product, stripe_local):
    from backoffice.models import StaffAction
    from backoffice.services import staff_account_unfreeze_cards

    payment = card_payment(shopper, product, stripe_local, quantity=1)
    post_event(client, event(WARNED, early_fraud_warning(payment.payment_intent_id)))
    assert prepare_status(shopper, product) == 403
    staff_account_unfreeze_cards(account=user.account, actor=staff)
    assert prepare_status(shopper, product) == 201
    assert StaffAction.objects.filter(action="account.unfreeze_cards").count() == 1


# -- the books of a lost dispute (docs/books.md) ----------------------------------------------


def dispute_books() -> dict[str, dict[str, tuple[Decimal, str, str]]]:
    from books.models import Entry

    found: dict[str, dict[str, tuple[Decimal, str, str]]] = {}
    for line in Entry.objects.filter(kind__in=("dispute", "dispute_fee")):
        found.setdefault(line.journal, {})[line.ledger] = (
            line.amount,
            line.currency,
            line.reference,
        )
    return found


@pytest.mark.parametrize(
    "arrivals",
    [
        ["created+fee", "lost"],
        ["lost", "created+fee"],
        ["created", "lost+fee"],
        ["lost+fee", "created", "lost"],
        ["lost", "lost+fee"],
    ],
)
def test_a_lost_dispute_books_its_amount_and_fee_once_in_any_order(
    arrivals, client, shopper, product, stripe_local
):
    payment = card_payment(shopper, product, stripe_local, quantity=2)
    pi = payment.payment_intent_id

    def sent(name: str) -> dict:
        status = "lost" if name.startswith("lost") else "needs_response"
        fee = 1500 if name.endswith("+fee") else None
        kind = CLOSED if status == "lost" else CREATED
        return event(kind, dispute(pi, status=status, amount=1000, dispute_id="dp_b", fee=fee))

    events = [sent(name) for name in arrivals]
    for each in events + events:  # each twice
        assert post_event(client, each).status_code == 200
    key = CardDispute.objects.get(stripe_id="dp_b").pk
    assert dispute_books() == {
        f"dispute:{key}": {
            "disputes_lost": (Decimal("10.00"), "EUR", payment.public_id),
            "bank": (Decimal("-10.00"), "EUR", payment.public_id),
        },
        f"dispute_fee:{key}": {
            "stripe_fees": (Decimal("15.00"), "EUR", payment.public_id),
            "bank": (Decimal("-15.00"), "EUR", payment.public_id),
        },
    }
    assert_ledger_balanced()
    from checkout.books_check import books_check

    assert books_check() == []
    out = __import__("io").StringIO()
    call_command("check_books", stdout=out)
    assert out.getvalue().strip() == "books ok"


def test_a_won_dispute_or_a_warning_books_nothing(client, shopper, product, stripe_local):
    payment = card_payment(shopper, product, stripe_local, quantity=1)
    pi = payment.payment_intent_id
    post_event(client, event(WARNED, early_fraud_warning(pi)))
    post_event(client, event(CREATED, dispute(pi, status="needs_response", amount=500, fee=1500)))
    post_event(client, event(CLOSED, dispute(pi, status="won", amount=500)))
    # A late "lost" of a dispute already won does not turn it round.
    post_event(client, event(CLOSED, dispute(pi, status="lost", amount=500)))
    assert CardDispute.objects.get(stripe_id="dp_1").status == "won"
    assert dispute_books() == {}
    assert_ledger_balanced()


def test_the_books_of_a_lost_dispute_of_a_spent_card_topup(client, shopper, user, product,
                                                           stripe_local):  # fmt: skip
    topup = card_topup(shopper, stripe_local, "25.00")
    assert wallet_order(shopper, product, 4).status_code == 201
    pi = topup.external_reference
    post_event(
        client, event(CLOSED, dispute(pi, status="lost", amount=2500, dispute_id="dp_s", fee=1500))
    )
    key = CardDispute.objects.get(stripe_id="dp_s").pk
    books = dispute_books()
    assert books[f"dispute:{key}"]["disputes_lost"] == (Decimal("25.00"), "EUR", topup.public_id)
    assert books[f"dispute_fee:{key}"]["stripe_fees"] == (Decimal("15.00"), "EUR", topup.public_id)
    assert Wallet.objects.get(account=user.account, kind="live").balance == Decimal("-20.00")
    assert_ledger_balanced()


def test_check_books_finds_a_lost_dispute_not_booked_and_a_stray_dispute_journal(
    client, shopper, product, stripe_local
):
    from books.models import Entry
    from checkout.books_check import books_check

    payment = card_payment(shopper, product, stripe_local, quantity=1)
    pi = payment.payment_intent_id
    post_event(client, event(CLOSED, dispute(pi, status="lost", amount=500, fee=1500)))
    row = CardDispute.objects.get(stripe_id="dp_1")
    assert books_check() == []
    # The fee journal lost, the amount's tampered with, and a journal of no dispute.
    Entry.objects.filter(journal=f"dispute_fee:{row.pk}").delete()
    Entry.objects.filter(journal=f"dispute:{row.pk}", ledger="disputes_lost").update(
        amount=Decimal("4.00")
    )
    Entry.objects.create(journal="dispute:999999", kind="dispute", ledger="disputes_lost",
                         amount=Decimal("1"), currency="EUR", reporting_amount=Decimal("1"),
                         reporting_currency="EUR")  # fmt: skip
    Entry.objects.create(journal="dispute:999999", kind="dispute", ledger="bank",
                         amount=Decimal("-1"), currency="EUR", reporting_amount=Decimal("-1"),
                         reporting_currency="EUR")  # fmt: skip
    problems = books_check()
    assert any(f"dispute_fee:{row.pk}: a lost dispute" in p for p in problems), problems
    assert any(f"dispute:{row.pk}: disputes_lost is 4.00" in p for p in problems), problems
    assert any(f"dispute:{row.pk}" in p and "does not balance" in p for p in problems), problems
    assert "dispute:999999: booked, but not a lost dispute" in problems
    with pytest.raises(CommandError):
        call_command("check_books")
