"""The recharge processor and its state machine (docs/contract.md §5)."""

import threading
from datetime import timedelta
from decimal import Decimal

import pytest
from django.db import connection, transaction
from django.test import override_settings
from django.utils import timezone

from orders.pricing import LineRequest
from orders.services import order_place_with_wallet
from payments.models import Payment
from recharges import processor
from recharges.models import Recharge
from recharges.state import ALLOWED, IllegalTransition, transition
from recharges.tasks import recharges_sweep_task
from tests.factories import ProductFactory, PromotionFactory, UserFactory
from tests.fakes.reloadly import FakeReloadly
from tests.helpers import assert_ledger_balanced
from tests.waiting import wait_until
from wallet.models import LedgerEntry, Wallet
from wallet.services import wallet_get_or_create, wallet_topup_manual

pytestmark = pytest.mark.django_db
S = Recharge.Status


def place(number="+525512345678", quantity=1, product=None, funds="100.00"):
    product = product or ProductFactory(retail_price=Decimal("5.00"))
    user = UserFactory()
    wallet_topup_manual(account=user.account, amount=Decimal(funds))
    with transaction.atomic():
        order = order_place_with_wallet(
            account=user.account,
            wallet=wallet_get_or_create(account=user.account),
            livemode=True,
            channel="wallet",
            currency="EUR",
            user=user,
            lines=[LineRequest(product=product, recipient_number=number, quantity=quantity)],
        )
    return list(order.recharges.order_by("id"))


def reloadly_settings(fake, *, timeout: float):
    """AIRTIME_PROVIDER as the Reloadly account of the settings, at the fake."""
    return override_settings(
        AIRTIME_PROVIDER="reloadly",
        RELOADLY_BASE_URL=fake.url,
        RELOADLY_AUTH_URL=fake.url,
        RELOADLY_CLIENT_ID="i",
        RELOADLY_CLIENT_SECRET="s",
        RELOADLY_TIMEOUT_SECONDS=timeout,
    )


def balance(recharge) -> Decimal:
    return Wallet.objects.get(account_id=recharge.account_id, kind="live").balance


# -- the state machine ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "start, allowed",
    [
        (S.QUEUED, {S.DISPATCHED, S.WAITLISTED, S.FAILED}),
        (S.WAITLISTED, {S.QUEUED, S.FAILED}),
        (S.DISPATCHED, {S.DELIVERED, S.FAILED}),
        (S.DELIVERED, {S.REVERSED}),  # the provider took it back (reversals.py)
        (S.FAILED, {S.QUEUED}),
        (S.REVERSED, set()),
    ],
)
def test_each_state_allows_exactly_its_transitions(start, allowed):
    assert set(ALLOWED[start]) == allowed


LIVE_STATES = [S.QUEUED, S.WAITLISTED, S.DISPATCHED, S.DELIVERED, S.FAILED]


@pytest.mark.parametrize("start", LIVE_STATES)
def test_every_unlisted_transition_is_refused_and_changes_nothing(start):
    (recharge,) = place()
    Recharge.objects.filter(pk=recharge.pk).update(status=start)
    recharge.refresh_from_db()
    for target in set(S) - set(ALLOWED[start]):  # sandbox states included: live rows never
        with pytest.raises(IllegalTransition):
            transition(recharge, target)
        recharge.refresh_from_db()
        assert recharge.status == start


def test_a_transition_stamps_its_time_and_records_history():
    (recharge,) = place()
    transition(recharge, S.DISPATCHED, note="sent")
    recharge.refresh_from_db()
    assert recharge.dispatched_at is not None
    assert list(recharge.events.values_list("from_status", "to_status")) == [
        ("", "queued"),
        ("queued", "dispatched"),
    ]


# -- processing -------------------------------------------------------------------------------


def test_a_queued_recharge_is_dispatched_with_its_id_as_reference_and_delivered():
    fake = FakeReloadly().start()
    try:
        with reloadly_settings(fake, timeout=2):
            (recharge,) = place()
            outcome = processor.recharge_process(recharge_id=recharge.pk)
        assert outcome.status == S.DELIVERED
        recharge.refresh_from_db()
        assert recharge.status == S.DELIVERED and recharge.provider == "reloadly"
        assert recharge.provider_transaction_id == str(
            fake.topups[recharge.public_id]["transactionId"]
        )
        assert fake.calls[recharge.public_id] == 1
    finally:
        fake.stop()


