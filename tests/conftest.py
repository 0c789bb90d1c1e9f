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
