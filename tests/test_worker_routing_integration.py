"""Exactly once across providers: real Celery worker processes route recharges to the DT One
and DingConnect fakes over HTTP (both providers created and synced with the CLI, two routes
to the same product), one provider goes down, and the worker is killed with SIGKILL while
calls are in flight at both; another worker and the sweeper finish the batch.

Every recharge must end delivered by exactly one provider, sent to it once and to no other
(each fake counts the sends per reference), with the provider that delivered it on the row,
and the ledger must balance. The worker's environment points at the provider rows, not at a
Reloadly fake.
"""

import time
from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import transaction
from django.test import override_settings

from catalog.services import fx_rate_set
from orders.pricing import LineRequest
from orders.services import order_place_with_wallet
from recharges.models import Recharge, RechargeAttempt
from recharges.tasks import recharges_sweep_task
from tests.factories import OperatorFactory, UserFactory
from tests.fakes.ding import FakeDing
from tests.fakes.dtone import FakeDTOne
from tests.helpers import assert_ledger_balanced
from tests.servers import CeleryWorker
from tests.waiting import WaitTimeout, wait_until
from tests.worker_support import started_worker, worker_env
from upstreams.models import Route
from wallet.models import Wallet
from wallet.services import wallet_get_or_create, wallet_topup_manual

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

S = Recharge.Status
DTONE, DING = "dtone-1", "ding-1"
# DT One is the cheaper route (5.50 USD against Ding's 5.70), so it takes the batch first. Its
# calls take longer than Ding's, so the kill finds calls in flight at both.
DTONE_DELAY, DING_DELAY = 6.0, 2.0
FIRST, SECOND = 100, 60  # recharges placed before DT One goes down, and while it is down
FUNDS = Decimal("2000.00")


@pytest.fixture
def dtone():
    server = FakeDTOne()
    server.delay = DTONE_DELAY
    yield server.start()
    server.stop()


@pytest.fixture
def ding():
    server = FakeDing(balance="5000.00")
    server.delay = DING_DELAY
    yield server.start()
    server.stop()


def cli(*args) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue().strip()


@pytest.fixture
def telcel_100(dtone, ding):
    """Telcel 100 MXN, sold by both providers (created and synced as staff do, with the CLI)."""
    fx_rate_set(base_currency="EUR", quote_currency="USD", rate=Decimal("1.10"))
    telcel = OperatorFactory(slug="telcel", name="Telcel")
    OperatorFactory(slug="att", name="AT&T", carrier_names=["AT&T", "Iusacell"])
    cli(
        "create_provider", "--name", DTONE, "--kind", "dtone", "--base-url", dtone.url,
        "--api-key", dtone.api_key, "--api-secret", dtone.api_secret, "--currency", "USD",
        "--max-in-flight", "200",
    )  # fmt: skip
    cli(
        "create_provider", "--name", DING, "--kind", "ding", "--base-url", ding.url,
        "--api-key", ding.api_key, "--currency", "USD", "--max-in-flight", "200",
    )  # fmt: skip
    for name in (DTONE, DING):
        cli("sync_provider_catalog", "--provider", name, "--country", "MX")
    product = Route.objects.get(
        provider__name=DTONE, product__operator=telcel, product__local_amount=100
    ).product
    assert set(Route.objects.filter(product=product).values_list("provider__name", flat=True)) == {
        DTONE,
        DING,
    }
    yield product


def routing_worker(queue: str) -> CeleryWorker:
    """A real Celery worker process on the test's queue and database (threads, pooled
    connections: the processor as deployed), routing by the provider rows."""
    env = worker_env(
        queue,
        DATABASE_POOL_SIZE="8",
        SITE_URL="http://127.0.0.1:9",  # DT One's callbacks go nowhere: the worker settles
    )
    return started_worker(env, listen=queue, pool="threads", concurrency=200)


@pytest.fixture
def workers(queue):
    started: list[CeleryWorker] = []

    def start() -> CeleryWorker:
        started.append(routing_worker(queue))
        return started[-1]

    yield start
    for worker in started:
        worker.stop()


