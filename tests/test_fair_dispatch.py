"""Fair dispatch (decisions §15 "Fairness", docs/processor.md "Fair dispatch"): one account's
batch never puts its whole backlog ahead of another account's order.

The first tests read the real broker queue (Redis) with no worker: what was published, in
which order. They then play the worker themselves, popping the oldest message and running its
task in this process, so the lane's top-ups (published by the task) land on the same queue.
The last one runs a real worker process against a slow provider fake.
"""

from __future__ import annotations

import base64
import json
import threading
from decimal import Decimal
from pathlib import Path

import pytest
import redis
from django.db import connection, transaction
from django.test import override_settings

from orders.batches import batch_place
from orders.pricing import LineRequest
from orders.services import order_place_with_wallet
from recharges import lanes, tasks
from recharges.models import Recharge
from recharges.tasks import recharge_process_task, recharges_sweep_task
from sandbox.balances import sandbox_topup
from tests.broker_support import BROKER
from tests.factories import ProductFactory, UserFactory, make_key
from tests.fakes.reloadly import FakeReloadly
from tests.helpers import (
    assert_ledger_balanced,
    funded_order,
    settings_in_a_process,
)
from tests.waiting import wait_until
from tests.worker_support import reloadly_worker
from upstreams import semaphore
from wallet.services import wallet_get_or_create, wallet_topup_manual

pytestmark = [pytest.mark.django_db(transaction=True)]
ROOT = Path(__file__).resolve().parent.parent

SHARE = 20


@pytest.fixture(autouse=True)
def lanes_settings():
    with override_settings(DISPATCH_ACCOUNT_SHARE=SHARE, DISPATCH_DIRECT_MAX=20):
        yield


def funded(amount: str = "5000.00"):
    user = UserFactory()
    wallet_topup_manual(account=user.account, amount=Decimal(amount))
    return user


def batch(user, product, count: int, key: str = "fair-batch"):
    lines = [
        LineRequest(product=product, recipient_number=f"+5255{12340000 + i}", quantity=1)
        for i in range(count)
    ]
    outcome = batch_place(
        account=user.account,
        lines=lines,
        references=[f"line-{i}" for i in range(count)],
        currency="EUR",
        user=user,
        idempotency_key=key,
    )
    assert outcome.status == 202, outcome


def single(user, product, quantity: int = 1):
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


def messages(queue: str, task: str = recharge_process_task.name) -> list[list]:
    """The queue's messages of ``task``: their arguments, oldest (next to be consumed) first."""
    client = redis.Redis.from_url(BROKER)
    raw = client.lrange(queue, 0, -1)  # kombu pushes on the left, consumes from the right
    return [_args(item) for item in reversed(raw) if json.loads(item)["headers"]["task"] == task]


def _args(item: bytes) -> list:
    message = json.loads(item)
    args, _kwargs, _embed = json.loads(base64.b64decode(message["body"]))
    return args


def pop(queue: str) -> list | None:
    item = redis.Redis.from_url(BROKER).rpop(queue)
    return None if item is None else _args(item)


def ids_of(user) -> list[int]:
    return list(
        Recharge.objects.filter(account=user.account).order_by("pk").values_list("pk", flat=True)
    )


def work(queue: str, *, limit: int = 10_000, seen: list | None = None) -> int:
    """Be the worker: run the oldest message's task until the queue is empty."""
    done = 0
    while done < limit and (args := pop(queue)) is not None:
        if seen is not None:
            seen.append(args)
        recharge_process_task.apply(args=args)
        done += 1
    return done


def test_an_accounts_share_defaults_to_half_the_provider_ceiling_at_most_100_or_the_pool():
    """Another account's recharge competes for a provider slot with one share of each backlog:
    under a ceiling of 20 calls, a share of 100 made B..E wait 3x their idle time in the bench
    (docs/performance.md, "fair"); half the ceiling keeps the ceiling full for A alone."""

    def share(**env: str | None) -> int:
        clean: dict[str, str | None] = {
            "DISPATCH_ACCOUNT_SHARE": None,
            "CELERY_BROKER_URL": "redis://127.0.0.1:6379/0",  # read, never connected to
            **env,
        }
        return settings_in_a_process(clean, "DISPATCH_ACCOUNT_SHARE")["DISPATCH_ACCOUNT_SHARE"]

    assert share(PROVIDER_MAX_IN_FLIGHT="20") == 10
    assert share(PROVIDER_MAX_IN_FLIGHT="200") == 100
    assert share(PROVIDER_MAX_IN_FLIGHT="1000") == 100
    assert share(PROVIDER_MAX_IN_FLIGHT="1") == 1
    assert share(PROVIDER_MAX_IN_FLIGHT="0") == 100  # no ceiling
    assert share(PROVIDER_MAX_IN_FLIGHT="20", DISPATCH_ACCOUNT_SHARE="7") == 7
    # Without a broker (make run), the in-process pool's threads are the workers: its size.
    assert share(CELERY_BROKER_URL=None) == 4
    assert share(CELERY_BROKER_URL=None, DISPATCH_ACCOUNT_SHARE="7") == 7


