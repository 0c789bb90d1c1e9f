"""The Reloadly adapter against the local fake of Reloadly's API, over real HTTP: tokens per
provider account, the operator catalog page by page, cost, refusals, reversals, a day's
report, an outage, and the processor settling a 5xx by looking the reference up."""

import socket
import subprocess
import sys
import threading
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path

import pytest
from django.test import override_settings

from recharges import processor
from recharges.models import Recharge
from tests.fakes.reloadly import FakeReloadly, default_operators, operator
from tests.helpers import assert_ledger_balanced, fund, place
from upstreams.adapters import adapter_for
from upstreams.adapters.base import (
    PermanentError,
    ProviderConfig,
    ProviderResult,
    TopupRequest,
    TransientError,
    UpstreamTimeout,
)
from upstreams.adapters.reloadly import ReloadlyProvider
from upstreams.routing import settings_provider
from wallet.models import Wallet

S = Recharge.Status
ROOT = Path(__file__).resolve().parent.parent


def request(reference="rch_r1", *, number="+5215512345678", operator_id="341", amount="100.00"):
    """Telcel Mexico's 100 MXN, the way a route sends it: by operator id and local amount."""
    return TopupRequest(
        reference=reference,
        recipient_number=number,
        country="MX",
        operator_id=operator_id,
        product_id="prd_1",
        amount=Decimal(amount),
        currency="MXN",
        send_value=Decimal("4.88"),
        send_currency="EUR",
    )


def account(fake, name="reloadly", client_id="id", timeout=2.0) -> ReloadlyProvider:
    config = ProviderConfig(
        base_url=fake.url,
        auth_url=fake.url,
        client_id=client_id,
        client_secret="secret",
        timeout=timeout,
    )
    return ReloadlyProvider.from_config(config, name=name)


@pytest.fixture
def fake():
    server = FakeReloadly().start()
    yield server
    server.stop()


@pytest.fixture
def reloadly(fake):
    return account(fake)


def api_calls(fake, path):
    return [(query, client) for method, p, query, client in fake.requests if p == path]


# -- accounts and tokens ------------------------------------------------------------------


def test_a_provider_account_is_built_from_its_config_under_its_row_name(fake):
    provider = account(fake, name="reloadly-eu")
    assert (provider.name, provider.kind) == ("reloadly-eu", "reloadly")
    assert provider.base_url == fake.url
    with override_settings(AIRTIME_PROVIDER="reloadly"):
        assert adapter_for(settings_provider()).name == "reloadly"  # the RELOADLY_* account


def test_one_token_serves_every_call_of_an_account_until_it_expires(fake, reloadly):
    reloadly.send(request())
    reloadly.status("rch_r1")
    reloadly.balance()
    reloadly.catalog()
    reloadly.transactions(day=date.today())
    account(fake).balance()  # another instance of the same account: the cached token
    assert fake.token_requests == 1


