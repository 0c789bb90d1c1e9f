"""The email the business sends on its own (docs/contract.md §12): a receipt for every paid
site order, the low-balance alert; written in the transaction of the change (an outbox), sent
by a worker in the recipient's language, and sent again later when the mail server fails."""

from __future__ import annotations

import socket
from datetime import timedelta
from decimal import Decimal

import pytest
import time_machine
from django.core import mail
from django.db import transaction
from django.utils import timezone

from emails.models import Email
from emails.services import email_send, message
from emails.tasks import emails_sweep_task
from orders.models import Order
from tests.factories import ProductFactory, RangeProductFactory, UserFactory, make_key
from tests.helpers import assert_ledger_balanced, bearer, client_for, fund, place
from wallet.services import wallet_set_threshold

pytestmark = pytest.mark.django_db

CHECKOUT = "/api/v1/wallet/checkout"
B2B = "/api/v1/api-access/b2b/recharges"


def envelope(product, quantity=1):
    return {
        "items": [
            {
                "productId": product.public_id,
                "recipientNumber": "+525512345678",
                "quantity": quantity,
            }
        ],
        "baseCurrency": "EUR",
    }


def test_a_wallet_checkout_sends_a_receipt_listing_its_top_ups(
    api, django_capture_on_commit_callbacks
):
    user = UserFactory(email="ana@example.com", first_name="Ana")
    product = ProductFactory(retail_price=Decimal("5.00"), name="Telcel 100 MXN")
    fund(user, "50.00")
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post(CHECKOUT, envelope(product, quantity=2), **bearer(user), format="json")
    assert response.status_code == 201, response.content
    (message,) = mail.outbox
    assert message.to == ["ana@example.com"]
    assert "10.00 EUR" in message.subject
    assert "Hello Ana," in message.body
    assert "Telcel 100 MXN · +52 55 1234 5678 · 2 × 5.00 EUR = 10.00 EUR" in message.body  # noqa: RUF001
    payment_id = response.json()["payment"]["id"]
    assert f"http://127.0.0.1:8000/payments/{payment_id}/" in message.body
    html = message.alternatives[0][0]
    assert "Telcel 100 MXN" in html and "10.00 EUR" in html
    assert Email.objects.get().sent_at is not None
    assert_ledger_balanced()


def test_the_receipt_says_the_amount_chosen_of_a_range_line_and_the_fields_given(
    api, django_capture_on_commit_callbacks
):
    user = UserFactory(email="ana@example.com")
    fixed = ProductFactory(retail_price=Decimal("5.00"), name="Telcel 100 MXN")
    ranged = RangeProductFactory(
        operator=fixed.operator, name="Telcel any amount", required_fields=["senderPhone"]
    )
    fund(user, "50.00")
    body = envelope(fixed)
    body["items"].append(
        {
            "productId": ranged.public_id,
            "recipientNumber": "+525512345678",
            "quantity": 1,
            "localAmount": "150.00",
            "fields": {"senderPhone": "+1 415 555 0123"},
        }
    )
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post(CHECKOUT, body, **bearer(user), format="json")
    assert response.status_code == 201, response.content
    fixed_line, range_line = Email.objects.get().context["lines"]
    assert (fixed_line["is_range"], fixed_line["fields"]) == (False, {})
    assert range_line["is_range"] is True
    assert range_line["fields"] == {"senderPhone": "+14155550123"}
    (message,) = mail.outbox
    # A fixed product's name says its amount; a range line's amount is said beside it.
    assert "- Telcel 100 MXN · +52 55 1234 5678 · 1 × 5.00 EUR" in message.body  # noqa: RUF001
    assert "- Telcel any amount · 150.00 MXN · +52 55 1234 5678 · 1 × 8.00 EUR" in message.body  # noqa: RUF001
    assert "  Sender's phone: +1 415-555-0123\n" in message.body
    assert "100.00 MXN" not in message.body
    html = message.alternatives[0][0]
    assert "Telcel any amount · <span" in html and "150.00 MXN</span>" in html
    assert "Sender&#x27;s phone: <span" in html and "+1 415-555-0123" in html


