from decimal import Decimal

import pytest
from django.core.cache import cache
from rest_framework.test import APIClient
from rest_framework_simplejwt.tokens import RefreshToken

from reseller import ratelimit
from tests.factories import UserFactory


@pytest.fixture(autouse=True)
def _fresh_limits_and_cache():
    """Rate-limit counters and cache entries live in Redis: start every test from zero."""
    ratelimit.reset_all_for_tests()
    cache.clear()
    yield


@pytest.fixture
def api():
    return APIClient()


@pytest.fixture
def user(db):
    return UserFactory()


@pytest.fixture
def staff(db):
    return UserFactory(is_staff=True, is_superuser=True)


def bearer(user) -> dict:
    return {"HTTP_AUTHORIZATION": f"Bearer {RefreshToken.for_user(user).access_token}"}


@pytest.fixture
def user_api(user):
    client = APIClient()
    client.credentials(**bearer(user))
    client.user = user
    return client


def assert_ledger_balanced():
    """Every test that moves money ends with this: cached balances equal their entries."""
    from wallet.selectors import ledger_mismatches

    assert ledger_mismatches() == []


@pytest.fixture
def product(db):
    """A Mexican airtime product at 5.00 EUR (MX mobile numbers look like +525512345678)."""
    from catalog.tests.factories import ProductFactory

    return ProductFactory(retail_price=Decimal("5.00"))


@pytest.fixture
def reseller(db):
    """A user of a B2B account."""
    from accounts.services import account_set_b2b

    user = UserFactory()
    account_set_b2b(account=user.account, is_b2b=True)
    return user


def client_for(plaintext: str) -> APIClient:
    """An API client that sends this API key."""
    client = APIClient()
    client.credentials(HTTP_X_API_KEY=plaintext)
    return client


def assert_problem(response, status, code):
    assert response.status_code == status, response.content
    assert response["Content-Type"].startswith("application/problem+json")
    body = response.json()
    assert body["status"] == status
    assert body["code"] == code
    assert body["type"].endswith("/" + code)
    assert body["title"] and body["detail"]
    assert body["requestId"] == response["X-Request-Id"]
    return body
