"""Upstream airtime providers: the simulator and the Reloadly adapter against a local fake."""

import threading
from decimal import Decimal

import pytest

from tests.fakes.reloadly import FakeReloadly
from tests.waiting import wait_until
from upstreams.adapters import (
    PermanentError,
    ProviderResult,
    TopupRequest,
    TransientError,
    UpstreamTimeout,
)
from upstreams.adapters.reloadly import ReloadlyProvider
from upstreams.adapters.simulator import SimulatorProvider


def request(reference="rch_test1", number="+5215512345678"):
    return TopupRequest(
        reference=reference,
        recipient_number=number,
        country="MX",
        operator_id="341",
        product_id="prd_1",
        amount=Decimal("100.00"),
        currency="MXN",
    )


@pytest.fixture
def fake():
    server = FakeReloadly().start()
    yield server
    server.stop()


@pytest.fixture
def reloadly(fake):
    return ReloadlyProvider(
        client_id="id", client_secret="secret", base_url=fake.url, auth_url=fake.url, timeout=1.0
    )


def test_reloadly_send_uses_our_reference_and_returns_the_transaction(fake, reloadly):
    result = reloadly.send(request())
    assert result.status == ProviderResult.DELIVERED
    assert result.transaction_id == "1000"
    assert fake.topups["rch_test1"]["recipientPhone"] == "15512345678"
    assert fake.calls["rch_test1"] == 1


def test_reloadly_fetches_a_new_token_once_when_the_old_one_is_refused(fake, reloadly):
    reloadly.send(request("rch_a"))
    fake.expire_tokens()
    assert reloadly.send(request("rch_b")).status == ProviderResult.DELIVERED
    assert fake.token_requests == 2


def test_reloadly_429_is_transient_with_retry_after(fake, reloadly):
    fake.fail_next(429, {"message": "slow down"}, {"Retry-After": "7"})
    with pytest.raises(TransientError) as info:
        reloadly.send(request())
    assert info.value.retry_after == 7.0
    assert "rch_test1" not in fake.topups


def test_reloadly_5xx_while_sending_is_settled_by_lookup_not_retried_elsewhere(fake, reloadly):
    """A 5xx may come after Reloadly made the top-up (docs/contract.md §14): it is an
    UpstreamTimeout, which the processor settles by looking the reference up."""
    fake.fail_next(503)
    with pytest.raises(UpstreamTimeout):
        reloadly.send(request())
    assert reloadly.status("rch_test1") is None


def test_reloadly_refusal_is_permanent_with_its_code(reloadly):
    with pytest.raises(PermanentError) as info:
        reloadly.send(request(number="+5215510000000"))
    assert info.value.code == "invalid_recipient_phone"


def test_reloadly_timeout_is_reconciled_by_status_lookup(fake, reloadly):
    fake.slow_next(3.0)
    with pytest.raises(UpstreamTimeout):
        reloadly.send(request())
    found = reloadly.status("rch_test1")
    assert found is not None and found.status == ProviderResult.DELIVERED
    assert reloadly.status("rch_never_sent") is None


def test_reloadly_duplicate_reference_returns_the_first_top_up(fake, reloadly):
    first = reloadly.send(request())
    again = reloadly.send(request())
    assert again.transaction_id == first.transaction_id
    assert len(fake.topups) == 1


def test_a_duplicate_reference_still_being_worked_on_upstream_is_pending_not_refused(
    fake, reloadly
):
    """The provider holds our reference but does not list the top-up until it has answered
    the first call: the duplicate's outcome is unknown, so it is pending (asked again later),
    never a refusal that would refund a top-up the recipient is about to get."""
    fake.list_after_answer = True
    fake.slow_next(3.0)
    slow = ReloadlyProvider(
        client_id="id", client_secret="secret", base_url=fake.url, auth_url=fake.url, timeout=5
    )
    first: list[ProviderResult] = []
    sending = threading.Thread(target=lambda: first.append(slow.send(request())))
    sending.start()
    wait_until(lambda: fake.calls["rch_test1"], timeout=5, what="the first send's call")
    again = reloadly.send(request())
    sending.join()
    assert again.status == ProviderResult.PENDING
    assert first[0].status == ProviderResult.DELIVERED
    assert reloadly.status("rch_test1").transaction_id == first[0].transaction_id


def test_a_duplicate_reference_whose_lookup_fails_is_pending_not_refused(fake, reloadly):
    """Reloadly refused the reference as a duplicate, so the top-up is theirs; a lookup that
    fails at that moment (502) makes it pending, never an error that could end in a refund."""
    first = reloadly.send(request())
    fake.fail_next_lookup(502)
    again = reloadly.send(request())
    assert again.status == ProviderResult.PENDING
    assert reloadly.status("rch_test1").transaction_id == first.transaction_id


def test_reloadly_unreachable_is_transient():
    provider = ReloadlyProvider(
        client_id="id",
        client_secret="s",
        base_url="http://127.0.0.1:9",
        auth_url="http://127.0.0.1:9",
        timeout=0.5,
    )
    with pytest.raises(TransientError):
        provider.send(request())


def test_reloadly_balance(reloadly):
    assert reloadly.balance() == (Decimal("550.75"), "EUR")


def test_simulator_delivers_and_remembers_the_reference():
    sim = SimulatorProvider(latency_ms=0)
    first = sim.send(request("rch_sim1"))
    assert first.status == ProviderResult.DELIVERED
    assert sim.send(request("rch_sim1")).transaction_id == first.transaction_id
    assert sim.status("rch_sim1").transaction_id == first.transaction_id
    assert sim.status("rch_unknown") is None


@pytest.mark.parametrize(
    "ending, error",
    [("9990", PermanentError), ("9993", UpstreamTimeout)],
)
def test_simulator_failure_rules_by_number_ending(ending, error):
    with pytest.raises(error):
        SimulatorProvider(latency_ms=0).send(request("rch_x" + ending, "+52155123" + ending))


def test_simulator_transient_once_then_succeeds():
    sim = SimulatorProvider(latency_ms=0)
    with pytest.raises(TransientError):
        sim.send(request("rch_t", "+5215512349991"))
    assert sim.send(request("rch_t", "+5215512349991")).status == ProviderResult.DELIVERED


def test_simulator_timeout_after_delivery_is_found_by_status():
    sim = SimulatorProvider(latency_ms=0)
    with pytest.raises(UpstreamTimeout):
        sim.send(request("rch_td", "+5215512349992"))
    assert sim.status("rch_td").status == ProviderResult.DELIVERED
