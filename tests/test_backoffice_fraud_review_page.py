"""Issue 43, item 9, as the server renders it: the fraud review queue has the back office's
breadcrumb (an ``ol.breadcrumbs`` in the admin's nav, as Django styles it) and speaks the
staff's language; every page of ours in the admin sets its breadcrumb the same way."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.test import Client

from checkout.models import CardFreeze, CardKeyFreeze
from tests.factories import UserFactory
from tests.helpers import second_factor_login

pytestmark = pytest.mark.django_db

TEMPLATES = Path(__file__).resolve().parents[1] / "reseller" / "templates"


def staff_client(language: str = "en") -> Client:
    client = Client()
    second_factor_login(client, UserFactory(is_staff=True, is_superuser=True))
    client.cookies["django_language"] = language
    return client


def text_of(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


@pytest.mark.parametrize(
    ("language", "title", "app"),
    [("en", "Card fraud review", "Card checkout"), ("es", "Revisión de fraude con tarjeta",
                                                     "Cobros con tarjeta")],
)  # fmt: skip
def test_the_fraud_review_queue_has_the_back_offices_breadcrumb_and_speaks_spanish(
    language, title, app
):
    html = staff_client(language).get("/admin/checkout/cardkeyfreeze/").content.decode()
    # Django's admin styles ol.breadcrumbs inside the breadcrumbs' nav (a bare div is not).
    crumbs = re.search(r'<nav aria-label="[^"]+">\s*<ol class="breadcrumbs">(.*?)</ol>', html, re.S)
    assert crumbs is not None and '<div class="breadcrumbs">' not in html
    assert [text_of(li).strip() for li in re.findall(r"<li[^>]*>(.*?)</li>", crumbs[1], re.S)][
        1:
    ] == [app, title]
    assert f"<h1>{title}</h1>" in html
    if language == "es":
        assert "Frozen accounts" not in html and "Cuentas congeladas" in html


def test_every_back_office_page_that_sets_its_breadcrumb_uses_the_styled_list():
    for template in (TEMPLATES / "backoffice").glob("*.html"):
        source = template.read_text()
        if "{% block breadcrumbs %}" in source:
            block = source.split("{% block breadcrumbs %}", 1)[1].split("{% endblock %}", 1)[0]
            assert '<ol class="breadcrumbs">' in block, template.name


@pytest.mark.parametrize(
    ("language", "warning", "dispute"),
    [
        ("en", "Frozen by an early fraud warning (issfr_1) at",
         "Frozen by a dispute (dp_1) at"),
        ("es", "Se congeló por una alerta temprana de fraude (issfr_1) el",
         "Se congeló por una disputa (dp_1) el"),
        ("fr", "Gel causé par une alerte précoce de fraude (issfr_1) le",
         "Gel causé par un litige (dp_1) le"),
    ],
)  # fmt: skip
def test_each_freeze_says_what_froze_it_in_one_translated_sentence(language, warning, dispute):
    """Issue 43 (screenshots): "Congelado por dispute", the reason's code inside a translated
    sentence; each reason is a whole sentence of its own."""
    account = UserFactory().account
    CardFreeze.objects.create(account=account, reason="warning", cause="issfr_1")
    CardKeyFreeze.objects.create(
        kind="number", value="+525512345678", reason="dispute", cause="dp_1", account=account
    )
    text = text_of(staff_client(language).get("/admin/checkout/cardkeyfreeze/").content.decode())
    assert warning in text and dispute in text
    assert "warning (" not in text.replace("fraud warning (", "")
    assert "dispute (" not in text.replace("a dispute (", "")
