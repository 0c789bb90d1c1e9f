"""Reads for users, accounts and API keys."""

from __future__ import annotations

from django.db.models import QuerySet
from django.shortcuts import get_object_or_404

from accounts import keys
from accounts.errors import ApiKeyRevoked, InvalidApiKey
from accounts.models import Account, ApiKey, User
from accounts.suspension import ancestors_path

# Compared against when no key has the prefix, so an unknown key costs what a wrong one does.
_NO_SUCH_DIGEST = keys.digest("rsl_live_no-such-key")


def user_with_account(user_id: int) -> User:
    return User.objects.select_related("account", "account__billing").get(pk=user_id)


def user_by_email(*, email: str) -> User | None:
    """The user with this email in any letter case, with its account, or None."""
    return User.objects.select_related("account").filter(email__iexact=email.strip()).first()


def api_key_verify(*, plaintext: str) -> ApiKey:
    """The active key whose plaintext this is, with its user and account loaded.

    A malformed key (format or checksum) is refused without touching the database. Unknown
    keys and wrong secrets both raise InvalidApiKey after the same constant-time comparison;
    only the holder of a revoked key's real secret learns that it is revoked. No cache: every
    request reads the row, so a revocation counts at once in every process.
    """
    parsed = keys.parse(plaintext)
    if parsed is None:
        raise InvalidApiKey()
    # The account's ancestors come along (joined): a suspended network is refused without
    # another query (accounts.suspension).
    key = (
        ApiKey.objects.select_related("user", ancestors_path("account"))
        .filter(prefix=parsed.prefix)
        .first()
    )
    matches = keys.same_digest(key.secret_hash if key else _NO_SUCH_DIGEST, keys.digest(plaintext))
    if key is None or not matches:
        raise InvalidApiKey()
    if key.revoked_at is not None:
        revoked = ApiKeyRevoked()
        revoked.api_key = key  # the secret matched: the refusal belongs in this key's log
        raise revoked
    if not key.user.is_active or key.user.account_id != key.account_id:
        raise InvalidApiKey()
    key.user.account = key.account  # the same row, already loaded: no second query
    return key


def api_key_by_prefix(*, prefix: str) -> ApiKey | None:
    """The key with this visible prefix as /auth/me shows it, or as the dashboard does (with
    "…" after it): what an operator copies into the CLI."""
    return ApiKey.objects.filter(prefix=prefix.strip().rstrip("…")).first()


def api_keys_of_account(*, account: Account) -> QuerySet[ApiKey]:
    """Newest first; active and revoked keys alike."""
    return ApiKey.objects.filter(account=account).order_by("-created_at", "-pk")


def api_key_of_account(*, account: Account, public_id: str) -> ApiKey:
    """The key of this account with that id; 404 for unknown ids and other accounts' keys."""
    return get_object_or_404(api_keys_of_account(account=account), public_id=public_id)


def account_contact(*, account_id: int) -> User | None:
    """Who hears from us about an account (receipts, alerts): its first active user."""
    return User.objects.filter(account_id=account_id, is_active=True).order_by("pk").first()
