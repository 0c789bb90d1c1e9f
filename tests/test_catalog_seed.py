"""seed_demo: real countries and operators, 100+ products, promotions, FX, users; run twice."""

from datetime import timedelta
from decimal import Decimal
from io import StringIO

import pytest
import time_machine
from django.conf import settings
from django.core.management import call_command
from django.utils import timezone

from accounts.models import Account, User
from catalog import selectors
from catalog.demo import RESELLER_EMAIL, RESELLER_PASSWORD, STAFF_EMAIL, STAFF_PASSWORD
from catalog.models import Country, FxRate, Operator, Product, Promotion

pytestmark = pytest.mark.django_db


def seed() -> str:
    out = StringIO()
    call_command("seed_demo", stdout=out)
    return out.getvalue()


def snapshot() -> dict:
    promotion_products = Promotion.products.through.objects.order_by("pk")
    return {
        "countries": list(Country.objects.order_by("pk").values()),
        "operators": list(Operator.objects.order_by("pk").values()),
        "products": list(Product.objects.order_by("pk").values()),
        "promotions": list(Promotion.objects.order_by("pk").values()),
        "promotion_products": list(promotion_products.values()),
        "fx": list(FxRate.objects.order_by("pk").values()),
        "users": list(User.objects.order_by("pk").values()),
        "accounts": list(Account.objects.order_by("pk").values()),
    }


def test_seed_demo_loads_real_countries_with_their_real_operators():
    seed()
    operators = {(op.country_id, op.name) for op in Operator.objects.all()}
    for country, names in {
        "CU": ["Cubacel"],
        "MX": ["Telcel", "AT&T", "Movistar"],
        "NG": ["MTN", "Airtel", "Glo"],
        "IN": ["Airtel", "Jio", "Vi"],
        "PH": ["Globe", "Smart"],
        "CO": ["Claro", "Movistar", "Tigo"],
        "DO": ["Claro", "Altice"],
        "GH": ["MTN", "Telecel"],
    }.items():
        for name in names:
            assert (country, name) in operators
    assert Country.objects.count() >= 8
    assert Country.objects.get(code="MX").calling_code == "+52"


def test_seed_demo_loads_over_100_sensibly_priced_products():
    seed()
    products = list(Product.objects.select_related("operator"))
    # 194 fixed airtime and data amounts, Telcel's range, its bundle and its PIN
    # (docs/catalog.md, README).
    assert len(products) == 197
    assert {p.product_type for p in products} == {"airtime", "data", "bundle", "pin"}
    for product in products:
        assert product.retail_currency == "EUR"
        assert 0 < product.min_price <= product.max_price < 100, product
        assert product.public_id.startswith("prd_")
        assert product.country_id == product.operator.country_id
    telcel_100 = Product.objects.get(sku="DEMO-MX-TELCEL-AIR-100")
    assert telcel_100.local_amount == 100 and telcel_100.local_currency == "MXN"
    # One range product (contract section 17), priced as the fixed amounts are.
    (ranged,) = [p for p in products if p.is_range]
    assert (ranged.range_min, ranged.range_max, ranged.range_step) == (20, 1000, 10)
    assert ranged.price_at(Decimal("100")) == telcel_100.retail_price


def test_demo_prices_grow_with_the_face_value_so_a_consumer_would_believe_them():
    """Issue 17, defect 12: MTN 100, 200 and 500 NGN all cost 0.50 EUR before."""
    seed()
    mtn = [Product.objects.get(sku=f"DEMO-NG-MTN-AIR-{v}").retail_price for v in (100, 200, 500)]
    assert mtn[0] < mtn[1] < mtn[2], mtn
    for operator in Operator.objects.all():
        airtime = list(
            Product.objects.filter(operator=operator, product_type="airtime", denomination="fixed")
            .order_by("local_amount")
            .values_list("retail_price", flat=True)
        )
        assert airtime == sorted(set(airtime)), (operator, airtime)  # no two alike


