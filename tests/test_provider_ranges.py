"""Ranged amounts and sender-currency amounts through each provider's fake, over real HTTP
(contract section 17, "Routes for amounts", "Fixed amounts in the sender's currency", "Sync"):
what a sync makes of them, what each provider is sent for an amount, what it refuses, and the
upstream products a sync cannot sell."""

import re
from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import call_command

from catalog.services import fx_rate_set
from tests.factories import OperatorFactory
from tests.fakes.ding import FakeDing
from tests.fakes.dtone import FakeDTOne, default_products, ranged_product
from tests.fakes.reloadly import FakeReloadly, operator
from upstreams.adapters import PermanentError, TopupRequest, adapter_for
from upstreams.models import Route, SkippedOffer
from upstreams.services import catalog_sync, provider_create

pytestmark = pytest.mark.django_db

MX = ("MX", "Mexico")
NUMBER = "+525512345678"


def topup(reference: str, **fields) -> TopupRequest:
    values = {
        "reference": reference,
        "recipient_number": NUMBER,
        "country": "MX",
        "operator_id": "350",
        "product_id": "prd_1",
        "amount": Decimal("100"),
        "currency": "MXN",
        **fields,
    }
    return TopupRequest(**values)


@pytest.fixture
def mexico():
    fx_rate_set(base_currency="EUR", quote_currency="USD", rate=Decimal("1.10"))
    return {
        "telcel": OperatorFactory(slug="telcel", name="Telcel"),
        "att": OperatorFactory(slug="att", name="AT&T", carrier_names=["AT&T"]),
    }


def reloadly_operators() -> list[dict]:
    return [
        # Any 20.00 to 1000.00 MXN, at 20 MXN a euro less 5%.
        operator(350, "Telcel Mexico", MX, "MXN", rate=20, discount=5, denomination="RANGE",
                 supports_local=True, min_amount=1, max_amount=50,
                 local_min_amount=20, local_max_amount=1000),
        # Fixed amounts Reloadly takes in euros only; the recipient gets them at fx.rate.
        operator(351, "AT&T Mexico", MX, "MXN", rate=20.5, discount=4, fixed=[5, 10],
                 supports_local=False, descriptions={"5.00": "102.50 MXN airtime"}),
        operator(352, "Telcel PIN", MX, "MXN", rate=20, discount=1, fixed=[5], pin=True),
        operator(353, "Unefon Mexico", MX, "MXN", rate=20, discount=3, denomination="RANGE",
                 supports_local=False, min_amount=1, max_amount=40),
    ]  # fmt: skip


@pytest.fixture
def reloadly():
    server = FakeReloadly(operators=reloadly_operators()).start()
    yield server
    server.stop()


@pytest.fixture
def reloadly_row(reloadly):
    return provider_create(
        name="reloadly-r",
        kind="reloadly",
        base_url=reloadly.url,
        auth_url=reloadly.url,
        client_id="id",
        client_secret="secret",
    )


# -- Reloadly ------------------------------------------------------------------------------
def test_reloadly_range_operator_syncs_to_a_range_route_at_its_fx_rate_less_discount(
    mexico, reloadly_row
):
    result = catalog_sync(provider=reloadly_row)
    route = Route.objects.select_related("product").get(
        provider=reloadly_row, product__operator=mexico["telcel"]
    )
    assert route.is_range
    assert (route.min_amount, route.max_amount, route.step) == (
        Decimal("20.00"),
        Decimal("1000.00"),
        Decimal("0.01"),
    )
    assert (route.cost, route.cost_per_unit, route.cost_currency) == (
        Decimal("0"),
        Decimal("0.0475"),  # (1 - 5%) / 20
        "EUR",
    )
    assert route.cost_at(Decimal("100")) == Decimal("4.7500")
    product = route.product
    assert (product.denomination, product.local_amount, product.retail_price) == (
        "range",
        None,
        None,
    )
    assert product.sku == f"{mexico['telcel'].public_id}-airtime-range-mxn".lower()
    assert (product.range_min, product.range_max, product.range_step) == (
        Decimal("20.00"),
        Decimal("1000.00"),
        Decimal("0.01"),
    )
    assert result.skipped == 1  # the euro-only range (the PIN sells PINs)


