"""Number-first buying (issue 17): the home page leads with a phone field and a country picker;
the number finds its operator and goes straight to its amounts, or offers a choice; saved
recipients are one click from their amounts, from the home page, the receipt and history."""

from __future__ import annotations

from decimal import Decimal

import pytest

from recipients.models import SavedRecipient
from tests.factories import OperatorFactory, ProductFactory, UserFactory, make_country
from tests.helpers import assert_ledger_balanced, fund, place

pytestmark = pytest.mark.django_db


@pytest.fixture
def mtn():
    nigeria = make_country("NG", "Nigeria", "+234", "NGN")
    return OperatorFactory(country=nigeria, slug="mtn", name="MTN", carrier_names=["MTN"])


@pytest.fixture
def telcel():
    mexico = make_country("MX", "Mexico", "+52", "MXN")
    return OperatorFactory(country=mexico, slug="telcel", name="Telcel")


def test_the_home_page_leads_with_a_phone_field_and_a_country_picker(client, mtn, telcel):
    html = client.get("/", HTTP_ACCEPT_LANGUAGE="en-MX,en;q=0.9").content.decode()
    form = html[html.index('data-testid="number-first"') :]
    assert 'type="tel"' in form and 'name="phone"' in form and 'name="country"' in form
    assert '<option value="NG">' in form
    assert '<option value="MX" selected>' in form  # the browser's language names Mexico
    assert html.index('data-testid="number-first"') < html.index("For resellers")


def test_a_number_with_one_detected_operator_goes_straight_to_its_amounts(client, mtn):
    response = client.get("/catalog/find/", {"phone": "+234 803 123 4567"})
    assert response.status_code == 302
    assert response["Location"] == "/catalog/NG/mtn/?phone=%2B2348031234567"
    assert response.cookies["topup_country"].value == "NG"  # the picker's next first choice
    assert '<option value="NG" selected>' in client.get("/").content.decode()


def test_a_number_typed_the_local_way_is_read_with_the_picked_country(client, mtn):
    response = client.get("/catalog/find/", {"country": "NG", "phone": "0803 123 4567"})
    assert response["Location"] == "/catalog/NG/mtn/?phone=%2B2348031234567"


def test_a_ported_or_shared_range_offers_the_choice(client, mtn):
    glo = OperatorFactory(country=mtn.country, slug="glo", name="Glo")
    html = client.get("/catalog/find/", {"phone": "+2348031234567", "choose": "1"}).content
    html = html.decode()
    assert html.index("/catalog/NG/mtn/") < html.index(f"/catalog/NG/{glo.slug}/")
    assert "Detected operator" in html


def test_an_unknown_range_lets_the_user_choose(client, telcel):
    html = client.get("/catalog/find/", {"country": "MX", "phone": "55 1234 5678"})
    html = html.content.decode()
    assert "We cannot tell the operator" in html and "+525512345678" in html


def test_a_receipt_saves_its_number_and_offers_to_top_up_again(client, telcel):
    user = UserFactory()
    fund(user, "20.00")
    product = ProductFactory(operator=telcel, retail_price=Decimal("5.00"))
    order = place(user, product, number="+525512345678")
    client.force_login(user)
    receipt = f"/payments/{order.payment.public_id}/"
    html = client.get(receipt).content.decode()
    assert 'href="/catalog/MX/telcel/?phone=%2B525512345678"' in html
    response = client.post(
        "/recipients/save/",
        {"name": "Mamá", "phone_number": "+525512345678", "operator": "MX/telcel", "next": receipt},
    )
    assert response["Location"] == receipt
    saved = SavedRecipient.objects.get()
    assert saved.name == "Mamá" and saved.operator == telcel and saved.account == user.account
    assert "Top up Mamá again" in client.get(receipt).content.decode()
    home = client.get("/").content.decode()
    assert 'data-testid="saved-recipient"' in home and "Mamá" in home
    assert 'href="/catalog/MX/telcel/?phone=%2B525512345678"' in home
    history = client.get("/payments/").content.decode()
    assert 'href="/catalog/MX/telcel/?phone=%2B525512345678"' in history
    assert_ledger_balanced()


def test_saving_again_renames_and_bad_input_changes_nothing(client, telcel):
    user = UserFactory()
    client.force_login(user)
    client.post("/recipients/save/", {"name": "Ana", "phone_number": "+525512345678"})
    client.post("/recipients/save/", {"name": "Ana María", "phone_number": "+52 55 1234 5678"})
    assert list(SavedRecipient.objects.values_list("name", flat=True)) == ["Ana María"]
    for bad in (
        {"name": "  ", "phone_number": "+525512345678"},
        {"name": "X", "phone_number": "5512345678"},
        {"name": "X", "phone_number": "+52abc"},
    ):
        response = client.post("/recipients/save/", bad, follow=True)
        assert response.status_code == 200
    assert SavedRecipient.objects.count() == 1
    off_site = client.post(
        "/recipients/save/",
        {"name": "Y", "phone_number": "+525512345679", "next": "https://evil.example/"},
    )
    assert off_site["Location"] == "/recipients/"


def test_recipients_are_private_to_their_account(client, telcel):
    owner, other = UserFactory(), UserFactory()
    client.force_login(owner)
    client.post("/recipients/save/", {"name": "Ana", "phone_number": "+525512345678"})
    saved = SavedRecipient.objects.get()
    client.force_login(other)
    assert 'data-testid="saved-recipient"' not in client.get("/recipients/").content.decode()
    assert 'data-testid="saved-recipient"' not in client.get("/").content.decode()
    assert client.post(f"/recipients/{saved.public_id}/delete/").status_code == 404
    client.force_login(owner)
    assert client.post(f"/recipients/{saved.public_id}/delete/").status_code == 302
    assert not SavedRecipient.objects.exists()


def test_saved_recipients_need_a_login(client):
    assert client.get("/recipients/")["Location"].startswith("/accounts/login/")
    response = client.post("/recipients/save/", {"name": "A", "phone_number": "+525512345678"})
    assert response.status_code == 302 and not SavedRecipient.objects.exists()
