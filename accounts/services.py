"""Writes for users, accounts and billing; the API, the site, the admin and the CLI call these."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth import authenticate
from django.contrib.auth.password_validation import validate_password
from django.db import IntegrityError, transaction
from django.http import HttpRequest
from django.utils.translation import gettext as _

from accounts.errors import EmailTaken, InvalidCredentials
from accounts.models import Account, BillingProfile, User
from reseller import ratelimit
from reseller.errors import RateLimited

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
    user = User(
        email=email,
        first_name=first_name,
        last_name=last_name,
        language=language,
        is_staff=is_staff,
        is_superuser=is_superuser,
    )
    if validate and password is not None:
        validate_password(password, user)
    account = Account.objects.create(name=account_name or email, is_b2b=is_b2b)
    BillingProfile.objects.create(account=account)
    user.account = account
    if password is None:
        user.set_unusable_password()
    else:
        user.set_password(password)
    try:
        with transaction.atomic():
            user.save()
    except IntegrityError as exc:  # a concurrent sign-up with the same email
        raise EmailTaken() from exc
    return user


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


def user_login(*, request: HttpRequest | None, address: str, email: str, password: str) -> User:
    """Check the rate limits, then the credentials; the same error for any wrong pair."""
    login_rate_check(address=address, email=email)
    user = authenticate(request, username=normalise_email(email), password=password)
    if user is None or not user.is_active:
        raise InvalidCredentials()
    return user
