"""Routing and failover against the fakes of Reloadly, DT One and DingConnect over real HTTP
(docs/providers.md): the catalog sync maps their operators and makes routes, the cheapest one
is used, a refused connection or a documented refusal fails over, a timeout never does.

Telcel 100 MXN costs 4.88 EUR less 6.5% at Reloadly (4.56 EUR), 5.40 + 0.10 USD at DT One
(5.00 EUR at 1.10) and 6.00 USD less commission at Ding: that is the order of the routes."""

import json
import re
import time
from decimal import Decimal
from io import StringIO

import pytest
import time_machine
from django.core.management import call_command
from django.test import Client, override_settings

from accounts.services import account_set_b2b
from recharges import processor
from recharges.models import Recharge, RechargeAttempt
from recharges.reversals import recharge_reversal_check
from tests.factories import make_key
from tests.helpers import assert_ledger_balanced, client_for, funded_order
from tests.provider_support import NUMBER, telcel_100
from upstreams import health
from upstreams.models import Provider, ProviderOperator, Route
from wallet.models import Wallet

pytestmark = pytest.mark.django_db
S = Recharge.Status


@pytest.fixture
def clock():
    """The wall clock, moved by the test where it waited a knock's interval (KNOCK_EVERY): a
    knock is due once per slot of time.time(); the circuits' cool-downs are Redis's to time."""
    with time_machine.travel(time.time(), tick=True) as traveller:
        yield traveller


def cli(*args) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue().strip()


def place(product, number=NUMBER):
    return funded_order(product, number=number).recharges.get()


def reseller_lookup(recharge):
    """The recharge's owner as a reseller with a live key, and the lookup's path."""
    account_set_b2b(account=recharge.account, is_b2b=True)
    _key, plaintext = make_key(recharge.account.users.get(), mode="live")
    return client_for(plaintext), f"/api/v1/api-access/b2b/recharges/{recharge.public_id}"


def calls(recharge):
    return list(
        RechargeAttempt.objects.filter(recharge=recharge)
        .order_by("id")
        .values_list("provider", "action", "outcome")
    )


def test_sync_maps_every_provider_to_one_product_per_amount_with_documented_costs(routed):
    for name in ("reloadly-1", "dtone-1", "ding-1"):
        assert routed["lines"][name].startswith("operators mapped 2, unmapped 0; routes created")
    product = telcel_100(routed)
    routes = {r.provider.name: r for r in Route.objects.filter(product=product)}
    assert set(routes) == {"reloadly-1", "dtone-1", "ding-1"}  # one product, three routes
    assert (routes["reloadly-1"].cost, routes["reloadly-1"].cost_currency) == (
        Decimal("4.5600"),  # 4.88 less 6.5 %, to the cent
        "EUR",
    )
    assert (routes["dtone-1"].cost, routes["dtone-1"].cost_currency) == (Decimal("5.5000"), "USD")
    assert routes["dtone-1"].sku == "30002"
    assert routes["ding-1"].sku == "MX_TL_TopUp_100"
    assert routes["ding-1"].send_value == Decimal("6.00")
    assert ProviderOperator.objects.filter(operator__isnull=True).count() == 0
    # A new product, priced over the cheapest cost until staff set a rule.
    assert product.local_currency == "MXN" and product.retail_currency == "EUR"


def test_the_cheapest_route_delivers_and_records_cost_and_margin(routed, reloadly, dtone, ding):
    product = telcel_100(routed)
    recharge = place(product)
    assert processor.recharge_process(recharge_id=recharge.pk).status == S.DELIVERED
    recharge.refresh_from_db()
    assert recharge.provider == "reloadly-1" and recharge.cost_currency == "EUR"
    assert recharge.margin == recharge.amount - recharge.cost.quantize(Decimal("0.01"))
    assert reloadly.calls[recharge.public_id] == 1
    assert dtone.calls[recharge.public_id] == ding.calls[recharge.public_id] == 0