def test_processing_twice_sends_once():
    (recharge,) = place()
    first = processor.recharge_process(recharge_id=recharge.pk)
    second = processor.recharge_process(recharge_id=recharge.pk)
    assert first.status == second.status == S.DELIVERED
    assert recharge.events.filter(to_status=S.DISPATCHED).count() == 1


def test_a_permanent_rejection_fails_and_refunds_exactly_once_even_if_run_twice():
    (recharge,) = place(number="+525512349990")
    assert balance(recharge) == Decimal("95.00")
    processor.recharge_process(recharge_id=recharge.pk)
    processor.recharge_process(recharge_id=recharge.pk)
    recharge.refresh_from_db()
    assert recharge.status == S.FAILED and recharge.failure_code == "invalid_recipient"
    assert recharge.refunded
    assert balance(recharge) == Decimal("100.00")
    assert LedgerEntry.objects.filter(kind="refund", reference=recharge.public_id).count() == 1
    assert Payment.objects.get(pk=recharge.payment_id).status == "refunded"
    assert_ledger_balanced()


def test_one_failed_unit_of_three_partially_refunds_the_payment():
    product = ProductFactory(retail_price=Decimal("5.00"))
    good = place(product=product, quantity=2)
    payment = Payment.objects.get(pk=good[0].payment_id)
    processor.recharge_fail_by_staff(recharge_id=good[0].pk, actor=None, reason="stuck")
    payment.refresh_from_db()
    assert payment.status == "partially_refunded" and payment.refunded_amount == Decimal("5.00")
    assert_ledger_balanced()


def test_a_timeout_is_reconciled_by_reference_before_anything_is_retried():
    (recharge,) = place(number="+525512349992")  # made upstream, answer lost
    outcome = processor.recharge_process(recharge_id=recharge.pk)
    assert outcome.status == S.DELIVERED
    recharge.refresh_from_db()
    assert recharge.status == S.DELIVERED and not recharge.refunded
    assert balance(recharge) == Decimal("95.00")


def test_a_timeout_with_nothing_upstream_is_retried_with_backoff_then_failed_and_refunded():
    (recharge,) = place(number="+525512349993")  # never reaches the provider
    with override_settings(RECHARGE_MAX_ATTEMPTS=3):
        outcomes = [processor.recharge_process(recharge_id=recharge.pk)]
        for _ in range(2):  # each retry as the task runs it: continuing the last attempt
            retry = outcomes[-1].attempt
            outcomes.append(processor.recharge_process(recharge_id=recharge.pk, attempt=retry))
    assert [o.status for o in outcomes] == [S.DISPATCHED, S.DISPATCHED, S.FAILED]
    assert [o.retry_in for o in outcomes] == [5.0, 10.0, None]
    recharge.refresh_from_db()
    assert recharge.failure_code == "upstream_timeout" and recharge.refunded
    assert balance(recharge) == Decimal("100.00")
    assert_ledger_balanced()


def test_a_transient_error_is_retried_and_then_delivered():
    (recharge,) = place(number="+525512349991")
    first = processor.recharge_process(recharge_id=recharge.pk)
    assert first.status == S.DISPATCHED and first.retry_in == 5.0
    again = processor.recharge_process(recharge_id=recharge.pk, attempt=first.attempt)
    assert again.status == S.DELIVERED


def test_a_dispatched_row_whose_answer_was_lost_is_not_sent_twice():
    """A worker died after the provider made the top-up: the retry asks first."""
    fake = FakeReloadly().start()
    try:
        (recharge,) = place()
        fake.slow_next(3.0)  # answer arrives after the client gave up
        with reloadly_settings(fake, timeout=1.0):
            first = processor.recharge_process(recharge_id=recharge.pk)
            recharge.refresh_from_db()
            if recharge.status == S.DISPATCHED:  # status lookup also raced: the retry asks again
                processor.recharge_process(recharge_id=recharge.pk, attempt=first.attempt)
        recharge.refresh_from_db()
        assert recharge.status == S.DELIVERED
        assert fake.calls[recharge.public_id] == 1
    finally:
        fake.stop()