def test_the_receipt_speaks_the_buyers_language(django_capture_on_commit_callbacks):
    user = UserFactory(language="es")
    fund(user, "20.00")
    with django_capture_on_commit_callbacks(execute=True):
        place(user, ProductFactory(retail_price=Decimal("5.00")))
    (message,) = mail.outbox
    assert "recibo" in message.subject.lower()
    assert "pagado con tu monedero" in message.body
    assert "Hello" not in message.body


def test_api_orders_send_no_receipt(reseller, django_capture_on_commit_callbacks):
    product = ProductFactory(retail_price=Decimal("5.00"))
    fund(reseller, "20.00")
    _key, plaintext = make_key(reseller, mode="live")
    with django_capture_on_commit_callbacks(execute=True):
        response = client_for(plaintext).post(
            B2B, envelope(product), HTTP_IDEMPOTENCY_KEY="k-1", format="json"
        )
    assert response.status_code == 201
    assert mail.outbox == [] and not Email.objects.exists()


def test_an_order_that_rolls_back_sends_nothing():
    user = UserFactory()
    fund(user, "20.00")
    with pytest.raises(RuntimeError), transaction.atomic():
        place(user, ProductFactory(retail_price=Decimal("5.00")))
        raise RuntimeError("the request failed after the order was written")
    assert not Email.objects.exists() and not Order.objects.exists()
    assert mail.outbox == []


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_mail_server_that_refuses_gets_the_message_again_later(settings):
    user = UserFactory()
    fund(user, "20.00")
    place(user, ProductFactory(retail_price=Decimal("5.00")))  # commit hooks not run: queued
    email = Email.objects.get()
    locmem = settings.MAILERS
    settings.MAILERS = {
        "default": {
            "BACKEND": "django.core.mail.backends.smtp.EmailBackend",
            "OPTIONS": {"host": "127.0.0.1", "port": _closed_port(), "timeout": 2},
        }
    }
    assert email_send(email.pk) is False  # connection refused: kept for a retry
    email.refresh_from_db()
    assert email.sent_at is None and email.attempts == 1 and "Error" in email.last_error
    assert email_send(email.pk) is False  # not due yet: no second try at once
    settings.MAILERS = locmem
    with time_machine.travel(email.next_attempt_at + timedelta(seconds=1), tick=False):
        assert emails_sweep_task() == 1
    email.refresh_from_db()
    assert email.sent_at is not None and email.attempts == 2
    assert len(mail.outbox) == 1
    assert emails_sweep_task() == 0  # sent once


def test_a_payment_below_the_threshold_sends_one_low_balance_alert(
    django_capture_on_commit_callbacks,
):
    user = UserFactory(email="shop@example.com")
    fund(user, "12.00")
    wallet_set_threshold(account=user.account, amount=Decimal("10.00"))
    product = ProductFactory(retail_price=Decimal("5.00"))
    with django_capture_on_commit_callbacks(execute=True):
        place(user, product)  # 7.00 left: crosses 10.00
        place(user, product)  # 2.00 left: already below, no second alert
    alerts = [m for m in mail.outbox if "low" in m.subject]
    assert len(alerts) == 1
    assert alerts[0].to == ["shop@example.com"]
    assert "7.00 EUR" in alerts[0].subject and "10.00 EUR" in alerts[0].body
    assert "/wallet/" in alerts[0].body
    assert_ledger_balanced()


def test_sent_messages_are_forgotten_after_a_month():
    user = UserFactory()
    fund(user, "20.00")
    place(user, ProductFactory(retail_price=Decimal("5.00")))
    email = Email.objects.get()
    assert email_send(email.pk)
    with time_machine.travel(timezone.now() + timedelta(days=31), tick=False):
        emails_sweep_task()
    assert not Email.objects.exists()


def test_plain_text_is_not_html_escaped_and_the_html_is():
    """An apostrophe or an ampersand reads as itself in the text part (before, the text
    templates escaped it as ``&#x27;``), and stays escaped in the HTML part."""
    address = "o'brien&sons@example.com"
    context = {"new_email": address, "reset_path": "/reset"}
    built = message(kind="email_changed", to="a@example.com", language="en", context=context)
    html = str(built.alternatives[0][0])
    assert address in built.body
    assert "o&#x27;brien&amp;sons@example.com" in html
