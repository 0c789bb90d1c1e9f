"""The DingConnect adapter against the fake Ding over real HTTP (no database)."""

import json
import subprocess
import sys
import threading
from datetime import UTC, date, datetime
from decimal import Decimal

import pytest

from tests.fakes.ding import FakeDing, kinds_products
from upstreams.adapters.base import (
    PermanentError,
    ProviderConfig,
    ProviderResult,
    TopupRequest,
    TransientError,
    UpstreamTimeout,
)
from upstreams.adapters.client import Client
from upstreams.adapters.ding import DingProvider, account_number, parse_utc


def request(reference="rch_ding1", number="+525512345678", sku="MX_TL_TopUp_100", send="6.00"):
    return TopupRequest(
        reference=reference,
        recipient_number=number,
        country="MX",
        operator_id="TLMX",
        product_id="prd_1",
        amount=Decimal("100.00"),
        currency="MXN",
        sku=sku,
        send_value=Decimal(send),
        send_currency="USD",
    )


@pytest.fixture
def fake():
    server = FakeDing().start()
    yield server
    server.stop()


@pytest.fixture
def client():
    return Client()


def provider(fake, client, *, timeout=1.0, api_key=None, base_url=None):
    config = ProviderConfig(
        base_url=base_url or fake.url,
        api_key=fake.api_key if api_key is None else api_key,
        currency="USD",
        timeout=timeout,
    )
    return DingProvider(config, name="ding-test", client=client)


@pytest.fixture
def ding(fake, client):
    return provider(fake, client)


# -- sending ---------------------------------------------------------------------------------
def test_send_delivers_with_our_reference_the_number_as_ding_wants_it_and_the_cost(fake, ding):
    result = ding.send(request())
    assert result.status == ProviderResult.DELIVERED
    record = fake.transfers["rch_ding1"]
    assert result.transaction_id == record["TransferId"]["TransferRef"] != ""
    assert record["AccountNumber"] == "525512345678"  # digits, country code first, no '+'
    # 6.00 sent, 5 % commission (0.30) credited back: 5.70 USD is what Ding debited.
    assert (result.cost, result.cost_currency) == (Decimal("5.70"), "USD")
    assert fake.balance == Decimal("994.30")
    assert fake.calls["rch_ding1"] == 1


def test_a_read_receipt_product_answers_its_pin_in_the_receipt_and_raw_keeps_none(fake, ding):
    """TransferRecord's ``ReceiptParams`` (name value pairs of the ``ReceiptText``) carry the
    PIN of a ReadReceipt product; the code reaches ``ProviderResult.pin`` only."""
    for item in kinds_products():
        fake.add_product(item)
    result = ding.send(request(reference="rch_dingpin", sku="MX_TL_Pin_100", send="5.90"))
    assert result.status == ProviderResult.DELIVERED
    params = fake.pins["rch_dingpin"]
    record = fake.transfers["rch_dingpin"]
    assert record["ReceiptParams"] == params and params["Pin"] in record["ReceiptText"]
    assert result.pin is not None
    assert (result.pin.code, result.pin.serial, result.pin.valid_until) == (
        params["Pin"],
        params["SerialNumber"],
        params["ExpiryDate"],
    )
    assert "*133*" in result.pin.instructions  # the receipt text is how to redeem it
    code = params["Pin"]
    assert code not in json.dumps(result.raw, default=str) and code not in result.message
    assert result.raw["TransferRecord"]["ReceiptParams"] == "[pin]"
    # Looked up later: the same PIN, still out of raw.
    found = ding.status("rch_dingpin")
    assert found is not None and found.pin is not None and found.pin.code == code
    assert code not in json.dumps(found.raw, default=str)


def test_an_immediate_product_keeps_an_empty_receipt_and_has_no_pin(fake, ding):
    result = ding.send(request())
    assert result.pin is None and fake.transfers["rch_ding1"]["ReceiptParams"] == {}


def test_the_cost_adds_ding_s_distributor_fee(fake, ding):
    result = ding.send(request(sku="MX_AT_TopUp_100", send="6.10"))
    # 6.10 + 0.10 fee - 4 % of 6.10 (0.24 commission)
    assert result.cost == Decimal("5.96")
    assert fake.balance == Decimal("994.04")


