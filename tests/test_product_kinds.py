"""Products of every kind (contract section 17, "Kinds" and "Sync"): the catalog's `type`
filter takes airtime, data, bundle and pin; data, bundles and PINs carry `benefits` of a
checked shape and a validity; each provider's catalog reads them from its fake as its
reference shapes them; a sync keeps them apart from the airtime of the same amount; the site
shows them as a person reads them."""

from decimal import Decimal

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse
from rest_framework.test import APIClient

from catalog.benefits import benefit, benefits_clean, benefits_line, benefits_signature
from catalog.models import Product
from catalog.services import fx_rate_set, product_upsert
from tests.factories import OperatorFactory, ProductFactory, UserFactory
from tests.fakes.ding import FakeDing
from tests.fakes.ding import kinds_products as ding_kinds
from tests.fakes.dtone import FakeDTOne, default_products, fixed_product
from tests.fakes.dtone import kinds_products as dtone_kinds
from tests.fakes.reloadly import FakeReloadly, default_operators, kinds_operators
from tests.helpers import assert_problem, bearer, second_factor_login
from upstreams.adapters import adapter_for
from upstreams.models import Route
from upstreams.services import catalog_sync, provider_create, provider_operator_map

pytestmark = pytest.mark.django_db

PRODUCTS = "/api/v1/catalog/recharge-products"
BUNDLE = [
    benefit("data", "1.5", "GB", "1.5GB"),
    benefit("voice", "100", "min", "100 min"),
    benefit("sms", "50", "SMS", "50 SMS"),
]


@pytest.fixture
def telcel():
    return OperatorFactory(slug="telcel", name="Telcel")


@pytest.fixture
def kinds(telcel):
    """One product of each kind, all 100 MXN of Telcel."""
    return {
        kind: ProductFactory(
            operator=telcel,
            sku=f"KIND-{kind}",
            name=f"Telcel {kind}",
            product_type=kind,
            benefits=[] if kind == "airtime" else BUNDLE[: 1 if kind == "data" else 3],
            validity_days=None if kind == "airtime" else 30,
        )
        for kind in ("airtime", "data", "bundle", "pin")
    }


# -- the catalog API ----------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["airtime", "data", "bundle", "pin"])
def test_the_type_filter_takes_every_kind(user_api, kinds, kind):
    response = user_api.get(PRODUCTS, {"type": kind})
    assert response.status_code == 200, response.content
    assert [item["id"] for item in response.json()["results"]] == [kinds[kind].public_id]
    assert response.json()["results"][0]["type"] == kind


def test_an_unknown_type_is_400_naming_type(user_api, kinds):
    body = assert_problem(user_api.get(PRODUCTS, {"type": "voucher"}), 400, "validation_error")
    assert [(e["field"], e["code"]) for e in body["errors"]] == [("type", "invalid_choice")]


def test_a_bundle_shows_its_benefits_and_validity_and_airtime_an_empty_list(user_api, kinds):
    shown = {item["type"]: item for item in user_api.get(PRODUCTS).json()["results"]}
    assert shown["bundle"]["benefits"] == [
        {"kind": "data", "amount": "1.5", "unit": "GB", "text": "1.5GB"},
        {"kind": "voice", "amount": "100", "unit": "min", "text": "100 min"},
        {"kind": "sms", "amount": "50", "unit": "SMS", "text": "50 SMS"},
    ]
    assert (shown["bundle"]["validity"], shown["bundle"]["validityDays"]) == ("P30D", 30)
    assert shown["airtime"]["benefits"] == []
    assert shown["airtime"]["validity"] is None


def test_the_admin_api_shows_type_and_benefits(staff, kinds):
    client = APIClient()
    client.credentials(**bearer(staff))
    rows = client.get("/api/v1/admin/products").json()["results"]
    bundle = next(row for row in rows if row["productType"] == "bundle")
    assert bundle["benefits"][0] == {"kind": "data", "amount": "1.5", "unit": "GB", "text": "1.5GB"}
    assert bundle["validity"] == "P30D"


# -- the shape of benefits ----------------------------------------------------------------


def test_benefits_are_cleaned_to_the_catalog_shape():
    assert benefits_clean([{"kind": "data", "amount": "5.0", "unit": " GB ", "text": " 5GB "}]) == [
        {"kind": "data", "amount": "5", "unit": "GB", "text": "5GB"}
    ]
    assert (
        benefits_clean([{"kind": "sms", "amount": None, "unit": "", "text": ""}])[0]["amount"]
        is None
    )
    assert benefits_clean(None) == []


