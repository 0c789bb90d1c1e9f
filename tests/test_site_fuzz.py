"""Bad input found by fuzzing the running site (HTML pages, not the API): each is a 4xx or
the page again with its message, never a 500, and changes nothing it should not. Each test
failed before its fix."""

from __future__ import annotations

import pytest
from django.test import Client

from recipients.models import SavedRecipient
from tests.factories import UserFactory
from wallet.models import Wallet

pytestmark = pytest.mark.django_db

# A "next" that is no address: redirect() reads a bare word as the name of a view, and
# reversing it raised NoReverseMatch (a 500).
NOT_ADDRESSES = ["NaN", "Infinity", "true", "x" * 300, "wallet:wallet", "a\x00b"]


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.parametrize("after", NOT_ADDRESSES)
def test_threshold_with_a_next_that_is_no_address_goes_back_to_the_wallet(after):
    user = UserFactory()
    response = _client(user).post("/wallet/threshold/", {"threshold": "25", "next": after})
    assert response.status_code == 302
    assert response["Location"] == "/wallet/"


@pytest.mark.parametrize("after", NOT_ADDRESSES)
def test_saving_a_recipient_with_a_next_that_is_no_address_goes_to_the_list(after):
    user = UserFactory()
    response = _client(user).post(
        "/recipients/save/", {"name": "", "phone_number": "", "next": after}
    )
    assert response.status_code == 302
    assert response["Location"] == "/recipients/"
    assert not SavedRecipient.objects.filter(account=user.account).exists()


@pytest.mark.parametrize("after", NOT_ADDRESSES)
def test_adding_to_the_cart_with_a_next_that_is_no_address_is_no_500(after):
    user = UserFactory()
    response = _client(user).post("/cart/add/", {"product": "prd_none", "next": after})
    assert response.status_code == 302
    assert response["Location"] == "/catalog/"


def test_a_next_of_this_site_is_still_followed():
    user = UserFactory()
    response = _client(user).post(
        "/wallet/threshold/", {"threshold": "25", "next": "/accounts/webhooks/"}
    )
    assert response["Location"] == "/accounts/webhooks/"
    assert Wallet.objects.get(account=user.account).low_balance_threshold == 25
