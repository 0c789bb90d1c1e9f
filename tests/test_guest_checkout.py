"""A logged-out "Buy now" (issue 32, defect 3): the chosen item survives login and sign-up and
lands on the checkout of exactly it; or a guest pays it by card with only an email, gets the
receipt by email (in the page's language) and on a page reachable by its link only. The guest
limits (docs/fraud.md) hold; the ledger and the books stay right."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest
from django.core import mail
from django.test import Client

from accounts.services import GUEST_ACCOUNT_ID, guest_account
from books.models import Entry
from checkout.models import CardCheckout
from emails.models import Email
from orders.models import CartItem
from payments.models import Payment
from payments.receipts import receipt_token
from recharges.models import Recharge
from recharges.pins import pin_body
from tests.factories import PASSWORD, ProductFactory, UserFactory
from tests.fakes.reloadly import FakeReloadly
from tests.helpers import (
    assert_ledger_balanced,
    assert_problem,
    fund,
    link_in,
    place,
    sign_up,
)
from wallet.models import LedgerEntry

pytestmark = pytest.mark.django_db

NUMBER = "+525512345678"
PREPARE = "/api/v1/guest/payments/prepare"
CHECKOUT = "/api/v1/guest/payments/checkout"


@pytest.fixture
def product():
    return ProductFactory(retail_price=Decimal("5.00"))


def buy_now(client, product, number=NUMBER):
    return client.post(
        "/cart/add/",
        {
            "product": product.public_id,
            "recipient_number": number,
            "quantity": "1",
            "then": "checkout",
            "next": "/catalog/MX/telcel/",
        },
    )


def guest_prepare(client, **body):
    return client.post(PREPARE, body, content_type="application/json")


def guest_pay(client, localstripe, *, email="guest@example.com", language="en"):
    """The guest checkout page's calls: prepare with the email, the card, checkout."""
    prepared = client.post(
        PREPARE,
        {"email": email},
        content_type="application/json",
        headers={"Accept-Language": language},
    )
    assert prepared.status_code == 201, prepared.content
    body = prepared.json()
    localstripe.browser_confirm_setup(body["setupClientSecret"])
    paid = client.post(CHECKOUT, {"paymentId": body["paymentId"]}, content_type="application/json")
    return body, paid


def test_a_logged_out_buy_now_keeps_the_item_through_login_to_its_checkout(client, product):
    response = buy_now(client, product)
    assert response.status_code == 302 and response["Location"] == "/checkout/guest/"
    page = client.get("/checkout/guest/")
    text = page.content.decode()
    assert "+52 55 1234 5678" in text and "5.00 EUR" in text
    login_url = re.search(r'href="(/accounts/login/\?next=[^"]+)"', text).group(1)
    user = UserFactory()
    back = client.post(
        login_url.replace("&amp;", "&"), {"username": user.email, "password": PASSWORD}
    )
    assert back.status_code == 302 and back["Location"] == "/checkout/resume/"
    landed = client.get(back["Location"])
    assert landed["Location"] == "/checkout/?cart=buy-now"
    (item,) = CartItem.objects.filter(cart__account=user.account)
    assert item.cart.session_id == "buy-now"
    assert (item.product, item.recipient_number, item.quantity) == (product, NUMBER, 1)
    checkout = client.get(landed["Location"]).content.decode()
    assert "+52 55 1234 5678" in checkout and "5.00 EUR" in checkout
    assert client.get("/checkout/resume/")["Location"] == "/cart/"  # used once


def test_a_logged_out_buy_now_keeps_the_item_through_sign_up_and_its_confirmation(
    client, product, django_capture_on_commit_callbacks
):
    buy_now(client, product)
    page = client.get("/checkout/guest/").content.decode()
    signup_url = re.search(r'href="(/accounts/signup/\?next=[^"]+)"', page).group(1)
    form = client.get(signup_url).content.decode()
    assert 'name="next" value="/checkout/resume/"' in form
    sent = len(mail.outbox)
    with django_capture_on_commit_callbacks(execute=True):  # the outbox sends after commit
        response = client.post(
            signup_url,
            {
                "email": "newcomer@example.com",
                "password1": "a-long-passphrase-42",
                "password2": "a-long-passphrase-42",
                "next": "/checkout/resume/",
            },
        )
    assert response.status_code == 302
    link = link_in(mail.outbox[sent], "/accounts/signup/confirm/")
    confirmed = client.post(link)
    assert confirmed["Location"] == "/checkout/resume/"
    assert client.get("/checkout/resume/")["Location"] == "/checkout/?cart=buy-now"
    (item,) = CartItem.objects.filter(cart__account__users__email="newcomer@example.com")
    assert (item.product, item.recipient_number) == (product, NUMBER)


def test_sign_up_refuses_a_next_page_of_another_site(client, django_capture_on_commit_callbacks):
    sign_up_page = client.get("/accounts/signup/?next=https://evil.example/steal").content
    assert b'value="https://evil.example' not in sign_up_page
    assert b"login/?next=https" not in sign_up_page
    with django_capture_on_commit_callbacks(execute=True):  # the outbox sends after commit
        client.post(
            "/accounts/signup/",
            {
                "email": "someone@example.com",
                "password1": "a-long-passphrase-42",
                "password2": "a-long-passphrase-42",
                "next": "https://evil.example/steal",
            },
        )
    link = link_in(mail.outbox[-1], "/accounts/signup/confirm/")
    assert client.post(link)["Location"] == "/accounts/profile/"


