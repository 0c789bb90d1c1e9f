from decimal import Decimal

import pytest
from django.conf import settings  # not the fixture: this one must not order its teardown
from django.core.cache import cache
from hypothesis import settings as hypothesis_settings
from rest_framework.test import APIClient

from reseller import ratelimit
from tests.broker_support import (  # noqa: F401 (fixtures for every test module)
    publishing_fixture,
    queue_fixture,
)
from tests.card_support import (  # noqa: F401 (fixtures for every test module)
    localstripe_fixture,
    stripe_local_fixture,
)
from tests.factories import UserFactory
from tests.helpers import bearer, redis_forget
from tests.migration_support import latest_after_fixture  # noqa: F401 (a fixture)
from tests.provider_support import (  # noqa: F401 (fixtures for every test module)
    ding_fixture,
    dtone_fixture,
    reloadly_fixture,
    routed_fixture,
)

# No time limit on a hypothesis example: its default 200 ms deadline timed the machine (a
# pure price function failed it once with four test processes on two cores), and the guide
# keeps speed out of tests. Each test's own @settings still sets how many examples it tries.
hypothesis_settings.register_profile("reseller", deadline=None)
hypothesis_settings.load_profile("reseller")


@pytest.fixture(autouse=True)
def _fresh_limits_and_cache():
    """Rate-limit counters, cache entries and the providers' semaphores and circuits live in
    Redis: start every test from zero. Only this run's keys go (its KEY_PREFIX): Django's
    ``cache.clear()`` is a FLUSHDB of REDIS_URL's database, which other runs share."""
    ratelimit.reset_all_for_tests()
    if settings.REDIS_URL:
        redis_forget(settings.REDIS_URL, f"{settings.CACHES['default']['KEY_PREFIX']}:")
    else:
        cache.clear()  # the process's own memory
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


@pytest.fixture
def user_api(user):
    client = APIClient()
    client.credentials(**bearer(user))
    client.user = user
    return client


@pytest.fixture
def product(db):
    """A Mexican airtime product at 5.00 EUR (MX mobile numbers look like +525512345678)."""
    from tests.factories import ProductFactory

    return ProductFactory(retail_price=Decimal("5.00"))


@pytest.fixture
def reseller(db):
    """A user of a B2B account."""
    from accounts.services import account_set_b2b

    user = UserFactory()
    account_set_b2b(account=user.account, is_b2b=True)
    return user
