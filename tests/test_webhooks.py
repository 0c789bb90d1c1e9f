"""Webhooks to resellers (docs/contract.md §11, docs/webhooks.md): the outbox, signed delivery
to a real HTTP receiver, retries, isolation of slow receivers, modes and SSRF."""

import itertools
import json
import threading
import time
from datetime import timedelta
from decimal import Decimal
from io import StringIO

import pytest
import time_machine
from django.core import mail
from django.core.management import CommandError, call_command
from django.db import connections, transaction
from django.utils import timezone

from emails.models import Email
from emails.services import email_send
from recharges.models import Recharge
from recharges.processor import recharge_process
from recharges.sandbox import sandbox_settle
from tests.factories import UserFactory, make_key
from tests.fakes.receiver import Receiver
from tests.helpers import (
    DELIVERS,
    REJECTS,
    assert_ledger_balanced,
    client_for,
    fund,
    place,
    process,
)
from tests.waiting import wait_until
from wallet.models import Wallet
from wallet.services import (
    ledger_post,
    sandbox_wallet_for_key,
    wallet_lock,
    wallet_set_threshold,
)
from webhooks.delivery import endpoint_drain, endpoints_due, retry_delay
from webhooks.models import Delivery, Event, WebhookEndpoint
from webhooks.services import endpoint_create, endpoint_rotate_secret
from webhooks.signature import SignatureVerificationError, signature_header, verify_signature
from webhooks.tasks import webhooks_sweep_task

pytestmark = pytest.mark.django_db


@pytest.fixture
def receiver():
    server = Receiver().start()
    yield server
    server.stop()


@pytest.fixture
def private_ok(settings):
    settings.WEBHOOK_ALLOW_PRIVATE_TARGETS = True
    settings.WEBHOOK_TIMEOUT_SECONDS = 2.0


@pytest.fixture
def committing(django_capture_on_commit_callbacks):
    """Run on-commit callbacks (the wake-up of the endpoint's worker) as a commit would."""

    def run(action):
        with django_capture_on_commit_callbacks(execute=True):
            return action()

    return run


def endpoint_for(user, receiver, *, mode="live", events=None) -> WebhookEndpoint:
    return endpoint_create(
        account=user.account, url=receiver.url, livemode=mode == "live", events=events or []
    )


def verified(request, endpoint) -> dict:
    verify_signature(request.body, request.signature, endpoint.secret)
    return request.json


# -- signatures ------------------------------------------------------------------------------


def test_signature_round_trip_and_what_fails_it():
    body = b'{"id":"evt_1"}'
    now = int(time.time())
    header = signature_header(body, ["whsec_a"], now)
    assert verify_signature(body, header, "whsec_a") == now
    for payload, head, secret in [
        (b'{"id":"evt_2"}', header, "whsec_a"),  # another body
        (body, header, "whsec_b"),  # another secret
        (body, header.replace("v1=", "v1=0"), "whsec_a"),  # forged
        (body, f"t={now}", "whsec_a"),  # no signature
        (body, "", "whsec_a"),
        (body, "t=abc,v1=00", "whsec_a"),
    ]:
        with pytest.raises(SignatureVerificationError):
            verify_signature(payload, head, secret)
    stale = signature_header(body, ["whsec_a"], now - 301)
    with pytest.raises(SignatureVerificationError, match="tolerance"):
        verify_signature(body, stale, "whsec_a")
    assert verify_signature(body, stale, "whsec_a", tolerance=400) == now - 301
    both = signature_header(body, ["whsec_new", "whsec_old"], now)
    assert verify_signature(body, both, "whsec_old") == now
    assert verify_signature(body.decode(), both, "whsec_new") == now


# -- the outbox and delivery -----------------------------------------------------------------


