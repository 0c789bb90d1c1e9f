"""x-api-key authentication: validity, revocation, ambiguity, whitelists and client addresses."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import time_machine
from django.test import override_settings

from accounts import keys, services
from accounts.models import ApiKey
from tests.factories import UserFactory, make_key
from tests.helpers import assert_problem, bearer, database_url

pytestmark = pytest.mark.django_db

ME = "/api/v1/auth/me"
ROOT = Path(__file__).resolve().parent.parent


def with_checksum(body: str) -> str:
    return body + keys.checksum(body)


def test_me_with_a_key_returns_user_account_and_the_keys_public_data(api, user):
    key, plaintext = make_key(user, mode="test", name="Staging", ip_whitelist=["127.0.0.1"])
    response = api.get(ME, HTTP_X_API_KEY=plaintext)
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["user"]["email"] == user.email
    assert body["account"]["id"] == user.account.public_id
    assert body["apiKey"] == {
        "name": "Staging",
        "prefix": key.prefix,
        "mode": "test",
        "ipWhitelist": ["127.0.0.1"],
        "createdAt": key.created_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "lastUsedAt": ApiKey.objects.get().last_used_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    assert plaintext not in response.content.decode()


def test_me_with_a_web_session_has_no_api_key_field(user_api):
    assert "apiKey" not in user_api.get(ME).json()


def test_unknown_key_and_wrong_secret_get_the_same_401_invalid_api_key(api, user):
    key, plaintext = make_key(user)
    unknown = with_checksum("rsl_test_" + "Z" * 32)
    wrong_secret = with_checksum(key.prefix + "Q" * (32 - 8))
    assert keys.parse(unknown) and keys.parse(wrong_secret).prefix == key.prefix
    first = assert_problem(api.get(ME, HTTP_X_API_KEY=unknown), 401, "invalid_api_key")
    second = assert_problem(api.get(ME, HTTP_X_API_KEY=wrong_secret), 401, "invalid_api_key")
    first.pop("requestId"), second.pop("requestId")
    assert first == second
    assert api.get(ME, HTTP_X_API_KEY=plaintext).status_code == 200


def test_malformed_key_is_refused_without_a_database_query(api, user, django_assert_num_queries):
    _key, plaintext = make_key(user)
    bad_checksum = plaintext[:-1] + ("a" if plaintext[-1] != "a" else "b")
    for value in [bad_checksum, "rsl_live_short", "Bearer " + plaintext, ""]:
        with django_assert_num_queries(0):
            response = api.get(ME, HTTP_X_API_KEY=value)
        assert_problem(response, 401, "invalid_api_key")


def test_401_keeps_its_status_and_names_both_schemes_in_www_authenticate(api):
    for response in [api.get(ME), api.get(ME, HTTP_X_API_KEY="rsl_live_nope")]:
        assert response.status_code == 401
        challenge = response["WWW-Authenticate"]
        assert challenge.startswith("Bearer ") and 'ApiKey realm="api"' in challenge
    response = api.get(ME, HTTP_AUTHORIZATION="Bearer not-a-jwt")
    assert_problem(response, 401, "token_invalid")
    assert response["WWW-Authenticate"].startswith("Bearer ")


def test_key_and_bearer_together_are_400_ambiguous_credentials(api, user):
    _key, plaintext = make_key(user)
    response = api.get(ME, HTTP_X_API_KEY=plaintext, **bearer(user))
    assert_problem(response, 400, "ambiguous_credentials")
    # the key alone and the token alone both work
    assert api.get(ME, HTTP_X_API_KEY=plaintext).status_code == 200
    assert api.get(ME, **bearer(user)).status_code == 200


def test_a_key_wins_over_a_site_session_cookie(client, user):
    other = UserFactory()
    _key, plaintext = make_key(other)
    client.force_login(user)
    body = client.get(ME, HTTP_X_API_KEY=plaintext).json()
    assert body["user"]["email"] == other.email


def test_revoked_key_is_refused_at_once_with_api_key_revoked(api, user):
    key, plaintext = make_key(user)
    assert api.get(ME, HTTP_X_API_KEY=plaintext).status_code == 200
    services.api_key_revoke(key=key, by=user)
    assert_problem(api.get(ME, HTTP_X_API_KEY=plaintext), 401, "api_key_revoked")
    # a wrong secret under the revoked key's prefix learns nothing about the key
    wrong = with_checksum(key.prefix + "Q" * 24)
    assert_problem(api.get(ME, HTTP_X_API_KEY=wrong), 401, "invalid_api_key")


def test_key_of_a_deactivated_user_or_a_user_who_left_the_account_is_refused(api, user):
    _key, plaintext = make_key(user)
    user.is_active = False
    user.save()
    assert_problem(api.get(ME, HTTP_X_API_KEY=plaintext), 401, "invalid_api_key")
    user.is_active = True
    user.account = UserFactory().account
    user.save()
    assert_problem(api.get(ME, HTTP_X_API_KEY=plaintext), 401, "invalid_api_key")


# A second process: a warm Django process (it has already accepted the key) must refuse the
# key from its very next request once any process revokes it. No mock: a real interpreter.
PROBE = """
import sys
import django