@pytest.mark.parametrize("spelling", ["Complete", "Completed"])
def test_both_spellings_of_success_are_delivered(fake, ding, spelling):
    fake.success_state = spelling
    assert ding.send(request()).status == ProviderResult.DELIVERED
    assert ding.status("rch_ding1").status == ProviderResult.DELIVERED
    [line] = ding.transactions(day=datetime.now(UTC).date())
    assert line.status == ProviderResult.DELIVERED


def test_wrong_api_key_is_refused_before_anything_is_sent(fake, client):
    wrong = provider(fake, client, api_key="not-the-key")
    with pytest.raises(TransientError) as info:
        wrong.send(request())
    assert info.value.code == "upstream_auth_failed"
    assert fake.transfers == {}
    with pytest.raises(TransientError) as info:
        wrong.balance()
    assert info.value.code == "upstream_auth_failed"


def test_pending_then_status_follows_it_to_delivered(fake, ding):
    fake.pending_next()
    sent = ding.send(request())
    assert sent.status == ProviderResult.PENDING
    assert ding.status("rch_ding1").status == ProviderResult.PENDING
    assert fake.balance == Decimal("1000.00")
    fake.complete("rch_ding1")
    found = ding.status("rch_ding1")
    assert found.status == ProviderResult.DELIVERED
    assert found.transaction_id == sent.transaction_id
    assert found.cost == Decimal("5.70")
    assert fake.calls["rch_ding1"] == 1


def test_pending_then_failed(fake, ding):
    fake.pending_next()
    ding.send(request())
    fake.complete("rch_ding1", state="Failed")
    found = ding.status("rch_ding1")
    assert (found.status, found.code) == (ProviderResult.FAILED, "provider_error")
    assert found.cost is None


@pytest.mark.parametrize("status", [400, 200])
def test_a_documented_refusal_is_permanent_with_a_stable_code(fake, ding, status):
    fake.refuse_next(code="RechargeNotAllowed", status=status)
    with pytest.raises(PermanentError) as info:
        ding.send(request())
    assert info.value.code == "recharge_not_allowed"
    assert fake.balance == Decimal("1000.00")
    found = ding.status("rch_ding1")
    assert (found.status, found.code) == (ProviderResult.FAILED, "recharge_not_allowed")


def test_a_refused_number_is_permanent(fake, ding):
    fake.refuse_number("525510000000", code="AccountNumberInvalid")
    with pytest.raises(PermanentError) as info:
        ding.send(request(number="+52 55 1000 0000"))
    assert info.value.code == "account_number_invalid"


def test_a_validation_refusal_without_a_record_is_permanent(fake, ding):
    with pytest.raises(PermanentError) as info:
        ding.send(request(sku="NO_SUCH_SKU"))
    assert info.value.code == "parameter_invalid"
    assert ding.status("rch_ding1") is None


def test_outage_is_transient_and_nothing_is_sent(fake, ding):
    fake.outage(True)
    with pytest.raises(TransientError) as info:
        ding.send(request())
    assert info.value.code == "upstream_unavailable"
    with pytest.raises(TransientError):
        ding.status("rch_ding1")
    fake.outage(False)  # the same port again
    assert ding.send(request()).status == ProviderResult.DELIVERED
    assert fake.calls["rch_ding1"] == 1


def test_slow_but_delivered_is_a_timeout_that_status_settles(fake, ding):
    fake.slow_next(3.0)
    with pytest.raises(UpstreamTimeout):
        ding.send(request())
    found = ding.status("rch_ding1")
    assert found is not None and found.status == ProviderResult.DELIVERED
    assert fake.calls["rch_ding1"] == 1
    assert ding.status("rch_never_sent") is None


def test_a_duplicate_reference_is_settled_by_lookup_never_refused(fake, ding):
    first = ding.send(request())
    with pytest.raises(UpstreamTimeout) as info:
        ding.send(request())
    assert not isinstance(info.value, PermanentError)
    assert info.value.code == "duplicate_reference"
    assert ding.status("rch_ding1").transaction_id == first.transaction_id
    assert fake.calls["rch_ding1"] == 2
    assert len(fake.transfers) == 1
    assert fake.balance == Decimal("994.30")  # paid once


def test_ding_s_own_timeout_is_settled_by_lookup(fake, ding):
    fake.refuse_next(code="ProviderTimedOut")
    with pytest.raises(UpstreamTimeout):
        ding.send(request())
    found = ding.status("rch_ding1")
    assert (found.status, found.code) == (ProviderResult.FAILED, "provider_timed_out")


