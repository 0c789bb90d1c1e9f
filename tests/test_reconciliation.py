"""Reconciliation with the providers (docs/providers.md, "Reconciliation"; contract §14):
each fake's transaction report for the day, over real HTTP, matched with our recharges by
reference. Every discrepancy injected into a fake's report is found (a transaction we never
made, one of ours dropped, a wrong amount, a late reversal), a reversal is applied once however
often the day is run, staff are told, and the runs are shown to staff only."""

import copy
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from emails.models import Email
from emails.services import render
from recharges import processor
from recharges.models import Recharge
from reconciliation.models import ReconciliationItem, ReconciliationRun
from reconciliation.services import reconciliation_run
from reconciliation.tasks import reconciliation_daily_task
from tests.factories import UserFactory
from tests.helpers import (
    assert_ledger_balanced,
    away_from_midnight,
    bearer,
    funded_order,
    second_factor_login,
)
from tests.provider_support import NUMBER, telcel_100
from upstreams.models import Provider
from wallet.models import Wallet

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _one_day():
    """These tests compare "today" with the rows they write: never across midnight UTC."""
    with away_from_midnight():
        yield


S = Recharge.Status
K = ReconciliationItem.Kind
PROVIDERS = ("reloadly-1", "dtone-1", "ding-1")


def cli(*args) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue().strip()


def today() -> str:
    return datetime.now(UTC).date().isoformat()


def only(name: str) -> None:
    """Route everything to ``name``: the other providers are disabled. That reprices the
    products (docs/pricing.md): priced 10 % over ``name``'s cost, so that they stay offered
    where it costs more than the cheapest provider the sync priced them over."""
    for other in PROVIDERS:
        cli("set_provider", "--name", other, "--enabled", "true" if other == name else "false")
    cli("set_price_rule", "--country", "MX", "--markup-percent", "10")


def deliver(product, count: int, number: str = NUMBER) -> list[Recharge]:
    order = funded_order(product, number=number, quantity=count)
    recharges = list(order.recharges.order_by("id"))
    for recharge in recharges:
        assert processor.recharge_process(recharge_id=recharge.pk).status == S.DELIVERED
        recharge.refresh_from_db()
    return recharges


def items(run: ReconciliationRun) -> set[tuple[str, str]]:
    return {(i.kind, i.our_reference) for i in run.items.all()}


def wallet_balance(recharge: Recharge) -> Decimal:
    return Wallet.objects.get(account_id=recharge.account_id, kind="live").balance


# What each fake says of a top-up we never sent, and how its report gets a wrong amount and a
# late reversal, in that provider's own terms.
def inject_unknown(name: str, fakes: dict, reference: str) -> None:
    if name == "reloadly-1":
        fakes[name].seed_topup(reference)
    elif name == "dtone-1":
        fakes[name].add_transaction(reference, created_at=datetime.now(UTC))
    else:
        fakes[name].seed_transfer(reference)


def inject_wrong_cost(name: str, fakes: dict, reference: str) -> None:
    fake = fakes[name]
    if name == "reloadly-1":
        fake.misreport(reference, discount=0.0)  # they say they debited 4.88, not 4.56
    elif name == "dtone-1":
        prices = copy.deepcopy(fake.transaction(reference)["prices"])
        prices["wholesale"]["amount"] = prices["wholesale"]["amount"] + 1
        fake.misreport(reference, prices=prices)
    else:
        fake.misreport(reference, CommissionApplied=Decimal("0.00"))


def inject_reversal(name: str, fakes: dict, reference: str) -> None:
    if name == "reloadly-1":
        fakes[name].refund(reference)  # REFUNDED after SUCCESSFUL
    elif name == "dtone-1":
        fakes[name].reverse(reference)  # REVERSED after COMPLETED
    else:
        fakes[name].cancel(reference)  # Ding documents no reversal: Cancelled, reported failed


@pytest.fixture
def fakes(reloadly, dtone, ding):
    return {"reloadly-1": reloadly, "dtone-1": dtone, "ding-1": ding}


