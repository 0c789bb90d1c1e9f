"""Group commit (reseller/batching.py, docs/processor.md "Many recharges, one transaction"):
the claims and answers of a worker's threads are written together. Real threads; the last
test runs the processor's one path in many threads against PostgreSQL and a provider fake
over HTTP."""

from __future__ import annotations

import threading
from collections import Counter
from decimal import Decimal

import pytest
from django.db import connections

from recharges import processor
from recharges.models import Recharge
from reseller.batching import Batcher
from tests.factories import ProductFactory
from tests.fakes.reloadly import FakeReloadly
from tests.helpers import assert_ledger_balanced, funded_order
from tests.waiting import wait_until
from wallet.models import Wallet

S = Recharge.Status


class Gate:
    """A ``write`` that records each batch and holds the first one until it is opened, so
    the items submitted meanwhile are seen waiting for the next."""

    def __init__(self, *, fail: set[int] = frozenset()) -> None:
        self.batches: list[list[int]] = []
        self.first_started = threading.Event()
        self.opened = threading.Event()
        self.fail = fail

    def write(self, items: list[int]) -> list[int]:
        self.batches.append(list(items))
        if len(self.batches) == 1:
            self.first_started.set()
            assert self.opened.wait(10), "the test never opened the gate"
        if self.fail & set(items):
            raise ValueError(f"cannot write {sorted(self.fail & set(items))}")
        return [item * 10 for item in items]


def submit_in_threads(batcher: Batcher, items: list[int]) -> tuple[dict, dict, list]:
    results: dict[int, int] = {}
    errors: dict[int, BaseException] = {}
    threads = []

    def run(item: int) -> None:
        try:
            results[item] = batcher.submit(item)
        except Exception as exc:
            errors[item] = exc

    for item in items:
        thread = threading.Thread(target=run, args=(item,))
        thread.start()
        threads.append(thread)
    return results, errors, threads


def waiting(batcher: Batcher, count: int) -> bool:
    with batcher._mutex:  # the items queued behind a write
        return len(batcher._waiting) >= count


def behind_a_held_write(gate: Gate, batcher: Batcher, items: list[int]) -> tuple[dict, dict]:
    """Item 1 starts a write that the gate holds; ``items`` are submitted meanwhile, each from
    a thread of its own, and wait behind it; then the gate opens. Every item's result and
    error, once every thread is done."""
    results, errors, threads = submit_in_threads(batcher, [1])
    assert gate.first_started.wait(10)
    more, more_errors, more_threads = submit_in_threads(batcher, items)
    wait_until(lambda: waiting(batcher, len(items)), timeout=10, what="the items queued")
    gate.opened.set()
    for thread in threads + more_threads:
        thread.join(10)
    return results | more, errors | more_errors


def test_an_item_alone_is_written_at_once_as_a_batch_of_one():
    written = []
    batcher = Batcher(lambda items: written.append(items) or [i + 1 for i in items], limit=100)
    assert batcher.submit(41) == 42
    assert written == [[41]] and batcher.batches == 1


def test_items_arriving_during_a_write_make_the_next_batch_each_answered_its_own():
    gate = Gate()
    batcher = Batcher(gate.write, limit=100)
    results, errors = behind_a_held_write(gate, batcher, list(range(2, 12)))
    assert gate.batches == [[1], list(range(2, 12))]  # ten threads, one write
    assert results == {item: item * 10 for item in range(1, 12)}
    assert not errors
    assert batcher.batches == 2


def test_a_batch_takes_at_most_its_limit_and_the_rest_follow():
    gate = Gate()
    batcher = Batcher(gate.write, limit=4)
    results, _errors = behind_a_held_write(gate, batcher, list(range(2, 12)))
    assert [len(batch) for batch in gate.batches] == [1, 4, 4, 2]
    assert sorted(item for batch in gate.batches for item in batch) == list(range(1, 12))
    assert len(results) == 11


def test_a_failing_item_fails_only_its_own_thread():
    """The batch that holds it fails; each of its items is written again alone, so the
    others are answered and only the bad one's thread hears the error."""
    gate = Gate(fail={5})
    batcher = Batcher(gate.write, limit=100)
    results, errors = behind_a_held_write(gate, batcher, [4, 5, 6])
    assert results == {1: 10, 4: 40, 6: 60}
    assert list(errors) == [5] and "cannot write [5]" in str(errors[5])
    assert sorted(gate.batches[1]) == [4, 5, 6]  # tried together, then one by one
    assert sorted(map(tuple, gate.batches[2:])) == [(4,), (5,), (6,)]


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("publishing")  # the order's messages go to a queue nobody reads
def test_a_workers_threads_write_their_recharges_in_fewer_transactions_than_recharges(settings):
    """Thirty threads, as a worker's, each carry one recharge of one order through the one
    path to a Reloadly fake answering in 0.3 s: every recharge is delivered once, the wallet
    is debited once per unit, and the claims and answers were written in at most half as many
    batches (one transaction each) as there are recharges."""
    fake = FakeReloadly().start()
    fake.delay = 0.3
    settings.AIRTIME_PROVIDER = "reloadly"
    settings.RELOADLY_BASE_URL = fake.url
    settings.RELOADLY_AUTH_URL = fake.url
    settings.RELOADLY_CLIENT_ID = f"batching-{id(fake)}"
    settings.RELOADLY_CLIENT_SECRET = "s"
    try:
        order = funded_order(ProductFactory(retail_price=Decimal("2.00")), quantity=30)
        ids = list(order.recharges.values_list("id", flat=True))
        claims, answers = processor._batchers()  # their counts are the point
        claims_before, answers_before = claims.batches, answers.batches
        start = threading.Barrier(len(ids))
        outcomes: list[str] = []

        def work(recharge_id: int) -> None:
            try:
                start.wait(10)
                outcomes.append(processor.recharge_process(recharge_id=recharge_id).status)
            finally:
                connections.close_all()

        threads = [threading.Thread(target=work, args=(pk,)) for pk in ids]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        assert Counter(outcomes) == {S.DELIVERED: 30}
        assert sorted(fake.calls.values()) == [1] * 30  # each sent once
        # Thirty threads at once: a batch of one, then the rest together (2 and 3 here; a busy
        # machine spreads them, never to one transaction each).
        assert claims.batches - claims_before <= 15
        assert answers.batches - answers_before <= 15
        wallet = Wallet.objects.get(account_id=order.account_id, kind="live")
        assert wallet.balance == Decimal("40.00")
        assert_ledger_balanced()
    finally:
        fake.stop()
