"""Operator commands for keys and B2B (docs/contract.md §8)."""

import io

import pytest
from django.core.management import CommandError, call_command

from accounts import keys
from accounts.models import Account, ApiKey
from tests.factories import make_key
from tests.helpers import assert_problem

pytestmark = pytest.mark.django_db


def run(*args) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_create_api_key_prints_only_the_plaintext_key(user, api):
    out, err = run(
        "create_api_key", "--email", user.email.upper(), "--name", "Ops", "--mode", "live"
    )
    plaintext = out.strip()
    assert out == plaintext + "\n" and err == ""
    assert keys.parse(plaintext).mode == "live"
    key = ApiKey.objects.get()
    assert (key.name, key.mode, key.user, key.account) == ("Ops", "live", user, user.account)
    assert key.ip_whitelist == []
    assert api.get("/api/v1/auth/me", HTTP_X_API_KEY=plaintext).status_code == 200


def test_create_api_key_with_ip_addresses_sets_the_whitelist(user):
    out, _ = run(
        "create_api_key",
        *("--email", user.email, "--name", "Ops", "--mode", "test"),
        *("--ip", "203.0.113.7", "--ip", "2001:DB8::1"),
    )
    assert out.startswith("rsl_test_")
    assert ApiKey.objects.get().ip_whitelist == ["203.0.113.7", "2001:db8::1"]


def test_create_api_key_takes_several_addresses_after_one_ip(user):
    """Contract section 8: ``[--ip ADDR ...]``, one flag and its addresses."""
    run(
        "create_api_key",
        *("--email", user.email, "--name", "Ops", "--mode", "live"),
        *("--ip", "203.0.113.7", "2001:DB8::1", "--ip", "198.51.100.2"),
    )
    assert ApiKey.objects.get().ip_whitelist == ["203.0.113.7", "2001:db8::1", "198.51.100.2"]


@pytest.mark.parametrize(
    "args, message",
    [
        (("--email", "ghost@example.com", "--mode", "live"), "no user"),
        (("--email", "{email}", "--mode", "live", "--ip", "10.0.0.0/8"), "10.0.0.0/8"),
    ],
)
def test_create_api_key_errors_create_nothing(user, args, message):
    args = [a.format(email=user.email) for a in args]
    with pytest.raises(CommandError, match=message):
        run("create_api_key", "--name", "x", *args)
    assert not ApiKey.objects.exists()


def test_revoke_api_key_by_visible_prefix(user, api):
    key, plaintext = make_key(user)
    out, _ = run("revoke_api_key", "--prefix", key.prefix)
    assert key.prefix in out and "revoked" in out
    key.refresh_from_db()
    assert key.revoked_at is not None
    assert_problem(api.get("/api/v1/auth/me", HTTP_X_API_KEY=plaintext), 401, "api_key_revoked")
    out, _ = run("revoke_api_key", "--prefix", key.prefix + "…")  # as the dashboard shows it
    assert "already revoked" in out
    with pytest.raises(CommandError, match="no API key"):
        run("revoke_api_key", "--prefix", "rsl_live_nothere0")


def test_set_b2b_tags_and_untags_the_users_account(user):
    out, _ = run("set_b2b", "--email", user.email)
    assert "is B2B" in out
    assert Account.objects.get(pk=user.account_id).is_b2b
    out, _ = run("set_b2b", "--email", user.email, "--off")
    assert "not B2B" in out
    assert not Account.objects.get(pk=user.account_id).is_b2b
    with pytest.raises(CommandError, match="no user"):
        run("set_b2b", "--email", "ghost@example.com")