def test_429_is_transient_with_retry_after(fake, ding):
    fake.answer_next(429, {"Message": "slow down"}, {"Retry-After": "7"})
    with pytest.raises(TransientError) as info:
        ding.send(request())
    assert (info.value.code, info.value.retry_after) == ("upstream_rate_limited", 7.0)


@pytest.mark.parametrize(
    "status, body",
    [
        (503, {"ResultCode": 4, "ErrorCodes": []}),
        (500, {"ResultCode": 5, "ErrorCodes": [{"Code": "InsufficientBalance"}]}),
        (200, "<html>gateway</html>"),
        (200, {"ResultCode": 1, "ErrorCodes": [], "TransferRecord": {"ProcessingState": "?"}}),
    ],
)
def test_5xx_and_unclear_answers_are_upstream_timeouts(fake, ding, status, body):
    fake.answer_next(status, body)
    with pytest.raises(UpstreamTimeout):
        ding.send(request())


def test_insufficient_balance_answers_500_and_is_settled_by_lookup(fake, client):
    poor = FakeDing(balance="1.00").start()
    try:
        ding = provider(poor, client)
        with pytest.raises(UpstreamTimeout):
            ding.send(request())
        assert ding.status("rch_ding1") is None  # nothing was made: free to fail over
    finally:
        poor.stop()


def test_a_cancelled_transfer_reads_as_failed(fake, ding):
    """Ding documents no reversal; Cancelled (balance compensated) is the nearest state."""
    ding.send(request())
    fake.cancel("rch_ding1")
    assert ding.status("rch_ding1").status == ProviderResult.FAILED
    assert fake.balance == Decimal("1000.00")


def test_a_connect_timeout_or_refused_port_is_transient(client):
    config = ProviderConfig(base_url="http://127.0.0.1:9", api_key="k", timeout=0.5)
    with pytest.raises(TransientError):
        DingProvider(config, name="ding", client=client).send(request())


def test_a_base_url_written_with_the_api_path_works(fake, client):
    ding = provider(fake, client, base_url=f"{fake.url}/api/V1/")
    assert ding.balance() == (Decimal("1000.00"), "USD")