def test_delivered_recharge_reaches_the_endpoint_signed(reseller, product, receiver, private_ok):
    endpoint = endpoint_for(reseller, receiver, events=["recharge.delivered"])
    fund(reseller, "20.00")
    order = place(reseller, product)
    process(order)
    event = Event.objects.get(type="recharge.delivered")
    assert endpoint_drain(endpoint.pk) == 1
    (request,) = receiver.requests
    assert request.headers["content-type"] == "application/json"
    body = verified(request, endpoint)
    recharge = order.recharges.get()
    assert body["id"] == event.public_id and body["id"].startswith("evt_")
    assert body["type"] == "recharge.delivered"
    assert body["livemode"] is True
    assert body["createdAt"]
    obj = body["data"]["object"]
    assert obj["id"] == recharge.public_id
    assert obj["status"] == "delivered"
    assert obj["orderId"] == order.public_id
    assert obj["operatorReference"] == recharge.provider_transaction_id
    assert obj["deliveredAmount"] and obj["deliveredCurrency"] == product.local_currency
    assert [step["status"] for step in obj["events"]] == ["queued", "dispatched", "delivered"]
    assert request.headers["reseller-event-id"] == event.public_id
    delivery = Delivery.objects.get()
    assert delivery.state == "succeeded" and delivery.attempts == 1
    assert delivery.last_status_code == 200
    attempt = delivery.tries.get()
    assert attempt.status_code == 200 and attempt.response_head.startswith('{"received"')
    assert_ledger_balanced()


def test_delivery_starts_after_commit_without_a_worker_call(
    reseller, product, receiver, private_ok, committing
):
    endpoint_for(reseller, receiver, events=["recharge.delivered"])
    fund(reseller, "20.00")
    order = place(reseller, product)
    committing(lambda: process(order))
    (request,) = receiver.wait_for(1)
    assert request.json["type"] == "recharge.delivered"


def test_failed_recharge_event_says_refunded(reseller, product, receiver, private_ok):
    endpoint = endpoint_for(reseller, receiver, events=["recharge.failed"])
    fund(reseller, "20.00")
    order = place(reseller, product, number=REJECTS)
    process(order)
    endpoint_drain(endpoint.pk)
    (request,) = receiver.requests
    body = verified(request, endpoint)
    assert body["type"] == "recharge.failed"
    assert body["data"]["object"]["status"] == "failed"
    assert body["data"]["object"]["failureCode"]
    assert Wallet.objects.get(account=reseller.account, kind="live").balance == Decimal("20.00")
    assert_ledger_balanced()


@pytest.mark.parametrize("number", [DELIVERS, REJECTS])
def test_the_event_object_is_the_recharge_as_the_lookup_returns_it(
    reseller, product, receiver, private_ok, number
):
    """The processor builds the event's object from the rows it holds (docs/contract.md §11:
    "the recharge, as the lookup returns it"): same keys, same values, history included."""
    endpoint_for(reseller, receiver)
    fund(reseller, "20.00")
    order = place(reseller, product, number=number)
    process(order)
    recharge = order.recharges.get()
    (event,) = Event.objects.filter(type__startswith="recharge.")
    _key, plaintext = make_key(reseller, mode="live")
    looked_up = client_for(plaintext).get(f"/api/v1/api-access/b2b/recharges/{recharge.public_id}")
    assert looked_up.status_code == 200, looked_up.content
    assert json.loads(event.body)["data"]["object"] == looked_up.json()


def test_a_rolled_back_change_emits_nothing(reseller, product, receiver, private_ok):
    endpoint_for(reseller, receiver, events=["recharge.delivered"])
    fund(reseller, "20.00")
    order = place(reseller, product)
    recharge = order.recharges.get()

    class Boom(Exception):
        pass

    with pytest.raises(Boom), transaction.atomic():
        recharge_process(recharge_id=recharge.pk)
        assert Event.objects.filter(type="recharge.delivered").exists()
        raise Boom
    assert not Event.objects.exists()
    assert not Delivery.objects.exists()


def test_only_subscribed_types_and_no_endpoint_no_event(reseller, product, receiver, private_ok):
    fund(reseller, "20.00")
    process(place(reseller, product))
    assert not Event.objects.exists()  # no endpoint: nothing to record
    endpoint_for(reseller, receiver, events=["recharge.failed"])
    process(place(reseller, product))
    assert not Event.objects.exists()
    process(place(reseller, product, number=REJECTS))
    assert list(Event.objects.values_list("type", flat=True)) == ["recharge.failed"]


