"""Back-pressure towards the provider (upstreams/semaphore.py): a ceiling of calls in
flight shared by every thread and worker, and 429s that slow the processor down instead of
failing recharges. Real HTTP calls to the local Reloadly fake; real threads."""

import threading
from decimal import Decimal

import pytest
from django.db import connections, transaction

from orders.pricing import LineRequest
from orders.services import order_place_with_wallet
from recharges import processor
from recharges.models import Recharge
from recharges.tasks import recharge_process_task
from tests.factories import ProductFactory, UserFactory
from tests.fakes.reloadly import FakeReloadly
from tests.helpers import assert_ledger_balanced
from tests.waiting import wait_until
from upstreams import semaphore
from wallet.services import wallet_get_or_create, wallet_topup_manual

S = Recharge.Status


@pytest.fixture
def fake():
    server = FakeReloadly().start()
    yield server
    server.stop()


@pytest.fixture
def reloadly_settings(settings, fake):
    settings.AIRTIME_PROVIDER = "reloadly"
    settings.RELOADLY_BASE_URL = fake.url
    settings.RELOADLY_AUTH_URL = fake.url
    settings.RELOADLY_CLIENT_ID = f"test-{id(fake)}"  # its own token cache key
    settings.RELOADLY_CLIENT_SECRET = "s"
    settings.RELOADLY_TIMEOUT_SECONDS = 5.0
    return settings


def place(quantity: int) -> list[Recharge]:
    product = ProductFactory(retail_price=Decimal("2.00"))
    user = UserFactory()
    wallet_topup_manual(account=user.account, amount=Decimal("500.00"))
    with transaction.atomic():
        order = order_place_with_wallet(
            account=user.account,
            wallet=wallet_get_or_create(account=user.account),
            livemode=True,
            channel="b2b",
            currency="EUR",
            user=user,
            lines=[
                LineRequest(product=product, recipient_number="+525512345678", quantity=quantity)
            ],
        )
    return list(order.recharges.order_by("id"))


@pytest.mark.django_db
def test_429s_slow_the_processor_down_and_fail_nothing(reloadly_settings, fake):
    """Twelve 429s in a row (more than RECHARGE_MAX_ATTEMPTS): every recharge is delivered,
    once, and none spent an attempt on a refusal."""
    reloadly_settings.RECHARGE_MAX_ATTEMPTS = 3
    for _ in range(12):
        fake.fail_next(429, {"message": "slow down"}, {"Retry-After": "0.05"})
    recharges = place(quantity=3)
    for recharge in recharges:
        outcome = processor.recharge_process(recharge_id=recharge.pk)
        for _ in range(30):
            if outcome.retry_in is None:
                break
            # What the task's countdown does: run again once the provider's pause is over
            # (the pause is what the 429 set, never shorter than the retry it asks for).
            assert outcome.retry_in >= semaphore.paused_for("reloadly")
            wait_until(
                lambda: semaphore.paused_for("reloadly") == 0,
                timeout=outcome.retry_in + 5,
                what="the provider's 429 pause to end",
            )
            outcome = processor.recharge_process(recharge_id=recharge.pk, attempt=outcome.attempt)
        recharge.refresh_from_db()
        assert recharge.status == S.DELIVERED, (recharge.status, recharge.failure_code)
        assert recharge.attempts == 1
        assert recharge.refunded is False
    assert sorted(fake.topups) == sorted(r.public_id for r in recharges)
    assert sum(fake.calls.values()) == 12 + 3
    assert_ledger_balanced()


@pytest.mark.django_db
def test_a_429_pauses_every_caller_for_its_retry_after(reloadly_settings, fake):
    fake.fail_next(429, {"message": "slow down"}, {"Retry-After": "30"})
    (recharge,) = place(quantity=1)
    outcome = processor.recharge_process(recharge_id=recharge.pk)
    assert outcome.status == S.DISPATCHED and outcome.retry_in >= 30
    assert 25 < semaphore.paused_for("reloadly") <= 30
    # Another thread wanting a slot within the pause gets none at once, and is told how long
    # the pause lasts: it hands its recharge back for then.
    with semaphore.provider_slot("reloadly", limit=200, wait=10) as slot:
        assert not slot and 25 < slot.paused_for <= 30


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("publishing")
def test_calls_in_flight_never_pass_the_ceiling(reloadly_settings, fake):
    """Twelve threads (as a worker's) process twelve recharges against a provider that takes
    0.4 s per call, with PROVIDER_MAX_IN_FLIGHT = 3: the provider never sees more than three at
    once, and every recharge is delivered exactly once. The order's messages go to a real
    broker queue that nobody else consumes."""
    reloadly_settings.PROVIDER_MAX_IN_FLIGHT = 3
    reloadly_settings.PROVIDER_SLOT_WAIT_SECONDS = 10.0
    fake.delay = 0.4
    recharges = place(quantity=12)
    results: list[str] = []

    def work(recharge_id: int) -> None:
        try:
            results.append(recharge_process_task.run(recharge_id))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=work, args=(r.pk,)) for r in recharges]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert results.count(S.DELIVERED) == 12
    assert fake.max_concurrent_topups <= 3
    assert fake.max_concurrent_topups >= 2  # they did run side by side
    assert sorted(fake.calls.values()) == [1] * 12
    assert semaphore.in_flight("reloadly") == 0  # every slot given back
    assert_ledger_balanced()
