"""After delivery: a provider takes a top-up back (contract §14 "After delivery";
docs/providers.md, "Reversals"), against the fakes of DT One and Reloadly over real HTTP.

A reversal is noticed by looking the transaction up at the provider (a callback only asks for
that look-up), moves the recharge from ``delivered`` to ``reversed``, refunds it once and emits
``recharge.reversed``."""

import base64
import json
import threading
from decimal import Decimal

import pytest
from django.core.management import call_command
from django.db import close_old_connections, connection
from django.test import Client, override_settings
from django.urls import reverse

from recharges import processor
from recharges.models import Recharge
from recharges.services import recharge_reversal_check, recharge_reverse
from tests.factories import UserFactory
from tests.helpers import assert_ledger_balanced
from tests.helpers import place as place_order
from tests.provider_support import NUMBER, telcel_100
from tests.waiting import wait_until
from wallet.models import LedgerEntry, Wallet
from wallet.services import wallet_topup_manual
from webhooks.models import Event

pytestmark = pytest.mark.django_db
S = Recharge.Status


def place(product, *, hook: bool = True):
    """A wallet order of one Telcel 100 by a reseller with a live webhook endpoint."""
    user = UserFactory()
    wallet_topup_manual(account=user.account, amount=Decimal("100.00"))
    if hook:
        call_command(
            "create_webhook_endpoint", "--email", user.email, "--url", "https://hooks.example/r",
            "--mode", "live", stdout=open("/dev/null", "w"),  # noqa: SIM115
        )  # fmt: skip
    order = place_order(user, product, number=NUMBER)
    recharge = order.recharges.get()
    assert processor.recharge_process(recharge_id=recharge.pk).status == S.DELIVERED
    recharge.refresh_from_db()
    return recharge


def balance(recharge) -> Decimal:
    return Wallet.objects.get(account_id=recharge.account_id, kind="live").balance


def refunds(recharge) -> int:
    return LedgerEntry.objects.filter(
        kind=LedgerEntry.Kind.REFUND, reference=recharge.ledger_reference
    ).count()


def reversed_events(recharge) -> int:
    return sum(
        1
        for event in Event.objects.filter(type="recharge.reversed")
        if json.loads(event.body)["data"]["object"]["id"] == recharge.public_id
    )


def callback(name: str, body: dict):
    return Client().post(
        f"/webhooks/providers/{name}", data=json.dumps(body), content_type="application/json"
    )


def test_a_dtone_reversal_callback_is_looked_up_and_refunds_once(routed, reloadly, dtone):
    reloadly.outage(True)  # so that DT One delivers it
    recharge = place(telcel_100(routed))
    reloadly.outage(False)
    assert recharge.provider == "dtone-1"
    paid = balance(recharge)
    # A forged "reversed" for a transaction DT One still holds as completed changes nothing.
    forged = {**dtone.transaction(recharge.public_id)}
    forged["status"] = {
        "id": 90000,
        "message": "REVERSED",
        "class": {"id": 9, "message": "REVERSED"},
    }
    assert callback("dtone-1", forged).status_code == 204
    recharge.refresh_from_db()
    assert recharge.status == S.DELIVERED and balance(recharge) == paid

    body = dtone.reverse(recharge.public_id)
    assert callback("dtone-1", body).status_code == 204
    assert callback("dtone-1", body).status_code == 204  # a duplicate: still once
    recharge.refresh_from_db()
    assert recharge.status == S.REVERSED and recharge.reversed_at is not None
    assert recharge.failure_code == "upstream_reversed"
    assert balance(recharge) == paid + recharge.amount
    assert refunds(recharge) == 1 and recharge.refunded
    assert reversed_events(recharge) == 1
    assert_ledger_balanced()


def test_reloadly_refunded_after_success_is_a_reversal(routed, reloadly):
    recharge = place(telcel_100(routed))
    assert recharge.provider == "reloadly-1"
    paid = balance(recharge)
    assert recharge_reversal_check(recharge_id=recharge.pk) is False  # still delivered there
    reloadly.refund(recharge.public_id)
    assert recharge_reversal_check(recharge_id=recharge.pk) is True
    assert recharge_reversal_check(recharge_id=recharge.pk) is False  # already reversed
    recharge.refresh_from_db()
    assert recharge.status == S.REVERSED
    assert balance(recharge) == paid + recharge.amount and refunds(recharge) == 1
    history = list(recharge.events.order_by("id").values_list("to_status", flat=True))
    assert history[-2:] == [S.DELIVERED, S.REVERSED]
    assert_ledger_balanced()


def test_the_lookup_and_the_site_show_the_reversal(routed, reloadly):
    recharge = place(telcel_100(routed), hook=False)
    reloadly.refund(recharge.public_id)
    recharge_reversal_check(recharge_id=recharge.pk)
    web = Client()
    web.force_login(recharge.order.created_by)
    page = web.get(reverse("orders:receipt", args=[recharge.payment.public_id]))
    assert page.status_code == 200
    assert b"status-reversed" in page.content
    assert b"took the top-up back" in page.content


