"""The DT One (DVS) adapter against a local fake of DT One's API, over real HTTP."""

import json
import subprocess
import sys
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest

from tests.fakes.dtone import FakeDTOne, fixed_product, kinds_products
from tests.fakes.receiver import Receiver
from tests.waiting import wait_until
from upstreams.adapters.base import (
    PermanentError,
    ProviderConfig,
    ProviderResult,
    TopupRequest,
    TransientError,
    UpstreamTimeout,
)
from upstreams.adapters.client import Client
from upstreams.adapters.dtone import DTOneProvider

TELCEL_100 = "30002"  # the fake's Telcel 100 MXN: 5.40 USD wholesale + 0.10 fee


def request(reference="rch_dt1", number="+5215512345678", sku=TELCEL_100, callback_url=""):
    return TopupRequest(
        reference=reference,
        recipient_number=number,
        country="MX",
        operator_id="1450",
        product_id="prd_1",
        amount=Decimal("100.00"),
        currency="MXN",
        sku=sku,
        callback_url=callback_url,
    )


@pytest.fixture
def fake():
    server = FakeDTOne().start()
    yield server
    server.stop()


def provider(fake, *, base_url=None, secret=None, timeout=2.0, currency="USD"):
    config = ProviderConfig(
        base_url=fake.url if base_url is None else base_url,
        api_key=fake.api_key,
        api_secret=fake.api_secret if secret is None else secret,
        currency=currency,
        timeout=timeout,
    )
    return DTOneProvider(config, name="dtone-main")


@pytest.fixture
def dtone(fake):
    return provider(fake)


@pytest.fixture
def receiver():
    server = Receiver().start()
    yield server
    server.stop()


# -- sending -------------------------------------------------------------------------------
def test_send_delivers_and_reports_wholesale_plus_fee_as_cost(fake, dtone):
    result = dtone.send(request())
    assert result.status == ProviderResult.DELIVERED
    assert result.transaction_id == str(fake.transactions["rch_dt1"]["id"])
    assert (result.cost, result.cost_currency) == (Decimal("5.50"), "USD")
    assert fake.bodies == [
        {
            "external_id": "rch_dt1",
            "product_id": 30002,
            "auto_confirm": True,
            "credit_party_identifier": {"mobile_number": "+5215512345678"},
        }
    ]
    assert fake.calls["rch_dt1"] == 1
    assert fake.available == Decimal("9994.50")
    assert dtone.kind == "dtone" and dtone.name == "dtone-main"


def test_a_pin_purchase_answers_its_pin_and_the_adapter_keeps_it_out_of_raw(fake, dtone):
    """The reference's Transaction ``pin`` {code, serial} of a FIXED_VALUE_PIN_PURCHASE, with
    its product's ``pin.usage_info``; the code reaches ``ProviderResult.pin`` only."""
    fake.products.extend(kinds_products())
    result = dtone.send(request(reference="rch_dtpin", sku="30103"))
    assert result.status == ProviderResult.DELIVERED
    sent = fake.pins["rch_dtpin"]
    assert fake.transaction("rch_dtpin")["pin"] == sent  # as DT One lists it
    assert sent["code"].isdigit() and sent["serial"]
    assert result.pin is not None
    assert (result.pin.code, result.pin.serial) == (sent["code"], sent["serial"])
    assert result.pin.instructions == "Dial *133*<PIN># to top up"  # the product's usage_info
    assert result.raw["pin"] == "[pin]"
    assert sent["code"] not in json.dumps(result.raw) and sent["code"] not in result.message
    assert sent["code"] not in repr(result)
    # Looked up later (a lost answer, reconciliation): the same PIN, still out of raw.
    found = dtone.status("rch_dtpin")
    assert found is not None and found.pin is not None and found.pin.code == sent["code"]
    assert sent["code"] not in json.dumps(found.raw)


def test_a_top_up_that_is_not_a_pin_purchase_has_no_pin(fake, dtone):
    result = dtone.send(request())
    assert result.pin is None and fake.transaction("rch_dt1")["pin"] is None
    assert "rch_dt1" not in fake.pins