def test_test_endpoints_get_sandbox_events_and_live_ones_do_not(
    reseller, product, receiver, private_ok
):
    live = Receiver().start()
    try:
        live_endpoint = endpoint_for(reseller, live, mode="live")
        test_endpoint = endpoint_for(reseller, receiver, mode="test")
        key, _plaintext = make_key(reseller, mode="test")
        with transaction.atomic():
            wallet = wallet_lock(wallet_id=sandbox_wallet_for_key(key=key).pk)
            ledger_post(wallet=wallet, kind="topup", amount=Decimal("50"), reference="sbx-1")
        start = timezone.now()
        for number in ["+525512340001", "+525512340002", "+525512340003", "+525512340004"]:
            place(reseller, product, number=number, wallet=wallet, livemode=False)
        with time_machine.travel(start + timedelta(seconds=11), tick=False):
            assert sandbox_settle() == 1
            endpoint_drain(test_endpoint.pk)
            endpoint_drain(live_endpoint.pk)
        assert live.requests == []
        got = {
            event["data"]["object"]["recipientNumber"][-4:]: event["type"]
            for event in receiver.events()
            if event["type"].startswith("recharge.")
        }
        assert got == {
            "0001": "recharge.delivered",
            "0002": "recharge.failed",
            "0003": "recharge.delivered",
            "0004": "recharge.failed",
        }
        assert all(event["livemode"] is False for event in receiver.events())
        # the sandbox addition is a test-mode top-up: wallet.credited to the test endpoint
        assert "wallet.credited" in {event["type"] for event in receiver.events()}
    finally:
        live.stop()


def test_wallet_credited_and_balance_low_once_per_crossing(reseller, product, receiver, private_ok):
    endpoint = endpoint_for(reseller, receiver)
    wallet_set_threshold(account=reseller.account, amount=Decimal("12.00"))
    fund(reseller, "20.00")
    place(reseller, product)  # 20 → 15: above
    place(reseller, product)  # 15 → 10: crosses
    place(reseller, product)  # 10 → 5: still below, no new event
    fund(reseller, "10.00")  # 15: above again
    place(reseller, product)  # 15 → 10: crosses again
    endpoint_drain(endpoint.pk)
    types = [event["type"] for event in receiver.events()]
    assert types.count("wallet.credited") == 2
    assert types.count("wallet.balance_low") == 2
    low = [event for event in receiver.events() if event["type"] == "wallet.balance_low"]
    assert low[0]["data"]["object"] == {"available": "10.00", "currency": "EUR", "livemode": True}
    assert low[0]["data"]["threshold"] == "12.00"
    credited = next(e for e in receiver.events() if e["type"] == "wallet.credited")
    assert credited["data"]["object"]["available"] == "20.00"
    assert credited["data"]["credit"]["amount"] == "20.00"
    assert_ledger_balanced()


# -- retries ---------------------------------------------------------------------------------


def test_a_failing_receiver_gets_the_same_event_again_after_backoff(
    reseller, product, receiver, private_ok
):
    endpoint = endpoint_for(reseller, receiver, events=["recharge.delivered"])
    receiver.answer_next(500)
    fund(reseller, "20.00")
    process(place(reseller, product))
    endpoint_drain(endpoint.pk)
    assert len(receiver.requests) == 1
    failed = Delivery.objects.get(state="pending")
    assert failed.attempts == 1 and failed.last_status_code == 500
    wait = (failed.next_attempt_at - timezone.now()).total_seconds()
    assert 0 < wait <= 60  # the first retry within a minute
    assert endpoint_drain(endpoint.pk) == 0  # not due yet
    with time_machine.travel(failed.next_attempt_at + timedelta(seconds=1), tick=False):
        assert webhooks_sweep_task() == 1  # the sweeper wakes the endpoint's worker
    first_try, again = receiver.requests
    assert again.json == first_try.json  # the same event, same id
    assert again.headers["reseller-event-id"] == first_try.json["id"]
    verify_signature(again.body, again.signature, endpoint.secret)
    failed.refresh_from_db()
    assert failed.state == "succeeded" and failed.attempts == 2