def test_a_batch_publishes_one_share_and_another_account_waits_only_for_it(publishing, queue):
    product = ProductFactory(retail_price=Decimal("2.00"))
    a, b = funded(), funded()
    batch(a, product, 1000)
    assert Recharge.objects.filter(account=a.account, status="queued").count() == 1000
    published = messages(queue)
    assert len(published) == SHARE  # one share of A's 1,000, not its backlog

    single(b, product)
    published = messages(queue)
    b_id = ids_of(b)[0]
    position = [args[0] for args in published].index(b_id)
    assert position <= SHARE  # B's message is within the first share + 1
    assert len(published) == SHARE + 1


def test_an_accounts_messages_are_in_its_id_order(publishing, queue):
    product = ProductFactory(retail_price=Decimal("2.00"))
    a = funded()
    batch(a, product, 200)
    first = [args[0] for args in messages(queue)]
    assert first == ids_of(a)[:SHARE]
    assert all(args[3] == a.account_id for args in messages(queue))  # each carries its lane

    # After the lane is topped up, the next ones follow on in order too.
    seen: list = []
    work(queue, seen=seen)
    assert [args[0] for args in seen] == ids_of(a)


def test_the_lane_is_topped_up_as_its_share_is_taken_and_everything_is_delivered_once(
    publishing, queue
):
    product = ProductFactory(retail_price=Decimal("2.00"))
    a = funded()
    batch(a, product, 90)
    a_ids = ids_of(a)
    seen: list = []
    deepest = 0
    while (args := pop(queue)) is not None:
        seen.append(args)
        recharge_process_task.apply(args=args)
        waiting = messages(queue)
        deepest = max(deepest, len(waiting))
        pending = Recharge.objects.filter(
            account=a.account, status="queued", released_at__isnull=False
        ).count()
        assert pending <= SHARE
    assert deepest <= SHARE  # topped up, never flooded
    assert sorted(args[0] for args in seen) == a_ids  # every one published exactly once
    delivered = Recharge.objects.filter(account=a.account, status="delivered")
    assert delivered.count() == 90
    assert all(row.attempts == 1 for row in delivered)
    assert_ledger_balanced()


def test_a_lost_top_up_and_a_lost_message_are_recovered_by_the_sweeper_one_share_at_a_time(
    publishing, queue, monkeypatch
):
    product = ProductFactory(retail_price=Decimal("2.00"))
    a = funded()
    batch(a, product, 100)
    a_ids = ids_of(a)
    lost = pop(queue)  # a message the broker lost: its row stays queued, released
    assert lost is not None and lost[0] == a_ids[0]
    with monkeypatch.context() as patched:
        patched.setattr(tasks, "lane_top_up", lambda **_: [])  # the feeder's top-ups: lost
        assert work(queue) == SHARE - 1
    assert messages(queue) == []
    stuck = Recharge.objects.filter(account=a.account, status="queued")
    assert stuck.count() == 100 - (SHARE - 1)  # stalled until the sweeper comes

    with override_settings(RECHARGE_STUCK_QUEUED_SECONDS=0):
        counts = recharges_sweep_task.apply().get()
    republished = [args[0] for args in messages(queue)]
    assert counts["fed"] == len(republished) - 1  # the lost message's row, and one share
    assert len(republished) <= SHARE  # one share, not A's 80 still waiting
    assert republished[0] == a_ids[0]
    assert republished[1:] == a_ids[SHARE : SHARE + len(republished) - 1]  # in A's order

    work(queue)
    assert Recharge.objects.filter(account=a.account, status="delivered").count() == 100
    assert_ledger_balanced()


def test_small_orders_are_published_at_once_unless_their_account_has_a_backlog(publishing, queue):
    product = ProductFactory(retail_price=Decimal("2.00"))
    a = funded()
    single(a, product, quantity=3)
    assert len(messages(queue)) == 3
    assert Recharge.objects.filter(account=a.account, released_at__isnull=True).count() == 0
    work(queue)

    batch(a, product, 50)
    single(a, product, quantity=1)  # behind A's own batch: A's order is kept
    last = ids_of(a)[-1]
    assert last not in [args[0] for args in messages(queue)]
    seen: list = []
    work(queue, seen=seen)
    assert [args[0] for args in seen][-1] == last
    assert Recharge.objects.filter(account=a.account).exclude(status="delivered").count() == 0