def test_the_sync_cli_prints_the_contracts_line_and_the_skipped_offers_apart(mexico, reloadly_row):
    """Contract section 14: one line on stdout, exactly; what could not be sold on stderr."""
    out, err = StringIO(), StringIO()
    call_command("sync_provider_catalog", "--provider", reloadly_row.name, stdout=out, stderr=err)
    assert re.fullmatch(
        r"operators mapped \d+, unmapped \d+; routes created \d+, updated \d+, removed \d+\n",
        out.getvalue(),
    ), out.getvalue()
    assert err.getvalue().startswith("skipped 1 upstream product(s) that cannot be sold")


def test_reloadly_range_top_up_sends_the_exact_local_amount(reloadly, reloadly_row):
    sent = adapter_for(reloadly_row).send(topup("rch_range1", amount=Decimal("123.45")))
    body = reloadly.received["rch_range1"]
    assert (body["operatorId"], body["amount"], body["useLocalAmount"]) == (350, "123.45", True)
    assert reloadly.topups["rch_range1"]["deliveredAmount"] == 123.45
    # 123.45 MXN at 20 is 6.17 EUR, less 5% (0.31): what the route's cost says, to the cent.
    assert (sent.cost, sent.cost_currency) == (Decimal("5.86"), "EUR")
    assert abs(sent.cost - Decimal("123.45") * Decimal("0.0475")) < Decimal("0.01")


def test_reloadly_refuses_an_amount_out_of_the_range_as_documented(reloadly, reloadly_row):
    with pytest.raises(PermanentError) as refused:
        adapter_for(reloadly_row).send(topup("rch_range2", amount=Decimal("1000.01")))
    assert refused.value.code == "invalid_amount_for_operator"
    assert reloadly.received["rch_range2"]["amount"] == "1000.01"
    assert "rch_range2" not in reloadly.topups


def test_reloadly_sender_currency_amounts_sync_to_fixed_products_and_send_in_euros(
    mexico, reloadly, reloadly_row
):
    catalog_sync(provider=reloadly_row)
    routes = Route.objects.filter(
        provider=reloadly_row, product__operator=mexico["att"]
    ).select_related("product")
    assert sorted((r.product.local_amount, r.send_value, r.sku, r.cost) for r in routes) == [
        (Decimal("102.50"), Decimal("5.00"), "sender", Decimal("4.8000")),
        (Decimal("205.00"), Decimal("10.00"), "sender", Decimal("9.6000")),
    ]
    route = min(routes, key=lambda r: r.send_value)
    assert route.product.description == "102.50 MXN airtime"  # Reloadly's description
    sent = adapter_for(reloadly_row).send(
        topup(
            "rch_sender1",
            operator_id="351",
            amount=route.product.local_amount,
            sku=route.sku,
            send_value=route.send_value_at(None),
            send_currency=route.send_currency,
        )
    )
    body = reloadly.received["rch_sender1"]
    assert (body["amount"], body["useLocalAmount"]) == ("5.00", False)
    assert reloadly.topups["rch_sender1"]["deliveredAmount"] == 102.5
    assert sent.cost == route.cost


def test_sync_records_what_it_cannot_sell_and_replaces_the_list_each_run(
    mexico, reloadly, reloadly_row
):
    reloadly.operators.append(
        operator(354, "Movistar Mexico", MX, "MXN", rate=20, discount=3, denomination="RANGE",
                 supports_local=True, min_amount=1, max_amount=40)  # no local bounds
    )  # fmt: skip
    reloadly.operators[-1]["fx"]["rate"] = None  # and no rate: it cannot be a range
    assert catalog_sync(provider=reloadly_row).skipped == 2
    rows = {r.upstream_operator_id: r for r in SkippedOffer.objects.filter(provider=reloadly_row)}
    assert set(rows) == {"353", "354"}  # the PIN operator 352 sells PINs now
    assert "supportsLocalAmounts" in rows["353"].reason
    assert "fx.rate" in rows["354"].reason
    assert (rows["353"].country, rows["353"].operator_name) == ("MX", "Unefon Mexico")
    reloadly.operators = [o for o in reloadly.operators if o["operatorId"] != 354]
    result = catalog_sync(provider=reloadly_row)
    assert result.skipped == 1
    assert result.line() == (
        "operators mapped 2, unmapped 1; routes created 0, updated 0, removed 0"
    )  # unmapped: "Telcel PIN" is not "Telcel" until staff map it; the skipped one on stderr
    assert result.skipped_note().startswith("skipped 1 upstream product(s)")
    assert list(SkippedOffer.objects.values_list("upstream_operator_id", flat=True)) == ["353"]
    reloadly.operators = [o for o in reloadly.operators if o["operatorId"] != 353]
    result = catalog_sync(provider=reloadly_row)
    assert result.skipped == 0 and result.skipped_note() == ""
    assert not SkippedOffer.objects.exists()