def test_a_refused_connection_fails_over_and_the_first_never_sees_it(routed, reloadly, dtone, ding):
    product = telcel_100(routed)
    reloadly.outage(True)
    recharge = place(product)
    processor.recharge_process(recharge_id=recharge.pk)
    recharge.refresh_from_db()
    assert recharge.provider == "dtone-1"
    assert calls(recharge)[0] == ("reloadly-1", "send", "unreachable")
    assert calls(recharge)[1][:2] == ("dtone-1", "send")
    reloadly.outage(False)
    assert reloadly.calls[recharge.public_id] == 0 and dtone.calls[recharge.public_id] == 1
    assert ding.calls[recharge.public_id] == 0
    assert_ledger_balanced()


@override_settings(PROVIDER_TIMEOUT_SECONDS=1.0, PROVIDER_CIRCUIT_FAILURES=2)
def test_a_failed_lookup_says_nothing_and_the_recharge_stays_at_its_provider(
    routed, reloadly, dtone, ding
):
    """The top-up was made but its answer came too late, and the look-up after it failed
    (503): the provider may hold it, so the retry asks it again, even with its circuit open,
    and never sends it to the next route."""
    product = telcel_100(routed)
    reloadly.slow_next(3.0)  # made at once, answered after our timeout
    reloadly.fail_next_lookup(503)
    recharge = place(product)
    outcome = processor.recharge_process(recharge_id=recharge.pk)
    assert outcome.status == S.DISPATCHED and outcome.retry_in
    assert health.figures("reloadly-1").state == "open"  # the timeout and the 503
    retry = processor.recharge_process(recharge_id=recharge.pk, attempt=outcome.attempt)
    assert retry.status == S.DELIVERED
    recharge.refresh_from_db()
    assert recharge.provider == "reloadly-1"
    assert reloadly.calls[recharge.public_id] == 1
    assert dtone.calls[recharge.public_id] == ding.calls[recharge.public_id] == 0
    assert calls(recharge) == [
        ("reloadly-1", "send", "unclear"),
        ("reloadly-1", "status", "unreachable"),
        ("reloadly-1", "status", "delivered"),
    ]
    assert_ledger_balanced()


def test_a_documented_refusal_fails_over(routed, reloadly, dtone, ding):
    product = telcel_100(routed)
    reloadly.refuse_number(NUMBER)
    recharge = place(product)
    processor.recharge_process(recharge_id=recharge.pk)
    recharge.refresh_from_db()
    assert recharge.provider == "dtone-1"
    assert calls(recharge)[0][0::2] == ("reloadly-1", "refused")


@override_settings(PROVIDER_TIMEOUT_SECONDS=1.0)
def test_slow_but_delivered_is_settled_by_lookup_and_never_sent_elsewhere(
    routed, reloadly, dtone, ding
):
    product = telcel_100(routed)
    reloadly.slow_next(3.0)  # answers after our timeout, having made the top-up
    recharge = place(product)
    processor.recharge_process(recharge_id=recharge.pk)
    recharge.refresh_from_db()
    assert recharge.provider == "reloadly-1"
    assert calls(recharge)[0] == ("reloadly-1", "send", "unclear")
    assert {c[0] for c in calls(recharge)} == {"reloadly-1"}
    # The other providers never saw the reference.
    assert dtone.calls[recharge.public_id] == ding.calls[recharge.public_id] == 0


def test_refused_everywhere_fails_once_refunded_once(routed, reloadly, dtone, ding):
    product = telcel_100(routed)
    reloadly.refuse_number(NUMBER)
    dtone.refuse(number=NUMBER)
    ding.refuse_number(NUMBER.lstrip("+"))
    recharge = place(product)
    before = Wallet.objects.get(account_id=recharge.account_id, kind="live").balance
    assert processor.recharge_process(recharge_id=recharge.pk).status == S.FAILED
    recharge.refresh_from_db()
    assert recharge.refunded
    assert [c[0::2] for c in calls(recharge)] == [
        ("reloadly-1", "refused"),
        ("dtone-1", "refused"),
        ("ding-1", "refused"),
    ]
    after = Wallet.objects.get(account_id=recharge.account_id, kind="live").balance
    assert after == before + recharge.amount
    assert_ledger_balanced()