def test_many_threads_send_once_each(fake, client):
    ding = provider(fake, client, timeout=5)
    results: list[ProviderResult] = []

    def send(i):
        results.append(ding.send(request(f"rch_t{i}")))

    threads = [threading.Thread(target=send, args=(i,)) for i in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert {r.status for r in results} == {ProviderResult.DELIVERED}
    assert len({r.transaction_id for r in results}) == 12
    assert set(fake.calls.values()) == {1}
    assert fake.balance == Decimal("1000.00") - 12 * Decimal("5.70")


# -- reads -----------------------------------------------------------------------------------
def test_balance(ding):
    assert ding.balance() == (Decimal("1000.00"), "USD")


def test_catalog_keeps_fixed_amounts_with_names_countries_and_cost(fake, ding):
    products = {p.sku: p for p in ding.catalog(countries=["mx"])}
    assert set(products) == {
        "MX_TL_TopUp_100",
        "MX_TL_TopUp_200",
        "MX_TL_Data_3GB",
        "MX_AT_TopUp_100",
        "MX_TL_TopUp_Range",
    }
    assert products["MX_TL_TopUp_Range"].denomination == "range"
    telcel = products["MX_TL_TopUp_100"]
    assert (telcel.operator.upstream_id, telcel.operator.name, telcel.operator.country) == (
        "TLMX",
        "Telcel Mexico",
        "MX",
    )
    assert (telcel.product_type, telcel.local_amount, telcel.local_currency) == (
        "airtime",
        Decimal("100"),
        "MXN",
    )
    assert (telcel.send_value, telcel.send_currency) == (Decimal("6.00"), "USD")
    assert (telcel.cost, telcel.cost_currency) == (Decimal("5.70"), "USD")
    assert products["MX_TL_TopUp_200"].cost == Decimal("10.93")  # 11.50 - 0.575 (half up)
    assert products["MX_TL_Data_3GB"].product_type == "data"
    assert products["MX_AT_TopUp_100"].cost == Decimal("5.96")  # with its distributor fee
    # What the catalog says a unit costs is what sending it costs.
    sent = ding.send(
        request(sku="MX_AT_TopUp_100", send=str(products["MX_AT_TopUp_100"].send_value))
    )
    assert sent.cost == products["MX_AT_TopUp_100"].cost


def test_catalog_for_all_countries_and_for_none(ding):
    everything = ding.catalog()
    assert {p.operator.country for p in everything} == {"MX", "CO"}
    assert {p.operator.name for p in everything} >= {"Claro Colombia", "Movistar Colombia"}
    assert "MX_TL_TopUp_Range" in {p.sku for p in everything if p.denomination == "range"}
    assert ding.catalog(countries=[]) == []


def test_catalog_sells_read_receipt_pins_and_leaves_out_what_is_not_ours(fake, ding):
    from tests.fakes.ding import product

    fake.add_product(
        product(
            "MX_TL_Pin_100",
            "TLMX",
            send="6",
            receive="100",
            receive_currency="MXN",
            redemption="ReadReceipt",
        )
    )
    fake.add_product(
        product(
            "MX_CFE_50",
            "TLMX",
            send="3",
            receive="50",
            receive_currency="MXN",
            benefits=("Electricity",),
        )
    )
    read = ding.catalog_read(countries=["MX"])
    kinds = {p.sku: p.product_type for p in read.products}
    assert kinds["MX_TL_Pin_100"] == "pin"  # redeemed from the receipt: a PIN
    assert "MX_CFE_50" not in kinds
    assert [s.product_id for s in read.skipped] == ["MX_CFE_50"]


def test_transactions_of_a_day_read_every_page(fake, client):
    ding = provider(fake, client)
    ding.page_size = 2
    day = date(2026, 11, 24)
    for i, hour in enumerate([0, 5, 9, 13, 23]):
        fake.seed_transfer(f"rch_day{i}", started=datetime(2026, 11, 24, hour, 30, tzinfo=UTC))
    fake.seed_transfer("rch_before", started=datetime(2026, 11, 23, 23, 59, tzinfo=UTC))
    fake.seed_transfer("rch_after", started=datetime(2026, 11, 25, 0, 0, tzinfo=UTC))
    fake.seed_transfer("rch_failed", started=datetime(2026, 11, 24, 12, tzinfo=UTC), state="Failed")
    lines = ding.transactions(day=day)
    assert {t.reference for t in lines} == {f"rch_day{i}" for i in range(5)} | {"rch_failed"}
    line = next(t for t in lines if t.reference == "rch_day0")
    assert line.status == ProviderResult.DELIVERED
    assert (line.amount, line.currency) == (Decimal("100"), "MXN")
    assert (line.cost, line.cost_currency) == (Decimal("5.70"), "USD")
    assert line.created_at == datetime(2026, 11, 24, 0, 30, tzinfo=UTC)
    assert line.transaction_id == fake.transfers["rch_day0"]["TransferId"]["TransferRef"]
    failed = next(t for t in lines if t.reference == "rch_failed")
    assert (failed.status, failed.cost) == (ProviderResult.FAILED, None)


def test_status_prefers_a_delivered_transfer_when_ding_holds_several(fake, ding):
    """The live API was seen paying a repeated DistributorRef twice: whatever Ding holds,
    a delivered transfer under our reference means delivered."""
    fake.seed_transfer("rch_twice", state="Failed")
    first = fake.transfers.pop("rch_twice")
    fake.seed_transfer("rch_twice")
    fake.transfers["rch_twice_old"] = first  # the same DistributorRef inside
    assert ding.status("rch_twice").status == ProviderResult.DELIVERED


# -- small pieces ----------------------------------------------------------------------------
def test_account_number_is_digits_with_country_code():
    assert account_number("+52 1 55 1234-5678") == "5215512345678"


@pytest.mark.parametrize(
    "text",
    [
        "2026-11-24T10:11:12Z",
        "2026-11-24T10:11:12",
        "2026-11-24T10:11:12.1234567Z",
        "2026-11-24T11:11:12.123+01:00",
    ],
)
def test_ding_dates_are_read_as_utc(text):
    moment = parse_utc(text)
    assert moment.tzinfo is not None
    assert moment.replace(microsecond=0) == datetime(2026, 11, 24, 10, 11, 12, tzinfo=UTC)


def test_the_fake_runs_on_its_own():
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.fakes.ding", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        url = process.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:")
        answer = Client().get(
            f"{url}/api/V1/GetBalance", headers={"api_key": "fake-ding-key"}, timeout=5
        )
        assert answer.json()["ResultCode"] == 1
    finally:
        process.terminate()
        assert process.wait(timeout=10) == 0