def test_a_wrong_secret_is_refused_as_documented_and_is_not_a_refusal_to_fail_over_on(fake):
    wrong = provider(fake, secret="not-the-secret")
    with pytest.raises(TransientError) as info:
        wrong.send(request())
    assert info.value.code == "upstream_auth_failed"
    assert info.value.raw == {"errors": [{"code": 1000401, "message": "Unauthorized"}]}
    assert fake.transactions == {}
    for call in (lambda: wrong.status("rch_dt1"), wrong.balance, wrong.catalog):
        with pytest.raises(TransientError) as info:
            call()
        assert info.value.code == "upstream_auth_failed"


def test_async_send_is_pending_until_completed_and_calls_back(fake, dtone, receiver):
    fake.async_completion()
    sent = dtone.send(request(callback_url=receiver.url))
    assert sent.status == ProviderResult.PENDING
    assert fake.bodies[0]["callback_url"] == receiver.url
    assert dtone.status("rch_dt1").status == ProviderResult.PENDING
    assert (fake.available, fake.holding) == (Decimal("9994.50"), Decimal("5.50"))

    fake.complete("rch_dt1")
    found = dtone.status("rch_dt1")
    assert found.status == ProviderResult.DELIVERED
    assert found.transaction_id == sent.transaction_id
    assert (fake.available, fake.holding) == (Decimal("9994.50"), Decimal("0"))

    body = receiver.wait_for(1)[0].json
    reference, result = dtone.callback_result(body)
    assert reference == "rch_dt1"
    assert result.status == ProviderResult.DELIVERED
    assert result.transaction_id == sent.transaction_id
    assert result.cost == Decimal("5.50")


def test_async_completion_after_a_delay_is_found_by_status(fake, dtone):
    fake.async_completion(delay=0.2)
    assert dtone.send(request()).status == ProviderResult.PENDING
    wait_until(
        lambda: dtone.status("rch_dt1").status == ProviderResult.DELIVERED,
        timeout=5,
        what="DT One to report the transaction delivered",
    )


def test_a_declined_transaction_is_a_permanent_refusal_with_its_status_as_code(fake, dtone):
    fake.refuse()
    with pytest.raises(PermanentError) as info:
        dtone.send(request())
    assert info.value.code == "declined_invalid_credit_party"
    assert info.value.raw["status"]["class"] == {"id": 9, "message": "DECLINED"}
    found = dtone.status("rch_dt1")
    assert found.status == ProviderResult.FAILED
    assert found.code == "declined_invalid_credit_party"
    assert fake.available == Decimal("10000.00")  # held, then voided
    assert dtone.send(request("rch_dt2")).status == ProviderResult.DELIVERED


def test_refusals_for_one_number_only(fake, dtone):
    fake.refuse(number="+5215500000102", status="REJECTED-BARRED-CREDIT-PARTY")
    with pytest.raises(PermanentError) as info:
        dtone.send(request("rch_a", number="+5215500000102"))
    assert info.value.code == "rejected_barred_credit_party"
    assert dtone.send(request("rch_b")).status == ProviderResult.DELIVERED
    with pytest.raises(PermanentError):
        dtone.send(request("rch_c", number="+5215500000102"))


@pytest.mark.parametrize(
    "code, expected",
    [
        (1005003, "credit_party_mobile_number_invalid"),
        (1003001, "product_not_available"),
        (1006001, "insufficient_balance"),
    ],
)
def test_documented_error_codes_are_permanent_refusals(fake, dtone, code, expected):
    fake.error_next(code)
    with pytest.raises(PermanentError) as info:
        dtone.send(request())
    assert info.value.code == expected
    assert info.value.raw["errors"][0]["code"] == code
    assert fake.transactions == {}