def test_retries_grow_and_stop_after_three_days_then_the_endpoint_is_disabled(
    reseller, receiver, private_ok
):
    delays = [retry_delay(n) for n in range(1, 12)]
    assert delays[0] <= 60 and all(b > a for a, b in itertools.pairwise(delays[:8]))
    endpoint = endpoint_for(reseller, receiver)
    receiver.answer_next(*([503] * 100))
    start = timezone.now()
    fund(reseller, "20.00")  # one wallet.credited event
    delivery = Delivery.objects.get()
    with time_machine.travel(start, tick=False) as clock:
        endpoint_drain(endpoint.pk)
        for _ in range(40):
            delivery.refresh_from_db()
            if delivery.state != "pending":
                break
            clock.move_to(delivery.next_attempt_at + timedelta(seconds=1))
            endpoint_drain(endpoint.pk)
        delivery.refresh_from_db()
        assert delivery.state == "failed"
        assert timezone.now() - start >= timedelta(days=3)
        assert 8 <= delivery.attempts <= 20
        # Still failing two days later, with new events: the endpoint is disabled.
        clock.move_to(start + timedelta(days=5, minutes=1))
        fund(reseller, "1.00")
        endpoint_drain(endpoint.pk)
    endpoint.refresh_from_db()
    assert endpoint.status == "disabled"
    assert "automatically" in endpoint.disabled_reason
    # The account is told by email too, once.
    (told,) = Email.objects.filter(kind="endpoint_disabled")
    assert told.to == reseller.email and told.context["url"] == endpoint.url
    with time_machine.travel(told.next_attempt_at, tick=False):
        assert email_send(told.pk)
    assert endpoint.url in mail.outbox[-1].body


# -- isolation -------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_hanging_receiver_holds_one_slot_and_never_delays_another_account(private_ok, settings):
    settings.WEBHOOK_TIMEOUT_SECONDS = 8.0
    slow, fast = Receiver().start(), Receiver().start()
    try:
        slow_user, fast_user = UserFactory(), UserFactory()
        slow_endpoint = endpoint_for(slow_user, slow)
        endpoint_for(fast_user, fast)
        slow.hang()

        # The commit wakes the slow endpoint's worker (here: this thread), which then waits.
        def worker():
            try:
                fund(slow_user, "10.00")
            finally:
                connections.close_all()

        stuck = threading.Thread(target=worker)
        stuck.start()
        assert slow.arrived.wait(10)
        fund(slow_user, "10.00")  # another event for it: no second worker is taken
        assert endpoint_drain(slow_endpoint.pk) == 0
        fund(fast_user, "10.00")  # another account's event goes out at once
        assert len(fast.requests) == 1
        assert stuck.is_alive() and len(slow.requests) == 1
        slow.release()
        stuck.join(20)
        # The worker that held the slow endpoint sent its second event before leaving.
        assert len(slow.wait_for(2)) == 2
    finally:
        slow.stop()
        fast.stop()


def test_a_receiver_that_answers_late_is_a_timeout_and_retried(
    reseller, receiver, private_ok, settings
):
    settings.WEBHOOK_TIMEOUT_SECONDS = 0.5
    endpoint = endpoint_for(reseller, receiver)
    receiver.hang()
    fund(reseller, "5.00")
    endpoint_drain(endpoint.pk)
    receiver.release()
    delivery = Delivery.objects.get()
    assert delivery.state == "pending" and delivery.last_error == "timeout"


def test_redirects_are_not_followed(reseller, receiver, private_ok):
    endpoint = endpoint_for(reseller, receiver)
    receiver.answer_next(302)
    fund(reseller, "5.00")
    endpoint_drain(endpoint.pk)
    assert len(receiver.requests) == 1
    assert Delivery.objects.get().state == "pending"


# -- secrets ---------------------------------------------------------------------------------


def test_rotation_signs_with_both_secrets_for_24_hours(reseller, receiver, private_ok):
    endpoint = endpoint_for(reseller, receiver)
    old = endpoint.secret
    new = endpoint_rotate_secret(endpoint=endpoint)
    assert new != old and new.startswith("whsec_")
    fund(reseller, "5.00")
    endpoint_drain(endpoint.pk)
    request = receiver.requests[-1]
    assert request.signature.count("v1=") == 2
    verify_signature(request.body, request.signature, old)
    verify_signature(request.body, request.signature, new)
    with time_machine.travel(timezone.now() + timedelta(hours=24, minutes=1)):
        fund(reseller, "5.00")
        endpoint_drain(endpoint.pk)
    late = receiver.requests[-1]
    assert late.signature.count("v1=") == 1
    with pytest.raises(SignatureVerificationError):
        verify_signature(late.body, late.signature, old, tolerance=0)