def test_an_open_circuit_is_skipped_by_new_recharges(routed, reloadly, dtone, ding):
    product = telcel_100(routed)
    with override_settings(PROVIDER_CIRCUIT_FAILURES=2):
        for _ in range(2):
            health.record("reloadly-1", ok=False, seconds=0.01)
    assert health.figures("reloadly-1").state == "open"
    recharge = place(product)
    processor.recharge_process(recharge_id=recharge.pk)
    assert calls(recharge)[0][:2] == ("dtone-1", "send")  # reloadly-1 not even tried
    assert reloadly.calls[recharge.public_id] == 0


def test_balance_is_read_at_sync_and_shown(routed):
    provider = Provider.objects.get(name="dtone-1")
    assert provider.balance == Decimal("10000.00") and provider.balance_currency == "USD"


def test_staff_are_told_once_when_a_providers_balance_runs_low(routed, dtone, staff):
    from emails.models import Email
    from upstreams.services import provider_balance_refresh

    provider = Provider.objects.get(name="dtone-1")
    dtone.add_balance("USD", "60.00")  # the fake's account now holds 60 USD
    provider_balance_refresh(provider=provider)
    provider_balance_refresh(provider=provider)  # still low: no second email
    sent = Email.objects.filter(kind="provider_balance_low")
    assert [
        (e.to, e.context["provider"], e.context["balance"], e.context["threshold"]) for e in sent
    ] == [(staff.email, "dtone-1", "60.00", "100.00")]
    dtone.add_balance("USD", "500.00")
    provider = provider_balance_refresh(provider=provider)  # back above: told again next time
    assert (provider.balance, provider.balance_alerted) == (Decimal("500.00"), False)
    dtone.add_balance("USD", "20.00")
    provider = provider_balance_refresh(provider=provider)
    assert (provider.balance, provider.balance_alerted) == (Decimal("20.00"), True)
    assert Email.objects.filter(kind="provider_balance_low").count() == 2


@override_settings(PROVIDER_CIRCUIT_FAILURES=3, PROVIDER_CIRCUIT_COOLDOWN_SECONDS=30)
def test_refused_connections_open_the_circuit_and_a_knock_closes_it_when_it_listens_again(
    routed, reloadly, dtone, ding, clock
):
    """Nothing listening at Reloadly opens its circuit; while open it is knocked at (a TCP
    connection, at most every KNOCK_EVERY), so the first recharge after it listens again goes
    there, well within the 30 s cool-down."""
    product = telcel_100(routed)
    reloadly.outage(True)
    first = [place(product) for _ in range(3)]
    for recharge in first:  # each tries reloadly-1 (refused connection), then dtone-1
        processor.recharge_process(recharge_id=recharge.pk)
        assert calls(recharge)[0] == ("reloadly-1", "send", "unreachable")
    assert health.figures("reloadly-1").state == "open"
    clock.shift(health.KNOCK_EVERY)  # the next dispatch may knock: still refused
    skipped = place(product)
    processor.recharge_process(recharge_id=skipped.pk)
    assert calls(skipped)[0][:2] == ("dtone-1", "send")  # open: not even tried
    assert health.figures("reloadly-1").state == "open"
    reloadly.outage(False)
    clock.shift(health.KNOCK_EVERY)
    back = place(product)
    processor.recharge_process(recharge_id=back.pk)
    back.refresh_from_db()
    assert back.provider == "reloadly-1" and calls(back) == [("reloadly-1", "send", "delivered")]
    assert health.figures("reloadly-1").state == "healthy"
    for recharge in [*first, skipped, back]:
        recharge.refresh_from_db()
        assert recharge.status == S.DELIVERED
    assert_ledger_balanced()


