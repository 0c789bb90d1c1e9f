"""Staff sign in with a second factor (docs/security.md, "Staff accounts"): TOTP (RFC 6238) or a
one-use recovery code, on the admin and for staff JWTs; staff keys may need a whitelist."""

from __future__ import annotations

from io import StringIO
from urllib.parse import parse_qs, urlparse

import pytest
from django.core.management import call_command
from django.test import Client
from rest_framework_simplejwt.tokens import RefreshToken

from tests.factories import PASSWORD, UserFactory, make_key
from tests.helpers import assert_problem, client_for, rfc6238, secret_of

pytestmark = pytest.mark.django_db

LOGIN = "/api/v1/auth/login"
SUMMARY = "/api/v1/admin/summary"


def enrol(staff) -> str:
    out = StringIO()
    call_command("create_totp_device", "--email", staff.email, stdout=out)
    return out.getvalue()


def test_create_totp_device_prints_only_an_rfc6238_otpauth_uri(staff):
    uri = enrol(staff)
    assert uri.count("\n") == 1 and uri.startswith("otpauth://totp/")
    query = parse_qs(urlparse(uri.strip()).query)
    assert query.get("algorithm", ["SHA1"]) == ["SHA1"]
    assert query.get("digits", ["6"]) == ["6"] and query.get("period", ["30"]) == ["30"]
    # Enrolling again replaces the device: the first secret stops working.
    again = enrol(staff)
    assert secret_of(again) != secret_of(uri)


def test_the_api_login_of_staff_needs_the_second_factor(api, staff):
    secret = secret_of(enrol(staff))
    body = {"email": staff.email, "password": PASSWORD}
    assert_problem(api.post(LOGIN, body, format="json"), 401, "otp_required")
    right = api.post(LOGIN, {**body, "otp": rfc6238(secret)}, format="json")
    assert right.status_code == 200, right.content
    wrong = api.post(LOGIN, {**body, "otp": "000000"}, format="json")
    assert_problem(wrong, 401, "not_authenticated")  # the same answer as a wrong password
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {right.json()['access']}")
    assert api.get(SUMMARY).status_code == 200


def test_a_staff_jwt_issued_without_the_second_factor_is_refused_by_the_back_office(api, staff):
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {RefreshToken.for_user(staff).access_token}")
    assert_problem(api.get(SUMMARY), 403, "permission_denied")


def test_ordinary_users_log_in_without_a_second_factor(api, user):
    response = api.post(LOGIN, {"email": user.email, "password": PASSWORD}, format="json")
    assert response.status_code == 200


def test_recovery_codes_work_once_instead_of_the_authenticator(api, staff):
    out = StringIO()
    call_command("create_recovery_codes", "--email", staff.email, stdout=out)
    codes = out.getvalue().split()
    assert len(codes) == 10 and len(set(codes)) == 10
    body = {"email": staff.email, "password": PASSWORD, "otp": codes[0]}
    assert api.post(LOGIN, body, format="json").status_code == 200
    assert_problem(api.post(LOGIN, body, format="json"), 401, "not_authenticated")


def test_the_admin_login_asks_for_the_second_factor(staff):
    secret = secret_of(enrol(staff))
    client = Client()
    without = client.post("/admin/login/", {"username": staff.email, "password": PASSWORD})
    assert without.status_code == 200 and "_auth_user_id" not in client.session
    response = client.post(
        "/admin/login/?next=/admin/",
        {"username": staff.email, "password": PASSWORD, "otp_token": rfc6238(secret)},
    )
    assert response.status_code == 302 and response["Location"] == "/admin/"
    assert client.get("/admin/").status_code == 200


def test_a_staff_user_without_an_enrolled_device_cannot_use_the_admin(staff):
    client = Client()
    response = client.post(
        "/admin/login/", {"username": staff.email, "password": PASSWORD, "otp_token": "123456"}
    )
    assert response.status_code == 200 and "_auth_user_id" not in client.session
    client.force_login(staff)  # a session without a verified device is not the admin's
    assert client.get("/admin/").status_code == 302


def test_staff_keys_need_a_whitelist_when_the_policy_says_so(staff, settings):
    _bare, bare = make_key(staff, mode="live")
    _listed, listed = make_key(staff, mode="live", ip_whitelist=["127.0.0.1"])
    assert client_for(bare).get(SUMMARY).status_code == 200
    settings.STAFF_KEYS_REQUIRE_WHITELIST = True
    assert_problem(client_for(bare).get(SUMMARY), 403, "permission_denied")
    assert client_for(listed).get(SUMMARY, REMOTE_ADDR="127.0.0.1").status_code == 200


def test_a_non_staff_user_cannot_enrol_a_device():
    from django.core.management.base import CommandError

    with pytest.raises(CommandError):
        call_command("create_totp_device", "--email", UserFactory().email, stdout=StringIO())


def test_a_refreshed_staff_token_keeps_its_second_factor_and_refreshes_again(api, staff):
    secret = secret_of(enrol(staff))
    body = {"email": staff.email, "password": PASSWORD, "otp": rfc6238(secret)}
    tokens = api.post(LOGIN, body, format="json").json()
    for _round in range(2):  # a rotated token can itself be rotated
        tokens = api.post("/api/v1/auth/refresh", {"refresh": tokens["refresh"]}, format="json")
        assert tokens.status_code == 200, tokens.content
        tokens = tokens.json()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {tokens['access']}")
    assert api.get(SUMMARY).status_code == 200