# -- DT One --------------------------------------------------------------------------------
TELCEL_DT = {
    "operator_id": 1450,
    "operator_name": "Telcel",
    "country_iso": "MEX",
    "country_name": "Mexico",
    "unit": "MXN",
}


@pytest.fixture
def dtone():
    ranged = ranged_product(
        id=30050, minimum=10, maximum=1000, increment=1, rate=18.5, fee=0.2, **TELCEL_DT
    )
    server = FakeDTOne(products=[*default_products(), ranged]).start()
    yield server
    server.stop()


@pytest.fixture
def dtone_row(dtone):
    return provider_create(
        name="dtone-r",
        kind="dtone",
        base_url=dtone.url,
        api_key=dtone.api_key,
        api_secret=dtone.api_secret,
        currency="USD",
    )


def test_dtone_ranged_product_syncs_to_a_range_route_at_its_wholesale_rate_plus_fee(
    mexico, dtone_row
):
    catalog_sync(provider=dtone_row, countries=["MX"])
    route = Route.objects.get(provider=dtone_row, cost_per_unit__isnull=False)
    assert route.product.operator == mexico["telcel"]
    assert (route.sku, route.min_amount, route.max_amount, route.step) == (
        "30050:range",
        Decimal("10.00"),
        Decimal("1000.00"),
        Decimal("1.00"),
    )
    assert (route.cost, route.cost_currency) == (Decimal("0.2000"), "USD")
    assert route.cost_per_unit == Decimal("0.0540540541")  # 1 / 18.5
    assert route.cost_at(Decimal("185")) == Decimal("10.2000")
    # The fixed products of the same operator keep their own routes.
    assert Route.objects.filter(provider=dtone_row, cost_per_unit__isnull=True).count() == 6


def test_dtone_ranged_top_up_sends_the_destination_amount(mexico, dtone, dtone_row):
    catalog_sync(provider=dtone_row, countries=["MX"])
    route = Route.objects.get(provider=dtone_row, cost_per_unit__isnull=False)
    sent = adapter_for(dtone_row).send(
        topup("rch_dt_range", operator_id="1450", amount=Decimal("150"), sku=route.sku)
    )
    body = dtone.bodies[-1]
    assert body["product_id"] == 30050
    assert body["calculation_mode"] == "DESTINATION_AMOUNT"
    assert body["destination"] == {"unit_type": "CURRENCY", "unit": "MXN", "amount": 150.0}
    # 150 / 18.5 = 8.11 USD wholesale, plus the 0.20 fee.
    assert (sent.cost, sent.cost_currency) == (Decimal("8.31"), "USD")
    assert abs(sent.cost - route.cost_at(Decimal("150"))) < Decimal("0.01")


@pytest.mark.parametrize("amount", ["1001", "9", "150.5"])
def test_dtone_refuses_an_amount_out_of_range_or_off_its_increment(dtone, dtone_row, amount):
    with pytest.raises(PermanentError) as refused:
        adapter_for(dtone_row).send(
            topup("rch_dt_out", operator_id="1450", amount=Decimal(amount), sku="30050:range")
        )
    assert refused.value.code == "product_amount_out_of_range"  # DT One's 1003002
    assert dtone.bodies[-1]["destination"]["amount"] == float(amount)
    assert "rch_dt_out" not in dtone.transactions