@override_settings(PROVIDER_CIRCUIT_FAILURES=1, PROVIDER_CIRCUIT_COOLDOWN_SECONDS=30)
def test_a_wave_after_a_quiet_moment_goes_to_the_provider_listening_again(
    routed, reloadly, dtone, ding
):
    """Recharges come in waves: the claim of a wave's batch knocks before it chooses, so the
    first recharges after the provider listens again go there, however long the quiet was."""
    product = telcel_100(routed)
    reloadly.outage(True)
    refused = place(product)
    processor.recharge_process(recharge_id=refused.pk)  # refused at Reloadly, sent to DT One
    assert health.figures("reloadly-1").state == "open"
    reloadly.outage(False)  # nothing is dispatched meanwhile: nobody knocks
    assert health.figures("reloadly-1").state == "open"
    wave = [place(product) for _ in range(3)]
    for recharge in wave:
        processor.recharge_process(recharge_id=recharge.pk)
        recharge.refresh_from_db()
        assert recharge.provider == "reloadly-1" and recharge.status == S.DELIVERED
    assert health.figures("reloadly-1").state == "healthy"
    assert health.knock_due() == []  # nothing left to knock at


@override_settings(PROVIDER_TIMEOUT_SECONDS=1.0, PROVIDER_CIRCUIT_FAILURES=1)
def test_a_circuit_opened_by_timeouts_is_not_knocked_and_waits_for_its_cool_down(
    routed, reloadly, dtone, ding, clock
):
    """A provider that accepts connections but does not answer is not closed by a knock
    (it would accept it): it waits for the cool-down and a probe."""
    product = telcel_100(routed)
    reloadly.slow_next(3.0)
    slow = place(product)
    processor.recharge_process(recharge_id=slow.pk)
    assert health.figures("reloadly-1").state == "open"
    assert health.knock_due() == []
    clock.shift(health.KNOCK_EVERY)
    after = place(product)
    processor.recharge_process(recharge_id=after.pk)
    after.refresh_from_db()
    assert after.provider == "dtone-1"
    assert health.figures("reloadly-1").state == "open"


def test_a_dtone_callback_is_never_trusted_it_only_triggers_a_lookup(routed, reloadly, dtone):
    import json

    from django.test import Client

    product = telcel_100(routed)
    reloadly.outage(True)  # so that DT One takes it
    dtone.async_completion(True)  # SUBMITTED until completed
    recharge = place(product)
    outcome = processor.recharge_process(recharge_id=recharge.pk)
    reloadly.outage(False)
    assert outcome.status == S.DISPATCHED
    recharge.refresh_from_db()
    assert recharge.provider == "dtone-1"
    web = Client()
    forged = {**dtone.transaction(recharge.public_id)}
    forged["status"] = {
        "id": 70000,
        "message": "COMPLETED",
        "class": {"id": 7, "message": "COMPLETED"},
    }
    # A forged "completed": the look-up finds it still submitted, so nothing changes.
    assert (
        web.post(
            "/webhooks/providers/dtone-1", json.dumps(forged), content_type="application/json"
        ).status_code
        == 204
    )
    recharge.refresh_from_db()
    assert recharge.status == S.DISPATCHED
    # DT One completes it and calls back: the look-up confirms it, and it is delivered.
    dtone.complete(recharge.public_id)
    body = json.dumps(dtone.transaction(recharge.public_id))
    assert (
        web.post("/webhooks/providers/dtone-1", body, content_type="application/json").status_code
        == 204
    )
    recharge.refresh_from_db()
    assert recharge.status == S.DELIVERED and recharge.provider == "dtone-1"
    assert dtone.calls[recharge.public_id] == 1  # never sent again
    # Unknown provider, provider without callbacks, unreadable body.
    assert (
        web.post("/webhooks/providers/nobody", "{}", content_type="application/json").status_code
        == 404
    )
    assert (
        web.post(
            "/webhooks/providers/reloadly-1", "{}", content_type="application/json"
        ).status_code
        == 404
    )
    assert (
        web.post("/webhooks/providers/dtone-1", "nope", content_type="application/json").status_code
        == 400
    )
    assert_ledger_balanced()