@pytest.mark.django_db(transaction=True)
def test_two_copies_of_a_recharges_task_at_once_call_the_provider_once(publishing):
    """The sweeper re-enqueues a queued row whose message still waits behind a burst, so two
    copies of its task can run together. The second finds the row dispatched by the first a
    moment ago, whose call the provider lists only once answered: it leaves the row to the
    first rather than asking, finding nothing and sending again. (``publishing``: the order's
    own message goes to a queue nobody reads; the two copies are run here.)"""
    fake = FakeReloadly().start()
    fake.delay = 1.0
    fake.list_after_answer = True
    try:
        (recharge,) = place()
        outcomes: list[processor.Progress] = []

        def run() -> None:
            with reloadly_settings(fake, timeout=5):
                outcomes.append(processor.recharge_process(recharge_id=recharge.pk))
            connection.close()

        first = threading.Thread(target=run)
        first.start()
        wait_until(lambda: fake.calls[recharge.public_id], timeout=10, what="the first copy's call")
        second = threading.Thread(target=run)
        second.start()
        second.join()
        first.join()
        recharge.refresh_from_db()
        assert recharge.status == S.DELIVERED and not recharge.refunded
        assert fake.calls[recharge.public_id] == 1
        assert sorted(o.status for o in outcomes) == [S.DELIVERED, S.DISPATCHED]
        assert balance(recharge) == Decimal("95.00")
        assert_ledger_balanced()
    finally:
        fake.stop()


def test_a_task_for_an_earlier_attempt_leaves_the_recharge_to_the_later_one():
    """Each retry carries the attempt that scheduled it; a copy for an attempt that has since
    been overtaken does nothing, the current one goes on."""
    (recharge,) = place(number="+525512349991")  # transient once, then delivered
    first = processor.recharge_process(recharge_id=recharge.pk)
    assert first.status == S.DISPATCHED and first.attempt == 1
    stale = processor.recharge_process(recharge_id=recharge.pk, attempt=0)
    assert stale == processor.Progress(S.DISPATCHED)
    assert Recharge.objects.get(pk=recharge.pk).attempts == 1
    current = processor.recharge_process(recharge_id=recharge.pk, attempt=1)
    assert current.status == S.DELIVERED


def test_a_retry_scheduled_before_a_staff_retry_never_takes_over_the_new_cycle():
    """A staff retry starts the attempts at 0 again: a retry message scheduled in the earlier
    cycle (for its attempt 1) must not take over attempt 1 of the new one while that call may
    still be on its way."""
    staff = UserFactory(is_staff=True)
    (recharge,) = place(number="+525512349993")  # a timeout with nothing upstream: a retry
    earlier = processor.recharge_process(recharge_id=recharge.pk)
    assert earlier.status == S.DISPATCHED and earlier.retry_in is not None
    processor.recharge_fail_by_staff(recharge_id=recharge.pk, actor=staff, reason="stuck")
    processor.recharge_retry(recharge_id=recharge.pk, actor=staff)
    current = processor.recharge_process(recharge_id=recharge.pk)
    assert current.status == S.DISPATCHED
    assert Recharge.objects.get(pk=recharge.pk).attempts == 1 == earlier.attempt

    stale = processor.recharge_process(recharge_id=recharge.pk, attempt=earlier.attempt)
    assert stale == processor.Progress(S.DISPATCHED)
    assert Recharge.objects.get(pk=recharge.pk).attempts == 1  # untouched: nothing was sent
    going_on = processor.recharge_process(recharge_id=recharge.pk, attempt=current.attempt)
    assert going_on.status == S.DISPATCHED
    assert Recharge.objects.get(pk=recharge.pk).attempts == 2
    assert_ledger_balanced()


def test_a_dispatched_row_is_taken_over_only_once_quiet_past_the_sweepers_cutoff():
    """A copy of a task without an attempt (a redelivered message, the sweeper's) reconciles a
    dispatched row only if nothing has touched it since the cutoff it carries: by default
    RECHARGE_STUCK_DISPATCHED_SECONDS ago, the sweeper's own when it sends one."""
    (recharge,) = place(number="+525512349991")
    processor.recharge_process(recharge_id=recharge.pk)
    untouched = processor.recharge_process(recharge_id=recharge.pk)
    assert untouched == processor.Progress(S.DISPATCHED)
    Recharge.objects.filter(pk=recharge.pk).update(
        updated_at=timezone.now() - timedelta(seconds=301)
    )
    assert processor.recharge_process(recharge_id=recharge.pk).status == S.DELIVERED


# -- waitlists and the sweeper ---------------------------------------------------------------