def test_a_plain_sign_up_still_lands_on_the_profile(client):
    sign_up(client, "plain@example.com")
    assert client.get("/accounts/profile/").status_code == 200


def test_a_guest_pays_by_card_with_an_email_and_gets_the_receipt_in_spanish(
    client, product, stripe_local, django_capture_on_commit_callbacks
):
    buy_now(client, product)
    with django_capture_on_commit_callbacks(execute=True):
        body, paid = guest_pay(client, stripe_local, email="Invitado@Example.com", language="es")
    assert paid.status_code == 200, paid.content
    assert paid.json()["status"] == "succeeded"
    receipt_url = paid.json()["receiptUrl"]
    assert receipt_url == body["receiptUrl"] and receipt_url.startswith("/receipts/pay_")
    payment = Payment.objects.get(public_id=body["paymentId"])
    assert payment.status == "captured" and payment.account.public_id == GUEST_ACCOUNT_ID
    assert payment.order.created_by is None
    checkout = CardCheckout.objects.get(payment=payment)
    assert checkout.guest_email.lower() == "invitado@example.com"
    assert checkout.guest_language == "es" and checkout.client_address == "127.0.0.1"
    (recharge,) = Recharge.objects.filter(payment=payment)
    assert recharge.recipient_number == NUMBER and recharge.status == "delivered"
    # The books: the guest's card charge is a sale like any other (docs/books.md), and no
    # wallet moved (the guest account's wallet is untouched).
    sale = {e.ledger: e.amount for e in Entry.objects.filter(journal=f"sale:{recharge.public_id}")}
    assert sale == {"customers": Decimal("5.00"), "revenue": Decimal("-5.00")}
    assert not LedgerEntry.objects.filter(wallet__account=payment.account).exists()
    email = Email.objects.get(kind=Email.Kind.RECEIPT)
    assert email.to.lower() == "invitado@example.com" and email.language == "es"
    assert email.context["receipt_path"] == receipt_url
    (sent,) = [m for m in mail.outbox if m.to == [email.to]]
    assert "Gracias" in sent.body and receipt_url in sent.body
    page = Client().get(receipt_url)  # the link alone opens it, in any browser
    assert page.status_code == 200 and payment.public_id in page.content.decode()
    assert Client().get(receipt_url.replace("receipts/", "receipts/x")).status_code == 404
    assert client.get("/checkout/guest/")["Location"] == "/"  # bought: nothing pending
    assert_ledger_balanced()


def test_a_bad_guest_email_is_a_clear_error_and_nothing_is_charged(client, product, stripe_local):
    buy_now(client, product)
    response = guest_prepare(client, email="not-an-email")
    assert_problem(response, 400, "validation_error")
    (error,) = response.json()["errors"]
    assert error["field"] == "email" and "valid email" in error["message"]
    assert Payment.objects.count() == 0 and CardCheckout.objects.count() == 0
    assert_problem(guest_prepare(client, email=""), 400, "validation_error")
    assert_problem(guest_prepare(client, email="a@b.c\x00"), 400, "validation_error")
    assert Payment.objects.count() == 0


def test_a_guest_without_a_chosen_item_cannot_prepare(client, stripe_local):
    assert_problem(guest_prepare(client, email="guest@example.com"), 400, "cart_empty")


def test_a_guest_cannot_see_or_pay_another_guests_payment(
    client, product, stripe_local, django_capture_on_commit_callbacks
):
    buy_now(client, product)
    with django_capture_on_commit_callbacks(execute=True):
        body, _paid = guest_pay(client, stripe_local)
    other = Client()
    buy_now(other, product, number="+525512345679")
    with django_capture_on_commit_callbacks(execute=True):
        other_body, _paid = guest_pay(other, stripe_local, email="other@example.com")
    # Not through the member receipt (the guest account has no one to log in as) ...
    member = UserFactory()
    other.force_login(member)
    assert other.get(f"/payments/{body['paymentId']}/").status_code == 404
    # ... nor by forging a link from a payment id, nor with another receipt's signature.
    anyone = Client()
    assert anyone.get(f"/receipts/{body['paymentId']}/").status_code == 404
    signature = body["receiptUrl"].rstrip("/").rsplit(":", 1)[1]
    forged = f"/receipts/{other_body['paymentId']}:{signature}/"
    assert anyone.get(forged).status_code == 404
    assert anyone.get(forged + "status.json").status_code == 404
    assert anyone.get(other_body["receiptUrl"] + "status.json").status_code == 200
    # Another browser cannot drive this browser's payment.
    stranger = Client()
    response = stranger.post(
        CHECKOUT, {"paymentId": other_body["paymentId"]}, content_type="application/json"
    )
    assert_problem(response, 404, "not_found")
    assert anyone.get(f"/receipts/{body['paymentId']}:x/").status_code == 404
    # A member's payment does not open by link, even with a valid signature.
    fund(member, "10.00")
    members = place(member, product).payment.public_id
    assert anyone.get(f"/receipts/{receipt_token(members)}/").status_code == 404
    assert "no-store" in anyone.get(body["receiptUrl"])["Cache-Control"]
    assert_ledger_balanced()


