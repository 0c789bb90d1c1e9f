"""The processor's group commit (recharges/group_commit.py): the claims and the
deliveries of a process's threads written together, with every guarantee of the one-at-a-time
path. Real threads against PostgreSQL."""

import json
import threading
from collections import Counter
from decimal import Decimal

import pytest
from django.conf import settings
from django.core.cache import cache
from django.core.serializers.json import DjangoJSONEncoder
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from djangorestframework_camel_case.util import camelize

from orders.pricing import LineRequest
from orders.services import order_place_with_wallet
from recharges import group_commit, processor
from recharges.group_commit import GroupCommit, recharge_process_grouped
from recharges.models import Recharge, RechargeEvent
from recharges.serializers import RechargeDetailOut
from tests.factories import ProductFactory, PromotionFactory, UserFactory
from tests.helpers import assert_ledger_balanced
from upstreams import throttle
from upstreams.adapters import ProviderResult
from upstreams.adapters.simulator import SimulatorProvider
from wallet.models import Wallet
from wallet.services import wallet_get_or_create, wallet_topup_manual
from webhooks import delivery
from webhooks.models import Event, WebhookEndpoint

S = Recharge.Status


def place(*, quantity=1, product=None, user=None, livemode=True) -> list[Recharge]:
    product = product or ProductFactory(retail_price=Decimal("5.00"))
    user = user or UserFactory()
    wallet_topup_manual(account=user.account, amount=Decimal("500.00"))
    with transaction.atomic():
        order = order_place_with_wallet(
            account=user.account,
            wallet=wallet_get_or_create(account=user.account),
            livemode=livemode,
            channel="wallet",
            currency="EUR",
            user=user,
            lines=[
                LineRequest(product=product, recipient_number="+525512345678", quantity=quantity)
            ],
        )
    return list(order.recharges.order_by("id"))


class CountingProvider(SimulatorProvider):
    """The simulator, counting its calls per reference; ``during`` runs inside the call."""

    def __init__(self, during=None):
        super().__init__(latency_ms=0)
        self.calls: Counter[str] = Counter()
        self.lock = threading.Lock()
        self.during = during
        self.in_flight = self.most_in_flight = 0

    def send(self, request):
        with self.lock:
            self.calls[request.reference] += 1
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            if self.during is not None:
                self.during(request)
            return super().send(request)
        finally:
            with self.lock:
                self.in_flight -= 1


errors: list[Exception] = []


def in_threads(recharge_ids, provider) -> list[processor.Outcome]:
    errors.clear()
    outcomes: list[processor.Outcome] = []
    start = threading.Barrier(len(recharge_ids))

    def run(recharge_id):
        start.wait()
        try:
            outcome = recharge_process_grouped(recharge_id=recharge_id, provider=provider)
            if outcome is None:  # not taken: one at a time, as the task does
                with throttle.provider_slot(settings.AIRTIME_PROVIDER, wait=30) as held:
                    assert held
                    outcome = processor.recharge_process(recharge_id=recharge_id, provider=provider)
            outcomes.append(outcome)
        except Exception as exc:  # the task would fail; the test reads what it left
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(pk,)) for pk in recharge_ids]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return outcomes


# -- the group commit itself -----------------------------------------------------------------