@pytest.mark.parametrize(
    "wrong",
    [
        {"kind": "data"},  # keys missing
        {"kind": "data", "amount": "5", "unit": "GB", "text": "", "extra": 1},
        {"kind": "minutes", "amount": "5", "unit": "min", "text": ""},
        {"kind": "data", "amount": "-1", "unit": "GB", "text": ""},
        {"kind": "data", "amount": "lots", "unit": "GB", "text": ""},
        {"kind": "data", "amount": 1.5, "unit": "GB", "text": ""},  # a float, not a string
        {"kind": "data", "amount": "5", "unit": "G" * 21, "text": ""},
        "5 GB",
    ],
)
def test_a_product_with_benefits_of_another_shape_is_refused(telcel, wrong):
    product = ProductFactory.build(operator=telcel, country=telcel.country, benefits=[wrong])
    with pytest.raises(ValidationError) as refused:
        product.full_clean(exclude=["operator", "country"], validate_unique=False)
    assert "benefits" in refused.value.message_dict
    with pytest.raises(ValidationError):
        product_upsert(
            sku="BAD",
            operator=telcel,
            name="Bad",
            local_amount=Decimal("10"),
            local_currency="MXN",
            retail_price=Decimal("1"),
            product_type="data",
            benefits=[wrong],
        )
    assert not Product.objects.filter(sku="BAD").exists()


def test_benefits_are_not_a_list_is_refused(telcel):
    product = ProductFactory.build(operator=telcel, country=telcel.country, benefits={"a": 1})
    with pytest.raises(ValidationError):
        product.full_clean(exclude=["operator", "country"], validate_unique=False)


# -- each provider's catalog, from its fake -----------------------------------------------


def _kinds_of(offers, **match):
    return {
        (o.product_type, o.local_amount): (list(o.benefits), o.validity_days)
        for o in offers
        if all(getattr(o.operator, k) == v for k, v in match.items())
    }


def test_reloadly_reads_data_bundle_and_pin_operators_and_their_descriptions():
    fake = FakeReloadly(operators=[*default_operators(), *kinds_operators()]).start()
    try:
        row = provider_create(
            name="reloadly-k",
            kind="reloadly",
            base_url=fake.url,
            auth_url=fake.url,
            client_id="id",
            client_secret="secret",
        )
        catalog = adapter_for(row).catalog_read()
        read = {
            (o.operator.upstream_id, o.product_type, o.local_amount): (
                list(o.benefits),
                o.validity_days,
            )
            for o in catalog.products
        }
        assert not [s for s in catalog.skipped if s.operator.upstream_id == "3413"]
        assert read["3411", "data", Decimal("100")] == (
            [benefit("data", "2", "GB", "2GB")],
            15,
        )  # localFixedAmountsDescriptions "Internet 2GB, vigencia 15 días"
        assert read["3411", "data", Decimal("150")] == ([benefit("data", "3.5", "GB", "3.5GB")], 30)
        assert read["3412", "bundle", Decimal("200")] == (
            [
                benefit("data", "5", "GB", "5GB"),
                benefit("voice", "100", "min", "100 min"),
                benefit("sms", "50", "SMS", "50 SMS"),
            ],
            30,
        )  # fixedAmountsDescriptions, keyed by the sender amount "9.76"
        assert read["3413", "pin", Decimal("100")] == ([benefit("credit", "100", "MXN")], None)
        assert read["341", "airtime", Decimal("100")] == ([], None)
        assert read["622", "data", Decimal("5000")] == ([], None)  # a data plan without words
    finally:
        fake.stop()


def test_reloadly_per_country_catalog_asks_for_pin_operators_too():
    fake = FakeReloadly(operators=kinds_operators()).start()
    try:
        row = provider_create(
            name="reloadly-k2",
            kind="reloadly",
            base_url=fake.url,
            auth_url=fake.url,
            client_id="id",
            client_secret="secret",
        )
        kinds = {o.product_type for o in adapter_for(row).catalog(countries=["MX"])}
        assert kinds == {"data", "bundle", "pin"}
    finally:
        fake.stop()


