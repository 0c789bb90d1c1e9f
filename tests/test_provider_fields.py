"""Extra fields through each provider's fake, over real HTTP (contract section 17, "Extra
fields", "Sync"): what a sync makes of a product that needs more than the number, what each
provider is sent under its own names, and how it refuses a top-up that lacks them."""

from dataclasses import replace
from decimal import Decimal

import pytest

from catalog.services import fx_rate_set
from tests.factories import OperatorFactory, make_country
from tests.fakes.ding import FakeDing
from tests.fakes.ding import fields_product as ding_fields_product
from tests.fakes.dtone import (
    FakeDTOne,
    default_products,
    fixed_product,
)
from tests.fakes.dtone import (
    fields_product as dtone_fields_product,
)
from tests.fakes.reloadly import FakeReloadly, default_operators, nauta_operator
from upstreams.adapters import PermanentError, TopupRequest, adapter_for
from upstreams.models import Route, SkippedOffer
from upstreams.services import catalog_sync, provider_create

pytestmark = pytest.mark.django_db

NUMBER = "+525512345678"
SENDER = {"senderName": "Ana María López", "senderPhone": "+14155550123"}


def topup(reference: str, route: Route, **values) -> TopupRequest:
    """The top-up the processor would send by ``route`` (``request_for``'s fields)."""
    request = TopupRequest(
        reference=reference,
        recipient_number=NUMBER,
        country="MX",
        operator_id=route.upstream_operator.upstream_id,
        product_id=route.product.public_id,
        amount=route.product.local_amount or Decimal("0"),
        currency=route.product.local_currency,
        sku=route.sku,
        send_value=route.send_value,
        send_currency=route.send_currency,
        field_names=dict(route.field_names),
    )
    return replace(request, **values)


@pytest.fixture
def mexico():
    fx_rate_set(base_currency="EUR", quote_currency="USD", rate=Decimal("1.10"))
    return OperatorFactory(slug="telcel", name="Telcel")


# -- Reloadly ------------------------------------------------------------------------------
@pytest.fixture
def reloadly():
    server = FakeReloadly(operators=[*default_operators(), nauta_operator()]).start()
    yield server
    server.stop()


@pytest.fixture
def nauta(reloadly):
    cuba = make_country("CU", "Cuba", "+53", "CUP")
    operator = OperatorFactory(country=cuba, slug="nauta", name="Nauta")
    row = provider_create(
        name="reloadly-f",
        kind="reloadly",
        base_url=reloadly.url,
        auth_url=reloadly.url,
        client_id="id",
        client_secret="secret",
    )
    catalog_sync(provider=row, countries=["CU"])
    return Route.objects.get(provider=row, product__operator=operator, product__local_amount=1200)


def test_reloadly_nauta_cuba_needs_the_recipients_email_on_its_routes_and_products(nauta):
    assert nauta.required_fields == ["recipientEmail"]
    assert nauta.product.required_fields == ["recipientEmail"]
    assert Route.objects.filter(provider=nauta.provider, active=True).count() == 2
    assert not Route.objects.filter(provider=nauta.provider).exclude(
        required_fields=["recipientEmail"]
    )


def test_reloadly_is_sent_the_senders_phone_and_the_recipients_email(reloadly, nauta):
    fields = {**SENDER, "recipientEmail": "pedro@nauta.com.cu"}
    sent = adapter_for(nauta.provider).send(
        topup("rch_nauta_1", nauta, recipient_number="+5352123456", country="CU", fields=fields)
    )
    body = reloadly.received["rch_nauta_1"]
    assert body["recipientEmail"] == "pedro@nauta.com.cu"
    assert body["senderPhone"] == {"countryCode": "US", "number": "4155550123"}
    assert "senderName" not in body  # Reloadly takes no sender's name
    assert sent.raw["recipientEmail"] == "pedro@nauta.com.cu"


