"""Words people met on the site (issue 43, items 11 and 12): a wallet's top-ups are not called
by the name of the phone top-ups in Spanish and French, no page title says the same thing
twice, and the key page's whitelist box names itself once."""

from __future__ import annotations

import html
import re
from decimal import Decimal

import pytest
from django.db import transaction
from django.test import Client

from orders.models import Order
from orders.pricing import LineRequest
from orders.services import order_place_with_wallet
from tests.factories import PASSWORD, ProductFactory, UserFactory, make_key
from tests.po_support import catalogs, parse
from wallet.services import wallet_topup_manual

pytestmark = pytest.mark.django_db

# The messages that name money added to a wallet (a bank transfer, a card, our team), and
# never a top-up of a phone. Spanish says "ingreso" / "añadir fondos", French
# "approvisionnement" / "approvisionner"; "recarga" and "recharge" are the phone's.
WALLET_TOP_UP_MESSAGES = [
    ("wallet", "Top-ups"),
    ("wallet", "Top up"),
    ("wallet", "Top-up"),
    (None, "top-up"),
    (None, "top-ups"),
    (None, "Top up by card"),
    (None, "Top up by bank transfer"),
    (None, "No top-up yet."),
    (None, "This top-up expired; nothing was charged. Try again."),
    (None, "the top-up reference you get when you request it (top_…)"),
    (None, "This top-up was already decided."),
    (None, "A card top-up is approved only by its succeeded card payment, never by hand."),
    (None, "A top-up of the wallet was approved."),
    (None, "Pending bank top-ups"),
    (None, "Approve selected pending top-ups (credits the wallet)"),
    (None, "Reject selected pending top-ups"),
    (None, "Reject top-ups"),
    (None, "Staff only: a card top-up is approved by its card payment, never by hand."),
    (None, "The top-up was already approved or rejected; nothing changed."),
    (None, "%(count)d top-up approved."),
    (None, "%(count)d top-up rejected."),
]
PHONE_WORD = {"es": re.compile(r"recarg", re.I), "fr": re.compile(r"recharg", re.I)}


def visible_text(page: str) -> str:
    page = re.sub(r"<(script|style)\b.*?</\1>", " ", page, flags=re.S)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())


@pytest.mark.parametrize("language", ["es", "fr"])
def test_money_added_to_a_wallet_is_never_called_a_phone_top_up(language):
    translated = {}
    for po in catalogs(language):
        for entry in parse(po)[1]:
            translated[(entry.msgctxt, entry.msgid)] = list(entry.msgstr.values())
    missing = [key for key in WALLET_TOP_UP_MESSAGES if key not in translated]
    assert missing == []
    wrong = [
        (key, text)
        for key in WALLET_TOP_UP_MESSAGES
        for text in translated[key]
        if PHONE_WORD[language].search(text)
    ]
    assert wrong == []
    # The dashboard shows the pending transfers beside the revenue ("Ingresos", "Revenus").
    revenue = translated[(None, "Revenue")][0].casefold()
    assert revenue not in translated[(None, "Pending bank top-ups")][0].casefold()


@pytest.fixture
def buyer():
    """Phone top-ups bought from the wallet, which one top-up by our team filled."""
    user = UserFactory(password=PASSWORD)
    wallet_topup_manual(account=user.account, amount=Decimal("50.00"))
    product = ProductFactory(retail_price=Decimal("5.00"), name="Telcel 100 MXN")
    with transaction.atomic():
        order_place_with_wallet(
            account=user.account,
            livemode=True,
            channel=Order.Channel.WALLET,
            lines=[LineRequest(product=product, recipient_number="+525512345678", quantity=2)],
            currency="EUR",
        )
    return user