def test_dtone_reads_benefits_validity_and_pin_purchases():
    fake = FakeDTOne(products=[*default_products(), *dtone_kinds()]).start()
    try:
        row = provider_create(
            name="dtone-k", kind="dtone", base_url=fake.url, api_key="k", api_secret="s"
        )
        fake.api_key, fake.api_secret = "k", "s"
        offers = adapter_for(row).catalog(countries=["MX"])
        by_sku = {o.sku: o for o in offers}
        data, bundle, pin = by_sku["30101"], by_sku["30102"], by_sku["30103"]
        # base 2 GB + promotion_bonus 1 GB: total_excluding_tax; validity 1 WEEK.
        assert (data.product_type, list(data.benefits), data.validity_days) == (
            "data",
            [benefit("data", "3", "GB")],
            7,
        )
        assert bundle.product_type == "bundle"
        assert list(bundle.benefits) == [
            benefit("data", "5", "GB"),
            benefit("voice", "100", "min"),
            benefit("sms", None, "SMS"),  # base -1: unlimited
        ]
        assert bundle.validity_days == 30
        # FIXED_VALUE_PIN_PURCHASE: a pin of 100 MXN credit, valid as its pin says (6 MONTH).
        assert (pin.product_type, pin.local_amount, pin.validity_days) == ("pin", 100, 180)
        assert list(pin.benefits) == [benefit("credit", "100", "MXN")]
        assert (by_sku["30002"].product_type, by_sku["30002"].benefits) == ("airtime", ())
    finally:
        fake.stop()


def test_ding_reads_benefits_display_texts_validity_and_read_receipt_pins():
    fake = FakeDing().start()
    try:
        for item in ding_kinds():
            fake.add_product(item)
        row = provider_create(name="ding-k", kind="ding", base_url=fake.url, api_key=fake.api_key)
        by_sku = {o.sku: o for o in adapter_for(row).catalog(countries=["MX"])}
        assert (by_sku["MX_TL_Data_5GB"].product_type, list(by_sku["MX_TL_Data_5GB"].benefits)) == (
            "data",
            [benefit("data", "5", "GB", "5GB")],
        )
        assert by_sku["MX_TL_Data_5GB"].validity_days == 15  # ValidityPeriodIso P15D
        bundle = by_sku["MX_TL_Bundle_250"]
        assert (bundle.product_type, bundle.validity_days) == ("bundle", 30)  # P1M
        assert list(bundle.benefits) == [
            benefit("data", "6", "GB", "6GB"),
            benefit("voice", "200", "min", "200 Minutes"),
        ]
        pin = by_sku["MX_TL_Pin_100"]  # RedemptionMechanism ReadReceipt
        assert (pin.product_type, list(pin.benefits), pin.validity_days) == (
            "pin",
            [benefit("credit", "100", "MXN")],
            180,
        )
        assert list(by_sku["MX_TL_Data_3GB"].benefits) == [benefit("data", "3", "GB", "3GB")]
        assert (by_sku["MX_TL_TopUp_100"].benefits, by_sku["MX_TL_TopUp_100"].validity_days) == (
            (),
            None,
        )
    finally:
        fake.stop()


# -- the sync -------------------------------------------------------------------------------


def test_sync_makes_data_bundle_and_pin_products_apart_from_airtime_of_the_same_amount(telcel):
    fx_rate_set(base_currency="EUR", quote_currency="USD", rate=Decimal("1.10"))
    fake = FakeDTOne(products=[*default_products(), *dtone_kinds()]).start()
    try:
        row = provider_create(
            name="dtone-s", kind="dtone", base_url=fake.url, api_key="k", api_secret="s"
        )
        fake.api_key, fake.api_secret = "k", "s"
        catalog_sync(provider=row)
        products = Product.objects.filter(operator=telcel)
        by_amount: dict[Decimal, set[str]] = {}
        for product in products:
            by_amount.setdefault(product.local_amount, set()).add(product.product_type)
        assert by_amount[Decimal("100.00")] == {"airtime", "pin"}
        assert by_amount[Decimal("150.00")] == {"data", "bundle"}
        bundle = products.get(product_type="bundle")
        assert bundle.benefits == [
            benefit("data", "5", "GB"),
            benefit("voice", "100", "min"),
            benefit("sms", None, "SMS"),
        ]
        assert bundle.validity_days == 30
        assert Route.objects.get(product=bundle).sku == "30102"
        pin = products.get(product_type="pin")
        assert (pin.name, pin.validity_days) == ("Telcel PIN 100 MXN", 180)
        assert Route.objects.get(product=pin).sku == "30103"
        airtime = products.get(product_type="airtime", local_amount=100)
        assert (airtime.benefits, Route.objects.get(product=airtime).sku) == ([], "30002")

        # The provider describes the bundle anew: the next sync says so on the product.
        for item in fake.products:
            if item["id"] == 30102:
                item["benefits"][0]["amount"].update(
                    base=8, total_excluding_tax=8, total_including_tax=8
                )
        catalog_sync(provider=row)
        bundle.refresh_from_db()
        assert bundle.benefits[0] == benefit("data", "8", "GB")
    finally:
        fake.stop()