@pytest.mark.parametrize("name", PROVIDERS)
def test_reconciliation_finds_every_discrepancy_injected_into_each_providers_report(
    routed, fakes, name
):
    only(name)
    kept, dropped, mispriced, reversed_there = deliver(telcel_100(routed), 4)
    assert {r.provider for r in (kept, dropped, mispriced, reversed_there)} == {name}
    inject_unknown(name, fakes, "rch_theirsonly")
    fakes[name].omit_from_reports(dropped.public_id)
    inject_wrong_cost(name, fakes, mispriced.public_id)
    inject_reversal(name, fakes, reversed_there.public_id)

    line = cli("reconcile_provider", "--provider", name, "--date", today())

    run = ReconciliationRun.objects.get()
    found = items(run)
    assert (K.MISSING_HERE, "rch_theirsonly") in found
    assert (K.MISSING_THERE, dropped.public_id) in found
    assert (K.AMOUNT_MISMATCH, mispriced.public_id) in found
    wrong = run.items.get(kind=K.AMOUNT_MISMATCH)
    assert wrong.ours_amount.quantize(Decimal("0.01")) == mispriced.cost.quantize(Decimal("0.01"))
    assert wrong.theirs_amount != wrong.ours_amount
    reversed_there.refresh_from_db()
    if name == "ding-1":
        # Ding has no reversal: a delivered top-up it calls Cancelled is shown to staff.
        assert (K.STATUS_MISMATCH, reversed_there.public_id) in found
        assert reversed_there.status == S.DELIVERED
        assert line == "matched 1, missing here 1, missing there 1, mismatched 2"
        assert run.reversals_applied == 0
    else:
        # The reversal is applied: reversed and refunded here, then both sides agree.
        assert (K.REVERSED, reversed_there.public_id) in found
        assert reversed_there.status == S.REVERSED and reversed_there.refunded
        assert line == "matched 2, missing here 1, missing there 1, mismatched 1"
        assert run.reversals_applied == 1
    assert len(found) == 4
    assert (run.provider, run.day.isoformat(), run.report_lines) == (name, today(), 4)
    assert_ledger_balanced()


@pytest.mark.parametrize("name", PROVIDERS)
def test_a_clean_day_matches_everything_and_tells_nobody(routed, fakes, staff, name):
    only(name)
    deliver(telcel_100(routed), 2)
    line = cli("reconcile_provider", "--provider", name, "--date", today())
    assert line == "matched 2, missing here 0, missing there 0, mismatched 0"
    assert not ReconciliationItem.objects.exists()
    assert not Email.objects.filter(kind="reconciliation_mismatch").exists()
    # Another day of the same provider has nothing on either side.
    yesterday = (datetime.now(UTC).date() - timedelta(days=1)).isoformat()
    assert cli("reconcile_provider", "--provider", name, "--date", yesterday) == (
        "matched 0, missing here 0, missing there 0, mismatched 0"
    )


@pytest.mark.parametrize("name", ["reloadly-1", "dtone-1"])
def test_a_late_reversal_is_applied_once_however_often_the_day_is_reconciled(routed, fakes, name):
    only(name)
    (recharge,) = deliver(telcel_100(routed), 1)
    before = wallet_balance(recharge)
    inject_reversal(name, fakes, recharge.public_id)
    provider = Provider.objects.get(name=name)
    day = datetime.now(UTC).date()
    first = reconciliation_run(provider=provider, day=day)
    second = reconciliation_run(provider=provider, day=day)
    assert (first.reversals_applied, second.reversals_applied) == (1, 0)
    assert (first.matched, second.matched) == (1, 1)
    assert first.discrepancies == second.discrepancies == 0
    recharge.refresh_from_db()
    assert recharge.status == S.REVERSED
    assert wallet_balance(recharge) == before + recharge.amount  # refunded once
    assert recharge.events.filter(to_status=S.REVERSED).count() == 1
    assert items(second) == set()
    assert_ledger_balanced()


def test_a_transaction_they_hold_for_a_recharge_we_sent_elsewhere_is_missing_here(routed, fakes):
    only("reloadly-1")
    (recharge,) = deliver(telcel_100(routed), 1)
    fakes["ding-1"].seed_transfer(recharge.public_id)  # Ding says it delivered it too
    fakes["ding-1"].seed_transfer("rch_refusedthere", state="Failed")  # moved no money
    line = cli("reconcile_provider", "--provider", "ding-1", "--date", today())
    assert line == "matched 0, missing here 1, missing there 0, mismatched 0"
    item = ReconciliationItem.objects.get()
    assert (item.kind, item.recharge, item.our_reference) == (
        K.MISSING_HERE,
        recharge,
        recharge.public_id,
    )
    assert "reloadly-1" in item.detail


