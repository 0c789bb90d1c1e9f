"""The card limits' words (issue 43, items 11 and 12): each plural message reads right with 1
and with 5 in Spanish and French (it said "como máximo 10 pago con tarjeta"), the Spanish ones
address the reader as "tú" like the rest of the site, and a wait that ends on another day says
which ("(at 17:07 UTC)" for tomorrow did not)."""

from __future__ import annotations

import ast
import re
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from django.test import Client
from django.utils import translation

from checkout import limits
from payments.models import Payment
from tests.factories import ProductFactory

LIMITS = Path(limits.__file__)


def messages() -> tuple[list[str], list[tuple[str, str]]]:
    """The card limits' messages as checkout/limits.py writes them: (singular ones, plural
    pairs)."""
    singular, plural = [], []
    for node in ast.walk(ast.parse(LIMITS.read_text())):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
            continue
        texts = [a.value for a in node.args if isinstance(a, ast.Constant)]
        if node.func.id == "_" and texts and isinstance(texts[0], str):
            singular.append(texts[0])
        elif node.func.id == "ngettext" and len(texts) == 2:
            plural.append((texts[0], texts[1]))
    return singular, plural


def render(language: str, n: int) -> list[str]:
    singular, plural = messages()
    with translation.override(language):
        return [translation.gettext(text) for text in singular] + [
            translation.ngettext(one, many, n) for one, many in plural
        ]


def test_every_card_limit_message_is_found():
    singular, plural = messages()
    assert len(plural) == 7 and len(singular) >= 10  # every plural limit, and the rest


@pytest.mark.parametrize(
    ("language", "one", "five"),
    [
        ("es", "1 pago con tarjeta desde", "5 pagos con tarjeta desde"),
        ("es", "como máximo 1 vez en una hora", "como máximo 5 veces en una hora"),
        ("es", "1 vez en 24 horas", "5 veces en 24 horas"),
        ("es", "1 recarga pagada con tarjeta puede", "5 recargas pagadas con tarjeta pueden"),
        ("es", "límite de 1 pago en 24", "límite de 5 pagos en 24"),
        ("fr", "1 paiement par carte peut être fait", "5 paiements par carte peuvent être faits"),
        ("fr", "1 recharge payée par carte peut", "5 recharges payées par carte peuvent"),
        ("fr", "limite de 1 paiement en 24", "limite de 5 paiements en 24"),
    ],
)
def test_each_card_limit_plural_reads_right_with_1_and_with_5(language, one, five):
    singular_forms = _plural_forms(language, 1)
    plural_forms = _plural_forms(language, 5)
    assert any(one in text for text in singular_forms), singular_forms
    assert any(five in text for text in plural_forms), plural_forms
    assert not any(one.replace("1", "5") in text for text in plural_forms)


# What the messages' placeholders are filled with here (only the count matters).
FILLING = {"when": "W", "number": "+52 1", "what": "X", "amount": "9", "this": "9"}


def _plural_forms(language: str, n: int) -> list[str]:
    _singular, plural = messages()
    with translation.override(language):
        return [translation.ngettext(a, b, n) % {**FILLING, "count": n} for a, b in plural]


@pytest.mark.parametrize("n", [1, 5])
def test_the_spanish_limit_messages_say_tu_like_the_rest_of_the_site(n):
    usted = re.compile(
        r"\b(pague|usted|inténtelo|vuelva|puede volver|use otra|espere|compruebe|elija)\b",
        re.IGNORECASE,
    )
    found = [text for text in render("es", n) if usted.search(text)]
    assert found == []
    assert any("podrás volver a pagar" in text for text in render("es", n))


def test_a_wait_that_ends_another_day_says_which():
    now = datetime(2026, 11, 27, 18, 0, tzinfo=UTC)
    with translation.override("en"):
        assert limits._when(3600, now=now) == "in 1 h 0 min (at 19:00 UTC)"
        tomorrow = limits._when(23 * 3600 + 7 * 60, now=now)
    assert tomorrow == "in 23 h 7 min (on November 28 at 17:07 UTC)"
    with translation.override("es"):
        assert limits._when(23 * 3600 + 7 * 60, now=now) == (
            "dentro de 23 h 7 min (el 28 de noviembre a las 17:07 UTC)"
        )
    with translation.override("fr"):
        assert limits._when(23 * 3600 + 7 * 60, now=now) == (
            "dans 23 h 7 min (le 28 novembre à 17:07 UTC)"
        )
    just_before_midnight = datetime(2026, 11, 27, 23, 50, tzinfo=UTC)
    with translation.override("en"):
        assert "(on November 28 at 00:10 UTC)" in limits._when(20 * 60, now=just_before_midnight)


@pytest.mark.django_db
def test_the_guest_refusal_for_tomorrow_names_the_day(stripe_local, settings):
    """The issue's message: a guest's second payment of the day, refused until tomorrow."""
    settings.CARD_LIMIT_GUEST_PER_DAY = 1
    product = ProductFactory(retail_price=Decimal("5.00"))
    browser = Client()

    def buy_now(number):
        browser.post(
            "/cart/add/",
            {"product": product.public_id, "recipient_number": number, "quantity": "1"}
            | {"then": "checkout"},
        )
        return browser.post(
            "/api/v1/guest/payments/prepare",
            {"email": "guest@example.com"},
            content_type="application/json",
        )

    first = buy_now("+525512345678").json()
    stripe_local.browser_confirm_setup(first["setupClientSecret"])
    paid = browser.post(
        "/api/v1/guest/payments/checkout",
        {"paymentId": first["paymentId"]},
        content_type="application/json",
    )
    assert paid.status_code == 200, paid.content
    refused = buy_now("+525512345670")
    assert refused.status_code == 429
    detail = refused.json()["detail"]
    # The limit lifts a day after the first payment: its day is named, unless the refusal
    # came after midnight UTC and it lifts on the refusal's own day.
    lifts = Payment.objects.order_by("created_at").first().created_at + timedelta(hours=24)
    if lifts.date() == datetime.now(UTC).date():
        assert f"(on {lifts:%B} {lifts.day} at " in detail or "(at " in detail, detail
    else:
        assert f"(on {lifts:%B} {lifts.day} at " in detail, detail