def test_guest_limits_count_by_email_address_and_card(
    client, product, stripe_local, settings, django_capture_on_commit_callbacks
):
    settings.CARD_LIMIT_GUEST_PER_DAY = 1
    buy_now(client, product)
    with django_capture_on_commit_callbacks(execute=True):
        guest_pay(client, stripe_local, email="first@example.com")
    # Another email from the same address: refused at prepare, nothing written.
    buy_now(client, product, number="+525512345670")
    payments = Payment.objects.count()
    response = guest_prepare(client, email="second@example.com")
    assert_problem(response, 429, "card_limit_reached")
    assert "Without an account" in response.json()["detail"]
    assert Payment.objects.count() == payments
    # Another address and email, the same card: refused at checkout, before the charge.
    other = Client(REMOTE_ADDR="10.0.0.7")
    buy_now(other, product, number="+525512345671")
    prepared = guest_prepare(other, email="third@example.com")
    assert prepared.status_code == 201, prepared.content
    stripe_local.browser_confirm_setup(prepared.json()["setupClientSecret"])
    refused = other.post(
        CHECKOUT, {"paymentId": prepared.json()["paymentId"]}, content_type="application/json"
    )
    assert_problem(refused, 429, "card_limit_reached")
    payment = Payment.objects.get(public_id=prepared.json()["paymentId"])
    assert payment.status == "pending" and not payment.payment_intent_id
    # The guest caps are the guests': a member's own purchases are not under them.
    assert guest_account().created_at is not None
    assert_ledger_balanced()


@pytest.fixture
def pin_reloadly(settings):
    """AIRTIME_PROVIDER is a Reloadly fake whose top-ups answer a PIN (``pinDetail``)."""
    fake = FakeReloadly().start()
    fake.pins = True
    settings.AIRTIME_PROVIDER = "reloadly"
    settings.RELOADLY_BASE_URL = settings.RELOADLY_AUTH_URL = fake.url
    settings.RELOADLY_CLIENT_ID, settings.RELOADLY_CLIENT_SECRET = "id", "secret"
    yield fake
    fake.stop()


def test_a_guest_gets_the_pin_they_bought_by_email_with_their_receipt_link(
    client, product, stripe_local, django_capture_on_commit_callbacks, pin_reloadly
):
    """A PIN is delivered after the receipt went out: the guest has no account, so its email
    goes to the address they paid with, in their language, with the link that alone opens
    their receipt; the outbox row keeps no PIN once sent (contract section 17)."""
    product.product_type = "pin"
    product.save(update_fields=["product_type"])
    buy_now(client, product)
    with django_capture_on_commit_callbacks(execute=True):
        body, paid = guest_pay(client, stripe_local, email="invitado@example.com", language="es")
    assert paid.status_code == 200, paid.content
    (recharge,) = Recharge.objects.filter(payment__public_id=body["paymentId"])
    assert recharge.status == "delivered" and recharge.pin_encrypted
    email = Email.objects.get(kind=Email.Kind.PIN_RECEIPT)
    assert (email.to, email.language) == ("invitado@example.com", "es")
    assert email.context["receipt_path"] == body["receiptUrl"]
    (sent,) = [
        m
        for m in mail.outbox
        if m.subject and m.to == ["invitado@example.com"] and "PIN" in m.subject
    ]
    code = pin_body(recharge)["code"]
    assert code in sent.body and body["receiptUrl"] in sent.body
    email.refresh_from_db()
    assert code not in str(email.context) and not email.secret_context
    assert_ledger_balanced()


def test_a_guest_who_corrects_the_email_before_trying_again_gets_the_receipt_there(
    client, product, stripe_local, django_capture_on_commit_callbacks
):
    """The page sends ``{paymentId, email}`` to try another card, with the email as the field
    now reads: a corrected address was answered 201 and silently dropped, and the receipt
    (and its link) went to the mistyped one. The payment's email is the one last sent."""
    buy_now(client, product)
    first = guest_prepare(client, email="gest@exmaple.com")
    assert first.status_code == 201, first.content
    payment_id = first.json()["paymentId"]
    again = guest_prepare(client, email="guest@example.com", paymentId=payment_id)
    assert again.status_code == 201, again.content
    assert again.json()["paymentId"] == payment_id
    stripe_local.browser_confirm_setup(again.json()["setupClientSecret"])
    with django_capture_on_commit_callbacks(execute=True):
        paid = client.post(CHECKOUT, {"paymentId": payment_id}, content_type="application/json")
    assert paid.status_code == 200, paid.content
    assert CardCheckout.objects.get(payment__public_id=payment_id).guest_email == (
        "guest@example.com"
    )
    assert Email.objects.get(kind=Email.Kind.RECEIPT).to == "guest@example.com"
    assert_ledger_balanced()