def test_a_benefits_signature_reads_what_they_give_not_their_order_or_words():
    three_gb = [benefit("data", "3", "GB", "3GB Data"), benefit("sms", None, "SMS")]
    same = [benefit("sms", None, ""), benefit("data", "3.0", "gb")]  # no words, another order
    assert benefits_signature(three_gb) == benefits_signature(same)
    assert len(benefits_signature(three_gb)) == 8
    assert benefits_signature(three_gb) != benefits_signature([benefit("data", "5", "GB")])
    assert benefits_signature([benefit("data", "3", "GB")]) != benefits_signature(
        [benefit("data", "3", "GB"), benefit("voice", "100", "min")]
    )
    assert benefits_signature([benefit("other", None, "", "Netflix")]) != benefits_signature(
        [benefit("other", None, "", "Spotify")]
    )
    assert benefits_signature([]) == benefits_signature(None) == ""


def test_sync_keeps_two_plans_of_one_operator_kind_and_amount_apart_when_they_give_different_things(
    telcel,
):
    """DT One sells Telcel data of 150 MXN twice (3 GB, and a cheaper 5 GB): two products,
    each sold by its own route, not one sold by the cheaper; Ding's "3GB Data" of 150 MXN is
    the same plan as DT One's 3 GB (words aside): one product, two routes."""
    fx_rate_set(base_currency="EUR", quote_currency="USD", rate=Decimal("1.10"))
    five_gb = fixed_product(
        id=30105,
        amount=150,
        wholesale=7.90,
        fee=0.10,
        subservice=(13, "Data"),
        data_gb=5,
        operator_id=1450,
        operator_name="Telcel",
        country_iso="MEX",
        country_name="Mexico",
        unit="MXN",
    )
    dtone = FakeDTOne(products=[*default_products(), five_gb]).start()
    ding = FakeDing().start()
    try:
        dtone_row = provider_create(
            name="dtone-p", kind="dtone", base_url=dtone.url, api_key="k", api_secret="s"
        )
        dtone.api_key, dtone.api_secret = "k", "s"
        ding_row = provider_create(
            name="ding-p", kind="ding", base_url=ding.url, api_key=ding.api_key, currency="USD"
        )
        catalog_sync(provider=dtone_row)
        catalog_sync(provider=ding_row)
        plans = Product.objects.filter(operator=telcel, product_type="data", local_amount=150)
        assert plans.count() == 2
        by_gb = {plan.benefits[0]["amount"]: plan for plan in plans}
        assert set(by_gb) == {"3", "5"}
        for gb, sku in (("3", "30004"), ("5", "30105")):
            plan = by_gb[gb]
            assert plan.sku.endswith("-" + benefits_signature(plan.benefits))
            assert Route.objects.get(product=plan, provider=dtone_row).sku == sku
        assert by_gb["3"].sku != by_gb["5"].sku
        assert Route.objects.get(provider=ding_row, product=by_gb["3"]).sku == "MX_TL_Data_3GB"
        assert not Route.objects.filter(provider=ding_row, product=by_gb["5"]).exists()

        # Synced again, nothing moves: the same two products, the same routes.
        skus = sorted(plans.values_list("sku", flat=True))
        again = catalog_sync(provider=dtone_row)
        assert (again.created, again.updated, again.removed) == (0, 0, 0)
        assert sorted(plans.values_list("sku", flat=True)) == skus
    finally:
        dtone.stop()
        ding.stop()


def test_sync_of_reloadly_maps_kind_operators_to_the_catalog_operator(telcel):
    fake = FakeReloadly(operators=[*default_operators(), *kinds_operators()]).start()
    try:
        row = provider_create(
            name="reloadly-s",
            kind="reloadly",
            base_url=fake.url,
            auth_url=fake.url,
            client_id="id",
            client_secret="secret",
        )
        catalog_sync(provider=row)  # "Telcel Mexico Data" is not "Telcel": staff map it
        for upstream in ("3411", "3412", "3413"):
            provider_operator_map(provider=row, upstream_id=upstream, operator_id=telcel.public_id)
        catalog_sync(provider=row)
        at_100 = Product.objects.filter(operator=telcel, local_amount=100)
        assert sorted(at_100.values_list("product_type", flat=True)) == ["airtime", "data", "pin"]
        data = at_100.get(product_type="data")
        assert (data.benefits, data.validity_days) == ([benefit("data", "2", "GB", "2GB")], 15)
        bundle = Product.objects.get(operator=telcel, product_type="bundle")
        assert bundle.local_amount == 200 and len(bundle.benefits) == 3
    finally:
        fake.stop()