def test_an_old_refusal_does_not_free_a_recharge_whose_later_send_was_cut_short(
    routed, reloadly, dtone, ding
):
    """Refused connection, nothing else to go to: it waits at Reloadly. A later send there
    reaches Reloadly but its worker dies before recording anything. The next take-over must
    look it up at Reloadly, not count the old refusal and send it elsewhere."""
    from datetime import timedelta

    from django.utils import timezone

    from upstreams.adapters import adapter_for

    product = telcel_100(routed)
    cli("set_provider", "--name", "dtone-1", "--enabled", "false")
    cli("set_provider", "--name", "ding-1", "--enabled", "false")
    reloadly.outage(True)
    recharge = place(product)
    outcome = processor.recharge_process(recharge_id=recharge.pk)
    assert outcome.status == S.DISPATCHED and calls(recharge) == [
        ("reloadly-1", "send", "unreachable")
    ]
    reloadly.outage(False)
    # A take-over touched the row, then sent it to Reloadly and died before its answer:
    Recharge.objects.filter(pk=recharge.pk).update(updated_at=timezone.now())
    recharge.refresh_from_db()
    route = recharge.route
    adapter_for(route.provider).send(processor.request_for(recharge, processor.target_of(recharge)))
    assert reloadly.calls[recharge.public_id] == 1
    cli("set_provider", "--name", "dtone-1", "--enabled", "true")
    health.trip("reloadly-1")  # and Reloadly's circuit is open now
    processor.recharge_process(
        recharge_id=recharge.pk, quiet_since=timezone.now() + timedelta(seconds=1)
    )
    recharge.refresh_from_db()
    assert recharge.status == S.DELIVERED and recharge.provider == "reloadly-1"
    assert dtone.calls[recharge.public_id] == 0 and reloadly.calls[recharge.public_id] == 1
    assert_ledger_balanced()


def test_a_resellers_recharge_history_never_names_the_provider(routed, reloadly, dtone):
    """Resellers never see the provider (contract section 14): not in the lookup's status
    history of a delivered recharge, nor of one the provider reversed (its callback noticed)."""
    product = telcel_100(routed)
    reloadly.outage(True)  # so that DT One delivers it, then takes it back
    recharge = place(product)
    processor.recharge_process(recharge_id=recharge.pk)
    reloadly.outage(False)
    recharge.refresh_from_db()
    assert recharge.status == S.DELIVERED and recharge.provider == "dtone-1"
    api, path = reseller_lookup(recharge)
    shown = api.get(path).json()
    assert shown["operatorReference"] == recharge.provider_transaction_id
    assert "dtone" not in json.dumps(shown).lower()

    dtone.reverse(recharge.public_id)
    body = json.dumps(dtone.transaction(recharge.public_id))
    assert (
        Client()
        .post("/webhooks/providers/dtone-1", body, content_type="application/json")
        .status_code
        == 204
    )
    recharge.refresh_from_db()
    if recharge.status != S.REVERSED:  # the callback's look-up, when tasks are not run inline
        assert recharge_reversal_check(recharge_id=recharge.pk, source="callback")
    shown = api.get(path).json()
    assert shown["status"] == S.REVERSED
    assert "dtone" not in json.dumps(shown).lower()


def test_a_refusal_everywhere_reaches_the_reseller_without_the_providers_names(
    routed, reloadly, dtone, ding
):
    """Resellers never see the provider (contract section 14): the last refusal's words
    ("DingConnect refused the transfer ...") reach the reseller's ``failureMessage`` and
    history as "the provider refused the transfer ..."; staff see the provider's name in the
    recharge's ``provider`` and its attempts."""
    product = telcel_100(routed)
    reloadly.refuse_number(NUMBER)
    dtone.refuse(number=NUMBER)
    ding.refuse_number(NUMBER.lstrip("+"))
    recharge = place(product)
    assert processor.recharge_process(recharge_id=recharge.pk).status == S.FAILED
    api, path = reseller_lookup(recharge)
    shown = api.get(path).json()
    assert shown["status"] == S.FAILED
    assert shown["failureMessage"].startswith("the provider refused the transfer")
    said = json.dumps(shown)
    assert not re.search(r"\b(ding|reloadly|dt ?one)", said, re.IGNORECASE), said