# -- the CLI ---------------------------------------------------------------------------------


def test_cli_creates_an_endpoint_and_prints_only_the_secret(reseller, receiver, private_ok, capsys):
    call_command(
        "create_webhook_endpoint",
        email=reseller.email,
        url=receiver.url,
        mode="test",
        events=["recharge.delivered", "recharge.failed"],
    )
    out = capsys.readouterr().out.strip()
    endpoint = WebhookEndpoint.objects.get(account=reseller.account)
    assert out == endpoint.secret and out.startswith("whsec_")
    assert endpoint.livemode is False
    assert endpoint.events == ["recharge.delivered", "recharge.failed"]


@pytest.mark.parametrize(
    "events",
    [
        ["--events", "recharge.delivered", "recharge.failed"],
        ["--events", "recharge.delivered", "--events", "recharge.failed"],
    ],
)
def test_cli_takes_the_event_types_in_one_flag_or_repeated(reseller, receiver, private_ok, events):
    """Contract section 11: ``[--events T ...]``. Repeating the flag dropped the earlier types."""
    call_command(
        "create_webhook_endpoint",
        *("--email", reseller.email, "--url", receiver.url, "--mode", "live"),
        *events,
        stdout=StringIO(),
    )
    endpoint = WebhookEndpoint.objects.get(account=reseller.account)
    assert endpoint.events == ["recharge.delivered", "recharge.failed"]


def test_cli_sets_the_balance_threshold(reseller, capsys):
    call_command("set_balance_threshold", email=reseller.email, amount="100.00")
    wallet = Wallet.objects.get(account=reseller.account, kind="live")
    assert wallet.low_balance_threshold == Decimal("100.00")
    assert "100.00" in capsys.readouterr().out


def test_event_bodies_are_compact_json_fixed_at_emission(reseller, receiver, private_ok):
    endpoint_for(reseller, receiver)
    fund(reseller, "5.00")
    event = Event.objects.get()
    assert json.loads(event.body)["id"] == event.public_id


def test_recharge_rows_untouched_by_delivery_failures(reseller, product, receiver, private_ok):
    endpoint = endpoint_for(reseller, receiver)
    receiver.answer_next(500, 500, 500)
    fund(reseller, "20.00")
    order = place(reseller, product, number=DELIVERS)
    process(order)
    endpoint_drain(endpoint.pk)
    assert order.recharges.get().status == Recharge.Status.DELIVERED
    assert_ledger_balanced()


def lease_taken(endpoint: WebhookEndpoint) -> None:
    """Wait until a drain started in a thread holds the endpoint's lease (it then lingers)."""
    wait_until(
        lambda: WebhookEndpoint.objects.filter(pk=endpoint.pk, lease_until__isnull=False).exists(),
        timeout=10,
        what="the drain to take the endpoint's lease",
    )


@pytest.mark.django_db(transaction=True)
def test_a_lingering_drain_sends_what_arrives_meanwhile(private_ok):
    """The deployed drain waits a moment for more (WEBHOOK_DRAIN_LINGER_SECONDS): an event
    committed meanwhile goes out with the same drain, and its own wake-up finds the lease
    taken and leaves at once."""
    receiver = Receiver().start()
    try:
        user = UserFactory()
        endpoint = endpoint_for(user, receiver)
        result: dict = {}

        def lingering():
            try:
                # Long enough that a slow box's pause between two commits never ends it early.
                result["sent"] = endpoint_drain(endpoint.pk, linger=3.0)
            finally:
                connections.close_all()

        drain = threading.Thread(target=lingering)
        drain.start()
        lease_taken(endpoint)
        fund(user, "2.00")  # its wake-up runs inline here and finds the lease held
        drain.join(20)
        assert not drain.is_alive()
        assert result["sent"] == 1
        assert [event["type"] for event in receiver.events()] == ["wallet.credited"]
        assert Delivery.objects.get().state == "succeeded"
    finally:
        receiver.stop()