# -- the site -------------------------------------------------------------------------------


def test_benefits_read_as_a_person_reads_them_in_each_language():
    from django.utils import translation

    with translation.override("en"):
        assert benefits_line(BUNDLE, 30) == "1.5 GB · 100 min · 50 SMS · 30 days"
        assert benefits_line([benefit("data", "5", "GB")], 1) == "5 GB · 1 day"
        assert benefits_line([benefit("sms", None, "SMS")], None) == "Unlimited SMS"
    with translation.override("es"):
        assert benefits_line(BUNDLE, 30) == "1,5 GB · 100 min · 50 SMS · 30 días"
    with translation.override("fr"):
        assert benefits_line(BUNDLE, 30) == "1,5 Go · 100 min · 50 SMS · 30 jours"


def test_the_operator_page_shows_bundles_and_pins_as_people_read_them(client, kinds):
    english = client.get("/catalog/MX/telcel/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    # A line that wraps breaks after a "·" only: no-break spaces hold each part together.
    assert "1.5\u00a0GB\u00a0· 100\u00a0min\u00a0· 50\u00a0SMS\u00a0· 30\u00a0days" in english
    english = english.replace("\u00a0", " ")
    assert "<h2>Bundles</h2>" in english and "<h2>PINs</h2>" in english
    assert "1.5 GB · 100 min · 50 SMS · 30 days" in english
    assert "1.5 GB · 30 days" in english  # the data product
    spanish = client.get("/catalog/MX/telcel/", HTTP_ACCEPT_LANGUAGE="es").content.decode()
    spanish = spanish.replace("\u00a0", " ")
    assert "<h2>Paquetes</h2>" in spanish and "<h2>PIN</h2>" in spanish
    assert "1,5 GB · 100 min · 50 SMS · 30 días" in spanish


def test_a_country_page_still_lists_the_operator(client, kinds):
    assert client.get("/catalog/MX/").status_code == 200


# -- the back office ------------------------------------------------------------------------


def test_the_back_office_edits_a_products_type_and_benefits(client, telcel):
    second_factor_login(client, UserFactory(is_staff=True, is_superuser=True))
    form = {
        "sku": "ADMIN-BUNDLE",
        "operator": telcel.pk,
        "product_type": "bundle",
        "denomination": "fixed",
        "active": "on",
        "name": "Telcel bundle",
        "local_amount": "150",
        "local_currency": "MXN",
        "retail_price": "7.65",
        "retail_currency": "EUR",
        "validity_days": "30",
        "benefits": '[{"kind": "data", "amount": "5", "unit": "GB", "text": ""}]',
    }
    wrong = {**form, "benefits": '[{"kind": "minutes", "amount": "5", "unit": "", "text": ""}]'}
    response = client.post(reverse("admin:catalog_product_add"), wrong)
    assert response.status_code == 200
    assert "benefits" in response.context["adminform"].form.errors
    response = client.post(reverse("admin:catalog_product_add"), form)
    assert response.status_code == 302, response.content.decode()[:2000]
    product = Product.objects.get(sku="ADMIN-BUNDLE")
    assert (product.product_type, product.benefits) == ("bundle", [benefit("data", "5", "GB")])


# -- reading providers' words ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "benefits", "days"),
    [
        ("Internet 2GB, vigencia 15 días", [("data", "2", "GB")], 15),
        ("500MB + 50 SMS, 1 week", [("data", "500", "MB"), ("sms", "50", "SMS")], 7),
        ("Unlimited calls + 1,5GB por 1 mes", [("voice", None, ""), ("data", "1.5", "GB")], 30),
        ("Llamadas ilimitadas 24 hrs", [("voice", None, "")], 1),
        ("100 MXN airtime", [], None),
    ],
)
def test_providers_words_are_read_as_benefits_and_validity(text, benefits, days):
    from upstreams.adapters.kinds import text_benefits, text_validity_days

    assert [(b["kind"], b["amount"], b["unit"]) for b in text_benefits(text)] == benefits
    assert text_validity_days(text) == days


@pytest.mark.parametrize(
    ("iso", "days"),
    [("P30D", 30), ("P1M", 30), ("P2W", 14), ("PT24H", 1), ("PT36H", 2), ("P1Y", 365), ("", None)],
)
def test_iso_durations_are_read_in_days(iso, days):
    from upstreams.adapters.kinds import iso_validity_days

    assert iso_validity_days(iso) == days