def test_seed_demo_sells_one_bundle_and_one_pin_of_telcel_with_what_they_give(client):
    """Contract section 17, "Kinds": the demo shows a bundle (benefits, validity) and a PIN."""
    seed()
    kinds = Product.objects.exclude(product_type__in=["airtime", "data"])
    assert sorted(kinds.values_list("sku", flat=True)) == [
        "DEMO-MX-TELCEL-BUNDLE-150",
        "DEMO-MX-TELCEL-PIN-100",
    ]
    bundle = kinds.get(product_type="bundle")
    assert [(b["kind"], b["amount"], b["unit"]) for b in bundle.benefits] == [
        ("data", "5", "GB"),
        ("voice", "100", "min"),
        ("sms", "50", "SMS"),
    ]
    assert (bundle.name, bundle.validity_days) == ("Telcel bundle 150 MXN", 30)
    pin = kinds.get(product_type="pin")
    assert (pin.name, pin.local_amount, pin.validity_days) == ("Telcel PIN 100 MXN", 100, 180)
    assert pin.benefits == [{"kind": "credit", "amount": "100", "unit": "MXN", "text": ""}]
    html = client.get("/catalog/MX/telcel/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    html = html.replace("\u00a0", " ")  # the benefits' no-break spaces
    assert "5 GB · 100 min · 50 SMS · 30 days" in html and "Telcel PIN 100 MXN" in html
    kinds_in_order = ("Airtime", "Data bundles", "Bundles", "PINs")
    headings = [html.index(f"<h2>{words}</h2>") for words in kinds_in_order]
    assert headings == sorted(headings)  # grouped as docs/catalog.md says, PINs last
    spanish = client.get("/catalog/MX/telcel/", HTTP_ACCEPT_LANGUAGE="es").content.decode()
    assert "Paquete Telcel 150 MXN" in spanish


def test_a_data_bundle_says_what_the_recipient_gets_not_a_currency_amount(client):
    seed()
    html = client.get("/catalog/MX/telcel/").content.decode()
    bundle = Product.objects.filter(operator__slug="telcel", product_type="data").first()
    assert f'<span class="gets">{bundle.description}</span>' in html
    assert f'<span class="gets">{bundle.local_amount:g} MXN</span>' not in html


def test_the_any_amount_product_is_named_in_the_visitors_language(client):
    """The range product's name shows under "Any amount from 20 to 1,000 MXN": a Spanish or
    French page named it in English ("Telcel any amount") among translated cards."""
    seed()
    pages = {
        language: client.get("/catalog/MX/telcel/", HTTP_ACCEPT_LANGUAGE=language)
        .content.decode()
        .replace("\u00a0", " ")
        for language in ("en", "es", "fr")
    }
    assert "Telcel any amount" in pages["en"]
    assert "any amount" not in pages["es"] and "Telcel, cualquier importe" in pages["es"]
    assert "any amount" not in pages["fr"] and "Telcel, montant libre" in pages["fr"]


def test_seed_demo_ids_are_the_same_on_every_machine():
    seed()
    assert Product.objects.get(sku="DEMO-MX-TELCEL-AIR-100").public_id == (
        "prd_7fjo0zM8vpsMzMeZdBmH"
    )
    assert Operator.objects.get(country="MX", slug="telcel").public_id == (
        "opr_Vj1NAMsVck11tvLxmHNI"
    )


def test_seed_demo_has_an_active_and_a_waitlisting_scheduled_promotion():
    seed()
    now = timezone.now()
    statuses = {p.code: p.status_at(now) for p in Promotion.objects.all()}
    assert "active" in statuses.values()
    scheduled = [p for p in Promotion.objects.all() if p.status_at(now) == "scheduled"]
    assert scheduled
    promotion = scheduled[0]
    horizon = timedelta(hours=settings.WAITLIST_HORIZON_HOURS)
    assert timedelta(0) < promotion.starts_at - now <= horizon
    product = promotion.products.first()
    assert selectors.product_waitlist_promotion(product=product, at=now) == promotion
    cubacel = Product.objects.filter(operator__slug="cubacel").first()
    assert selectors.product_promotion(product=cubacel, at=now).status_at(now) == "active"
    assert selectors.product_promotion(product=cubacel, at=now).translations["es"]["name"]


def test_seed_demo_sets_fx_rates_for_eur_usd_and_gbp():
    seed()
    assert selectors.fx_rate(from_currency="EUR", to_currency="USD").rate > 1
    assert selectors.fx_rate(from_currency="GBP", to_currency="USD").rate > 1


def test_seed_demo_creates_a_staff_user_and_a_b2b_reseller_with_printed_credentials(api):
    out = seed()
    assert f"{STAFF_EMAIL} / {STAFF_PASSWORD}" in out
    assert f"{RESELLER_EMAIL} / {RESELLER_PASSWORD}" in out
    staff = User.objects.get(email=STAFF_EMAIL)
    assert staff.is_staff and staff.is_superuser
    reseller = User.objects.get(email=RESELLER_EMAIL)
    assert reseller.account.is_b2b and not reseller.is_staff
    login = api.post("/api/v1/auth/login", {"email": RESELLER_EMAIL, "password": RESELLER_PASSWORD})
    assert login.status_code == 200


def test_seed_demo_twice_changes_nothing():
    seed()
    before = snapshot()
    out = seed()
    assert snapshot() == before
    assert "Nothing to change" in out
    assert "0 created, 0 updated" in out


def test_seed_demo_later_moves_only_the_promotion_windows_that_no_longer_show():
    seed()
    ended = Promotion.objects.get(code="demo-claro-do-summer")
    with time_machine.travel(timezone.now() + timedelta(days=40)):
        seed()
        now = timezone.now()
        by_code = {p.code: p for p in Promotion.objects.all()}
        assert by_code["demo-cubacel-bonus"].status_at(now) == "active"
        assert by_code["demo-telcel-triple"].status_at(now) == "scheduled"
        assert by_code["demo-claro-do-summer"].ends_at == ended.ends_at  # still ended


def test_products_edited_away_from_the_demo_are_put_back():
    seed()
    Product.objects.filter(sku="DEMO-MX-TELCEL-AIR-100").update(retail_price="99.00")
    out = seed()
    assert "products: " in out and "1 updated" in out
    assert Product.objects.get(sku="DEMO-MX-TELCEL-AIR-100").retail_price < 99
