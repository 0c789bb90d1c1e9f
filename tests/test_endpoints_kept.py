"""The webhook endpoints the processor's batches write events for, kept briefly in each
process (webhooks/kept_endpoints.py): a second batch of the same account reads no
endpoints, yet an endpoint added, changed, disabled (by its owner or automatically) or
deleted is followed from the very next batch."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from recharges.models import Recharge
from recharges.processor import recharge_process
from tests.factories import UserFactory
from tests.fakes.receiver import Receiver
from tests.helpers import assert_ledger_balanced, fund, place, table_reads
from webhooks.delivery import endpoint_drain
from webhooks.models import Delivery, Event, WebhookEndpoint
from webhooks.services import endpoint_create, endpoint_delete, endpoint_update

pytestmark = pytest.mark.django_db
URL = "https://hooks.example.com/reseller"


def _endpoint_reads(queries) -> list[str]:
    return table_reads(queries, "webhooks_webhookendpoint")


def _delivered_events(user) -> int:
    """The ``recharge.delivered`` events written for the user's endpoints."""
    return Event.objects.filter(account=user.account, type="recharge.delivered").count()


@pytest.fixture
def user(product):
    user = UserFactory()
    fund(user, "20.00")
    return user


def _deliver(recharge: Recharge) -> None:
    assert recharge_process(recharge_id=recharge.pk).status == Recharge.Status.DELIVERED


def test_a_second_batch_of_the_same_account_reads_no_endpoints(user, product):
    endpoint_create(account=user.account, url=URL, livemode=True, events=[])
    first, second = place(user, product, quantity=2).recharges.order_by("id")
    _deliver(first)
    with CaptureQueriesContext(connection) as queries:
        _deliver(second)
    assert _endpoint_reads(queries.captured_queries) == []
    assert _delivered_events(user) == 2
    assert Delivery.objects.filter(event__account=user.account).count() == 2
    assert_ledger_balanced()


def test_an_endpoint_added_gets_the_next_batch_s_events(user, product):
    first, second = place(user, product, quantity=2).recharges.order_by("id")
    _deliver(first)  # no endpoint yet: kept as "none"
    assert _delivered_events(user) == 0
    endpoint_create(account=user.account, url=URL, livemode=True, events=[])
    _deliver(second)
    assert _delivered_events(user) == 1


def test_an_endpoint_disabled_or_deleted_gets_nothing_from_the_next_batch(user, product):
    endpoint = endpoint_create(account=user.account, url=URL, livemode=True, events=[])
    recharges = list(place(user, product, quantity=4).recharges.order_by("id"))
    _deliver(recharges[0])
    endpoint_update(endpoint=endpoint, url=URL, events=[], description="", enabled=False)
    _deliver(recharges[1])
    assert _delivered_events(user) == 1
    endpoint_update(endpoint=endpoint, url=URL, events=[], description="", enabled=True)
    _deliver(recharges[2])  # kept again, enabled
    assert _delivered_events(user) == 2
    endpoint_delete(endpoint=endpoint)
    _deliver(recharges[3])
    assert _delivered_events(user) == 2


def test_an_endpoint_disabled_automatically_gets_nothing_from_the_next_batch(
    user, product, settings
):
    """The automatic disabling is one ``update()``, which sends no signal: it renews the
    kept endpoints' version itself."""
    settings.WEBHOOK_ALLOW_PRIVATE_TARGETS = True
    receiver = Receiver().start()
    try:
        receiver.answer_next(*([503] * 10))
        endpoint = endpoint_create(account=user.account, url=receiver.url, livemode=True, events=[])
        first, second = place(user, product, quantity=2).recharges.order_by("id")
        _deliver(first)
        # Failing for longer than WEBHOOK_DISABLE_AFTER_DAYS: the next failure disables it.
        long_ago = timezone.now() - timedelta(days=settings.WEBHOOK_DISABLE_AFTER_DAYS + 1)
        WebhookEndpoint.objects.filter(pk=endpoint.pk).update(failing_since=long_ago)
        endpoint_drain(endpoint.pk)
        endpoint.refresh_from_db()
        assert endpoint.status == WebhookEndpoint.Status.DISABLED
        _deliver(second)
    finally:
        receiver.stop()
    assert _delivered_events(user) == 1