def test_the_spanish_wallet_page_says_ingresos_for_its_top_ups_and_recargas_for_phones(
    buyer, settings
):
    settings.STRIPE_SECRET_KEY = "sk_test_words"  # the card form shows
    client = Client(HTTP_ACCEPT_LANGUAGE="es")
    client.force_login(buyer)
    page = client.get("/wallet/").content.decode()
    text = visible_text(page)
    headings = [visible_text(h) for h in re.findall(r"<h2[^>]*>(.*?)</h2>", page, re.S)]
    assert "Ingresos" in headings and "Recargas" not in headings
    assert "Añadir fondos con tarjeta" in headings
    assert "Añadir fondos por transferencia bancaria" in headings
    assert re.search(r'id="pay-button"[^>]*>Añadir fondos<', page)
    # The ledger: the wallet's top-up is an "Ingreso", the phone top-ups bought "Recargas".
    rows = re.findall(r'data-testid="ledger-entry"><td[^>]*>.*?</td><td[^>]*>(.*?)</td>', page)
    kinds = sorted(visible_text(row.split("<br>")[0]) for row in rows)
    memos = sorted(visible_text(row.split("<br>")[1]) for row in rows)
    assert kinds == ["Ingreso", "Pago"]
    assert memos == ["Añadido por nuestro equipo", "Recargas compradas"]
    # The nav's phone top-ups keep their name.
    assert re.search(r'<a href="/catalog/">Recargas</a>', page)
    assert "Todavía no hay recargas" not in text
    # "Operador" is the phone's operator; money our team added says so.
    assert "Manual (nuestro equipo)" in text and "operador" not in text.lower()


def test_a_wallet_never_filled_says_no_money_was_added_not_no_top_up(settings):
    """Right after buying phone top-ups by card, the wallet page said "Todavía no hay
    recargas" (issue 43, item 11)."""
    user = UserFactory(password=PASSWORD)
    client = Client(HTTP_ACCEPT_LANGUAGE="es")
    client.force_login(user)
    text = visible_text(client.get("/wallet/").content.decode())
    assert "Todavía no hay ingresos." in text and "Todavía no hay recargas" not in text


PAGES_LOGGED_OUT = ["/", "/catalog/", "/accounts/login/", "/accounts/signup/"]
PAGES_LOGGED_IN = ["/", "/cart/", "/payments/", "/wallet/", "/accounts/profile/"]


@pytest.mark.parametrize("language", ["en", "es", "fr"])
def test_no_page_title_says_the_same_thing_twice(language):
    """The home page was "Mobile top-ups · Mobile top-ups"."""
    user = UserFactory(password=PASSWORD)
    key, _plaintext = make_key(user, mode="live")
    guest, member = Client(HTTP_ACCEPT_LANGUAGE=language), Client(HTTP_ACCEPT_LANGUAGE=language)
    member.force_login(user)
    pages = [(guest, path) for path in PAGES_LOGGED_OUT] + [
        (member, path) for path in [*PAGES_LOGGED_IN, f"/accounts/keys/{key.public_id}/"]
    ]
    for client, path in pages:
        response = client.get(path)
        assert response.status_code == 200, path
        title = visible_text(re.search(r"<title>(.*?)</title>", response.content.decode(), re.S)[1])
        parts = [part.strip().casefold() for part in title.split("·")]
        assert len(parts) == len(set(parts)), (path, title)


@pytest.mark.parametrize(
    ("language", "name"),
    [
        ("en", "IP whitelist"),
        ("es", "Lista de IP permitidas"),
        ("fr", "Liste d\u2019IP autorisées"),
    ],
)
def test_the_key_pages_whitelist_box_names_itself_once(language, name):
    user = UserFactory(password=PASSWORD)
    key, _plaintext = make_key(user, mode="live", ip_whitelist=["203.0.113.7"])
    client = Client(HTTP_ACCEPT_LANGUAGE=language)
    client.force_login(user)
    page = client.get(f"/accounts/keys/{key.public_id}/").content.decode()
    form = next(f for f in re.findall(r"<form\b.*?</form>", page, re.S) if "ip_whitelist" in f)
    assert visible_text(form).count(name) == 1, visible_text(form)
    assert re.search(
        rf'<label for="id_ip_whitelist">{re.escape(name)}</label>', html.unescape(form)
    )
