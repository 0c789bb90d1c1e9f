"""Issue 17, defect 8: the consumer's pages in Spanish and French show no English status words
(payment and recharge statuses, payment methods), whatever state the money is in."""

import re
from datetime import timedelta
from decimal import Decimal

import pytest
from django.db import transaction
from django.test import Client
from django.utils import timezone

from orders.models import Order
from orders.pricing import LineRequest
from orders.services import order_place_with_wallet
from payments.models import Payment
from recharges.models import Recharge
from tests.factories import PASSWORD, ProductFactory, UserFactory, make_key
from wallet.services import wallet_topup_manual

pytestmark = pytest.mark.django_db

ENGLISH = ("Delivered", "Waitlisted", "Pending", "Captured", "Paid", "Failed", "Expired",
           "Queued", "Dispatched", "Refunded", "Card", "Wallet", "Success", "Rejected",
           "order", "operator top-up", "refund of", "card payment", "Top up")  # fmt: skip


def visible_text(html: str) -> str:
    """What a person reads: no tags, attributes, scripts or styles."""
    html = re.sub(r"<(script|style)\b.*?</\1>", " ", html, flags=re.S)
    return re.sub(r"<[^>]+>", " ", html)


@pytest.fixture
def shop():
    user = UserFactory(password=PASSWORD)
    wallet_topup_manual(account=user.account, amount=Decimal("100.00"))
    product = ProductFactory(retail_price=Decimal("5.00"), name="Telcel 100 MXN")
    lines = [LineRequest(product=product, recipient_number="+525512345678", quantity=3)]
    with transaction.atomic():
        order = order_place_with_wallet(
            account=user.account,
            livemode=True,
            channel=Order.Channel.WALLET,
            lines=lines,
            currency="EUR",
        )
    first, second, third = order.recharges.order_by("pk")
    Recharge.objects.filter(pk=first.pk).update(status="delivered")
    Recharge.objects.filter(pk=second.pk).update(
        status="waitlisted", waitlisted_until=timezone.now() + timedelta(days=1)
    )
    Recharge.objects.filter(pk=third.pk).update(status="failed")
    Payment.objects.create(  # an abandoned card payment, expired
        order=Order.objects.create(
            account=user.account, livemode=True, channel="card", total="5.00", currency="EUR"
        ),
        account=user.account,
        livemode=True,
        method="card",
        status="expired",
        amount="5.00",
        currency="EUR",
    )
    _key, _plaintext = make_key(user, mode="test")
    return user, order


@pytest.mark.parametrize("language", ["es", "fr"])
def test_the_consumer_pages_have_no_english_status_words(shop, language):
    user, order = shop
    client = Client(HTTP_ACCEPT_LANGUAGE=language)
    client.force_login(user)
    key = user.account.api_keys.get()
    pages = [
        "/payments/",
        f"/payments/{order.payment.public_id}/",
        "/wallet/",
        f"/accounts/keys/{key.public_id}/",
    ]
    for path in pages:
        response = client.get(path)
        assert response.status_code == 200, path
        text = visible_text(response.content.decode())
        found = [word for word in ENGLISH if re.search(rf"\b{word}\b", text)]
        assert found == [], (path, found)


def test_no_internal_ids_on_the_consumers_pages_but_the_receipts_reference(shop, client):
    """Issue 17: no prd_/rch_ ids anywhere a consumer looks; a pay_ id only as the receipt's
    small reference."""
    user, order = shop
    client.force_login(user)
    operator = order.lines.get().product.operator
    pages = ["/", "/payments/", "/wallet/", "/cart/", "/catalog/",
             f"/catalog/{operator.country_id}/{operator.slug}/?phone=%2B525512345678"]  # fmt: skip
    for path in pages:
        text = visible_text(client.get(path).content.decode())
        assert not re.search(r"\b(prd|rch|ord)_\w+", text), path
        if path != "/wallet/":  # the wallet's ledger lists the payment it took, as a bank would
            assert not re.search(r"\bpay_\w+", text), path
    receipt = visible_text(client.get(f"/payments/{order.payment.public_id}/").content.decode())
    assert not re.search(r"\b(prd|rch|ord)_\w+", receipt)
    assert len(re.findall(r"\bpay_\w+", receipt)) == 1  # the reference, once


def test_the_receipt_and_the_history_call_them_top_ups_as_the_menu_does(shop, client):
    """Seen on the issue 43 screenshots: the menu says "Top-ups", the receipt's heading and the
    history's column said "Recharges" (the back office's word) for the same thing."""
    user, order = shop
    client.force_login(user)
    for path in ("/payments/", f"/payments/{order.payment.public_id}/"):
        text = visible_text(client.get(path).content.decode())
        assert "Recharges" not in text and "Top-ups" in text, path