def place(user, product, quantity: int):
    with transaction.atomic():
        return order_place_with_wallet(
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


def statuses(orders) -> dict[str, int]:
    counts: dict[str, int] = {}
    for status in Recharge.objects.filter(order__in=orders).values_list("status", flat=True):
        counts[status] = counts.get(status, 0) + 1
    return counts


def sends(fake) -> dict[str, int]:
    """Send calls per reference, as the provider counted them."""
    with fake.lock:
        return dict(fake.calls)


def settle(*fakes, quiet: float = 1.0, timeout: float = 30.0) -> bool:
    """Wait until no send has reached any of the fakes for ``quiet`` seconds: what the killed
    worker had on the wire has landed. (Both fakes make the top-up before their delayed
    answer, so a counted send is already held.) Production's sweeper only reconciles after
    RECHARGE_STUCK_DISPATCHED_SECONDS, minutes; this test sweeps at once, so it waits first."""
    last, calm_since = -1, time.monotonic()

    def calm() -> bool:
        nonlocal last, calm_since
        now = sum(sum(sends(fake).values()) for fake in fakes)
        if now != last:
            last, calm_since = now, time.monotonic()
            return False
        return time.monotonic() - calm_since >= quiet

    try:
        wait_until(calm, timeout=timeout, what=f"no send for {quiet:g} s")
    except WaitTimeout:
        return False
    return True


def delivered_at_dtone(fake: FakeDTOne) -> set[str]:
    with fake.lock:
        return {
            ref
            for ref, made in fake.transactions.items()
            if made["status"]["class"]["message"] == "COMPLETED"
        }


def delivered_at_ding(fake: FakeDing) -> set[str]:
    with fake.lock:
        return {
            ref
            for ref, made in fake.transfers.items()
            if made["ProcessingState"] in ("Complete", "Completed")
        }


def test_sigkill_with_one_provider_down_sends_each_recharge_to_one_provider_once(
    telcel_100, dtone, ding, workers, publishing
):
    """160 recharges by route: 100 go to DT One (the cheaper route); DT One goes down (its
    port refuses connections) with those calls in flight, and 60 more go to Ding (failing
    over from a refused connection, or past DT One's open circuit); the worker is killed
    with calls in flight at both. DT One is still down when a new worker and
    the sweeper take over, so its look-ups are refused for a while (a refused look-up says
    nothing about the send before it); then it is back, and every recharge is settled where
    it was sent."""
    user = UserFactory()
    wallet_topup_manual(account=user.account, amount=FUNDS)
    first = workers()
    orders = [place(user, telcel_100, FIRST)]
    at_dtone = lambda: sum(sends(dtone).values()) >= FIRST * 6 // 10  # noqa: E731
    wait_until(
        at_dtone,
        timeout=30,
        what="60% of the first sent to DT One",
        every=0.02,  # the kill must find calls in flight
        state=lambda: statuses(orders),
    )
    dtone.outage(True)  # calls it took still complete; new ones are refused: failover
    orders.append(place(user, telcel_100, SECOND))
    at_ding = lambda: sum(sends(ding).values()) >= SECOND // 3  # noqa: E731
    wait_until(
        at_ding,
        timeout=30,
        what="a third of the second sent to Ding",
        every=0.02,  # the kill must find calls in flight
        state=lambda: statuses(orders),
    )
    first.kill()  # with calls in flight at both providers

    # Calls the providers took whose answers the dead worker never read: many at each (not
    # a handful: a pooled connection is never held while a provider answers).
    in_flight = set(
        Recharge.objects.filter(order__in=orders, status=S.DISPATCHED).values_list(
            "public_id", flat=True
        )
    )
    unanswered = {
        DTONE: len(in_flight & set(sends(dtone))),
        DING: len(in_flight & set(sends(ding))),
    }
    assert unanswered[DTONE] >= 20 and unanswered[DING] >= 10, unanswered
    assert settle(dtone, ding), "the providers kept receiving calls after the kill"

    workers()
    with override_settings(RECHARGE_STUCK_QUEUED_SECONDS=0, RECHARGE_STUCK_DISPATCHED_SECONDS=0):
        recharges_sweep_task.apply()  # what beat does every 30 s
    refused_lookups = RechargeAttempt.objects.filter(
        recharge__order__in=orders, provider=DTONE, action="status", outcome="unreachable"
    )
    wait_until(
        lambda: refused_lookups.count() >= 10,
        timeout=30,
        what="10 refused look-ups at DT One",
        state=lambda: statuses(orders),
    )
    dtone.outage(False)
    total = FIRST + SECOND
    final = lambda: sum(statuses(orders).get(s, 0) for s in (S.DELIVERED, S.FAILED)) == total  # noqa: E731
    wait_until(
        final, timeout=45, what="every recharge delivered or failed", state=lambda: statuses(orders)
    )
    assert settle(dtone, ding)

    at = {DTONE: delivered_at_dtone(dtone), DING: delivered_at_ding(ding)}
    sent = {DTONE: sends(dtone), DING: sends(ding)}
    rows = list(
        Recharge.objects.filter(order__in=orders).values_list(
            "public_id", "status", "provider", "refunded", "amount"
        )
    )
    assert len(rows) == total
    wrong = []
    for ref, status, provider, refunded, _amount in rows:
        delivered_by = [name for name in (DTONE, DING) if ref in at[name]]
        sent_to = {name: sent[name][ref] for name in (DTONE, DING) if sent[name].get(ref)}
        if status == S.DELIVERED:
            # Delivered by exactly one provider, sent to it once and to no other, named on the row.
            ok = delivered_by == [provider] and sent_to == {provider: 1}
        else:  # failed: refunded, and delivered nowhere
            ok = status == S.FAILED and refunded and not delivered_by
        if not ok:
            wrong.append((ref, status, provider, delivered_by, sent_to))
    assert wrong == [], (len(wrong), wrong[:5])
    # Both providers delivered some, and some recharges failed over from DT One to Ding.
    refs = {row[0] for row in rows}
    assert at[DTONE] & refs and at[DING] & refs
    failed_over = set(
        RechargeAttempt.objects.filter(
            recharge__order__in=orders, provider=DTONE, action="send", outcome="unreachable"
        ).values_list("recharge__public_id", flat=True)
    )
    assert failed_over & at[DING]

    paid = sum(amount for _ref, status, _p, _r, amount in rows if status == S.DELIVERED)
    wallet = Wallet.objects.get(account=user.account, kind="live")
    assert wallet.balance == FUNDS - paid  # nothing doubled, every failure refunded once
    assert_ledger_balanced()