def test_test_mode_orders_never_reach_the_queue(publishing, queue):
    """A guard, not a change: test keys' recharges are settled by the sandbox in their order's
    transaction, so they never compete with live work (nor sit in a lane)."""
    product = ProductFactory(retail_price=Decimal("2.00"))
    user = funded()
    key, _secret = make_key(user, mode="test")
    sandbox_topup(key=key, amount=Decimal("100"))
    lines = [
        LineRequest(product=product, recipient_number=f"+52551234{i:04d}", quantity=1)
        for i in range(30)
    ]
    outcome = batch_place(
        account=user.account,
        lines=lines,
        references=[f"t-{i}" for i in range(30)],
        currency="EUR",
        user=user,
        api_key=key,
        idempotency_key="sandbox-batch",
    )
    assert outcome.status == 202, outcome
    assert messages(queue) == []
    assert not Recharge.objects.filter(account=user.account, status="queued").exists()


# -- a real worker ------------------------------------------------------------------------


@pytest.fixture
def fake():
    server = FakeReloadly().start()
    yield server
    server.stop()


@pytest.mark.integration
def test_a_real_worker_delivers_another_accounts_order_before_a_batch_placed_before_it(
    fake, publishing, queue
):
    fake.delay = 0.05
    worker = reloadly_worker(
        fake, queue, pool="threads", concurrency=8,
        extra_env={"DISPATCH_ACCOUNT_SHARE": str(SHARE)},
    )  # fmt: skip
    try:
        product = ProductFactory(retail_price=Decimal("2.00"))
        a, b = funded(), funded()
        batch(a, product, 300)
        single(b, product)
        b_recharge = Recharge.objects.get(account=b.account)
        wait_until(
            lambda: Recharge.objects.filter(pk=b_recharge.pk, status="delivered").exists(),
            timeout=60,
            what="the other account's recharge delivered",
        )
        a_rows = Recharge.objects.filter(account=a.account)
        wait_until(
            lambda: a_rows.filter(status="delivered").count() == 300,
            timeout=120,
            what="the batch's 300 delivered",
            state=lambda: sorted(
                a_rows.exclude(status="delivered").values_list("pk", "status", "released_at")
            ),
        )
    finally:
        worker.stop()
    b_recharge.refresh_from_db()
    after_b = Recharge.objects.filter(
        account=a.account, delivered_at__gt=b_recharge.delivered_at
    ).count()
    # FIFO would deliver B after (nearly) all of A's 300; a share ahead of it leaves most after.
    assert after_b >= 200, after_b
    assert all(n == 1 for n in fake.calls.values()), "a recharge was sent twice"
    assert len(fake.calls) == 301
    assert_ledger_balanced()


@pytest.mark.usefixtures("publishing")  # the order's message goes to a queue nobody reads
def test_a_recharge_waiting_for_a_provider_slot_counts_in_its_accounts_lane(settings):
    """The one path claims a recharge (dispatched) before it waits for its provider's slot.
    Still waiting, it counts among its account's recharges waiting in the lane, so a backlog
    never has more than a share of threads waiting for slots ahead of another account's (the
    fair figure measured B..E's recharges behind ~200 of A's before this)."""
    settings.PROVIDER_MAX_IN_FLIGHT = 1
    settings.PROVIDER_SLOT_WAIT_SECONDS = 10.0
    order = funded_order(ProductFactory(retail_price=Decimal("5.00")), funds="50.00")
    (recharge,) = order.recharges.all()
    account = order.account_id
    assert lanes.pending_count(account_id=account) == 1  # released, not yet claimed
    results: list[str] = []

    def work() -> None:
        try:
            results.append(recharge_process_task.run(recharge.pk))
        finally:
            connection.close()  # this thread's own connection, not left for the teardown

    with semaphore.provider_slot("simulator", limit=1, wait=1) as held:
        assert held  # the provider's only slot, taken by someone else
        worker = threading.Thread(target=work)
        worker.start()
        wait_until(
            lambda: semaphore.waiting(lanes.slot_waiters(account)) == 1,
            timeout=10,
            what="the recharge waiting for the provider's slot",
        )
        recharge.refresh_from_db()
        assert recharge.status == Recharge.Status.DISPATCHED
        assert lanes.pending_count(account_id=account) == 1  # dispatched, and still waiting
    worker.join(20)
    recharge.refresh_from_db()
    assert results == [Recharge.Status.DELIVERED] and recharge.status == Recharge.Status.DELIVERED
    assert lanes.pending_count(account_id=account) == 0
    assert_ledger_balanced()