def test_reloadly_refuses_a_nauta_top_up_without_the_email_and_makes_nothing(reloadly, nauta):
    request = topup("rch_nauta_2", nauta, recipient_number="+5352123456", country="CU")
    with pytest.raises(PermanentError) as refused:
        adapter_for(nauta.provider).send(request)
    assert refused.value.code == "invalid_recipient_email"
    assert refused.value.raw["path"] == "/topups"
    assert "recipientEmail" not in reloadly.received["rch_nauta_2"]
    assert "senderPhone" not in reloadly.received["rch_nauta_2"]
    assert "rch_nauta_2" not in reloadly.topups


# -- DT One --------------------------------------------------------------------------------
@pytest.fixture
def dtone():
    unsendable = fixed_product(
        id=30091,
        operator_id=1450,
        operator_name="Telcel",
        country_iso="MEX",
        country_name="Mexico",
        unit="MXN",
        amount=300,
        wholesale=16.2,
        fee=0.1,
        required_sender_fields=[["first_name", "middle_name"], ["nationality_country_iso_code"]],
    )
    products = [*default_products(), dtone_fields_product(), unsendable]
    server = FakeDTOne(products=products).start()
    yield server
    server.stop()


@pytest.fixture
def dtone_row(dtone):
    return provider_create(
        name="dtone-f",
        kind="dtone",
        base_url=dtone.url,
        api_key=dtone.api_key,
        api_secret=dtone.api_secret,
        currency="USD",
    )


def test_dtone_products_needing_fields_we_carry_are_sold_and_others_stay_skipped(mexico, dtone_row):
    result = catalog_sync(provider=dtone_row, countries=["MX"])
    route = Route.objects.get(provider=dtone_row, sku="30090")
    assert route.required_fields == ["senderName", "senderPhone", "recipientName"]
    assert route.product.required_fields == ["senderName", "senderPhone", "recipientName"]
    assert route.product.local_amount == Decimal("500.00")
    # The products that need nothing more ask for nothing.
    plain = Route.objects.get(provider=dtone_row, sku="30002")
    assert (plain.required_fields, plain.product.required_fields) == ([], [])
    skipped = SkippedOffer.objects.get(provider=dtone_row)
    assert skipped.upstream_product_id == "30091"
    assert skipped.reason == (
        "needs required_sender_fields we cannot send: "
        "first_name+middle_name or nationality_country_iso_code"
    )
    assert result.skipped == 1


def test_dtone_is_sent_the_sender_and_beneficiary_as_dvs_names_them(mexico, dtone, dtone_row):
    catalog_sync(provider=dtone_row, countries=["MX"])
    route = Route.objects.get(provider=dtone_row, sku="30090")
    fields = {**SENDER, "recipientName": "Pedro"}
    sent = adapter_for(dtone_row).send(topup("rch_dt_fields", route, fields=fields))
    assert sent.status == "delivered"
    body = dtone.bodies[-1]
    assert body["sender"] == {
        "first_name": "Ana María",
        "last_name": "López",
        "mobile_number": "+14155550123",
    }
    # One word is both names (DVS wants each non-empty); the recipient's number goes along.
    assert body["beneficiary"] == {
        "first_name": "Pedro",
        "last_name": "Pedro",
        "mobile_number": NUMBER,
    }
    assert dtone.transactions["rch_dt_fields"]["sender"] == body["sender"]


def test_dtone_refuses_a_top_up_missing_a_required_party_field(mexico, dtone, dtone_row):
    catalog_sync(provider=dtone_row, countries=["MX"])
    route = Route.objects.get(provider=dtone_row, sku="30090")
    request = topup("rch_dt_nofields", route, fields={"senderName": "Ana López"})
    with pytest.raises(PermanentError) as refused:
        adapter_for(dtone_row).send(request)
    assert refused.value.code == "bad_request"  # DVS's 1000400, 400
    assert refused.value.raw == {"errors": [{"code": 1000400, "message": "Bad Request"}]}
    assert dtone.bodies[-1]["sender"] == {"first_name": "Ana", "last_name": "López"}
    assert "beneficiary" not in dtone.bodies[-1]
    assert "rch_dt_nofields" not in dtone.transactions


def test_dtone_without_fields_sends_no_parties(mexico, dtone, dtone_row):
    catalog_sync(provider=dtone_row, countries=["MX"])
    adapter_for(dtone_row).send(topup("rch_dt_plain", Route.objects.get(sku="30002")))
    assert "sender" not in dtone.bodies[-1]
    assert "beneficiary" not in dtone.bodies[-1]


