"""Extra fields on the site (issue 40, contract section 17, "Extra fields"): a product card asks
for each field its product needs, and only those; the cart checks them as the API does, and a
refused one comes back under its input (the values kept in the session, never in the URL)
with nothing added or charged; the values given reach the cart item, the order line and the
recharge, and are shown on the cart, the checkout, the receipt page and the receipt email; a
logged-out "Buy now" keeps them to its checkout."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest
from django.core import mail
from django.test import Client

from emails.models import Email
from orders.models import CartItem, Order, OrderLine
from payments.models import Payment
from recharges.models import Recharge
from tests.factories import PASSWORD, OperatorFactory, ProductFactory, UserFactory, make_country
from tests.helpers import fund, typed_in

pytestmark = pytest.mark.django_db

NUMBER = "+525512345678"
PAGE = "/catalog/MX/telcel/"
EVERY_FIELD = ["senderName", "senderPhone", "recipientEmail", "recipientName"]
GOOD = {
    "fields-senderName": "Ana  Pérez",
    "fields-senderPhone": "+1 415 555 0123",
    "fields-recipientEmail": "luis@example.cu",
    "fields-recipientName": "Luis O'Brien",
}
CLEAN = {
    "senderName": "Ana Pérez",
    "senderPhone": "+14155550123",
    "recipientEmail": "luis@example.cu",
    "recipientName": "Luis O'Brien",
}


@pytest.fixture
def telcel():
    mexico = make_country("MX", "Mexico", "+52", "MXN", translations={"es": {"name": "México"}})
    return OperatorFactory(country=mexico, name="Telcel", slug="telcel", prefixes=["55"])


@pytest.fixture
def needy(telcel):
    """A fixed product whose provider needs every extra field."""
    return ProductFactory(
        operator=telcel,
        name="Telcel 100 MXN with fields",
        retail_price=Decimal("5.00"),
        required_fields=EVERY_FIELD,
    )


@pytest.fixture
def plain(telcel):
    return ProductFactory(operator=telcel, name="Telcel 50 MXN", local_amount=Decimal("50.00"))


def logged_in(user) -> Client:
    client = Client()
    assert client.login(username=user.email, password=PASSWORD)
    return client


def add(client, product, fields=None, **extra):
    data = {
        "product": product.public_id,
        "recipient_number": NUMBER,
        "quantity": "1",
        "next": f"{PAGE}?phone=%2B525512345678",
        **(GOOD if fields is None else fields),
        **extra,
    }
    return client.post("/cart/add/", data)


def card_of(html: str, product) -> str:
    start = rf'<li class="product card[^"]*" id="{product.public_id}">'
    found = re.search(rf"{start}(.*?)</li>", html, re.S)
    assert found is not None, product.public_id
    return found.group(1)


def input_tag(card: str, name: str) -> str:
    found = re.search(rf'<input [^>]*name="fields-{name}"[^>]*>', card)
    assert found is not None, name
    return found.group(0)


def shown(html: str) -> list[str]:
    """The fields a page shows on its lines, as read ("Sender's phone: +1 415-555-0123")."""
    return [
        " ".join(re.sub(r"<[^>]+>", " ", entry).replace("&#x27;", "'").split()).replace(" :", ":")
        for entry in re.findall(r'data-testid="line-field">(.*?)</span></span>', html, re.S)
    ]


SHOWN = [
    "Sender's name: Ana Pérez",
    "Sender's phone: +1 415-555-0123",
    "Recipient's email: luis@example.cu",
    "Recipient's name: Luis O'Brien",
]


# -- the card --------------------------------------------------------------------------------


def test_a_card_asks_for_each_field_its_product_needs_and_only_those(client, needy, plain):
    html = client.get(PAGE, {"phone": NUMBER}).content.decode()
    card = card_of(html, needy)
    for name, label, kind, autocomplete in (
        ("senderName", "Sender&#x27;s name", "text", "name"),
        ("senderPhone", "Sender&#x27;s phone", "tel", "tel"),
        ("recipientEmail", "Recipient&#x27;s email", "email", "section-recipient email"),
        ("recipientName", "Recipient&#x27;s name", "text", "section-recipient name"),
    ):
        tag = input_tag(card, name)
        field_id = re.search(r'id="([^"]+)"', tag).group(1)
        assert f'<label class="small" for="{field_id}">{label}</label>' in card
        assert f'type="{kind}"' in tag and f'autocomplete="{autocomplete}"' in tag
        assert "required" in tag and "aria-invalid" not in tag
        assert ('placeholder="+1 415 555 0123"' in tag) == (name == "senderPhone")
    assert "fields-" not in card_of(html, plain)


def test_a_card_asks_only_for_the_sender_phone_when_that_is_all_it_needs(client, telcel):
    nauta = ProductFactory(operator=telcel, required_fields=["senderPhone"])
    card = card_of(client.get(PAGE).content.decode(), nauta)  # no number: it is asked too
    assert re.findall(r'name="fields-(\w+)"', card) == ["senderPhone"]
    assert 'name="recipient_number"' in card


def test_the_card_speaks_spanish(client, needy):
    html = client.get(PAGE, {"phone": NUMBER}, headers={"Accept-Language": "es"}).content.decode()
    card = card_of(html, needy)
    for label in (
        "Nombre del remitente",
        "Teléfono del remitente",
        "Correo electrónico del destinatario",
        "Nombre del destinatario",
    ):
        assert f">{label}</label>" in card


# -- refused fields --------------------------------------------------------------------------


def test_a_missing_or_malformed_field_comes_back_under_its_input_and_nothing_is_added(needy):
    client = logged_in(UserFactory())
    typed = {**GOOD, "fields-senderPhone": "415 555 0123", "fields-recipientEmail": ""}
    response = add(client, needy, typed)
    assert response.status_code == 302
    location = response["Location"]
    assert location.startswith(PAGE) and location.endswith(f"#{needy.public_id}")
    assert f"fields_for={needy.public_id}" in location and "phone=%2B525512345678" in location
    # What was typed waits in the session, not in the URL.
    assert not typed_in(location, "415", "Ana", "@")
    assert not CartItem.objects.exists()
    card = card_of(client.get(location.split("#")[0]).content.decode(), needy)
    phone = input_tag(card, "senderPhone")
    assert 'value="415 555 0123"' in phone and 'aria-invalid="true"' in phone
    error_id = re.search(r'aria-describedby="([^"]+)"', phone).group(1)
    error = re.search(rf'<p class="error small" id="{error_id}"[^>]*>([^<]*)</p>', card)
    assert error.group(1) == (
        "The sender&#x27;s phone number in international format, e.g. +14155550123."
    )
    email = input_tag(card, "recipientEmail")
    assert 'value=""' in email and 'aria-invalid="true"' in email
    assert "This product needs it: The recipient&#x27;s email address." in card
    name = input_tag(card, "senderName")  # good: kept, not flagged
    assert 'value="Ana  Pérez"' in name and "aria-invalid" not in name


def test_a_refused_field_is_said_in_the_visitors_language(needy):
    client = logged_in(UserFactory())
    response = add(client, needy, {**GOOD, "fields-senderPhone": "nope"})
    html = client.get(
        response["Location"].split("#")[0], headers={"Accept-Language": "fr"}
    ).content.decode()
    assert "Le numéro de téléphone de l\u2019expéditeur au format international" in card_of(
        html, needy
    )


def test_a_refused_buy_now_charges_nothing_logged_in_or_out(needy):
    user = UserFactory()
    fund(user, "20.00")
    for client in (logged_in(user), Client()):
        response = add(client, needy, {**GOOD, "fields-senderPhone": ""}, then="checkout")
        assert response.status_code == 302 and "fields_for=" in response["Location"]
        html = client.get(response["Location"].split("#")[0]).content.decode()
        assert "This product needs it: The sender&#x27;s phone number" in html
        assert "buy_now_pending" not in client.session
    assert not CartItem.objects.exists()
    assert not Order.objects.exists() and not Payment.objects.exists()


def test_the_kept_fields_show_only_on_their_card_and_only_in_their_session(needy, telcel):
    other = ProductFactory(operator=telcel, required_fields=["senderPhone"])
    client = logged_in(UserFactory())
    location = add(client, needy, {**GOOD, "fields-senderPhone": "nope"})["Location"]
    html = client.get(location.split("#")[0]).content.decode()
    assert 'value="nope"' in card_of(html, needy)
    assert 'value="nope"' not in card_of(html, other)
    # The link alone shows nothing typed: another browser, or this one without the marker.
    assert 'value="nope"' not in Client().get(location.split("#")[0]).content.decode()
    assert 'value="nope"' not in client.get(PAGE, {"phone": NUMBER}).content.decode()


def test_a_refused_amount_and_fields_come_back_together(telcel):
    ranged = ProductFactory(
        operator=telcel,
        denomination="range",
        local_amount=None,
        retail_price=None,
        range_min=Decimal("10.00"),
        range_max=Decimal("1000.00"),
        range_step=Decimal("1.00"),
        pricing_rate=Decimal("20"),
        pricing_fee=Decimal("0.50"),
        required_fields=["senderPhone"],
    )
    client = logged_in(UserFactory())
    response = add(client, ranged, {"fields-senderPhone": "+1 415 555 0123"}, local_amount="5")
    location = response["Location"]
    assert "amount=5" in location and f"fields_for={ranged.public_id}" in location
    assert not typed_in(location, "415")
    card = card_of(client.get(location.split("#")[0]).content.decode(), ranged)
    assert "Choose an amount from 10 to 1,000 MXN." in card
    assert 'value="+1 415 555 0123"' in input_tag(card, "senderPhone")
    # A good amount with a refused field: the amount stays too, priced.
    response = add(client, ranged, {"fields-senderPhone": ""}, local_amount="150")
    card = card_of(client.get(response["Location"].split("#")[0]).content.decode(), ranged)
    assert 'value="150"' in card and "You pay 8.00 EUR" in card
    assert not CartItem.objects.exists()


# -- the fields given, carried and shown -----------------------------------------------------


def test_the_fields_given_reach_the_cart_the_order_line_the_recharge_and_every_page(
    needy, django_capture_on_commit_callbacks
):
    user = UserFactory()
    client = logged_in(user)
    fund(user, "20.00")
    response = add(client, needy)
    assert response.status_code == 302 and response["Location"] == "/cart/"
    (item,) = CartItem.objects.all()
    assert item.fields == CLEAN
    assert shown(client.get("/cart/").content.decode()) == SHOWN * 2  # its line, its quote
    assert shown(client.get("/checkout/").content.decode()) == SHOWN
    assert "fields-" not in client.get("/cart/").content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/checkout/wallet/", {"when_promotion_scheduled": "wait"})
    assert response.status_code == 302 and "/payments/" in response["Location"]
    assert OrderLine.objects.get().fields == CLEAN
    assert Recharge.objects.get().fields == CLEAN
    assert shown(client.get(response["Location"]).content.decode()) == SHOWN
    (line,) = Email.objects.get(kind=Email.Kind.RECEIPT).context["lines"]
    assert line["fields"] == CLEAN and line["is_range"] is False
    (sent,) = [m for m in mail.outbox if m.to == [user.email]]
    for text in SHOWN:
        assert f"  {text}\n" in sent.body, sent.body
    html = sent.alternatives[0][0]
    assert "Sender&#x27;s phone:" in html and "+1 415-555-0123" in html


def test_the_receipt_email_says_the_fields_in_the_buyers_language(
    needy, django_capture_on_commit_callbacks
):
    user = UserFactory(language="es")
    client = logged_in(user)
    fund(user, "20.00")
    add(client, needy)
    with django_capture_on_commit_callbacks(execute=True):
        client.post("/checkout/wallet/", {"when_promotion_scheduled": "wait"})
    (sent,) = [m for m in mail.outbox if m.to == [user.email]]
    assert "  Teléfono del remitente: +1 415-555-0123\n" in sent.body
    assert "Sender" not in sent.body


def test_a_card_added_again_with_other_fields_is_another_line(needy):
    client = logged_in(UserFactory())
    add(client, needy)
    add(client, needy)
    add(client, needy, {**GOOD, "fields-senderName": "Eva"})
    assert sorted(CartItem.objects.values_list("quantity", flat=True)) == [1, 2]


def test_a_logged_out_buy_now_keeps_the_fields_through_login_to_its_checkout(client, needy):
    response = add(client, needy, then="checkout")
    assert response.status_code == 302 and response["Location"] == "/checkout/guest/"
    assert client.session["buy_now_pending"]["fields"] == CLEAN
    page = client.get("/checkout/guest/").content.decode()
    assert shown(page) == SHOWN
    user = UserFactory()
    back = client.post(
        "/accounts/login/?next=/checkout/resume/", {"username": user.email, "password": PASSWORD}
    )
    assert back["Location"] == "/checkout/resume/"
    assert client.get("/checkout/resume/")["Location"] == "/checkout/?cart=buy-now"
    (item,) = CartItem.objects.filter(cart__account=user.account)
    assert item.fields == CLEAN
    assert shown(client.get("/checkout/?cart=buy-now").content.decode()) == SHOWN
