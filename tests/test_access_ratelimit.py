"""Per-key rate limits (docs/contract.md sections 6 and 7): shared, exact, refused requests free."""

import threading
import time
from collections import Counter

import pytest
import time_machine
from django.db import connection
from django.test import override_settings
from rest_framework.test import APIClient

from accounts import services
from tests.factories import make_key
from tests.helpers import assert_problem, bearer

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.probe_urls")]

ME = "/api/v1/auth/me"
RECHARGE = "/api/v1/probe/recharge"
WEB_ONLY = "/api/v1/probe/web-only"


@pytest.fixture(autouse=True)
def _fresh_window():
    """Limits count per fixed minute: every test starts at the first second of one (the clock
    is moved there and ticks on), so no test straddles two windows and none waits."""
    start = (int(time.time()) // 60 + 1) * 60 + 1
    with time_machine.travel(start, tick=True):
        yield


def test_live_key_default_is_600_per_minute_and_successes_carry_ratelimit_headers(api, user):
    _key, plaintext = make_key(user, mode="live")
    response = api.get(ME, HTTP_X_API_KEY=plaintext)
    assert response.status_code == 200
    assert response["RateLimit-Policy"] == "600;w=60"
    assert response["RateLimit"].startswith("limit=600, remaining=599, reset=")
    response = api.get(ME, HTTP_X_API_KEY=plaintext)
    assert "remaining=598," in response["RateLimit"]


def test_web_sessions_are_not_counted_against_a_key_limit(user_api):
    assert "RateLimit" not in user_api.get(ME)


def test_per_key_override_limits_the_key_and_the_next_request_is_429(api, user):
    _key, plaintext = make_key(user, mode="live", rate_limit_per_minute=3)
    for remaining in [2, 1, 0]:
        response = api.get(ME, HTTP_X_API_KEY=plaintext)
        assert response.status_code == 200
        assert f"remaining={remaining}," in response["RateLimit"]
    response = api.get(ME, HTTP_X_API_KEY=plaintext)
    body = assert_problem(response, 429, "rate_limited")
    assert 1 <= int(response["Retry-After"]) <= 60
    assert response["RateLimit-Policy"] == "3;w=60"
    assert "remaining=0," in response["RateLimit"]
    assert body["detail"]


def test_limit_is_per_key_not_per_account_nor_per_forwarded_address(api, user):
    _a, first = make_key(user, mode="live", rate_limit_per_minute=2)
    _b, second = make_key(user, mode="live", rate_limit_per_minute=2)
    for forwarded in ["198.51.100.1", "198.51.100.2"]:
        response = api.get(ME, HTTP_X_API_KEY=first, HTTP_X_FORWARDED_FOR=forwarded)
        assert response.status_code == 200
    assert_problem(
        api.get(ME, HTTP_X_API_KEY=first, HTTP_X_FORWARDED_FOR="198.51.100.3"), 429, "rate_limited"
    )
    assert api.get(ME, HTTP_X_API_KEY=second).status_code == 200


@override_settings(TRUSTED_PROXIES=["10.0.0.2"])
def test_requests_refused_with_401_403_or_400_use_no_quota(api, user):
    key, plaintext = make_key(user, mode="live", rate_limit_per_minute=2)
    _whitelisted, allowed = make_key(user, mode="live", ip_whitelist=["203.0.113.7"])
    for _ in range(5):
        assert_problem(api.get(WEB_ONLY, HTTP_X_API_KEY=plaintext), 403, "web_session_required")
        response = api.get(ME, HTTP_X_API_KEY=plaintext, **bearer(user))
        assert_problem(response, 400, "ambiguous_credentials")
        response = api.get(
            ME, HTTP_X_API_KEY=allowed, REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR="192.0.2.9"
        )
        assert_problem(response, 403, "ip_not_allowed")
    assert api.get(ME, HTTP_X_API_KEY=plaintext).status_code == 200
    assert api.get(ME, HTTP_X_API_KEY=plaintext).status_code == 200
    assert_problem(api.get(ME, HTTP_X_API_KEY=plaintext), 429, "rate_limited")
    response = api.get(
        ME, HTTP_X_API_KEY=allowed, REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR="203.0.113.7"
    )
    assert "remaining=599," in response["RateLimit"]
    services.api_key_revoke(key=key, by=user)
    assert_problem(api.get(ME, HTTP_X_API_KEY=plaintext), 401, "api_key_revoked")


def test_a_test_keys_refused_profile_change_uses_no_quota(api, user):
    """PATCH /auth/me is refused to a test key (403): like every 401/403, it counts nothing."""
    _key, plaintext = make_key(user, mode="test", rate_limit_per_minute=2)
    for _ in range(3):
        response = api.patch(ME, {"user": {"firstName": "Ana"}}, HTTP_X_API_KEY=plaintext)
        assert_problem(response, 403, "permission_denied")
        assert "RateLimit" not in response
    assert "remaining=1," in api.get(ME, HTTP_X_API_KEY=plaintext)["RateLimit"]


def test_a_403_decided_inside_a_view_gives_its_hit_back(api, user):
    """Some refusals are the view's own, decided after the throttles counted the request (a
    test key on the network's routes, which first looks the agent up: another network's is
    404). The 403 gives the hit back, so no 401/403 uses quota, wherever it is decided."""
    _key, plaintext = make_key(user, mode="test", rate_limit_per_minute=2)
    for _ in range(3):
        response = api.get("/api/v1/network/agents", HTTP_X_API_KEY=plaintext)
        assert_problem(response, 403, "permission_denied")
    assert "remaining=1," in api.get(ME, HTTP_X_API_KEY=plaintext)["RateLimit"]


def test_test_key_may_send_10_recharge_requests_a_minute(api, user):
    _key, plaintext = make_key(user, mode="test")
    for _ in range(10):
        response = api.post(RECHARGE, {}, HTTP_X_API_KEY=plaintext)
        assert response.status_code == 200
    assert "limit=10, remaining=0," in response["RateLimit"]  # the tighter limit is shown
    response = api.post(RECHARGE, {}, HTTP_X_API_KEY=plaintext)
    assert_problem(response, 429, "rate_limited")
    assert response["RateLimit-Policy"] == "10;w=60"
    assert int(response["Retry-After"]) >= 1
    # reads are not recharges, and other endpoints keep the general per-key limit
    assert api.get(RECHARGE, HTTP_X_API_KEY=plaintext).status_code == 200
    assert api.get(ME, HTTP_X_API_KEY=plaintext).status_code == 200
    # another test key has its own ten
    _other, other = make_key(user, mode="test")
    assert api.post(RECHARGE, {}, HTTP_X_API_KEY=other).status_code == 200


def test_recharge_limit_of_test_keys_does_not_apply_to_live_keys_or_web_sessions(
    api, user, user_api
):
    _key, live = make_key(user, mode="live")
    for _ in range(12):
        assert api.post(RECHARGE, {}, HTTP_X_API_KEY=live).status_code == 200
        assert user_api.post(RECHARGE, {}).status_code == 200


@pytest.mark.django_db(transaction=True)
def test_limit_is_exact_under_concurrent_requests_from_threads(user):
    limit, extra = 12, 8
    _key, plaintext = make_key(user, mode="live", rate_limit_per_minute=limit)
    start = threading.Barrier(limit + extra)
    statuses: list[int] = []
    lock = threading.Lock()

    def call() -> None:
        client = APIClient()
        try:
            start.wait(timeout=30)
            status = client.get(ME, HTTP_X_API_KEY=plaintext).status_code
            with lock:
                statuses.append(status)
        finally:
            connection.close()

    threads = [threading.Thread(target=call) for _ in range(limit + extra)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert Counter(statuses) == {200: limit, 429: extra}
