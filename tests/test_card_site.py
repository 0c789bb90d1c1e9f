"""Site pages of the cart, checkout, receipts, history and wallet (server side, no browser)."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.core import mail
from django.utils import timezone

from emails.models import Email
from emails.services import email_send
from orders.models import CartItem
from orders.pricing import LineRequest
from orders.services import cart_add_item
from payments.models import Payment
from tests.factories import ProductFactory, UserFactory
from tests.helpers import assert_ledger_balanced
from wallet.models import TopUp
from wallet.services import wallet_topup_manual

pytestmark = pytest.mark.django_db

NUMBER = "+525512345678"


@pytest.fixture
def product():
    return ProductFactory(retail_price=Decimal("5.00"))


@pytest.fixture
def browser_client(client, user):
    client.force_login(user)
    client.user = user
    return client


def add(client, product, number=NUMBER, quantity="1"):
    return client.post(
        "/cart/add/",
        {"product": product.public_id, "recipient_number": number, "quantity": quantity},
    )


def test_add_to_cart_from_a_product_page_then_see_the_quote(browser_client, product):
    response = add(browser_client, product, quantity="3")
    assert response.status_code == 302 and response["Location"] == "/cart/"
    page = browser_client.get("/cart/")
    assert page.status_code == 200
    text = page.content.decode()
    assert "+52 55 1234 5678" in text and "15.00 EUR" in text  # shown as people write it
    assert "Prices are held for 15 minutes" in text


def test_a_bad_number_is_refused_with_a_message_and_nothing_added(browser_client, product):
    response = add(browser_client, product, number="+2348031234567")
    assert response.status_code == 302
    assert CartItem.objects.count() == 0
    page = browser_client.get(response["Location"], follow=True)
    assert "error" in page.content.decode()


def test_anonymous_visitors_are_sent_to_log_in(client, product):
    response = add(client, product)
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]
    assert CartItem.objects.count() == 0


def test_edit_quantities_and_remove_items(browser_client, product):
    add(browser_client, product)
    item = CartItem.objects.get()
    browser_client.post(f"/cart/items/{item.public_id}/", {"quantity": "4"})
    item.refresh_from_db()
    assert item.quantity == 4
    browser_client.post(f"/cart/items/{item.public_id}/", {"quantity": "21"})
    item.refresh_from_db()
    assert item.quantity == 4
    browser_client.post(f"/cart/items/{item.public_id}/remove/")
    assert CartItem.objects.count() == 0


def test_another_accounts_cart_item_is_404(browser_client, product):
    stranger = UserFactory()
    item = cart_add_item(
        account=stranger.account,
        livemode=True,
        session_id="default",
        line=LineRequest(product=product, recipient_number=NUMBER, quantity=1),
    )
    assert browser_client.post(f"/cart/items/{item.public_id}/remove/").status_code == 404
    assert CartItem.objects.count() == 1


def test_checkout_page_shows_the_quote_and_the_test_mode_banner(browser_client, product, settings):
    settings.STRIPE_SECRET_KEY = "sk_test_x"
    settings.STRIPE_PUBLISHABLE_KEY = "pk_test_x"
    settings.STRIPE_API_BASE = "http://127.0.0.1:8420"
    settings.STRIPE_JS_URL = "http://127.0.0.1:8420/js.stripe.com/v3/"
    add(browser_client, product)
    page = browser_client.get("/checkout/")
    text = page.content.decode()
    assert "No card is charged" in text
    assert 'src="http://127.0.0.1:8420/js.stripe.com/v3/"' in text
    assert "<script>" not in text  # CSP: no inline script
    assert "5.00 EUR" in text


def test_pay_the_cart_from_the_wallet_and_follow_the_receipt(
    browser_client, product, django_capture_on_commit_callbacks
):
    wallet_topup_manual(account=browser_client.user.account, amount=Decimal("20.00"))
    add(browser_client, product, quantity="2")
    with django_capture_on_commit_callbacks(execute=True):
        response = browser_client.post("/checkout/wallet/")
    payment = Payment.objects.get()
    assert response["Location"] == f"/payments/{payment.public_id}/"
    assert CartItem.objects.count() == 0
    status = browser_client.get(f"/payments/{payment.public_id}/status.json").json()
    assert status["status"] == "captured" and len(status["recharges"]) == 2
    assert {r["status"] for r in status["recharges"]} <= {"queued", "dispatched", "delivered"}
    page = browser_client.get(f"/payments/{payment.public_id}/")
    assert payment.public_id in page.content.decode()
    history = browser_client.get("/payments/").content.decode()
    assert payment.public_id in history
    assert_ledger_balanced()


def test_wallet_checkout_without_balance_shows_the_reason(browser_client, product):
    add(browser_client, product)
    response = browser_client.post("/checkout/wallet/", follow=True)
    assert "below the order total" in response.content.decode()
    assert CartItem.objects.count() == 1 and Payment.objects.count() == 0


def test_the_cart_offers_the_wallet_only_when_it_covers_the_cart(browser_client, product):
    """Issue 17, defect 15: no "Pay from wallet (0.00 EUR)" with an empty wallet."""
    add(browser_client, product)  # 5.00 EUR
    empty = browser_client.get("/cart/").content.decode()
    assert "/checkout/wallet/" not in empty and "Pay from wallet" not in empty
    wallet_topup_manual(account=browser_client.user.account, amount=Decimal("2.00"))
    short = browser_client.get("/cart/").content.decode()
    assert "/checkout/wallet/" not in short and "does not cover this cart" in short
    wallet_topup_manual(account=browser_client.user.account, amount=Decimal("3.00"))
    enough = browser_client.get("/cart/").content.decode()
    assert "Pay from wallet (5.00 EUR)" in enough


def test_every_page_names_its_icon_and_the_receipt_has_one_recharge_column(
    browser_client, product, django_capture_on_commit_callbacks
):
    wallet_topup_manual(account=browser_client.user.account, amount=Decimal("20.00"))
    add(browser_client, product)
    with django_capture_on_commit_callbacks(execute=True):
        browser_client.post("/checkout/wallet/")
    payment = Payment.objects.get()
    page = browser_client.get(f"/payments/{payment.public_id}/", HTTP_ACCEPT_LANGUAGE="fr")
    html = page.content.decode()
    assert 'rel="icon"' in html and "favicon.svg" in html
    assert html.count("<th>Recharge</th>") <= 1  # "Recharge" twice in French before


def test_a_scheduled_promotion_is_the_buyers_choice_and_waiting_shows_on_the_receipt(
    browser_client, product, django_capture_on_commit_callbacks
):
    """Issue 32, defect 2: a product whose promotion starts soon is not held without the
    buyer choosing it. The cart asks (send now, or wait for the promotion), paying without an
    answer is refused with a message and charges nothing; "wait" holds the recharge, and the
    receipt says what "Waitlisted" means and when it ends."""
    from recharges.models import Recharge
    from recharges.processor import recharge_process
    from tests.factories import PromotionFactory

    starts = timezone.now() + timedelta(days=1)
    PromotionFactory(operator=product.operator, name="Double weekend", starts_at=starts)
    add(browser_client, product)
    wallet_topup_manual(account=browser_client.user.account, amount=Decimal("20.00"))
    cart = browser_client.get("/cart/").content.decode()
    assert "Starting soon: Double weekend" in cart
    assert 'data-testid="promotion-choice"' in cart
    assert 'value="sendNow" required' in cart and 'value="wait" required' in cart
    refused = browser_client.post("/checkout/wallet/", follow=True).content.decode()
    assert "Choose whether to send now or wait for the promotion." in refused
    assert not Payment.objects.exists()
    with django_capture_on_commit_callbacks(execute=True):
        browser_client.post("/checkout/wallet/", {"when_promotion_scheduled": "wait"})
    recharge = Recharge.objects.get()
    recharge_process(recharge_id=recharge.pk)  # held: the promotion starts tomorrow
    recharge.refresh_from_db()
    assert recharge.status == "waitlisted"
    receipt = browser_client.get(f"/payments/{recharge.payment.public_id}/").content.decode()
    assert "Held for its promotion: delivered when it starts" in receipt
    assert_ledger_balanced()


def test_send_now_on_the_site_delivers_at_once_without_the_promotion(
    browser_client, product, django_capture_on_commit_callbacks
):
    from recharges.models import Recharge
    from recharges.processor import recharge_process
    from tests.factories import PromotionFactory

    PromotionFactory(operator=product.operator, starts_at=timezone.now() + timedelta(hours=3))
    add(browser_client, product)
    wallet_topup_manual(account=browser_client.user.account, amount=Decimal("20.00"))
    with django_capture_on_commit_callbacks(execute=True):
        browser_client.post("/checkout/wallet/", {"when_promotion_scheduled": "sendNow"})
    recharge = Recharge.objects.get()
    assert recharge_process(recharge_id=recharge.pk).status == "delivered"
    assert_ledger_balanced()


def test_another_accounts_receipt_is_404(browser_client, product, client):
    other = UserFactory()
    wallet_topup_manual(account=other.account, amount=Decimal("20.00"))
    client.force_login(other)
    add(client, product)
    client.post("/checkout/wallet/")
    payment = Payment.objects.get()
    client.force_login(browser_client.user)
    assert client.get(f"/payments/{payment.public_id}/").status_code == 404
    assert client.get(f"/payments/{payment.public_id}/status.json").status_code == 404


def test_wallet_page_shows_balance_and_entries_and_takes_a_bank_transfer_request(
    browser_client,
):
    wallet_topup_manual(account=browser_client.user.account, amount=Decimal("12.50"))
    page = browser_client.get("/wallet/").content.decode()
    assert "12.50 EUR" in page
    response = browser_client.post("/wallet/bank-transfer/", {"amount": "100.00"}, follow=True)
    topup = TopUp.objects.get(method="bank_transfer")
    assert topup.status == "pending" and topup.amount == Decimal("100.00")
    assert topup.public_id in response.content.decode()
    bad = browser_client.post("/wallet/bank-transfer/", {"amount": "0.001"}, follow=True)
    assert TopUp.objects.filter(method="bank_transfer").count() == 1
    assert "Enter an amount" in bad.content.decode()
    assert_ledger_balanced()


def test_a_bank_transfer_request_says_where_to_send_the_money_and_what_to_quote(
    browser_client, settings
):
    settings.BANK_TRANSFER_BENEFICIARY = "Reseller Payments SL"
    settings.BANK_TRANSFER_IBAN = "ES91 2100 0418 4502 0005 1332"
    settings.BANK_TRANSFER_BIC = "CAIXESBBXXX"
    page = browser_client.get("/wallet/").content.decode()
    assert "ES91 2100 0418 4502 0005 1332" in page and "CAIXESBBXXX" in page
    response = browser_client.post("/wallet/bank-transfer/", {"amount": "50.00"}, follow=True)
    topup = TopUp.objects.get(method="bank_transfer")
    text = response.content.decode()
    for detail in ("Reseller Payments SL", "ES91 2100 0418 4502 0005 1332", "CAIXESBBXXX"):
        assert detail in text
    assert f"quoting {topup.public_id}" in text
    # The same instructions by email (issue 17), in the outbox of the request's transaction.
    sent = Email.objects.get(kind="bank_transfer")
    assert email_send(sent.pk)
    (message,) = mail.outbox
    assert message.to == [browser_client.user.email]
    assert topup.public_id in message.subject and "50.00 EUR" in message.subject
    for detail in ("Reseller Payments SL", "ES91 2100 0418 4502 0005 1332", "CAIXESBBXXX"):
        assert detail in message.body and detail in message.alternatives[0][0]
    assert f"Reference to quote: {topup.public_id}" in message.body


def test_without_bank_details_no_bank_transfer_is_offered_nor_taken(browser_client, settings):
    settings.BANK_TRANSFER_IBAN = ""
    page = browser_client.get("/wallet/").content.decode()
    assert "/wallet/bank-transfer/" not in page
    response = browser_client.post("/wallet/bank-transfer/", {"amount": "50.00"}, follow=True)
    assert "not available" in response.content.decode()
    assert not TopUp.objects.filter(method="bank_transfer").exists()


@pytest.mark.parametrize("path", ["/cart/", "/checkout/", "/payments/", "/wallet/"])
def test_site_pages_need_a_login(client, path):
    response = client.get(path)
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


@pytest.mark.parametrize("language", ["es", "fr"])
def test_the_cart_page_answers_in_the_visitors_language(browser_client, language):
    response = browser_client.get("/cart/", HTTP_ACCEPT_LANGUAGE=language)
    assert response.status_code == 200
    assert response["Content-Language"] == language


def test_buy_now_pays_exactly_the_item_chosen_never_what_the_cart_held(
    browser_client, product, stripe_local
):
    """Issue 32, defect 1: an item left in the cart earlier (an abandoned "Buy now", a
    declined card that kept the cart) was charged together with the one bought now, for
    another number. "Buy now" pays exactly its item; the cart keeps the rest."""
    from recharges.models import Recharge

    other = ProductFactory(retail_price=Decimal("12.00"))
    add(browser_client, other, number="+525511111111")  # left in the cart earlier
    answer = browser_client.post(
        "/cart/add/",
        {"product": product.public_id, "recipient_number": NUMBER, "quantity": "1",
         "then": "checkout"},
    )  # fmt: skip
    assert answer.status_code == 302 and answer["Location"] == "/checkout/?cart=buy-now"
    page = browser_client.get(answer["Location"]).content.decode()
    assert product.name in page and other.name not in page
    assert 'data-session-id="buy-now"' in page
    # A second "Buy now" replaces the first: still one item to pay.
    browser_client.post(
        "/cart/add/",
        {"product": product.public_id, "recipient_number": NUMBER, "then": "checkout"},
    )
    prepared = browser_client.post(
        "/api/v1/payments/prepare", {"sessionId": "buy-now"}, content_type="application/json"
    )
    assert prepared.status_code == 201, prepared.content
    assert prepared.json()["amount"] == "5.00"
    stripe_local.browser_confirm_setup(prepared.json()["setupClientSecret"])
    paid = browser_client.post(
        "/api/v1/payments/checkout",
        {"paymentId": prepared.json()["paymentId"]},
        content_type="application/json",
    )
    assert paid.status_code == 200, paid.content
    assert [r.recipient_number for r in Recharge.objects.all()] == [NUMBER]
    cart = browser_client.get("/cart/").content.decode()
    assert other.name in cart  # the older item waits in the cart, unpaid
    assert_ledger_balanced()


def test_numbers_are_shown_as_people_write_them_on_the_receipt_and_history(
    browser_client, product, django_capture_on_commit_callbacks
):
    """Issue 32, defect 5: pages showed raw E.164 (+525512345678); they show the country's
    international format, while forms and links keep E.164."""
    from catalog.phone import number_display

    assert number_display("+525512345601") == "+52 55 1234 5601"
    assert number_display("not a number") == "not a number"
    wallet_topup_manual(account=browser_client.user.account, amount=Decimal("20.00"))
    add(browser_client, product)
    with django_capture_on_commit_callbacks(execute=True):
        browser_client.post("/checkout/wallet/")
    payment = Payment.objects.get()
    receipt = browser_client.get(f"/payments/{payment.public_id}/").content.decode()
    assert ">+52 55 1234 5678</td>" in receipt
    assert 'name="phone_number" value="+525512345678"' in receipt  # the form keeps E.164
    history = browser_client.get("/payments/").content.decode()
    assert "+52 55 1234 5678" in history
