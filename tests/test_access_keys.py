"""API key format, storage and services (docs/contract.md §3)."""

import re
from datetime import timedelta

import pytest
import time_machine
from django.db import connection

from accounts import keys, services
from accounts.errors import ApiKeyNotEditable
from accounts.models import ApiKey
from reseller.errors import PermissionDenied, ValidationFailed
from tests.factories import UserFactory, make_key

pytestmark = pytest.mark.django_db


def _flip(char: str) -> str:
    return "b" if char == "a" else "a"


@pytest.mark.parametrize("mode", ["live", "test"])
def test_key_is_prefix_mode_32_random_base62_and_6_checksum_characters(mode):
    plaintext = keys.generate(mode)
    assert re.fullmatch(rf"rsl_{mode}_[0-9A-Za-z]{{38}}", plaintext)
    body, check = plaintext[:-6], plaintext[-6:]
    assert keys.checksum(body) == check
    parsed = keys.parse(plaintext)
    assert parsed.mode == mode
    assert parsed.prefix == plaintext[: len(f"rsl_{mode}_") + 8]
    assert len({keys.generate(mode) for _ in range(50)}) == 50


def test_checksum_refuses_any_single_changed_character():
    plaintext = keys.generate("live")
    for position in range(len("rsl_live_"), len(plaintext)):
        changed = plaintext[:position] + _flip(plaintext[position]) + plaintext[position + 1 :]
        assert keys.parse(changed) is None, position


@pytest.mark.parametrize(
    "plaintext",
    [
        "",
        "rsl_live_",
        "rsl_prod_" + "a" * 38,
        "sk_live_" + "a" * 38,
        "rsl_live_" + "a" * 20,
        "rsl_live_" + "a" * 37 + "!",
        "rsl_live_" + "a" * 200,
    ],
)
def test_malformed_keys_do_not_parse(plaintext):
    assert keys.parse(plaintext) is None


def test_plaintext_is_never_in_the_database(user):
    key, plaintext = make_key(user, ip_whitelist=["203.0.113.7"])
    secret = plaintext[len(key.prefix) :]
    with connection.cursor() as cursor:
        cursor.execute("SELECT row_to_json(k)::text FROM accounts_apikey k")
        rows = [row[0] for row in cursor.fetchall()]
    assert len(rows) == 1
    assert plaintext not in rows[0] and secret not in rows[0] and secret[:12] not in rows[0]
    assert key.prefix in rows[0]
    assert keys.digest(plaintext) in rows[0]
    stored = ApiKey.objects.get()
    assert stored.secret_hash == keys.digest(plaintext) and len(stored.secret_hash) == 64


def test_key_belongs_to_the_users_account_and_has_its_name_mode_and_defaults(user):
    key, plaintext = make_key(user, mode="live", name="  Main   shop ")
    assert key.account == user.account and key.user == user
    assert key.name == "Main shop" and key.mode == "live" and key.livemode
    assert plaintext.startswith(key.prefix) and key.prefix.startswith("rsl_live_")
    assert key.public_id.startswith("key_")
    assert key.ip_whitelist == [] and key.is_active
    assert key.last_used_at is None and key.revoked_at is None
    assert key.requests_per_minute == 600 and key.units_per_request == 100
    test_key, _ = make_key(user, mode="test")
    assert test_key.units_per_request == 20 and not test_key.livemode


def test_a_user_cannot_create_a_key_for_another_account(user):
    with pytest.raises(PermissionDenied):
        services.api_key_create(
            account=UserFactory().account, user=user, name="x", mode="live", ip_whitelist=[]
        )
    assert not ApiKey.objects.exists()


@pytest.mark.parametrize("name, mode", [("", "live"), ("x" * 101, "live"), ("ok", "prod")])
def test_key_needs_a_name_and_a_known_mode(user, name, mode):
    with pytest.raises(ValidationFailed):
        services.api_key_create(
            account=user.account, user=user, name=name, mode=mode, ip_whitelist=[]
        )


def test_whitelist_keeps_exact_addresses_normalised_without_duplicates(user):
    key, _ = make_key(
        user,
        ip_whitelist=[" 203.0.113.7 ", "2001:DB8:0:0::0001", "203.0.113.7", "::ffff:192.0.2.1", ""],
    )
    assert key.ip_whitelist == ["203.0.113.7", "2001:db8::1", "192.0.2.1"]


@pytest.mark.parametrize(
    "entry", ["10.0.0.0/24", "example.com", "203.0.113.7:80", "[::1]", "fe80::1%eth0", "1.2.3"]
)
def test_whitelist_refuses_networks_names_ports_and_garbage(user, entry):
    with pytest.raises(ValidationFailed) as caught:
        make_key(user, ip_whitelist=["203.0.113.7", entry])
    assert caught.value.fields[0]["field"] == "ipWhitelist"
    assert entry in caught.value.fields[0]["message"]
    assert not ApiKey.objects.exists()


def test_set_whitelist_replaces_it_and_empty_means_any(user):
    key, _ = make_key(user, ip_whitelist=["203.0.113.7"])
    services.api_key_set_whitelist(key=key, ip_whitelist=["2001:db8::1", "198.51.100.1"])
    assert ApiKey.objects.get().ip_whitelist == ["2001:db8::1", "198.51.100.1"]
    services.api_key_set_whitelist(key=key, ip_whitelist=[])
    assert ApiKey.objects.get().ip_whitelist == []


def test_revoke_is_permanent_and_a_revoked_key_cannot_change(user):
    key, _ = make_key(user)
    services.api_key_revoke(key=key, by=user)
    first = ApiKey.objects.get().revoked_at
    assert first is not None and ApiKey.objects.get().revoked_by == user
    services.api_key_revoke(key=key, by=None)  # a second revocation changes nothing
    assert ApiKey.objects.get().revoked_at == first
    with pytest.raises(ApiKeyNotEditable):
        services.api_key_set_whitelist(key=key, ip_whitelist=["203.0.113.7"])
    assert ApiKey.objects.get().ip_whitelist == []


def test_limits_override_per_key_and_none_restores_the_default(user):
    key, _ = make_key(user, mode="live", rate_limit_per_minute=5, max_units_per_request=7)
    key = ApiKey.objects.get(pk=key.pk)
    assert key.requests_per_minute == 5 and key.units_per_request == 7
    services.api_key_set_limits(key=key, rate_limit_per_minute=None, max_units_per_request=None)
    key = ApiKey.objects.get(pk=key.pk)
    assert key.requests_per_minute == 600 and key.units_per_request == 100
    with pytest.raises(ValidationFailed):
        services.api_key_set_limits(key=key, rate_limit_per_minute=0, max_units_per_request=None)


def test_last_used_is_written_at_most_once_a_minute(user, django_assert_num_queries):
    key, _ = make_key(user)
    with time_machine.travel("2026-11-21 10:00:00Z", tick=False):
        with django_assert_num_queries(1):
            services.api_key_mark_used(key=key)
        first = ApiKey.objects.get().last_used_at
    with time_machine.travel("2026-11-21 10:00:59Z", tick=False):
        with django_assert_num_queries(0):
            services.api_key_mark_used(key=key)
        reloaded = ApiKey.objects.get()
        with django_assert_num_queries(0):  # another process's copy decides the same way
            services.api_key_mark_used(key=reloaded)
    assert ApiKey.objects.get().last_used_at == first
    with time_machine.travel("2026-11-21 10:01:01Z", tick=False):
        services.api_key_mark_used(key=key)
    assert ApiKey.objects.get().last_used_at == first + timedelta(seconds=61)