def test_a_number_dt_one_finds_invalid_and_a_balance_too_low_are_refusals():
    fake = FakeDTOne(balance="1.00").start()
    try:
        dtone = provider(fake)
        with pytest.raises(PermanentError) as info:
            dtone.send(request("rch_a", number="5215512345678"))  # not E.164
        assert info.value.code == "credit_party_mobile_number_invalid"
        with pytest.raises(PermanentError) as info:
            dtone.send(request("rch_b"))
        assert info.value.code == "insufficient_balance"
        with pytest.raises(PermanentError) as info:
            dtone.send(request("rch_c", sku=""))
        assert info.value.code == "invalid_product"
    finally:
        fake.stop()


def test_outage_is_transient_and_the_same_port_serves_again(fake, dtone):
    port = fake.port
    fake.outage(True)
    with pytest.raises(TransientError) as info:
        dtone.send(request())
    assert info.value.code == "upstream_unavailable"
    fake.outage(False)
    assert fake.port == port
    assert dtone.send(request()).status == ProviderResult.DELIVERED
    assert fake.calls["rch_dt1"] == 1


def test_a_slow_answer_is_an_upstream_timeout_then_status_finds_it_delivered(fake):
    dtone = provider(fake, timeout=1.0)
    fake.slow_next(3.0)
    with pytest.raises(UpstreamTimeout):
        dtone.send(request())
    found = dtone.status("rch_dt1")
    assert found is not None and found.status == ProviderResult.DELIVERED
    assert found.cost == Decimal("5.50")
    assert fake.calls["rch_dt1"] == 1
    assert dtone.status("rch_never_sent") is None


def test_a_5xx_is_settled_by_lookup_not_failed_over(fake, dtone):
    fake.error_next(1009503, after_creating=True)
    with pytest.raises(UpstreamTimeout) as info:
        dtone.send(request())
    assert info.value.code == "upstream_error"
    assert dtone.status("rch_dt1").status == ProviderResult.DELIVERED


def test_429_is_rate_limited(fake, dtone):
    fake.error_next(1000429)
    with pytest.raises(TransientError) as info:
        dtone.send(request())
    assert info.value.code == "upstream_rate_limited"
    assert fake.transactions == {}


def test_a_reused_external_id_returns_the_first_transaction_not_a_refusal(fake, dtone):
    first = dtone.send(request())
    again = dtone.send(request())
    assert again.status == ProviderResult.DELIVERED
    assert again.transaction_id == first.transaction_id
    assert fake.calls["rch_dt1"] == 2  # DT One was asked twice, and made one transaction
    assert len(fake.transactions) == 1
    assert fake.available == Decimal("9994.50")


def test_a_reused_external_id_whose_lookup_fails_is_unknown_never_refused(fake, dtone):
    dtone.send(request())
    fake.fail_lookups(1)
    with pytest.raises(UpstreamTimeout) as info:
        dtone.send(request())
    assert info.value.code == "external_id_already_used"
    assert info.value.raw == {
        "errors": [{"code": 1007001, "message": "Transaction external ID has already been used"}]
    }
    assert dtone.status("rch_dt1").status == ProviderResult.DELIVERED


def test_a_status_lookup_on_a_wrong_url_is_an_error_not_never_arrived(fake):
    wrong = provider(fake, base_url=f"http://127.0.0.1:{fake.port}/elsewhere/v1")
    with pytest.raises(TransientError):
        wrong.status("rch_dt1")


def test_a_reversal_is_seen_by_status_and_called_back(fake, dtone, receiver):
    sent = dtone.send(request(callback_url=receiver.url))
    assert sent.status == ProviderResult.DELIVERED
    receiver.wait_for(1)
    fake.reverse("rch_dt1")
    found = dtone.status("rch_dt1")
    assert found.status == ProviderResult.REVERSED
    assert found.transaction_id == sent.transaction_id
    assert fake.available == Decimal("10000.00")
    reference, result = dtone.callback_result(receiver.wait_for(2)[1].json)
    assert (reference, result.status) == ("rch_dt1", ProviderResult.REVERSED)