def test_a_wrong_face_value_is_an_amount_mismatch(routed, fakes):
    only("reloadly-1")
    (recharge,) = deliver(telcel_100(routed), 1)
    fakes["reloadly-1"].misreport(recharge.public_id, deliveredAmount=50.0)
    run = reconciliation_run(
        provider=Provider.objects.get(name="reloadly-1"), day=datetime.now(UTC).date()
    )
    item = run.items.get()
    assert (item.kind, item.ours_amount, item.ours_currency) == (
        K.AMOUNT_MISMATCH,
        Decimal("100.0000"),
        "MXN",
    )
    assert (item.theirs_amount, item.theirs_currency) == (Decimal("50.0000"), "MXN")


def test_staff_get_an_email_when_a_run_finds_discrepancies(routed, fakes, staff):
    only("dtone-1")
    (recharge,) = deliver(telcel_100(routed), 1)
    fakes["dtone-1"].omit_from_reports(recharge.public_id)
    UserFactory()  # not staff: not told
    cli("reconcile_provider", "--provider", "dtone-1", "--date", today())
    (email,) = Email.objects.filter(kind="reconciliation_mismatch")
    assert email.to == staff.email
    assert (email.context["provider"], email.context["missing_there"]) == ("dtone-1", 1)
    message = render(email)
    assert "dtone-1" in message.subject and today() in message.subject
    assert "Missing there (we delivered it, the provider has no record): 1" in message.body
    run = ReconciliationRun.objects.get()
    assert f"/admin/reconciliation/reconciliationrun/{run.pk}/change/" in message.body
    email.language = "es"
    assert render(email).body  # renders in every language (the words come with the .po)


def test_the_cli_refuses_an_unknown_provider_a_bad_date_and_a_provider_without_report(
    routed,
):
    with pytest.raises(CommandError, match="nobody"):
        cli("reconcile_provider", "--provider", "nobody", "--date", today())
    for bad in ("2026-13-01", "yesterday", "20261101"):
        with pytest.raises(CommandError, match="YYYY-MM-DD"):
            cli("reconcile_provider", "--provider", "dtone-1", "--date", bad)
    cli("create_provider", "--name", "sim", "--kind", "simulator")
    with pytest.raises(CommandError, match="no transaction report"):
        cli("reconcile_provider", "--provider", "sim", "--date", today())
    assert not ReconciliationRun.objects.exists()


def test_a_report_that_cannot_be_read_is_a_kept_run_with_its_error(routed, fakes):
    fakes["dtone-1"].outage(True)
    with pytest.raises(CommandError, match="did not answer"):
        cli("reconcile_provider", "--provider", "dtone-1", "--date", today())
    run = ReconciliationRun.objects.get()
    assert run.error and run.matched == run.discrepancies == 0


def test_the_daily_task_reconciles_yesterday_for_every_enabled_provider_with_a_report(
    routed, fakes
):
    cli("create_provider", "--name", "sim", "--kind", "simulator")
    cli("set_provider", "--name", "ding-1", "--enabled", "false")
    yesterday = datetime.now(UTC).date() - timedelta(days=1)
    fakes["dtone-1"].add_transaction(
        "rch_yesterday", created_at=datetime.combine(yesterday, datetime.min.time(), UTC)
    )
    lines = reconciliation_daily_task()
    assert lines == {
        "reloadly-1": "matched 0, missing here 0, missing there 0, mismatched 0",
        "dtone-1": "matched 0, missing here 1, missing there 0, mismatched 0",
    }
    assert set(ReconciliationRun.objects.values_list("provider", "day")) == {
        ("reloadly-1", yesterday),
        ("dtone-1", yesterday),
    }


