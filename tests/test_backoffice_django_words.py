"""Seen on the issue 43 screenshots of the recharges list in Spanish: Django 6.1's own Spanish
catalog leaves the action button ("Run"), the action menu's empty choice ("- Select an option
-") and the date filter's label ("Filter by …") in English. The project's catalogs say them
(backoffice/django_words.py), in French as well."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.utils import translation

from tests.factories import ProductFactory, UserFactory
from tests.helpers import funded_order, second_factor_login

pytestmark = pytest.mark.django_db

SAID = {
    "es": ("Ejecutar", "- Seleccione una opción -", "Filtrar por"),
    "fr": ("Exécuter", "- Choisir une option -", "Filtrer par"),
}


@pytest.mark.parametrize("language", ["es", "fr"])
def test_the_admins_own_words_are_translated(language):
    with translation.override(language):
        for english in ("Run", "- Select an option -", "Filter by %(field_name)s"):
            assert translation.gettext(english) != english, english


@pytest.mark.parametrize("language", ["es", "fr"])
def test_the_recharges_list_has_no_english_of_djangos_own(language):
    funded_order(ProductFactory())  # a row, so the list shows its actions
    client = Client()
    second_factor_login(client, UserFactory(is_staff=True, is_superuser=True))
    client.cookies["django_language"] = language
    html = client.get("/admin/recharges/recharge/").content.decode()
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))
    for words in SAID[language]:
        assert words in text, words
    for english in (">Run<", "Select an option", "Filter by", "Search recharges"):
        assert english not in html, english