def test_callers_arriving_while_a_batch_is_written_are_written_together_next():
    """The first caller writes alone; the nine that arrive meanwhile go in one next batch,
    each gets its own result, and a failing write raises in every caller of its batch."""
    entered, release = threading.Event(), threading.Event()
    seen: list[list[int]] = []

    def write(items: list[int]) -> list[int]:
        seen.append(list(items))
        if len(seen) == 1:
            entered.set()
            release.wait(10)
        if -1 in items:
            raise ValueError("refused")
        return [item * 10 for item in items]

    group: GroupCommit[int, int] = GroupCommit(write, limit=100)
    results: dict[int, object] = {}

    def call(item: int) -> None:
        try:
            results[item] = group.submit(item)
        except ValueError as exc:
            results[item] = exc

    first = threading.Thread(target=call, args=(0,))
    first.start()
    assert entered.wait(10)
    others = [threading.Thread(target=call, args=(item,)) for item in range(1, 10)]
    for thread in others:
        thread.start()
    while len(group._waiting) < 9:
        threading.Event().wait(0.005)
    release.set()
    for thread in [first, *others]:
        thread.join(10)
    assert seen[0] == [0] and sorted(seen[1]) == list(range(1, 10)) and len(seen) == 2
    assert results == {item: item * 10 for item in range(10)}

    failing = [threading.Thread(target=call, args=(item,)) for item in (-1, 11)]
    for thread in failing:
        thread.start()
    for thread in failing:
        thread.join(10)
    assert isinstance(results[-1], ValueError)
    assert results[11] == 110 or isinstance(results[11], ValueError)  # alone, or with -1