def test_only_a_delivered_live_recharge_can_be_reversed(routed, reloadly):
    recharge = place(telcel_100(routed), hook=False)
    assert recharge_reverse(recharge_id=recharge.pk, source="test") is True
    assert recharge_reverse(recharge_id=recharge.pk, source="test") is False
    recharge.refresh_from_db()
    assert recharge.status == S.REVERSED and refunds(recharge) == 1
    assert_ledger_balanced()


@pytest.mark.django_db(transaction=True)
def test_duplicate_reversals_in_parallel_threads_refund_once(routed, reloadly, dtone):
    """Eight threads, each its own PostgreSQL connection, reverse the same recharge at once
    (duplicate callbacks, a look-up and a reconciliation at the same moment)."""
    if connection.vendor != "postgresql":
        pytest.skip("row locks: PostgreSQL")
    recharge = place(telcel_100(routed))
    paid = balance(recharge)
    reloadly.refund(recharge.public_id)
    start = threading.Barrier(8)
    answers: list[bool] = []

    def reverse(index: int) -> None:
        try:
            start.wait()
            if index % 2:
                answers.append(recharge_reverse(recharge_id=recharge.pk, source="thread"))
            else:
                answers.append(recharge_reversal_check(recharge_id=recharge.pk))
        finally:
            close_old_connections()
            connection.close()

    threads = [threading.Thread(target=reverse, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(answers) == [False] * 7 + [True]
    recharge.refresh_from_db()
    assert recharge.status == S.REVERSED
    assert balance(recharge) == paid + recharge.amount and refunds(recharge) == 1
    assert reversed_events(recharge) == 1
    assert_ledger_balanced()


@override_settings(PROVIDER_CALLBACK_ALLOWED_IPS=["198.51.100.0/24", "203.0.113.9"])
def test_callbacks_from_outside_the_allowed_addresses_are_refused(routed, reloadly, dtone):
    reloadly.outage(True)
    recharge = place(telcel_100(routed), hook=False)
    reloadly.outage(False)
    body = dtone.reverse(recharge.public_id)
    outside = Client(REMOTE_ADDR="192.0.2.1").post(
        "/webhooks/providers/dtone-1", data=json.dumps(body), content_type="application/json"
    )
    assert outside.status_code == 403
    assert outside["Content-Type"].startswith("application/problem+json")
    recharge.refresh_from_db()
    assert recharge.status == S.DELIVERED  # nothing looked up
    inside = Client(REMOTE_ADDR="198.51.100.20").post(
        "/webhooks/providers/dtone-1", data=json.dumps(body), content_type="application/json"
    )
    assert inside.status_code == 204
    recharge.refresh_from_db()
    assert recharge.status == S.REVERSED


@pytest.mark.django_db(transaction=True)
def test_a_callback_secret_goes_in_the_callback_url_and_callbacks_without_it_are_refused(
    routed, reloadly, dtone, live_server, settings
):
    """Contract §14 and the issue: verify what the provider lets us verify. With a callback
    secret set, the URL sent to DT One carries it as HTTP Basic credentials (DT One sends
    them back); a callback without them is 401 and looks nothing up."""
    settings.SITE_URL = live_server.url
    call_command("set_provider", "--name", "dtone-1", "--callback-secret", "s3cret/+:x")
    reloadly.outage(True)
    recharge = place(telcel_100(routed), hook=False)
    reloadly.outage(False)
    assert recharge.provider == "dtone-1"
    sent = dtone.callback_urls[recharge.public_id]
    host = live_server.url.split("//", 1)[1]
    assert sent == f"http://dtone-1:s3cret%2F%2B%3Ax@{host}/webhooks/providers/dtone-1"
    body = dtone.transaction(recharge.public_id)
    unsigned = callback("dtone-1", body)
    assert unsigned.status_code == 401 and unsigned["WWW-Authenticate"].startswith("Basic")
    wrong = Client().post(
        "/webhooks/providers/dtone-1",
        data=json.dumps(body),
        content_type="application/json",
        HTTP_AUTHORIZATION="Basic " + base64.b64encode(b"dtone-1:guess").decode(),
    )
    assert wrong.status_code == 401
    # DT One's own callback (the fake posts to the URL it was given, credentials as Basic).
    dtone.reverse(recharge.public_id)
    wait_until(
        lambda: Recharge.objects.get(pk=recharge.pk).status == S.REVERSED,
        timeout=10,
        what="DT One's reversal callback to reverse the recharge",
        state=lambda: dtone.callbacks,
    )
    recharge.refresh_from_db()
    assert [c["answer"] for c in dtone.callbacks][-1] == 204
