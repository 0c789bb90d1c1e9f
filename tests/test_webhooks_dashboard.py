"""The webhook pages of the profile dashboard: endpoints with a secret shown once, their
deliveries with resend and a test event, rotation, and the low-balance threshold."""

import re
from decimal import Decimal

import pytest
from django.urls import reverse

from tests.factories import UserFactory
from tests.fakes.receiver import Receiver
from wallet.models import Wallet
from webhooks.delivery import endpoint_drain
from webhooks.models import Delivery, WebhookEndpoint
from webhooks.signature import verify_signature

pytestmark = pytest.mark.django_db


@pytest.fixture
def receiver(settings):
    settings.WEBHOOK_ALLOW_PRIVATE_TARGETS = True
    server = Receiver().start()
    yield server
    server.stop()


@pytest.fixture
def site(client, reseller):
    client.force_login(reseller)
    return client


def create(site, url, **extra):
    page = site.get(reverse("webhooks:endpoint-create"))
    token = re.search(r'name="form_token" value="([^"]+)"', page.content.decode()).group(1)
    data = {"url": url, "mode": "test", "form_token": token, **extra}
    return site.post(reverse("webhooks:endpoint-create"), data)


def test_create_shows_the_secret_once_and_lists_the_endpoint(site, reseller, receiver):
    response = create(site, receiver.url, events=["recharge.delivered"], mode="live")
    assert response.status_code == 200
    endpoint = WebhookEndpoint.objects.get(account=reseller.account)
    assert endpoint.secret in response.content.decode()
    assert "no-cache" in response["Cache-Control"] or "no-store" in response["Cache-Control"]
    assert endpoint.livemode and endpoint.events == ["recharge.delivered"]
    listing = site.get(reverse("webhooks:endpoints")).content.decode()
    assert receiver.url in listing and endpoint.secret not in listing
    detail = site.get(reverse("webhooks:endpoint", args=[endpoint.public_id])).content.decode()
    assert endpoint.secret not in detail


def test_a_resent_form_creates_nothing_more(site, reseller, receiver):
    page = site.get(reverse("webhooks:endpoint-create"))
    token = re.search(r'name="form_token" value="([^"]+)"', page.content.decode()).group(1)
    data = {"url": receiver.url, "mode": "test", "form_token": token}
    site.post(reverse("webhooks:endpoint-create"), data)
    again = site.post(reverse("webhooks:endpoint-create"), data)
    assert again.status_code == 302
    assert WebhookEndpoint.objects.filter(account=reseller.account).count() == 1


def test_a_private_target_is_refused_with_a_message(site, reseller, settings):
    settings.WEBHOOK_ALLOW_PRIVATE_TARGETS = False
    response = create(site, "https://169.254.169.254/latest")
    assert response.status_code == 200
    assert "private or reserved" in response.content.decode()
    assert not WebhookEndpoint.objects.exists()


def test_test_event_resend_and_the_delivery_log(site, reseller, receiver):
    create(site, receiver.url)
    endpoint = WebhookEndpoint.objects.get()
    receiver.answer_next(500)
    site.post(reverse("webhooks:endpoint-test", args=[endpoint.public_id]))
    endpoint_drain(endpoint.pk)
    delivery = Delivery.objects.get()
    assert delivery.event.type == "webhook.test" and delivery.state == "pending"
    page = site.get(reverse("webhooks:endpoint", args=[endpoint.public_id])).content.decode()
    assert "webhook.test" in page and "HTTP 500" in page and "ms" in page
    site.post(reverse("webhooks:delivery-resend", args=[endpoint.public_id, delivery.public_id]))
    endpoint_drain(endpoint.pk)
    delivery.refresh_from_db()
    assert delivery.state == "succeeded" and delivery.attempts == 2
    first, second = receiver.requests
    assert first.json == second.json
    verify_signature(second.body, second.signature, endpoint.secret)
    page = site.get(reverse("webhooks:endpoint", args=[endpoint.public_id])).content.decode()
    assert "HTTP 200" in page and "{&quot;received&quot;: true}" in page


def test_edit_disable_rotate_and_delete(site, reseller, receiver):
    create(site, receiver.url)
    endpoint = WebhookEndpoint.objects.get()
    url = reverse("webhooks:endpoint", args=[endpoint.public_id])
    site.post(url, {"url": receiver.url + "/v2", "events": ["recharge.failed"], "enabled": ""})
    endpoint.refresh_from_db()
    assert endpoint.url.endswith("/v2") and endpoint.status == "disabled"
    assert endpoint.events == ["recharge.failed"]
    refused = site.post(reverse("webhooks:endpoint-test", args=[endpoint.public_id]), follow=True)
    assert "Enable the endpoint" in refused.content.decode()
    old = endpoint.secret
    rotated = site.post(reverse("webhooks:endpoint-rotate", args=[endpoint.public_id]))
    endpoint.refresh_from_db()
    assert endpoint.secret != old and endpoint.secret in rotated.content.decode()
    assert endpoint.signing_secrets() == [endpoint.secret, old]
    site.post(reverse("webhooks:endpoint-delete", args=[endpoint.public_id]))
    assert not WebhookEndpoint.objects.exists()


def test_another_accounts_endpoint_is_404(client, receiver):
    owner, other = UserFactory(), UserFactory()
    client.force_login(owner)
    create(client, receiver.url)
    endpoint = WebhookEndpoint.objects.get()
    client.force_login(other)
    for name in ["webhooks:endpoint", "webhooks:endpoint-delete"]:
        assert client.get(reverse(name, args=[endpoint.public_id])).status_code == 404
    for name in ["webhooks:endpoint-rotate", "webhooks:endpoint-test", "webhooks:endpoint-delete"]:
        assert client.post(reverse(name, args=[endpoint.public_id])).status_code == 404
    assert WebhookEndpoint.objects.get().secret == endpoint.secret


def test_pages_need_a_login(client):
    response = client.get(reverse("webhooks:endpoints"))
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_threshold_is_set_and_cleared(site, reseller):
    site.post(reverse("wallet:threshold"), {"threshold": "50.00"})
    wallet = Wallet.objects.get(account=reseller.account, kind="live")
    assert wallet.low_balance_threshold == Decimal("50.00")
    page = site.get(reverse("webhooks:endpoints")).content.decode()
    assert 'value="50.00"' in page
    site.post(reverse("wallet:threshold"), {"threshold": "-1"})
    wallet.refresh_from_db()
    assert wallet.low_balance_threshold == Decimal("50.00")
    site.post(reverse("wallet:threshold"), {"threshold": ""})
    wallet.refresh_from_db()
    assert wallet.low_balance_threshold is None