def test_dtone_fixed_products_are_sent_without_an_amount(dtone, dtone_row):
    adapter_for(dtone_row).send(topup("rch_dt_fixed", sku="30002"))
    assert "calculation_mode" not in dtone.bodies[-1]
    assert "destination" not in dtone.bodies[-1]


# -- Ding ----------------------------------------------------------------------------------
@pytest.fixture
def ding():
    server = FakeDing().start()  # MX_TL_TopUp_Range: SendValue 1.20-28.00 USD, 20-500 MXN
    yield server
    server.stop()


@pytest.fixture
def ding_row(ding):
    return provider_create(
        name="ding-r", kind="ding", base_url=ding.url, api_key=ding.api_key, currency="USD"
    )


def test_ding_range_product_syncs_to_a_range_route_on_the_line_between_its_ends(mexico, ding_row):
    catalog_sync(provider=ding_row, countries=["MX"])
    route = Route.objects.get(provider=ding_row, sku="MX_TL_TopUp_Range")
    assert route.product.denomination == "range"
    per_unit = Decimal("0.0558333333")  # (28.00 - 1.20) / (500 - 20), rounded down
    assert route.send_per_unit == per_unit
    # Minimum's SendValue for Minimum's ReceiveValue: Ding's own ends, not drawn in.
    assert (route.send_value, route.send_currency) == (Decimal("1.20"), "USD")
    assert (route.min_amount, route.max_amount) == (Decimal("20.00"), Decimal("500.00"))
    assert route.send_value_at(route.min_amount) == Decimal("1.20")
    assert route.send_value_at(route.max_amount) == Decimal("28.00")
    # Between them, rounded up to the cent: the recipient gets at least the amount.
    assert route.send_value_at(Decimal("100")) == Decimal("5.67")  # 5.6666666640 up
    # Cost: the SendValue less the 5% commission.
    assert route.cost_per_unit == (per_unit * Decimal("0.95")).quantize(Decimal("1e-10"))
    assert route.cost_at(Decimal("100")) == Decimal("5.3834")  # 0.0792 + 100 x 0.0530416666


def test_ding_range_top_up_sends_the_send_value_of_the_amount(mexico, ding, ding_row):
    catalog_sync(provider=ding_row, countries=["MX"])
    route = Route.objects.get(provider=ding_row, sku="MX_TL_TopUp_Range")
    amount = Decimal("100")
    sent = adapter_for(ding_row).send(
        topup(
            "rch_ding_range",
            operator_id="TLMX",
            amount=amount,
            sku=route.sku,
            send_value=route.send_value_at(amount),
            send_currency=route.send_currency,
        )
    )
    price = ding.transfers["rch_ding_range"]["Price"]
    assert price["SendValue"] == route.send_value_at(amount) == Decimal("5.67")
    # Ding's SendValue is in cents: the recipient gets the amount or a few hundredths more,
    # and the result says how much.
    assert amount <= price["ReceiveValue"] < amount + Decimal("0.2")
    assert sent.status == "delivered" and sent.delivered_amount == price["ReceiveValue"]


def test_ding_refuses_a_send_value_out_of_the_range_as_documented(ding, ding_row):
    with pytest.raises(PermanentError) as refused:
        adapter_for(ding_row).send(
            topup(
                "rch_ding_out",
                sku="MX_TL_TopUp_Range",
                send_value=Decimal("28.01"),
                send_currency="USD",
            )
        )
    assert refused.value.code == "parameter_out_of_range"
    assert "rch_ding_out" not in ding.transfers


def test_a_product_sold_by_several_ranges_spans_them(mexico, dtone_row, ding_row):
    catalog_sync(provider=dtone_row, countries=["MX"])
    catalog_sync(provider=ding_row, countries=["MX"])
    routes = Route.objects.filter(product__operator=mexico["telcel"], cost_per_unit__isnull=False)
    assert {r.provider.name for r in routes} == {"dtone-r", "ding-r"}
    assert len({r.product_id for r in routes}) == 1
    product = routes[0].product
    product.refresh_from_db()
    # DT One 10-1000 by 1, Ding 20.06-500 by 0.01: the lowest min, highest max, finest step.
    assert (product.range_min, product.range_max, product.range_step) == (
        Decimal("10.00"),
        Decimal("1000.00"),
        Decimal("0.01"),
    )