# -- catalog -------------------------------------------------------------------------------
def test_catalog_reads_every_page_by_alpha3_and_reports_alpha2(fake, dtone):
    fake.max_per_page = 2
    products = dtone.catalog(countries=["MX"])
    # 6 Mexican fixed products, 2 a page, then the ranged ones and the PIN purchases
    # (fixed and ranged; none of each): one page each
    assert fake.hits["GET /v1/products"] == 6
    assert [q["country_iso_code"] for _, q in fake.queries] == ["MEX"] * 6
    assert [(q["type"], q["page"]) for _, q in fake.queries] == [
        ("FIXED_VALUE_RECHARGE", "1"),
        ("FIXED_VALUE_RECHARGE", "2"),
        ("FIXED_VALUE_RECHARGE", "3"),
        ("RANGED_VALUE_RECHARGE", "1"),
        ("FIXED_VALUE_PIN_PURCHASE", "1"),
        ("RANGED_VALUE_PIN_PURCHASE", "1"),
    ]
    assert len(products) == 6
    by_sku = {p.sku: p for p in products}
    telcel = by_sku[TELCEL_100]
    assert telcel.operator.upstream_id == "1450"
    assert telcel.operator.name == "Telcel"
    assert telcel.operator.country == "MX"
    assert (telcel.local_amount, telcel.local_currency) == (Decimal("100"), "MXN")
    assert (telcel.cost, telcel.cost_currency) == (Decimal("5.50"), "USD")
    assert telcel.product_type == "airtime"
    assert by_sku["30004"].product_type == "data"
    assert by_sku["30003"].cost == Decimal("10.95")
    assert {p.operator.name for p in products} == {"Telcel", "AT&T Mexico"}


def test_catalog_of_several_countries_and_of_all(fake, dtone):
    fake.max_per_page = 2
    two = dtone.catalog(countries=["CO", "mx"])
    assert {p.operator.country for p in two} == {"CO", "MX"}
    assert len(two) == 9
    claro = next(p for p in two if p.sku == "30021")
    assert (claro.local_amount, claro.local_currency, claro.cost) == (
        Decimal("10000"),
        "COP",
        Decimal("2.60"),
    )
    fake.queries.clear()
    everything = dtone.catalog()
    # 9 fixed products, 2 a page; no ranged one nor PIN purchase: 1 page of each
    assert len(fake.queries) == 8
    assert all("country_iso_code" not in q for _, q in fake.queries)
    assert {p.sku for p in everything} == {p.sku for p in two}


def test_catalog_skips_what_we_could_not_send(fake, dtone):
    base = {"operator_id": 1, "operator_name": "Op", "amount": 10, "unit": "MXN"}
    mexico = {"country_iso": "MEX", "country_name": "Mexico", **base}
    fake.products = [
        fixed_product(id=1, wholesale=1, fee=0, **mexico),
        fixed_product(id=2, wholesale=1, fee=0, required_sender_fields=[["middle_name"]], **mexico),
        fixed_product(id=3, wholesale=1, fee=0, service=(3, "Utilities"), **mexico),
        fixed_product(id=4, wholesale=1, fee=0, country_iso="GXX", country_name="Global", **base),
        fixed_product(
            id=5,
            wholesale=1,
            fee=0,
            subservice=(12, "Bundle"),
            data_gb=1,
            **mexico,
        ),
    ]
    assert [(p.sku, p.product_type) for p in dtone.catalog()] == [("1", "airtime"), ("5", "data")]


@pytest.mark.parametrize("suffix", ["", "/"])
@pytest.mark.parametrize("with_v1", [True, False])
def test_base_url_with_or_without_v1(fake, with_v1, suffix):
    base = fake.url if with_v1 else fake.url.removesuffix("/v1")
    dtone = provider(fake, base_url=base + suffix)
    assert dtone.balance() == (Decimal("10000.00"), "USD")
    assert dtone.send(request()).status == ProviderResult.DELIVERED


def test_balance_of_the_account_currency_else_the_first(fake):
    fake.add_balance("EUR", "250.75")
    assert provider(fake, currency="EUR").balance() == (Decimal("250.75"), "EUR")
    assert provider(fake, currency="").balance() == (Decimal("10000.00"), "USD")
    assert provider(fake, currency="GBP").balance() == (Decimal("10000.00"), "USD")
    provider(fake).send(request())
    assert provider(fake).balance() == (Decimal("9994.50"), "USD")