# -- Ding ----------------------------------------------------------------------------------
@pytest.fixture
def ding():
    server = FakeDing().start()
    server.add_product(ding_fields_product())
    yield server
    server.stop()


@pytest.fixture
def ding_row(ding):
    return provider_create(
        name="ding-f", kind="ding", base_url=ding.url, api_key=ding.api_key, currency="USD"
    )


def test_ding_mandatory_settings_become_required_fields_under_dings_names(mexico, ding_row):
    catalog_sync(provider=ding_row, countries=["MX"])
    route = Route.objects.get(provider=ding_row, sku="MX_TL_TopUp_500_Sender")
    assert route.required_fields == ["senderName"]  # RecipientEmail is optional
    assert route.field_names == {"senderName": "SenderName", "recipientEmail": "RecipientEmail"}
    assert route.product.required_fields == ["senderName"]


def test_ding_mandatory_setting_we_cannot_fill_is_skipped(mexico, ding, ding_row):
    item = ding_fields_product()
    item["SkuCode"] = "MX_TL_TopUp_500_Id"
    item["SettingDefinitions"] = [
        {"Name": "SenderIdNumber", "Description": "ID", "IsMandatory": True}
    ]
    ding.add_product(item)
    catalog_sync(provider=ding_row, countries=["MX"])
    skipped = SkippedOffer.objects.get(provider=ding_row)
    assert skipped.upstream_product_id == "MX_TL_TopUp_500_Id"
    assert skipped.reason == "needs mandatory settings we cannot send: SenderIdNumber"


def test_ding_is_sent_the_settings_the_product_names(mexico, ding, ding_row):
    catalog_sync(provider=ding_row, countries=["MX"])
    route = Route.objects.get(provider=ding_row, sku="MX_TL_TopUp_500_Sender")
    fields = {**SENDER, "recipientEmail": "pedro@example.com"}
    sent = adapter_for(ding_row).send(topup("rch_ding_fields", route, fields=fields))
    assert sent.status == "delivered"
    # senderPhone is not a setting of this product: it is not sent.
    assert ding.received["rch_ding_fields"]["Settings"] == [
        {"Name": "SenderName", "Value": "Ana María López"},
        {"Name": "RecipientEmail", "Value": "pedro@example.com"},
    ]


def test_ding_refuses_a_transfer_missing_a_mandatory_setting(mexico, ding, ding_row):
    catalog_sync(provider=ding_row, countries=["MX"])
    route = Route.objects.get(provider=ding_row, sku="MX_TL_TopUp_500_Sender")
    with pytest.raises(PermanentError) as refused:
        adapter_for(ding_row).send(topup("rch_ding_nofields", route))
    assert refused.value.code == "parameter_missing"
    missing = {"Code": "ParameterMissing", "Context": "SenderName"}
    assert refused.value.raw["ErrorCodes"] == [missing]
    assert "Settings" not in ding.received["rch_ding_nofields"]
    assert "rch_ding_nofields" not in ding.transfers


# -- a product sold by several providers ---------------------------------------------------
def test_a_product_needs_what_any_of_its_active_routes_needs(mexico, dtone_row, ding_row):
    catalog_sync(provider=ding_row, countries=["MX"])
    ding_route = Route.objects.get(provider=ding_row, sku="MX_TL_TopUp_500_Sender")
    assert ding_route.product.required_fields == ["senderName"]
    catalog_sync(provider=dtone_row, countries=["MX"])
    dtone_route = Route.objects.get(provider=dtone_row, sku="30090")
    assert dtone_route.product == ding_route.product
    product = dtone_route.product
    product.refresh_from_db()
    assert product.required_fields == ["senderName", "senderPhone", "recipientName"]
    # The DT One route gone, the product needs only what Ding's needs.
    Route.objects.filter(pk=dtone_route.pk).update(active=False)
    catalog_sync(provider=ding_row, countries=["MX"])
    product.refresh_from_db()
    assert product.required_fields == ["senderName"]