django.setup()
from django.test import Client

client = Client()
for line in sys.stdin:
    response = client.get("/api/v1/auth/me", HTTP_X_API_KEY=line.strip())
    print(response.status_code, response.json().get("code", "-"), flush=True)
"""


@pytest.mark.django_db(transaction=True)
def test_revoked_key_is_refused_at_once_by_another_running_process(user):
    key, plaintext = make_key(user)
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "reseller.settings.test",
        "DATABASE_URL": database_url(),
    }
    probe = subprocess.Popen(
        [sys.executable, "-c", PROBE],
        cwd=ROOT,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:

        def ask() -> str:
            probe.stdin.write(plaintext + "\n")
            probe.stdin.flush()
            return probe.stdout.readline().strip()

        assert ask() == "200 -"
        assert ask() == "200 -"
        services.api_key_revoke(key=key, by=user)  # committed: this test is transactional
        assert ask() == "401 api_key_revoked"
    finally:
        probe.stdin.close()
        probe.wait(timeout=30)
    assert probe.returncode == 0


def test_last_used_at_is_set_by_a_request_but_not_rewritten_within_a_minute(api, user):
    _key, plaintext = make_key(user)
    with time_machine.travel("2026-11-21 10:00:00Z", tick=False):
        api.get(ME, HTTP_X_API_KEY=plaintext)
    first = ApiKey.objects.get().last_used_at
    assert first is not None
    with time_machine.travel("2026-11-21 10:00:30Z", tick=False):
        api.get(ME, HTTP_X_API_KEY=plaintext)
    assert ApiKey.objects.get().last_used_at == first


# Whitelists and client addresses (reseller.net.client_ip). -------------------------------------


def test_empty_whitelist_accepts_any_address(api, user):
    _key, plaintext = make_key(user)
    for address in ["203.0.113.7", "2001:db8::1", "10.1.2.3"]:
        assert api.get(ME, HTTP_X_API_KEY=plaintext, REMOTE_ADDR=address).status_code == 200


def test_whitelist_is_an_exact_match_of_the_client_address(api, user):
    _key, plaintext = make_key(user, ip_whitelist=["203.0.113.7", "198.51.100.1"])
    assert api.get(ME, HTTP_X_API_KEY=plaintext, REMOTE_ADDR="203.0.113.7").status_code == 200
    assert api.get(ME, HTTP_X_API_KEY=plaintext, REMOTE_ADDR="198.51.100.1").status_code == 200
    for address in ["203.0.113.8", "203.0.113.70", "203.0.113.0", "10.0.0.1"]:
        response = api.get(ME, HTTP_X_API_KEY=plaintext, REMOTE_ADDR=address)
        assert_problem(response, 403, "ip_not_allowed")


def test_whitelist_matches_ipv6_in_any_spelling_and_ipv4_mapped_peers(api, user):
    _key, plaintext = make_key(user, ip_whitelist=["2001:DB8:0:0:0:0:0:1", "192.0.2.10"])
    for address in ["2001:db8::1", "2001:0db8::0001", "::ffff:192.0.2.10"]:
        assert api.get(ME, HTTP_X_API_KEY=plaintext, REMOTE_ADDR=address).status_code == 200
    for address in ["2001:db8::2", "2001:db8::1:0", "::1"]:
        assert_problem(
            api.get(ME, HTTP_X_API_KEY=plaintext, REMOTE_ADDR=address), 403, "ip_not_allowed"
        )


def test_x_forwarded_for_cannot_spoof_a_whitelisted_address_without_trusted_proxies(api, user):
    _key, plaintext = make_key(user, ip_whitelist=["203.0.113.7"])
    response = api.get(
        ME,
        HTTP_X_API_KEY=plaintext,
        REMOTE_ADDR="192.0.2.66",
        HTTP_X_FORWARDED_FOR="203.0.113.7",
    )
    assert_problem(response, 403, "ip_not_allowed")


@override_settings(TRUSTED_PROXIES=["10.0.0.2", "10.0.0.3"])
def test_behind_trusted_proxies_the_rightmost_untrusted_forwarded_address_counts(api, user):
    _key, plaintext = make_key(user, ip_whitelist=["203.0.113.7"])

    def call(remote, forwarded):
        return api.get(
            ME, HTTP_X_API_KEY=plaintext, REMOTE_ADDR=remote, HTTP_X_FORWARDED_FOR=forwarded
        )

    assert call("10.0.0.2", "203.0.113.7").status_code == 200
    assert call("10.0.0.2", "198.51.100.5, 203.0.113.7, 10.0.0.3").status_code == 200
    # the client prepends a whitelisted address; the proxy appends the real one
    assert_problem(call("10.0.0.2", "203.0.113.7, 192.0.2.66"), 403, "ip_not_allowed")
    # the header from a peer that is not a trusted proxy is ignored
    assert_problem(call("192.0.2.66", "203.0.113.7"), 403, "ip_not_allowed")
    # a garbled chain trusts nothing beyond the proxy
    assert_problem(call("10.0.0.2", "203.0.113.7, not-an-ip"), 403, "ip_not_allowed")
