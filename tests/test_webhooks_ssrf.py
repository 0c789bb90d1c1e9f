"""Webhook targets are checked against request forgery (SSRF) when saved and at each send."""

import pytest

from tests.factories import UserFactory
from tests.fakes.receiver import Receiver
from tests.helpers import fund
from webhooks.delivery import endpoint_drain
from webhooks.models import Delivery
from webhooks.services import endpoint_create
from webhooks.targets import UnsafeTarget, resolve

pytestmark = pytest.mark.django_db

REFUSED = [
    "https://127.0.0.1/hooks",
    "https://127.1.2.3:8443/hooks",
    "https://10.0.0.5/hooks",
    "https://10.255.255.255/hooks",
    "https://172.16.0.1/hooks",
    "https://192.168.1.10/hooks",
    "https://169.254.169.254/latest/meta-data/",
    "https://100.64.0.1/hooks",
    "https://0.0.0.0/hooks",
    "https://[::1]/hooks",
    "https://[::ffff:127.0.0.1]/hooks",
    "https://[fd00:ec2::254]/hooks",
    "https://[fe80::1]/hooks",
    "https://localhost/hooks",
    "https://localhost./hooks",
]


@pytest.fixture
def strict(settings):
    settings.WEBHOOK_ALLOW_PRIVATE_TARGETS = False
    settings.DEBUG = False


@pytest.mark.parametrize("url", REFUSED)
def test_private_loopback_and_metadata_targets_are_refused(strict, url):
    user = UserFactory()
    with pytest.raises(Exception) as caught:
        endpoint_create(account=user.account, url=url, livemode=True)
    assert caught.value.fields[0]["field"] == "url"
    assert "private or reserved" in caught.value.fields[0]["message"]


@pytest.mark.parametrize(
    "url, words",
    [
        ("http://93.184.216.34/hooks", "https"),
        ("ftp://93.184.216.34/hooks", "https"),
        ("https://user:pw@93.184.216.34/hooks", "user name"),
        ("https:///hooks", "no host"),
        ("https://93.184.216.34:99999/", "not valid"),
    ],
)
def test_malformed_and_plain_http_targets_are_refused(strict, url, words):
    user = UserFactory()
    with pytest.raises(Exception) as caught:
        endpoint_create(account=user.account, url=url, livemode=True)
    assert words in caught.value.fields[0]["message"]


def test_a_public_address_is_accepted(strict):
    user = UserFactory()
    endpoint = endpoint_create(account=user.account, url="https://93.184.216.34/h", livemode=True)
    assert endpoint.secret.startswith("whsec_")
    assert resolve(endpoint.url).addresses == ("93.184.216.34",)


def test_the_target_is_checked_again_at_send_time(settings):
    """An endpoint saved while private targets were allowed (or whose DNS changed since) gets
    nothing once its address is private: the send is refused before any connection."""
    receiver = Receiver().start()
    try:
        settings.WEBHOOK_ALLOW_PRIVATE_TARGETS = True
        user = UserFactory()
        endpoint = endpoint_create(account=user.account, url=receiver.url, livemode=True)
        settings.WEBHOOK_ALLOW_PRIVATE_TARGETS = False
        fund(user, "5.00")
        endpoint_drain(endpoint.pk)
        assert receiver.requests == []
        delivery = Delivery.objects.get()
        assert delivery.state == "pending" and delivery.last_error.startswith("refused")
        with pytest.raises(UnsafeTarget):
            resolve(receiver.url)
    finally:
        receiver.stop()


def test_private_targets_are_allowed_only_by_the_setting(settings):
    settings.WEBHOOK_ALLOW_PRIVATE_TARGETS = True
    user = UserFactory()
    endpoint = endpoint_create(account=user.account, url="http://127.0.0.1:9/h", livemode=False)
    assert endpoint.livemode is False