# -- reports and callbacks -------------------------------------------------------------------
def test_transactions_of_a_day_read_every_page_within_the_day(fake, dtone):
    fake.max_per_page = 2
    day = date(2026, 11, 20)
    midnight = datetime(2026, 11, 20, tzinfo=UTC)
    fake.add_transaction("rch_before", created_at=midnight - timedelta(microseconds=1))
    fake.add_transaction("rch_first", created_at=midnight)
    fake.add_transaction("rch_noon", created_at=midnight + timedelta(hours=12))
    fake.add_transaction(
        "rch_declined",
        status="DECLINED-BARRED-CREDIT-PARTY",
        created_at=midnight + timedelta(hours=13),
    )
    fake.add_transaction(
        "rch_reversed", status="REVERSED", created_at=midnight + timedelta(hours=14)
    )
    fake.add_transaction(
        "rch_colombia",
        product_id=30021,
        number="+573001234567",
        created_at=midnight + timedelta(hours=20),
    )
    fake.add_transaction("rch_last", created_at=midnight + timedelta(days=1, microseconds=-1))
    fake.add_transaction("rch_after", created_at=midnight + timedelta(days=1))

    lines = dtone.transactions(day=day)

    assert [line.reference for line in lines] == [
        "rch_first",
        "rch_noon",
        "rch_declined",
        "rch_reversed",
        "rch_colombia",
        "rch_last",
    ]
    assert fake.hits["GET /v1/transactions"] == 3
    _, query = fake.queries[0]
    start = datetime.fromisoformat(query["from_date"])
    end = datetime.fromisoformat(query["to_date"])
    assert start == midnight and end - start < timedelta(hours=24)
    by_reference = {line.reference: line for line in lines}
    first = by_reference["rch_first"]
    assert first.status == ProviderResult.DELIVERED
    assert first.transaction_id == str(fake.transactions["rch_first"]["id"])
    assert (first.amount, first.currency) == (Decimal("100"), "MXN")
    assert (first.cost, first.cost_currency) == (Decimal("5.50"), "USD")
    assert first.created_at == midnight
    assert by_reference["rch_declined"].status == ProviderResult.FAILED
    assert by_reference["rch_reversed"].status == ProviderResult.REVERSED
    assert by_reference["rch_colombia"].amount == Decimal("10000")
    assert by_reference["rch_colombia"].currency == "COP"


def test_transactions_of_an_empty_day(dtone):
    assert dtone.transactions(day=date(2020, 1, 1)) == []


def test_callback_result_reads_a_transaction_object(fake, dtone):
    fake.add_transaction("rch_cb", status="DECLINED-OPERATOR-CURRENTLY-UNAVAILABLE")
    body = fake.transaction("rch_cb")
    reference, result = dtone.callback_result(body)
    assert reference == "rch_cb"
    assert result.status == ProviderResult.FAILED
    assert result.code == "declined_operator_currently_unavailable"
    assert result.transaction_id == str(body["id"])
    body["status"] = {"id": 1, "message": "SOMETHING", "class": {"id": 7, "message": "COMPLETED"}}
    assert dtone.callback_result(body)[1].status == ProviderResult.DELIVERED
    assert dtone.callback_result({}) is None
    assert dtone.callback_result({"external_id": "rch_cb"}) is None
    assert dtone.callback_result({"status": body["status"]}) is None


def test_the_fake_runs_standalone():
    root = Path(__file__).resolve().parent.parent
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.fakes.dtone", "--port", "0"],
        cwd=root,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        url = process.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:") and url.endswith("/v1")
        answer = Client().get(f"{url}/balances", auth=("dtone-key", "dtone-secret"), timeout=5)
        assert answer.status_code == 200
        assert answer.json()[0]["unit"] == "USD"
        assert answer.headers["X-Total-Pages"] == "1"
    finally:
        process.terminate()
        process.wait(timeout=10)