@pytest.mark.django_db(transaction=True)
def test_a_burst_during_a_drain_publishes_one_task(private_ok):
    """While a drain runs, the wake mark stays: five events committed meanwhile publish one
    drain task (which finds the lease held and leaves), not five; the drain sends all five."""
    from celery.signals import task_prerun

    receiver = Receiver().start()
    published: list[str] = []

    def count(sender=None, **kwargs):
        if sender is not None and sender.name.endswith("endpoint_drain_task"):
            published.append(sender.name)

    task_prerun.connect(count)
    try:
        user = UserFactory()
        endpoint = endpoint_for(user, receiver)
        result: dict = {}

        def lingering():
            try:
                # Long enough that a slow box's pause between two commits never ends it early.
                result["sent"] = endpoint_drain(endpoint.pk, linger=3.0)
            finally:
                connections.close_all()

        drain = threading.Thread(target=lingering)
        drain.start()
        lease_taken(endpoint)
        for _ in range(5):
            fund(user, "1.00")
        drain.join(20)
        assert not drain.is_alive()
        assert result["sent"] == 5
        assert len(published) == 1
        assert Delivery.objects.filter(state="succeeded").count() == 5
        # Once the drain has left, the next event wakes the endpoint again.
        fund(user, "1.00")
        assert len(published) == 2
        assert Delivery.objects.filter(state="succeeded").count() == 6
    finally:
        task_prerun.disconnect(count)
        receiver.stop()


def test_a_drain_out_of_budget_hands_the_endpoint_back(private_ok, receiver, settings):
    """A drain task that spends its budget releases the endpoint and publishes a new drain for
    the rest (inline here), instead of leaving it to the sweeper."""
    from webhooks.tasks import endpoint_drain_task

    settings.WEBHOOK_DRAIN_BUDGET = 2
    user = UserFactory()
    endpoint = endpoint_for(user, receiver)
    for _ in range(5):
        fund(user, "1.00")  # the wake-ups run at commit; this test's transaction never commits
    assert Delivery.objects.filter(state="pending").count() == 5
    assert endpoint_drain_task(endpoint.pk) == 2
    assert Delivery.objects.filter(state="succeeded").count() == 5
    assert len(receiver.events()) == 5


def test_a_drain_without_a_hand_back_leaves_the_rest_to_the_sweeper(private_ok, receiver):
    user = UserFactory()
    endpoint = endpoint_for(user, receiver)
    for _ in range(5):
        fund(user, "1.00")
    assert endpoint_drain(endpoint.pk, budget=2) == 2
    assert Delivery.objects.filter(state="succeeded").count() == 2
    assert Delivery.objects.filter(state="pending").count() == 3
    assert endpoints_due() == [endpoint.pk]


def test_a_drain_lingers_only_while_a_lingering_slot_is_free(private_ok, receiver, settings):
    """Lingering is capped per process (WEBHOOK_DRAIN_LINGERING_MAX): with every slot taken, a
    drain with nothing due leaves at once, so quiet endpoints never fill the worker's threads
    with waits."""
    from webhooks import delivery

    settings.WEBHOOK_DRAIN_LINGERING_MAX = 1
    delivery._linger_slots.cache_clear()
    try:
        endpoint = endpoint_for(UserFactory(), receiver)
        slots = delivery._linger_slots()
        assert slots.acquire(blocking=False)  # another drain lingers
        try:
            started = time.monotonic()
            assert endpoint_drain(endpoint.pk, linger=30.0) == 0
            assert time.monotonic() - started < 10  # it did not wait its 30 s
        finally:
            slots.release()
    finally:
        delivery._linger_slots.cache_clear()


def test_cli_refusing_a_private_target_names_the_setting_that_allows_it(reseller, receiver):
    """Issue 32, defect 9: the refusal of http://127.0.0.1:… said what, not how to allow it."""
    with pytest.raises(CommandError) as refused:
        call_command("create_webhook_endpoint", email=reseller.email, url=receiver.url, mode="test")
    assert "WEBHOOK_ALLOW_PRIVATE_TARGETS=true" in str(refused.value)
    assert not WebhookEndpoint.objects.filter(account=reseller.account).exists()
