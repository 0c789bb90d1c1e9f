"""The reusable permission classes, each refusal with its code (docs/contract.md sections 2, 3).

The endpoints that will declare them do not exist yet, so this module is also the urlconf of
small probe views that declare them exactly as those endpoints will.
"""

import pytest

from accounts import services
from tests.factories import UserFactory, make_key
from tests.helpers import assert_problem, bearer, second_factor_login

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.probe_urls")]


WEB_ONLY = "/api/v1/probe/web-only"
B2B = "/api/v1/probe/b2b"
ADMIN = "/api/v1/probe/admin"
SANDBOX = "/api/v1/probe/sandbox"


def test_helpers_tell_the_key_its_mode_and_units_apart_from_web_sessions(api, user, user_api):
    live_key, live = make_key(user, mode="live")
    _test_key, test = make_key(user, mode="test")
    body = api.get("/api/v1/probe/any", HTTP_X_API_KEY=live).json()
    assert body == {"user": user.email, "key": live_key.prefix, "livemode": True, "units": 100}
    body = api.get("/api/v1/probe/any", HTTP_X_API_KEY=test).json()
    assert body["livemode"] is False and body["units"] == 20
    body = user_api.get("/api/v1/probe/any").json()
    assert body == {"user": user.email, "key": None, "livemode": True, "units": 100}


def test_web_only_endpoint_refuses_keys_with_web_session_required(api, user, client):
    _key, plaintext = make_key(user, mode="live")
    assert_problem(api.get(WEB_ONLY, HTTP_X_API_KEY=plaintext), 403, "web_session_required")
    assert api.get(WEB_ONLY, **bearer(user)).status_code == 200
    client.force_login(user)
    assert client.get(WEB_ONLY).status_code == 200


def test_every_rule_answers_401_not_403_without_credentials(api):
    for url in [WEB_ONLY, B2B, ADMIN, SANDBOX]:
        response = api.get(url)
        assert_problem(response, 401, "not_authenticated")
        assert "WWW-Authenticate" in response


def test_b2b_endpoint_without_a_key_is_api_key_required(api, user):
    user.account.is_b2b = True
    user.account.save()
    assert_problem(api.get(B2B, **bearer(user)), 403, "api_key_required")


def test_b2b_endpoint_with_a_key_of_a_non_b2b_account_is_b2b_not_enabled(api, user):
    _key, plaintext = make_key(user, mode="live")
    assert_problem(api.get(B2B, HTTP_X_API_KEY=plaintext), 403, "b2b_not_enabled")
    services.account_set_b2b(account=user.account, is_b2b=True)  # effective at once
    assert api.get(B2B, HTTP_X_API_KEY=plaintext).status_code == 200


def test_b2b_endpoint_accepts_live_and_test_keys_of_a_b2b_account(api):
    user = UserFactory(account__is_b2b=True)
    for mode in ["live", "test"]:
        _key, plaintext = make_key(user, mode=mode)
        assert api.get(B2B, HTTP_X_API_KEY=plaintext).status_code == 200


def test_admin_endpoint_needs_a_staff_user_else_permission_denied(api, user, staff, client):
    _key, plaintext = make_key(user, mode="live")
    assert_problem(api.get(ADMIN, HTTP_X_API_KEY=plaintext), 403, "permission_denied")
    assert_problem(api.get(ADMIN, **bearer(user)), 403, "permission_denied")
    _staff_key, staff_plaintext = make_key(staff, mode="live")
    assert api.get(ADMIN, HTTP_X_API_KEY=staff_plaintext).status_code == 200
    assert api.get(ADMIN, **bearer(staff)).status_code == 200
    client.force_login(staff)  # a session without the second factor: refused
    assert_problem(client.get(ADMIN), 403, "permission_denied")
    second_factor_login(client, staff)
    assert client.get(ADMIN).status_code == 200


def test_sandbox_endpoint_needs_a_test_key_else_test_key_required(api, user):
    _live, live = make_key(user, mode="live")
    _test, test = make_key(user, mode="test")
    assert_problem(api.get(SANDBOX, HTTP_X_API_KEY=live), 403, "test_key_required")
    assert_problem(api.get(SANDBOX, **bearer(user)), 403, "test_key_required")
    assert api.get(SANDBOX, HTTP_X_API_KEY=test).status_code == 200


def test_whitelist_refusal_comes_before_any_permission(api, user):
    _key, plaintext = make_key(user, mode="live", ip_whitelist=["203.0.113.7"])
    response = api.get(WEB_ONLY, HTTP_X_API_KEY=plaintext, REMOTE_ADDR="192.0.2.1")
    assert_problem(response, 403, "ip_not_allowed")