def test_admin_reconciliations_lists_runs_with_counts_and_mismatches(api, routed, fakes, staff):
    only("reloadly-1")
    dropped, refunded = deliver(telcel_100(routed), 2)
    fakes["reloadly-1"].omit_from_reports(dropped.public_id)
    fakes["reloadly-1"].refund(refunded.public_id)
    cli("reconcile_provider", "--provider", "reloadly-1", "--date", today())
    cli("reconcile_provider", "--provider", "dtone-1", "--date", today())
    api.credentials(**bearer(staff))
    body = api.get("/api/v1/admin/reconciliations").json()
    assert (body["count"], body["page"], body["next"]) == (2, 1, None)
    run = next(r for r in body["results"] if r["provider"] == "reloadly-1")
    assert set(run) == {
        "id", "provider", "date", "startedAt", "finishedAt", "reportLines", "recharges",
        "matched", "missingHere", "missingThere", "mismatched", "reversalsApplied", "error",
        "mismatches", "reversals",
    }  # fmt: skip
    assert run["id"].startswith("rcn_") and run["date"] == today()
    assert (run["matched"], run["missingHere"], run["missingThere"], run["mismatched"]) == (
        1,
        0,
        1,
        0,
    )
    assert run["reversalsApplied"] == 1 and run["error"] is None
    (missing,) = run["mismatches"]
    assert missing["kind"] == "missing_there"
    assert missing["recharge"] == missing["reference"] == dropped.public_id
    assert (missing["oursStatus"], missing["theirsStatus"]) == ("delivered", None)
    assert missing["oursAmount"] == "4.5600" and missing["oursCurrency"] == "EUR"
    (reversal,) = run["reversals"]
    assert (reversal["kind"], reversal["recharge"]) == ("reversed", refunded.public_id)
    assert reversal["theirsStatus"] == "reversed"
    filtered = api.get("/api/v1/admin/reconciliations", {"provider": "dtone-1", "date": today()})
    assert [r["provider"] for r in filtered.json()["results"]] == ["dtone-1"]
    assert api.get("/api/v1/admin/reconciliations", {"date": "soon"}).status_code == 400
    assert api.get("/api/v1/admin/reconciliations", {"day": today()}).status_code == 400


def test_admin_reconciliations_is_staff_only(api, user_api):
    assert api.get("/api/v1/admin/reconciliations").status_code == 401
    assert user_api.get("/api/v1/admin/reconciliations").status_code == 403


def test_the_back_office_shows_runs_read_only_and_exports_their_items(routed, fakes, staff):
    only("dtone-1")
    (recharge,) = deliver(telcel_100(routed), 1)
    fakes["dtone-1"].omit_from_reports(recharge.public_id)
    cli("reconcile_provider", "--provider", "dtone-1", "--date", today())
    run = ReconciliationRun.objects.get()
    client = Client()
    second_factor_login(client, staff)
    listing = client.get("/admin/reconciliation/reconciliationrun/", {"provider": "dtone-1"})
    assert listing.status_code == 200 and "dtone-1" in listing.content.decode()
    page = client.get(f"/admin/reconciliation/reconciliationrun/{run.pk}/change/")
    assert page.status_code == 200
    assert recharge.public_id in page.content.decode()
    assert client.get("/admin/reconciliation/reconciliationrun/add/").status_code == 403
    export = client.post(
        "/admin/reconciliation/reconciliationrun/",
        {"action": "export_csv", "_selected_action": [run.pk]},
    )
    assert export.status_code == 200 and export["Content-Type"].startswith("text/csv")
    rows = export.content.decode().splitlines()
    assert rows[0].startswith("run,provider,day,kind,recharge")
    assert rows[1].startswith(f"{run.public_id},dtone-1,{today()},missing_there,")
    assert recharge.public_id in rows[1]


@pytest.mark.django_db(transaction=True)
def test_the_cli_line_is_alone_on_stdout_when_the_console_prints_the_staff_alert(
    routed, fakes, staff, settings, capsys
):
    """Under ``make run`` the console prints mail, and the staff alert is sent as the run
    commits, on the in-process pool: the command waits for it, and it goes to stderr; stdout
    keeps the contract's one line."""
    settings.MAILERS = {
        "default": {"BACKEND": "django.core.mail.backends.console.EmailBackend", "OPTIONS": {}}
    }
    only("dtone-1")
    (recharge,) = deliver(telcel_100(routed), 1)
    fakes["dtone-1"].omit_from_reports(recharge.public_id)
    settings.TASKS_IN_PROCESS_THREADED = True  # make run's pool, not the tests' inline tasks
    capsys.readouterr()
    line = cli("reconcile_provider", "--provider", "dtone-1", "--date", today())
    assert line == "matched 0, missing here 0, missing there 1, mismatched 0"
    printed = capsys.readouterr()
    assert "Missing there" not in printed.out
    assert "Missing there" in printed.err  # the alert, sent and shown
