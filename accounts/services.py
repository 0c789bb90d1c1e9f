"""Writes for users, accounts and billing; the API, the site, the admin and the CLI call these."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.contrib.auth import authenticate
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import F, Q, Value
from django.db.models.functions import Coalesce, Least
from django.utils import timezone
from django.utils.translation import gettext as _
from django_otp.plugins.otp_static.models import StaticDevice, StaticToken
from django_otp.plugins.otp_totp.models import TOTPDevice
from rest_framework.exceptions import AuthenticationFailed
from rest_framework_simplejwt.exceptions import TokenError
from rest_framework_simplejwt.serializers import TokenRefreshSerializer
from rest_framework_simplejwt.settings import api_settings as jwt_settings
from rest_framework_simplejwt.token_blacklist.models import BlacklistedToken, OutstandingToken
from rest_framework_simplejwt.tokens import RefreshToken

from accounts import keys
from accounts.errors import (
    AccountSuspended,
    ApiKeyNotEditable,
    EmailTaken,
    InvalidCredentials,
    SecondFactorRequired,
    SuspendedAbove,
    TokenInvalid,
)
from accounts.models import Account, ApiKey, BillingProfile, User
from accounts.selectors import account_contact
from accounts.suspension import account_suspended, account_with_ancestors
from emails.models import Email
from emails.outbox import email_queue_to_user
from reseller import ratelimit
from reseller.errors import PermissionDenied, RateLimited, ValidationFailed

USER_FIELDS = ("first_name", "last_name", "phone", "language")
ACCOUNT_FIELDS = ("name",)
BILLING_FIELDS = (
    "company_name",
    "vat_number",
    "address_line1",
    "address_line2",
    "city",
    "postal_code",
    "country",
)


def normalise_email(email: str) -> str:
    return email.strip().lower()


@transaction.atomic
def user_create(
    *,
    email: str,
    password: str | None,
    account_name: str | None = None,
    first_name: str = "",
    last_name: str = "",
    language: str = "en",
    is_staff: bool = False,
    is_superuser: bool = False,
    is_b2b: bool = False,
    validate: bool = False,
) -> User:
    """Create a user with its own account and empty billing profile."""
    email = normalise_email(email)
    if User.objects.filter(email__iexact=email).exists():
        raise EmailTaken()
    fields = {
        "first_name": first_name,
        "last_name": last_name,
        "language": language,
        "is_staff": is_staff,
        "is_superuser": is_superuser,
    }
    if validate and password is not None:
        validate_password(password, User(email=email, **fields))
    try:
        with transaction.atomic():
            return User.objects.create_user(
                email, password, account_name=account_name, is_b2b=is_b2b, **fields
            )
    except IntegrityError as exc:  # a concurrent sign-up with the same email
        raise EmailTaken() from exc


@transaction.atomic
def user_update_profile(
    *,
    user: User,
    user_data: dict[str, Any] | None = None,
    account_data: dict[str, Any] | None = None,
    billing_data: dict[str, Any] | None = None,
) -> User:
    """Apply profile, account-name and billing changes; only the editable fields are read."""
    user_data = {k: v for k, v in (user_data or {}).items() if k in USER_FIELDS}
    account_data = {k: v for k, v in (account_data or {}).items() if k in ACCOUNT_FIELDS}
    billing_data = {k: v for k, v in (billing_data or {}).items() if k in BILLING_FIELDS}
    if user_data:
        for key, value in user_data.items():
            setattr(user, key, value)
        user.save(update_fields=list(user_data))
    if account_data:
        account = user.account
        for key, value in account_data.items():
            setattr(account, key, value)
        account.save(update_fields=list(account_data))
    if billing_data:
        billing, _created = BillingProfile.objects.get_or_create(account=user.account)
        for key, value in billing_data.items():
            setattr(billing, key, value)
        billing.save(update_fields=list(billing_data))
    return user


def login_rate_check(*, address: str, email: str) -> None:
    """Count a login attempt per client address and per email; refuse when either is spent."""
    window = settings.LOGIN_RATE_WINDOW_SECONDS
    checks = [
        ("login-ip", address, settings.LOGIN_RATE_PER_ADDRESS),
        ("login-email", normalise_email(email) or "-", settings.LOGIN_RATE_PER_EMAIL),
    ]
    for scope, ident, limit in checks:
        decision = ratelimit.hit(scope, ident, limit=limit, window=window)
        if not decision.allowed:
            raise RateLimited(
                _("Too many login attempts. Try again later."),
                retry_after=decision.reset,
                headers=decision.headers(),
            )


def password_reset_allowed(*, address: str, email: str) -> bool:
    """Count a password-reset request per client address and per email (an hour's window):
    False when either is spent, so nobody can flood an inbox with reset emails."""
    checks = [
        ("reset-ip", address, settings.PASSWORD_RESET_RATE_PER_ADDRESS),
        ("reset-email", normalise_email(email) or "-", settings.PASSWORD_RESET_RATE_PER_EMAIL),
    ]
    return all(
        ratelimit.hit(scope, ident, limit=limit, window=3600).allowed
        for scope, ident, limit in checks
    )


def user_login(*, address: str, email: str, password: str, otp: str = "") -> User:
    """Check the rate limits, then the credentials; the same error for any wrong pair.

    Staff also need their second factor (``otp``: a TOTP code or a recovery code); a wrong
    one is the same error as a wrong password.
    """
    login_rate_check(address=address, email=email)
    user = authenticate(None, username=normalise_email(email), password=password)
    if user is None or not user.is_active:
        raise InvalidCredentials()
    if account_suspended(user.account):  # the right password of a suspended network's member
        raise AccountSuspended()
    if user.is_staff:
        if not otp:
            raise SecondFactorRequired()
        if second_factor_verify(user=user, code=otp) is None:
            raise InvalidCredentials()
    return user


def second_factor_device(*, user: User, code: str) -> TOTPDevice | StaticDevice | None:
    """The device a code is for: six digits are the authenticator's, anything else a recovery
    code. Only that device is tried, so a mistyped code never throttles the other one."""
    code = code.strip()
    kind = TOTPDevice if len(code) == 6 and code.isdigit() else StaticDevice
    return kind.objects.filter(user=user, confirmed=True).first()


def second_factor_verify(*, user: User, code: str) -> TOTPDevice | StaticDevice | None:
    """The device that accepts ``code`` (a recovery code is used up), or None."""
    device = second_factor_device(user=user, code=code)
    if device is None or not device.verify_is_allowed()[0]:
        return None
    return device if device.verify_token(code.strip()) else None


def tokens_for(user: User) -> RefreshToken:
    """A JWT pair for a logged-in user. A staff user's carries ``otp``: it was issued after
    the second factor, which the back office requires of staff JWTs."""
    refresh = RefreshToken.for_user(user)
    if user.is_staff:
        refresh["otp"] = True
    return refresh


@transaction.atomic
def totp_device_enrol(*, user: User) -> TOTPDevice:
    """Enrol (or replace) a staff user's authenticator: RFC 6238, SHA-1, 6 digits, 30 s."""
    TOTPDevice.objects.filter(user=user).delete()
    return TOTPDevice.objects.create(user=user, name="authenticator", confirmed=True)


@transaction.atomic
def totp_device_ensure(*, user: User) -> tuple[TOTPDevice, bool]:
    """A staff user's confirmed authenticator, enrolled if there is none (True when new): the
    demo admin keeps the device its authenticator app already holds across ``seed_demo`` runs."""
    device = TOTPDevice.objects.filter(user=user, confirmed=True).order_by("pk").first()
    if device is not None:
        return device, False
    return totp_device_enrol(user=user), True


@transaction.atomic
def recovery_codes_create(*, user: User, count: int = 10) -> list[str]:
    """Replace a staff user's recovery codes: ``count`` one-use codes, shown once."""
    StaticDevice.objects.filter(user=user).delete()
    device = StaticDevice.objects.create(user=user, name="recovery codes", confirmed=True)
    codes = [StaticToken.random_token() for _ in range(count)]
    StaticToken.objects.bulk_create([StaticToken(device=device, token=code) for code in codes])
    return codes


@transaction.atomic
def token_refresh(*, refresh: str) -> dict[str, str]:
    """Rotate a refresh token exactly once, even under concurrent requests with the same one.

    The token's outstanding row is locked before the blacklist is checked, so of N concurrent
    refreshes the first rotates it and the others find it blacklisted (401 token_invalid).
    A member of a suspended account (or of one under a suspended ancestor) renews nothing:
    403 ``account_suspended``, the token kept for after the account is resumed (contract
    section 18).
    """
    try:
        jti = RefreshToken(refresh)[jwt_settings.JTI_CLAIM]  # type: ignore[arg-type]
        outstanding = OutstandingToken.objects.select_for_update().filter(jti=jti).first()
        if outstanding is None or BlacklistedToken.objects.filter(token=outstanding).exists():
            raise TokenInvalid()
        owner = outstanding.user
        if owner is not None and account_suspended(
            account_with_ancestors(account_id=owner.account_id)
        ):
            raise AccountSuspended()
        serializer = TokenRefreshSerializer(data={"refresh": refresh})
        serializer.is_valid(raise_exception=True)
    except (TokenError, AuthenticationFailed) as exc:
        raise TokenInvalid() from exc
    return dict(serializer.validated_data)


@transaction.atomic
def account_set_b2b(*, account: Account, is_b2b: bool) -> Account:
    """Tag an account B2B (or not); its keys may call the B2B API from the next request on."""
    Account.objects.filter(pk=account.pk).update(is_b2b=is_b2b)
    account.is_b2b = is_b2b
    return account


@transaction.atomic
def account_create_agent(*, parent: Account, name: str) -> Account:
    """A new account under ``parent`` in a reseller network (contract section 18): one level
    deeper, B2B, its wallet in the parent's currency, with an empty billing profile. Its first
    owner joins it by invitation (``accounts.team.invitation_create``); the network app
    checks the depth and the caller (``network.agents.agent_create``)."""
    account = Account.objects.create(
        name=name,
        parent=parent,
        depth=parent.depth + 1,
        is_b2b=True,
        wallet_currency=parent.wallet_currency,
    )
    BillingProfile.objects.create(account=account)
    return account


@transaction.atomic
def account_rename(*, account: Account, name: str) -> Account:
    Account.objects.filter(pk=account.pk).update(name=name)
    account.name = name
    return account


STAFF_LEVEL = 0  # who suspends as staff (``Account.suspended_by_depth``), above every level


@transaction.atomic
def account_set_suspended(*, account: Account, suspended: bool, by_depth: int) -> Account:
    """Suspend an account (its keys and sessions, and its descendants', are refused from the
    next request on: ``accounts.suspension``) or resume it, as the ancestor at level
    ``by_depth`` (``STAFF_LEVEL``: staff). Suspending a suspended account keeps its first
    date and the higher of the two suspenders; resuming an active one changes nothing.
    ``SuspendedAbove`` when a lower level than the suspender's tries to resume it (each
    statement decides under the row's lock, so a resume racing a suspension from above never
    lifts it)."""
    rows = Account.objects.filter(pk=account.pk)
    if suspended:
        rows.update(
            suspended_at=Coalesce(F("suspended_at"), Value(timezone.now())),
            suspended_by_depth=Least(
                Coalesce(F("suspended_by_depth"), Value(by_depth)), Value(by_depth)
            ),
        )
    else:
        lifted = rows.filter(
            Q(suspended_by_depth__isnull=True) | Q(suspended_by_depth__gte=by_depth)
        ).update(suspended_at=None, suspended_by_depth=None)
        if not lifted:
            raise SuspendedAbove()
    account.refresh_from_db(fields=["suspended_at", "suspended_by_depth"])
    return account


# API keys (docs/contract.md §3; docs/access.md). ------------------------------------

API_KEY_NAME_MAX_LENGTH = ApiKey._meta.get_field("name").max_length


@transaction.atomic
def account_set_discount(*, account: Account, discount_percent: Decimal) -> Decimal:
    """Set the discount an account's prices get (checked by the caller); returns the one it
    had. ``account`` follows."""
    locked = Account.objects.select_for_update(of=("self",)).get(pk=account.pk)
    before = locked.discount_percent
    Account.objects.filter(pk=account.pk).update(discount_percent=discount_percent)
    account.discount_percent = discount_percent
    return before


def _field_error(field: str, error: ValidationError) -> ValidationFailed:
    return ValidationFailed(
        fields=[
            {"field": field, "code": error.code or "invalid", "message": message}
            for message in error.messages
        ]
    )


def _clean_name(name: str) -> str:
    name = " ".join(name.split())
    if not name or len(name) > API_KEY_NAME_MAX_LENGTH:  # type: ignore[operator]
        raise ValidationFailed(
            fields=[
                {
                    "field": "name",
                    "code": "invalid",
                    "message": _("Give the key a name of 1 to %(max)d characters.")
                    % {"max": API_KEY_NAME_MAX_LENGTH},
                }
            ]
        )
    return name


def _clean_whitelist(ip_whitelist: Iterable[str]) -> list[str]:
    try:
        return keys.normalise_whitelist(ip_whitelist)
    except ValidationError as exc:
        raise _field_error("ipWhitelist", exc) from exc


@transaction.atomic
def api_key_create(
    *,
    account: Account,
    user: User,
    name: str,
    mode: str,
    ip_whitelist: Iterable[str] = (),
) -> tuple[ApiKey, str]:
    """A new key and its plaintext, which exists only in the return value: show it once."""
    if mode not in ApiKey.Mode.values:
        raise ValidationFailed(
            fields=[{"field": "mode", "code": "invalid_choice", "message": _("Use live or test.")}]
        )
    if user.account_id != account.pk:
        raise PermissionDenied(_("Only a user of the account can create its keys."))
    name = _clean_name(name)
    whitelist = _clean_whitelist(ip_whitelist)
    attempts_left = 3
    while True:
        plaintext = keys.generate(mode)
        try:
            with transaction.atomic():
                key = ApiKey.objects.create(
                    account=account,
                    user=user,
                    name=name,
                    mode=mode,
                    prefix=keys.parse(plaintext).prefix,  # type: ignore[union-attr]
                    secret_hash=keys.digest(plaintext),
                    ip_whitelist=whitelist,
                )
        except IntegrityError:  # two keys with the same 8 visible characters: draw again
            attempts_left -= 1
            if not attempts_left:
                raise
        else:
            return key, plaintext


@transaction.atomic
def api_key_revoke(*, key: ApiKey, by: User | None) -> ApiKey:
    """Revoke at once and for good; revoking a revoked key changes nothing."""
    now = timezone.now()
    ApiKey.objects.filter(pk=key.pk, revoked_at__isnull=True).update(revoked_at=now, revoked_by=by)
    key.refresh_from_db(fields=["revoked_at", "revoked_by"])
    return key


def _lock_active(key: ApiKey) -> ApiKey:
    locked = ApiKey.objects.select_for_update(of=("self",)).get(pk=key.pk)
    if locked.revoked_at is not None:
        raise ApiKeyNotEditable()
    return locked


@transaction.atomic
def api_key_set_whitelist(*, key: ApiKey, ip_whitelist: Iterable[str]) -> ApiKey:
    """Replace the whitelist (exact addresses, normalised; empty = any address)."""
    whitelist = _clean_whitelist(ip_whitelist)
    locked = _lock_active(key)
    locked.ip_whitelist = whitelist
    locked.save(update_fields=["ip_whitelist"])
    key.ip_whitelist = whitelist
    return key


@transaction.atomic
def api_key_set_limits(
    *, key: ApiKey, rate_limit_per_minute: int | None, max_units_per_request: int | None
) -> ApiKey:
    """Staff overrides of one key's limits; None restores the default."""
    for field, value in (
        ("rateLimitPerMinute", rate_limit_per_minute),
        ("maxUnitsPerRequest", max_units_per_request),
    ):
        if value is not None and value < 1:
            raise ValidationFailed(
                fields=[{"field": field, "code": "min_value", "message": _("At least 1.")}]
            )
    locked = _lock_active(key)
    locked.rate_limit_per_minute = rate_limit_per_minute
    locked.max_units_per_request = max_units_per_request
    locked.save(update_fields=["rate_limit_per_minute", "max_units_per_request"])
    key.rate_limit_per_minute = rate_limit_per_minute
    key.max_units_per_request = max_units_per_request
    return key


def api_key_mark_used(*, key: ApiKey, now: datetime | None = None) -> None:
    """Record a use, writing at most once per API_KEY_LAST_USED_RESOLUTION_SECONDS per key.

    The key was just read, so most requests decide from memory and write nothing; the
    conditional UPDATE keeps concurrent requests from writing the same minute twice.
    """
    now = now or timezone.now()
    stale_before = now - timedelta(seconds=settings.API_KEY_LAST_USED_RESOLUTION_SECONDS)
    if key.last_used_at is not None and key.last_used_at > stale_before:
        return
    ApiKey.objects.filter(
        Q(last_used_at__isnull=True) | Q(last_used_at__lte=stale_before), pk=key.pk
    ).update(last_used_at=now)
    key.last_used_at = now


def email_queue_to_account(*, account_id: int, kind: str, context: dict[str, Any]) -> Email | None:
    """``email_queue`` to whoever hears from us about an account (its first active user)."""
    contact = account_contact(account_id=account_id)
    if contact is None:
        return None
    return email_queue_to_user(user=contact, kind=kind, context=context)


GUEST_ACCOUNT_ID = "acc_guests"


def guest_account() -> Account:
    """The house account that owns every guest purchase (a card payment with an email and no
    account, docs/site.md). It has no user, so nobody logs in to it; each purchase keeps its
    buyer's email on its card checkout."""
    account, _created = Account.objects.get_or_create(
        public_id=GUEST_ACCOUNT_ID, defaults={"name": "Guest purchases"}
    )
    return account