def test_threads_of_one_account_wait_for_one_token_and_share_it(fake, reloadly):
    fake.delay = 0.0
    start = threading.Barrier(16)

    def call():
        start.wait()
        reloadly.balance()

    threads = [threading.Thread(target=call) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert fake.token_requests == 1  # one fetch; the other 15 threads reused it
    fake.expire_tokens()  # the API now answers 401 to that token: one refresh, then reuse
    threads = [threading.Thread(target=call) for _ in range(16)]
    start.reset()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert fake.token_requests == 2


def test_two_provider_accounts_never_share_a_token(fake):
    first, second = account(fake, "reloadly-a", "client-a"), account(fake, "reloadly-b", "client-b")
    first.balance()
    second.balance()
    first.send(request("rch_a"))
    second.send(request("rch_b"))
    assert fake.token_requests == 2
    clients = [client for _, _, _, client in fake.requests]
    assert clients == ["client-a", "client-b", "client-a", "client-b"]


# -- catalog ------------------------------------------------------------------------------


def test_the_catalog_reads_every_page_and_costs_each_amount_less_its_discount(fake, reloadly):
    reloadly.page_size = 2  # five operators: three pages
    products = reloadly.catalog()
    pages = api_calls(fake, "/operators")
    assert [query["page"] for query, _ in pages] == ["1", "2", "3"]
    assert {(q["size"], q["includeBundles"], q["includeData"]) for q, _ in pages} == {
        ("2", "true", "true")
    }
    assert {p.operator.name for p in products} == {
        "Telcel Mexico",
        "AT&T Mexico",
        "Claro Colombia",
        "Claro Colombia Data",
    }  # Movistar Colombia is RANGE: no fixed amounts to sell
    assert len(products) == 5 + 4 + 3 + 3
    telcel_100 = next(
        p for p in products if p.operator.upstream_id == "341" and p.local_amount == 100
    )
    assert telcel_100.operator.country == "MX"
    assert (telcel_100.sku, telcel_100.product_type) == ("", "airtime")
    assert (telcel_100.local_amount, telcel_100.local_currency) == (Decimal("100"), "MXN")
    assert (telcel_100.send_value, telcel_100.send_currency) == (Decimal("4.88"), "EUR")
    assert (telcel_100.cost, telcel_100.cost_currency) == (Decimal("4.56"), "EUR")  # 4.88 - 6.5 %
    claro = sorted((p for p in products if p.operator.upstream_id == "621"), key=lambda p: p.cost)
    # No local list: the local amount is the fixed amount at the operator's fx.rate.
    assert [(p.local_amount, p.send_value, p.cost) for p in claro] == [
        (Decimal("10750.00"), Decimal("2.5"), Decimal("2.30")),
        (Decimal("21500.00"), Decimal("5"), Decimal("4.60")),
        (Decimal("43000.00"), Decimal("10"), Decimal("9.20")),
    ]
    assert {p.product_type for p in products if p.operator.upstream_id == "622"} == {"data"}


def test_a_catalog_by_country_asks_each_country_and_skips_one_not_supported(fake, reloadly):
    products = reloadly.catalog(countries=["co", "ZZ"])
    assert {p.operator.country for p in products} == {"CO"}
    assert len(products) == 6
    paths = [path for _, path, _, _ in fake.requests]
    assert paths == ["/operators/countries/CO", "/operators/countries/ZZ"]


def test_the_catalog_sells_pin_operators_as_pins_and_sender_amounts_at_the_fx_rate():
    seed = [
        *default_operators(),
        operator(581, "Access Wireless PIN USA", ("US", "United States"), "USD", rate=1,
                 discount=1, fixed=[5, 10], supports_local=True, pin=True),
        operator(729, "168 Thailand", ("TH", "Thailand"), "THB", rate=24.39, discount=0,
                 fixed=[0.41, 0.82], supports_local=False),
    ]  # fmt: skip
    fake = FakeReloadly(operators=seed).start()
    try:
        found = account(fake).catalog_read()
    finally:
        fake.stop()
    assert {p.operator.upstream_id for p in found.products} == {
        "341",
        "342",
        "581",
        "621",
        "622",
        "729",
    }
    # A PIN operator's amounts are PIN products (contract section 17, "Kinds").
    pins = [p for p in found.products if p.operator.upstream_id == "581"]
    assert {(p.product_type, p.local_amount) for p in pins} == {
        ("pin", Decimal("5.00")),
        ("pin", Decimal("10.00")),
    }
    # Taken only in the account's currency: sold as that amount, the recipient getting it
    # at fx.rate (0.41 EUR x 24.39 = 10.00 THB).
    thai = [p for p in found.products if p.operator.upstream_id == "729"]
    assert [(p.sku, p.send_value, p.local_amount) for p in thai] == [
        ("sender", Decimal("0.41"), Decimal("10.00")),
        ("sender", Decimal("0.82"), Decimal("20.00")),
    ]
    assert {(s.operator.upstream_id, s.reason[:3]) for s in found.skipped} == {
        ("88", "RAN"),  # a RANGE operator without local amounts
    }


# -- sending ------------------------------------------------------------------------------


def test_a_top_up_reports_what_it_cost_and_the_balance_goes_down_by_it(fake, reloadly):
    result = reloadly.send(request())
    assert result.status == ProviderResult.DELIVERED
    assert (result.cost, result.cost_currency) == (Decimal("4.56"), "EUR")  # 4.88 less 0.32
    assert fake.topups["rch_r1"]["deliveredAmount"] == 100.0  # sent as the local amount
    assert reloadly.balance() == (Decimal("546.19"), "EUR")  # 550.75 - 4.56


@pytest.mark.parametrize("made", [False, True])
def test_a_5xx_while_sending_is_an_upstream_timeout_settled_by_lookup(fake, reloadly, made):
    fake.fail_next(502, {"message": "Bad Gateway"}, made=made)
    with pytest.raises(UpstreamTimeout):
        reloadly.send(request())
    found = reloadly.status("rch_r1")
    assert (found.status if found else None) == (ProviderResult.DELIVERED if made else None)


@pytest.mark.parametrize(
    "status, body",
    [(200, "<html>upstream proxy</html>"), (404, {"status": 404, "error": "Not Found"})],
)
def test_an_answer_that_cannot_be_read_is_an_upstream_timeout(fake, reloadly, status, body):
    fake.fail_next(status, body, made=True)
    with pytest.raises(UpstreamTimeout):
        reloadly.send(request())
    assert reloadly.status("rch_r1").status == ProviderResult.DELIVERED


def test_a_documented_refusal_is_permanent_with_its_code_and_makes_nothing(fake, reloadly):
    fake.refuse_next(1, error_code="OPERATOR_UNAVAILABLE_OR_CURRENTLY_INACTIVE", message="down")
    with pytest.raises(PermanentError) as info:
        reloadly.send(request())
    assert info.value.code == "operator_unavailable_or_currently_inactive"
    assert info.value.raw["errorCode"] == "OPERATOR_UNAVAILABLE_OR_CURRENTLY_INACTIVE"
    assert "rch_r1" not in fake.topups
    assert reloadly.send(request()).status == ProviderResult.DELIVERED  # only the next one


def test_refusals_for_one_number_and_for_an_amount_the_operator_does_not_sell(fake, reloadly):
    fake.refuse_number("+5215599999999", error_code="PHONE_RECENTLY_RECHARGED", message="wait")
    with pytest.raises(PermanentError) as info:
        reloadly.send(request("rch_n", number="+5215599999999"))
    assert info.value.code == "phone_recently_recharged"
    with pytest.raises(PermanentError) as info:
        reloadly.send(request("rch_amount", amount="99.00"))
    assert info.value.code == "invalid_amount_for_operator"
    assert fake.topups == {}


def test_a_refusal_naming_our_custom_identifier_is_settled_by_lookup_not_failed(fake, reloadly):
    first = reloadly.send(request())
    fake.fail_next(400, {"errorCode": "CUSTOM_IDENTIFIER_ALREADY_USED", "message": "used"})
    again = reloadly.send(request())
    assert again.transaction_id == first.transaction_id
    assert again.status == ProviderResult.DELIVERED


def test_an_outage_refuses_connections_until_the_port_listens_again(fake, reloadly):
    reloadly.balance()
    url = fake.url
    fake.outage(True)
    with pytest.raises(TransientError):
        reloadly.send(request())
    with pytest.raises(TransientError):
        reloadly.catalog()
    fake.outage(False)
    assert fake.url == url
    assert reloadly.send(request()).status == ProviderResult.DELIVERED
    assert fake.calls["rch_r1"] == 1  # the refused call never arrived


# -- after delivery: reversals and reports ------------------------------------------------


def test_a_refunded_top_up_is_reversed_and_its_cost_returns(fake, reloadly):
    sent = reloadly.send(request())
    fake.refund("rch_r1")
    found = reloadly.status("rch_r1")
    assert found.status == ProviderResult.REVERSED
    assert (found.transaction_id, found.code, found.cost) == (
        sent.transaction_id,
        "upstream_reversed",
        None,
    )
    assert reloadly.balance() == (Decimal("550.75"), "EUR")


def test_a_days_transactions_are_read_page_by_page_in_utc(fake, reloadly):
    day = date(2026, 11, 24)
    times = {
        "rch_before": datetime(2026, 11, 23, 23, 59, 59, tzinfo=UTC),
        "rch_first": datetime(2026, 11, 24, 0, 0, 0, tzinfo=UTC),
        "rch_morning": datetime(2026, 11, 24, 8, 0, 0, tzinfo=UTC),
        "rch_noon": datetime(2026, 11, 24, 12, 0, 0, tzinfo=UTC),
        "rch_last": datetime(2026, 11, 24, 23, 59, 59, tzinfo=UTC),
        "rch_after": datetime(2026, 11, 25, 0, 0, 0, tzinfo=UTC),
    }
    for reference, moment in times.items():
        fake.now = lambda moment=moment: moment
        reloadly.send(request(reference))
    fake.refund("rch_noon")
    reloadly.page_size = 3
    found = reloadly.transactions(day=day)
    assert [t.reference for t in found] == ["rch_first", "rch_morning", "rch_noon", "rch_last"]
    assert [t.created_at for t in found] == [times[t.reference] for t in found]
    assert {t.reference: t.status for t in found}["rch_noon"] == ProviderResult.REVERSED
    morning = found[1]
    assert (morning.amount, morning.currency) == (Decimal("100.0"), "MXN")
    assert (morning.cost, morning.cost_currency) == (Decimal("4.56"), "EUR")
    assert morning.transaction_id == str(fake.topups["rch_morning"]["transactionId"])
    reports = [q for q, _ in api_calls(fake, "/topups/reports/transactions") if "startDate" in q]
    assert [(q["startDate"], q["endDate"], q["page"]) for q in reports] == [
        ("2026-11-24 00:00:00", "2026-11-24 23:59:59", "1"),
        ("2026-11-24 00:00:00", "2026-11-24 23:59:59", "2"),
    ]


# -- the processor --------------------------------------------------------------------------


@pytest.fixture
def airtime_reloadly(settings, fake):
    """AIRTIME_PROVIDER: the RELOADLY_* account of the settings, at the fake."""
    settings.AIRTIME_PROVIDER = "reloadly"
    settings.RELOADLY_BASE_URL = settings.RELOADLY_AUTH_URL = fake.url
    settings.RELOADLY_CLIENT_ID, settings.RELOADLY_CLIENT_SECRET = "id", "secret"
    settings.RELOADLY_TIMEOUT_SECONDS = 2.0
    return settings


def wallet_balance(recharge) -> Decimal:
    return Wallet.objects.get(account_id=recharge.account_id, kind="live").balance


@pytest.mark.django_db
@pytest.mark.parametrize("made", [True, False])
def test_the_processor_settles_a_5xx_by_lookup_and_never_fails_it_meanwhile(
    fake, airtime_reloadly, user, product, made
):
    fund(user, "100.00")
    (recharge,) = place(user, product).recharges.all()
    fake.fail_next(500, {"message": "Internal Server Error"}, made=made)
    outcome = processor.recharge_process(recharge_id=recharge.pk)
    if not made:  # nothing upstream: still ours to settle at Reloadly, later
        assert outcome.status == S.DISPATCHED and outcome.retry_in
        outcome = processor.recharge_process(recharge_id=recharge.pk, attempt=outcome.attempt)
    assert outcome.status == S.DELIVERED
    recharge.refresh_from_db()
    assert recharge.status == S.DELIVERED and not recharge.refunded
    assert len(fake.topups) == 1
    assert recharge.provider_transaction_id == str(fake.topups[recharge.public_id]["transactionId"])


@pytest.mark.django_db
def test_a_dispatched_recharge_whose_top_up_was_refunded_fails_and_is_refunded_once(
    fake, airtime_reloadly, user, product
):
    fund(user, "100.00")
    (recharge,) = place(user, product).recharges.all()
    fake.fail_next(500, made=True)
    fake.fail_next_lookup(502)  # the answer and the lookup are both lost: still dispatched
    first = processor.recharge_process(recharge_id=recharge.pk)
    assert first.status == S.DISPATCHED
    fake.refund(recharge.public_id)
    again = processor.recharge_process(recharge_id=recharge.pk, attempt=first.attempt)
    assert again.status == S.FAILED
    recharge.refresh_from_db()
    assert recharge.failure_code == "upstream_reversed" and recharge.refunded
    assert wallet_balance(recharge) == Decimal("100.00")
    assert fake.calls[recharge.public_id] == 1
    assert_ledger_balanced()


# -- standalone --------------------------------------------------------------------------


def test_the_fake_runs_alone_and_serves_auth_and_api_on_one_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "tests.fakes.reloadly", "--port", str(port)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        url = server.stdout.readline().strip()
        assert url == f"http://127.0.0.1:{port}"
        provider = ReloadlyProvider(
            client_id="demo", client_secret="demo", base_url=url, auth_url=url, timeout=2
        )
        assert provider.balance() == (Decimal("550.75"), "EUR")
        assert len(provider.catalog()) == 15
    finally:
        server.terminate()
        server.wait(timeout=10)