def test_a_batch_never_exceeds_the_limit_and_everyone_is_answered():
    sizes: list[int] = []
    lock = threading.Lock()

    def write(items: list[int]) -> list[int]:
        with lock:
            sizes.append(len(items))
        threading.Event().wait(0.002)
        return items

    group: GroupCommit[int, int] = GroupCommit(write, limit=7)
    answers: list[int] = []
    threads = [
        threading.Thread(target=lambda n=n: answers.append(group.submit(n))) for n in range(60)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert sorted(answers) == list(range(60))
    assert max(sizes) <= 7 and sum(sizes) == 60 and group.batches == len(sizes)


def test_a_caller_gives_its_pooled_connection_back_before_it_waits(monkeypatch):
    """A caller that waits for the writer holds no database connection meanwhile: with a
    pool (DATABASE_POOL_SIZE), callers waiting with the pool's every connection left the
    writer none, and the batch failed after the pool's 30 s timeout."""
    entered, release = threading.Event(), threading.Event()
    released: list[str] = []
    monkeypatch.setattr(
        group_commit, "connection_release", lambda: released.append(threading.current_thread().name)
    )

    def write(items: list[int]) -> list[int]:
        entered.set()
        release.wait(10)
        return items

    group: GroupCommit[int, int] = GroupCommit(write, limit=10)
    writer = threading.Thread(target=group.submit, args=(0,), name="writer")
    writer.start()
    assert entered.wait(10)
    waiting = threading.Thread(target=group.submit, args=(1,), name="waiting")
    waiting.start()
    for _ in range(1000):
        if released:
            break
        threading.Event().wait(0.005)
    assert released == ["waiting"] and waiting.is_alive()  # given back, then waits
    release.set()
    for thread in (writer, waiting):
        thread.join(10)
    assert group.batches == 2


# -- the processor through it ----------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("publishing")  # the orders' own messages wait in a queue nobody reads
def test_forty_recharges_on_forty_threads_are_each_sent_once_and_delivered():
    recharges = place(quantity=20) + place(quantity=20)
    provider = CountingProvider()
    outcomes = in_threads([r.pk for r in recharges], provider)
    assert [o.status for o in outcomes] == [S.DELIVERED] * 40
    assert throttle.in_flight(settings.AIRTIME_PROVIDER) == 0  # every slot given back
    assert set(provider.calls.values()) == {1} and len(provider.calls) == 40
    for recharge in Recharge.objects.filter(pk__in=[r.pk for r in recharges]):
        assert recharge.status == S.DELIVERED and recharge.attempts == 1
        assert recharge.dispatched_at and recharge.delivered_at
        assert recharge.provider == "simulator" and recharge.provider_transaction_id
        assert recharge.provider_response["simulated"] is True
        history = list(
            RechargeEvent.objects.filter(recharge=recharge).values_list(
                "from_status", "to_status", "note"
            )
        )
        assert history == [
            ("", S.QUEUED, "order placed"),
            (S.QUEUED, S.DISPATCHED, ""),
            (S.DISPATCHED, S.DELIVERED, f"simulator {recharge.provider_transaction_id}"),
        ]
    wallets = Wallet.objects.filter(account_id__in={r.account_id for r in recharges})
    assert sorted(w.balance for w in wallets) == [Decimal("400.00")] * 2
    assert_ledger_balanced()


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("publishing")  # the orders' own messages wait in a queue nobody reads
def test_two_copies_of_one_recharges_task_at_once_dispatch_it_once():
    (recharge,) = place()
    provider = CountingProvider()
    outcomes = in_threads([recharge.pk] * 6, provider)
    assert provider.calls[recharge.public_id] == 1
    # the others found it dispatched (in hand) or already delivered: nothing sent again
    assert {o.status for o in outcomes} <= {S.DISPATCHED, S.DELIVERED} and len(outcomes) == 6
    assert Recharge.objects.get(pk=recharge.pk).status == S.DELIVERED
    assert RechargeEvent.objects.filter(recharge=recharge, to_status=S.DISPATCHED).count() == 1


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("publishing")  # the orders' own messages wait in a queue nobody reads
def test_rows_off_the_common_path_go_the_one_at_a_time_way():
    """A product whose promotion starts within the horizon waitlists; a test-mode row is
    left to the sandbox; a delivered row is left as it is; a plain one beside them is delivered."""
    from datetime import timedelta

    from django.utils import timezone

    waiting = ProductFactory(retail_price=Decimal("5.00"))
    starts = timezone.now() + timedelta(hours=2)
    PromotionFactory(
        operator=waiting.operator, starts_at=starts, ends_at=starts + timedelta(days=1)
    )
    (held,) = place(product=waiting)
    (sandbox,) = place(livemode=False)
    (done,) = place()
    Recharge.objects.filter(pk=done.pk).update(status=S.DELIVERED)
    (plain,) = place()
    provider = CountingProvider()
    outcomes = in_threads([held.pk, sandbox.pk, done.pk, plain.pk], provider)
    statuses = dict(Recharge.objects.values_list("pk", "status"))
    assert statuses == {
        held.pk: S.WAITLISTED,
        sandbox.pk: sandbox.status,  # simulated when ordered; never sent
        done.pk: S.DELIVERED,
        plain.pk: S.DELIVERED,
    }
    assert sorted(o.status for o in outcomes) == sorted(statuses.values())
    assert set(provider.calls) == {plain.public_id}


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("publishing")  # the orders' own messages wait in a queue nobody reads
def test_a_recharge_failed_by_staff_during_its_call_stays_failed_and_refunded_once():
    (recharge,) = place()
    staff = UserFactory(is_staff=True)

    def fail_it(_request):
        processor.recharge_fail_by_staff(recharge_id=recharge.pk, actor=staff, reason="stuck")

    outcomes = in_threads([recharge.pk], CountingProvider(during=fail_it))
    assert outcomes == [processor.Outcome(S.FAILED)]
    assert throttle.in_flight(settings.AIRTIME_PROVIDER) == 0
    recharge.refresh_from_db()
    assert recharge.status == S.FAILED and recharge.refunded
    assert not RechargeEvent.objects.filter(recharge=recharge, to_status=S.DELIVERED).exists()
    assert Wallet.objects.get(account_id=recharge.account_id, kind="live").balance == Decimal(
        "500.00"
    )
    assert_ledger_balanced()


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("publishing")  # the orders' own messages wait in a queue nobody reads
def test_delivered_events_are_written_for_the_accounts_that_want_them_only():
    hooked, plain = UserFactory(), UserFactory()
    WebhookEndpoint.objects.create(
        account=hooked.account, livemode=True, url="https://192.0.2.10/hook", events=[]
    )
    WebhookEndpoint.objects.create(  # wants another type only
        account=plain.account,
        livemode=True,
        url="https://192.0.2.11/hook",
        events=["recharge.failed"],
    )
    mine = place(user=hooked, quantity=3)
    theirs = place(user=plain, quantity=3)
    in_threads([r.pk for r in mine + theirs], CountingProvider())
    events = list(Event.objects.filter(type="recharge.delivered"))
    assert {event.account_id for event in events} == {hooked.account_id}
    assert len(events) == 3 and all(event.deliveries.count() == 1 for event in events)
    bodies = {json.loads(event.body)["data"]["object"]["id"]: event for event in events}
    assert set(bodies) == {r.public_id for r in mine}
    obj = json.loads(events[0].body)["data"]["object"]
    assert obj["status"] == S.DELIVERED and obj["operatorReference"]
    assert [step["status"] for step in obj["events"]] == [S.QUEUED, S.DISPATCHED, S.DELIVERED]
    for event in events:
        assert_body_is_the_lookups(event)


def assert_body_is_the_lookups(event: Event) -> None:
    """The event's object is what the one-at-a-time path writes (the lookup's shape, read
    from the rows as they are now), and its time is the row's."""
    body = json.loads(event.body)
    row = Recharge.objects.get(public_id=body["data"]["object"]["id"])
    one_by_one = camelize(RechargeDetailOut(row).data)
    assert json.loads(json.dumps(one_by_one)) == body["data"]["object"]
    assert body["createdAt"] == json.loads(json.dumps(event.created_at, cls=DjangoJSONEncoder))


def endpoint(user, url: str, events=()) -> WebhookEndpoint:
    return WebhookEndpoint.objects.create(
        account=user.account, livemode=True, url=url, events=list(events)
    )


def delivered_events(user) -> dict[str, set[str]]:
    """The account's ``recharge.delivered`` events: the URLs of their deliveries, by recharge."""
    return {
        json.loads(event.body)["data"]["object"]["id"]: {
            delivery.endpoint.url for delivery in event.deliveries.all()
        }
        for event in Event.objects.filter(account_id=user.account_id, type="recharge.delivered")
    }


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("publishing")
def test_an_endpoint_added_during_the_call_gets_the_event():
    """The event is written when the answer comes: an account with no endpoint when its
    recharge was claimed, but one when it was delivered, gets it."""
    user = UserFactory()
    (recharge,) = place(user=user)
    provider = CountingProvider(during=lambda _request: endpoint(user, "https://192.0.2.20/h"))
    assert in_threads([recharge.pk], provider) == [processor.Outcome(S.DELIVERED)]
    assert delivered_events(user) == {recharge.public_id: {"https://192.0.2.20/h"}}
    assert_body_is_the_lookups(
        Event.objects.get(account_id=user.account_id, type="recharge.delivered")
    )


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("publishing")
def test_endpoints_changed_during_the_call_get_what_they_want_when_it_is_delivered():
    user = UserFactory()
    kept = endpoint(user, "https://192.0.2.21/kept")
    disabled = endpoint(user, "https://192.0.2.22/disabled")
    narrowed = endpoint(user, "https://192.0.2.23/narrowed")
    deleted = endpoint(user, "https://192.0.2.24/deleted")
    recharges = place(user=user, quantity=2)

    def change(_request):
        with lock:
            if changed:
                return
            changed.append(True)
            WebhookEndpoint.objects.filter(pk=disabled.pk).update(status="disabled")
            WebhookEndpoint.objects.filter(pk=narrowed.pk).update(events=["recharge.failed"])
            WebhookEndpoint.objects.filter(pk=deleted.pk).delete()
            endpoint(user, "https://192.0.2.25/added")

    lock, changed = threading.Lock(), []
    outcomes = in_threads([r.pk for r in recharges], CountingProvider(during=change))
    assert outcomes == [processor.Outcome(S.DELIVERED)] * 2
    wanted = {kept.url, "https://192.0.2.25/added"}
    assert delivered_events(user) == {r.public_id: wanted for r in recharges}
    for event in Event.objects.filter(account_id=user.account_id, type="recharge.delivered"):
        assert_body_is_the_lookups(event)


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("publishing")
def test_an_endpoint_replaced_during_the_call_gets_the_event_and_one_disabled_gets_none():
    replaced, quiet = UserFactory(), UserFactory()
    old = endpoint(replaced, "https://192.0.2.26/old")
    gone = endpoint(quiet, "https://192.0.2.27/gone")
    (first,) = place(user=replaced)
    (second,) = place(user=quiet)

    def change(_request):
        WebhookEndpoint.objects.filter(pk=old.pk).delete()
        if not WebhookEndpoint.objects.filter(account=replaced.account).exists():
            endpoint(replaced, "https://192.0.2.28/new")
        WebhookEndpoint.objects.filter(pk=gone.pk).update(status="disabled")

    in_threads([first.pk, second.pk], CountingProvider(during=change))
    assert delivered_events(replaced) == {first.public_id: {"https://192.0.2.28/new"}}
    assert delivered_events(quiet) == {}
    assert_body_is_the_lookups(
        Event.objects.get(account_id=replaced.account_id, type="recharge.delivered")
    )


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("publishing")  # the orders' own messages wait in a queue nobody reads
def test_with_group_commit_off_the_same_recharges_are_delivered_one_by_one(settings):
    settings.RECHARGE_GROUP_COMMIT_MAX = 1
    assert not group_commit.enabled()
    recharges = place(quantity=5)
    provider = CountingProvider()
    outcomes = in_threads([r.pk for r in recharges], provider)
    assert [o.status for o in outcomes] == [S.DELIVERED] * 5
    assert set(provider.calls.values()) == {1}
    assert_ledger_balanced()


def test_the_redis_cache_keeps_one_client_per_pool_and_still_works_from_many_threads():
    from django.core.cache import cache

    from reseller.cache import KeptClients

    client = cache._cache  # type: ignore[attr-defined]
    assert isinstance(client, KeptClients)
    assert client.get_client(write=True) is client.get_client(write=False)
    errors: list[BaseException] = []

    def use(n: int) -> None:
        try:
            for i in range(50):
                cache.set(f"kept-{n}-{i}", i, 30)
                assert cache.get(f"kept-{n}-{i}") == i
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=use, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert errors == []


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("publishing")
def test_the_batch_takes_only_the_provider_slots_that_are_free_and_gives_them_back(settings):
    """Ceiling 3: a batch takes at most the free slots; the others wait for a slot one at a
    time. No more than 3 calls are ever in flight, every slot is given back, all delivered."""
    settings.PROVIDER_MAX_IN_FLIGHT = 3
    recharges = place(quantity=12)
    provider = CountingProvider(during=lambda _request: threading.Event().wait(0.05))
    outcomes = in_threads([r.pk for r in recharges], provider)
    assert [o.status for o in outcomes] == [S.DELIVERED] * 12
    assert provider.most_in_flight <= 3 and set(provider.calls.values()) == {1}
    assert throttle.in_flight(settings.AIRTIME_PROVIDER) == 0
    assert_ledger_balanced()


class OverlongForOne(CountingProvider):
    """Answers one reference with a transaction id too long for its column: the delivery
    batch holding it is refused by PostgreSQL as a whole."""

    def __init__(self, bad: str):
        super().__init__()
        self.bad = bad

    def send(self, request):
        result = super().send(request)
        if request.reference == self.bad:
            from dataclasses import replace

            return replace(result, transaction_id="x" * 200)
        return result


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("publishing")
def test_one_bad_answer_fails_only_its_own_recharge_not_its_batch(caplog):
    """An answer that does not fit its columns is written one recharge at a time (a batch
    refused by the database would be too): the others
    are delivered, the bad one stays dispatched (the sweeper asks the provider later), and
    every provider slot is given back."""
    recharges = place(quantity=8)
    bad = recharges[3]
    outcomes = in_threads([r.pk for r in recharges], OverlongForOne(bad.public_id))
    statuses = dict(Recharge.objects.values_list("pk", "status"))
    assert statuses.pop(bad.pk) == S.DISPATCHED
    assert set(statuses.values()) == {S.DELIVERED} and len(outcomes) == 7
    assert len(errors) == 1 and "too long" in str(errors[0])
    assert throttle.in_flight(settings.AIRTIME_PROVIDER) == 0
    assert_ledger_balanced()


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("publishing")
def test_a_batch_is_written_in_the_same_statements_whatever_its_size():
    """The ORM writes a batch with bulk statements: delivering five recharges of an account
    with an endpoint takes as many statements as delivering one, in one transaction."""
    user = UserFactory()
    hook = endpoint(user, "https://192.0.2.30/h")
    answer = ProviderResult(ProviderResult.DELIVERED, transaction_id="sim-42", raw={"id": 42})
    counts = []
    for quantity in (1, 5):
        recharges = place(user=user, quantity=quantity)
        claims = group_commit._claim_write([r.pk for r in recharges])
        assert all(claim is not None for claim in claims)
        items = [
            group_commit.Delivered(r.pk, answer, "simulator", claim.slot)
            for r, claim in zip(recharges, claims, strict=True)
            if claim is not None
        ]
        with CaptureQueriesContext(connection) as queries:
            assert group_commit._deliver_write(items) == [processor.Outcome(S.DELIVERED)] * quantity
        counts.append(len(queries))
        assert [q["sql"] for q in queries].count("COMMIT") <= 1
    assert counts[0] == counts[1]
    events = delivered_events(user)
    assert len(events) == 6 and all(urls == {hook.url} for urls in events.values())
    for event in Event.objects.filter(account_id=user.account_id, type="recharge.delivered"):
        assert_body_is_the_lookups(event)
        assert json.loads(event.body)["data"]["object"]["operatorReference"] == "sim-42"
    assert throttle.in_flight(settings.AIRTIME_PROVIDER) == 0
    assert_ledger_balanced()


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("publishing")
def test_a_batch_of_accounts_without_endpoints_reads_no_endpoints():
    """Whether an account has an endpoint is read with the batch's lock: without one, the
    delivery is the lock, the two updates, the history and the commit, and no event."""
    user = UserFactory()
    recharges = place(user=user, quantity=3)
    claims = group_commit._claim_write([r.pk for r in recharges])
    answer = ProviderResult(ProviderResult.DELIVERED, transaction_id="sim-7", raw={})
    items = [
        group_commit.Delivered(r.pk, answer, "simulator", claim.slot)
        for r, claim in zip(recharges, claims, strict=True)
        if claim is not None
    ]
    with CaptureQueriesContext(connection) as queries:
        assert group_commit._deliver_write(items) == [processor.Outcome(S.DELIVERED)] * 3
    sql = [q["sql"] for q in queries]
    assert not [q for q in sql if q.lstrip().startswith('SELECT "webhooks_webhookendpoint"')]
    assert not Event.objects.filter(account_id=user.account_id).exists()
    assert_ledger_balanced()


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("publishing")
def test_the_delivery_write_wakes_the_endpoints_it_wrote_deliveries_for():
    user = UserFactory()
    (recharge,) = place(user=user)
    hook = endpoint(user, "https://192.0.2.31/h")
    cache.delete(delivery._wake_key(hook.pk))
    (claim,) = group_commit._claim_write([recharge.pk])
    assert claim is not None
    answer = ProviderResult(ProviderResult.DELIVERED, transaction_id="sim-1", raw={})
    group_commit._deliver_write(
        [group_commit.Delivered(recharge.pk, answer, "simulator", claim.slot)]
    )
    assert cache.get(delivery._wake_key(hook.pk)) is not None
    assert len(delivery._due(hook.pk, 10)) == 1
