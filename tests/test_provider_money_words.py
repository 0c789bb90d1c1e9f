"""Issue 43, item 5: a provider's float (our books) read -0.92 EUR beside a balance of 550.75
EUR (the provider's), unexplained. The margin page and the provider's page now show both
figures side by side, with what each is and the difference between them, in the staff's
language."""

from __future__ import annotations

import re
from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import call_command
from django.test import Client, override_settings

from recharges import processor
from tests.factories import ProductFactory, UserFactory
from tests.helpers import assert_ledger_balanced, funded_order, second_factor_login
from upstreams.models import Provider
from upstreams.services import catalog_sync, provider_balance_refresh

pytestmark = pytest.mark.django_db

WORDS = {
    "en": ["Float in our books", "Balance at the provider", "Balance less float", "fund_provider"],
    "es": [
        "Prepagado según nuestra contabilidad",
        "Saldo en el proveedor",
        "Saldo menos prepagado",
        "fund_provider",
    ],
}


@pytest.fixture
def provider():
    """A simulator provider selling at 90% of the price, its balance read, two sales of 5.00
    EUR delivered through it: our books say its float is -9.00 EUR."""
    product = ProductFactory(retail_price=Decimal("5.00"))
    call_command("create_provider", "--name", "sim-a", "--kind", "simulator", stdout=StringIO())
    sim = Provider.objects.get(name="sim-a")
    with override_settings(AIRTIME_SIMULATOR_COST_PERCENT=90):
        catalog_sync(provider=sim)
    sim = provider_balance_refresh(provider=sim)
    order = funded_order(product, quantity=2, funds="50.00")
    for recharge in order.recharges.all():
        processor.recharge_process(recharge_id=recharge.pk)
    return sim


def staff_client(language: str) -> Client:
    client = Client()
    second_factor_login(client, UserFactory(is_staff=True, is_superuser=True))
    client.cookies["django_language"] = language
    return client


def text_of(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


@pytest.mark.parametrize("language", ["en", "es"])
def test_the_margin_page_shows_each_providers_float_beside_its_balance_and_says_what_each_is(
    provider, language
):
    assert provider.balance == Decimal("1000000.00") and provider.balance_currency == "EUR"
    html = staff_client(language).get("/admin/margin/").content.decode()
    rows = re.findall(r'<tr data-testid="float-row">(.*?)</tr>', html, re.S)
    assert len(rows) == 1
    cells = [text_of(cell).strip() for cell in re.findall(r"<td[^>]*>(.*?)</td>", rows[0], re.S)]
    point = "." if language == "en" else ","  # figures in the staff's language
    assert cells[0] == "sim-a"
    assert cells[1] == f"-9{point}00 EUR"  # our books: two deliveries at 4.50, none prepaid
    assert cells[2].startswith(f"1000000{point}00 EUR")  # the provider's, with when it was read
    assert cells[3] == f"1000009{point}00 EUR"  # what it holds that the books do not show
    said = text_of(html)
    for words in WORDS[language]:
        assert words in said, words
    assert_ledger_balanced()


def test_booking_the_prepayment_brings_the_float_to_the_balance(provider):
    call_command(
        "fund_provider", "--provider", "sim-a", "--amount", "1000009.00", stdout=StringIO()
    )
    html = staff_client("en").get("/admin/margin/").content.decode()
    (row,) = re.findall(r'<tr data-testid="float-row">(.*?)</tr>', html, re.S)
    cells = [text_of(cell).strip() for cell in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
    assert cells[1] == "1000000.00 EUR" and cells[3] == "0.00 EUR"


@pytest.mark.parametrize("language", ["en", "es"])
def test_the_providers_page_shows_its_balance_and_float_side_by_side_and_says_what_each_is(
    provider, language
):
    page = staff_client(language).get(f"/admin/upstreams/provider/{provider.pk}/change/")
    assert page.status_code == 200
    said = text_of(page.content.decode())
    point = "." if language == "en" else ","
    for figure in ("1000000", "-9", "1000009"):
        assert f"{figure}{point}00 EUR" in said, figure
    for words in WORDS[language]:
        assert words in said, words


def test_a_provider_never_read_nor_booked_shows_that_nothing_is_booked(db):
    call_command("create_provider", "--name", "sim-b", "--kind", "simulator", stdout=StringIO())
    sim = Provider.objects.get(name="sim-b")
    said = text_of(
        staff_client("en").get(f"/admin/upstreams/provider/{sim.pk}/change/").content.decode()
    )
    assert "nothing booked yet" in said


ACTION = {
    "en": "the action “Read the balance of selected providers” of the Providers page",
    "es": "la acción “Leer el saldo de los proveedores seleccionados” de la página Proveedores",
    "fr": "l'action «\u00a0Lire le solde des fournisseurs sélectionnés\u00a0» de la page "
    "Fournisseurs",
}
COMMAND = {
    "en": "python manage.py fund_provider --provider NAME --amount AMOUNT --currency CUR",
    "es": "python manage.py fund_provider --provider NOMBRE --amount IMPORTE --currency MONEDA",
    "fr": "python manage.py fund_provider --provider NOM --amount MONTANT --currency DEVISE",
}


@pytest.mark.parametrize("language", ["en", "es", "fr"])
def test_the_command_to_type_is_code_of_its_own_and_the_action_is_named_in_quotes(
    provider, language
):
    """Issue 43 (screenshots): the fund_provider command wrapped inside itself amid a sentence,
    and "the action Read the balance" ran the action's name into the sentence. On the margin
    page and on a provider's page the command is a block of code of its own (admin.css,
    ``code.bo-command``), and the action's name, as its menu says it, is in quotes."""
    client = staff_client(language)
    for path in ("/admin/margin/", f"/admin/upstreams/provider/{provider.pk}/change/"):
        html = client.get(path).content.decode()
        codes = re.findall(r'<code class="bo-command"[^>]*>(.*?)</code>', html, re.S)
        assert codes == [COMMAND[language]], (path, codes)
        said = text_of(html).replace("&#x27;", "'")  # (text_of reads a no-break space as one)
        assert ACTION[language].replace("\u00a0", " ") in said, path