def test_a_scheduled_promotion_within_the_horizon_waitlists_then_the_window_releases(
    time_machine,
):
    time_machine.move_to("2026-11-21 10:00:00Z", tick=False)
    product = ProductFactory(retail_price=Decimal("5.00"))
    starts = timezone.now() + timedelta(hours=24)
    PromotionFactory(
        operator=product.operator, starts_at=starts, ends_at=starts + timedelta(days=3)
    )
    (recharge,) = place(product=product)
    assert processor.recharge_process(recharge_id=recharge.pk).status == S.WAITLISTED
    recharge.refresh_from_db()
    assert recharge.waitlisted_until == starts
    assert recharges_sweep_task.apply().get()["waitlisted"] == 0  # not yet
    time_machine.move_to(starts + timedelta(seconds=1), tick=False)
    counts = recharges_sweep_task.apply().get()
    assert counts["waitlisted"] == 1
    recharge.refresh_from_db()
    assert recharge.status == S.DELIVERED  # released, queued, then processed inline


def test_a_promotion_beyond_the_horizon_does_not_hold_the_recharge():
    product = ProductFactory(retail_price=Decimal("5.00"))
    starts = timezone.now() + timedelta(hours=100)
    PromotionFactory(
        operator=product.operator, starts_at=starts, ends_at=starts + timedelta(days=3)
    )
    (recharge,) = place(product=product)
    assert processor.recharge_process(recharge_id=recharge.pk).status == S.DELIVERED


def test_an_active_promotion_dispatches_now():
    product = ProductFactory(retail_price=Decimal("5.00"))
    PromotionFactory(operator=product.operator)
    (recharge,) = place(product=product)
    assert processor.recharge_process(recharge_id=recharge.pk).status == S.DELIVERED


@override_settings(RECHARGE_STUCK_QUEUED_SECONDS=0)
def test_the_sweeper_delivers_a_recharge_whose_message_was_lost():
    (recharge,) = place()  # on_commit never ran here: the message is "lost"
    assert Recharge.objects.get(pk=recharge.pk).status == S.QUEUED
    counts = recharges_sweep_task.apply().get()
    assert counts["queued"] == 1
    assert Recharge.objects.get(pk=recharge.pk).status == S.DELIVERED


# -- staff actions ----------------------------------------------------------------------------


def test_staff_retry_of_a_failed_recharge_debits_again_and_delivers():
    staff = UserFactory(is_staff=True)
    (recharge,) = place(number="+525512349990")
    processor.recharge_process(recharge_id=recharge.pk)
    assert balance(recharge) == Decimal("100.00")
    # the number was fixed upstream; staff retries
    processor.recharge_retry(recharge_id=recharge.pk, actor=staff)
    recharge.refresh_from_db()
    assert recharge.status == S.QUEUED and recharge.retries == 1 and not recharge.refunded
    assert balance(recharge) == Decimal("95.00")
    with override_settings(AIRTIME_SIMULATOR_RULES={"0000": "reject"}):  # the number fixed
        processor.recharge_process(recharge_id=recharge.pk)
    recharge.refresh_from_db()
    assert recharge.status == S.DELIVERED
    assert recharge.events.filter(actor=staff).exists()
    assert_ledger_balanced()


def test_staff_retry_that_fails_again_refunds_again():
    staff = UserFactory(is_staff=True)
    (recharge,) = place(number="+525512349990")
    processor.recharge_process(recharge_id=recharge.pk)
    processor.recharge_retry(recharge_id=recharge.pk, actor=staff)
    processor.recharge_process(recharge_id=recharge.pk)
    assert balance(recharge) == Decimal("100.00")
    assert LedgerEntry.objects.filter(kind="refund").count() == 2
    assert_ledger_balanced()


def test_only_failed_recharges_can_be_retried():
    (recharge,) = place()
    with pytest.raises(IllegalTransition):
        processor.recharge_retry(recharge_id=recharge.pk, actor=None)


def test_a_delivered_recharge_cannot_be_failed_by_staff():
    (recharge,) = place()
    processor.recharge_process(recharge_id=recharge.pk)
    with pytest.raises(IllegalTransition):
        processor.recharge_fail_by_staff(recharge_id=recharge.pk, actor=None, reason="x")
    assert balance(recharge) == Decimal("95.00")


def test_sandbox_states_are_for_test_rows_only():
    (recharge,) = place()
    for target in (S.SUCCESS, S.PROCESSING, S.REJECTED, S.TIMEOUT):
        with pytest.raises(IllegalTransition):
            transition(recharge, target)
