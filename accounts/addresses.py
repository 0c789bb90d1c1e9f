"""Proving an email address (docs/contract.md §12): sign-up confirmation and change of email.

Neither tells a visitor whether an address has an account. A sign-up for an address that has
one sends that address a note instead of a link (the owner learns of it; the visitor learns
nothing), and the account is created only when the link's owner opens it. A change of email
sends a link to the new address; the address changes when it is opened, and the old address is
told.

Nor does the time they take (issue 33): a sign-up and a password reset take the same path
whether or not the address has an account. Each hashes the password it was given (a sign-up)
and queues exactly one message in the outbox, sent by a worker after the commit, so no request
waits for a mail server only when the address is known.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from django.conf import settings
from django.contrib.auth.hashers import make_password
from django.contrib.auth.tokens import default_token_generator
from django.core import signing
from django.db import transaction
from django.urls import reverse
from django.utils import timezone
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

from accounts.errors import EmailTaken
from accounts.models import SignupRequest, User
from accounts.services import normalise_email, user_create
from emails.outbox import email_queue
from emails.services import message
from reseller import ratelimit

LINK_VALID = timedelta(hours=24)
EMAIL_CHANGE_SALT = "accounts.email-change"


def emails_allowed(*, scope: str, address: str, email: str) -> bool:
    """Count a request that sends email to ``email`` per client address and per email (an
    hour's window, the password reset's limits): False when either is spent, so nobody can
    flood an inbox through our forms."""
    checks = [
        (f"{scope}-ip", address, settings.PASSWORD_RESET_RATE_PER_ADDRESS),
        (f"{scope}-email", normalise_email(email) or "-", settings.PASSWORD_RESET_RATE_PER_EMAIL),
    ]
    return all(
        ratelimit.hit(scope, ident, limit=limit, window=3600).allowed
        for scope, ident, limit in checks
    )


def _site(site_url: str) -> dict[str, str]:
    """Links back to the address the visitor used, when known (else SITE_URL)."""
    return {"site_url": site_url.rstrip("/")} if site_url else {}


def _token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@transaction.atomic
def signup_request(
    *,
    email: str,
    password: str,
    first_name: str = "",
    last_name: str = "",
    account_name: str = "",
    language: str = "en",
    site_url: str = "",
) -> None:
    """Mail a confirmation link, or (the address has an account) a note saying so.
    ``site_url``: the address the visitor used (links point back to it); default SITE_URL."""
    email = normalise_email(email)
    SignupRequest.objects.filter(created_at__lt=timezone.now() - LINK_VALID).delete()
    existing = User.objects.filter(email__iexact=email).first()
    # Hashed either way: the slow part of a sign-up must not happen only for new addresses.
    hashed = make_password(password)
    token = secrets.token_urlsafe(32)
    if existing is not None:
        email_queue(
            kind="signup_existing",
            to=email,
            language=existing.language,
            context={
                **_site(site_url),
                "login_path": reverse("accounts:login"),
                "reset_path": reverse("accounts:password-reset"),
            },
        )
        return
    SignupRequest.objects.create(
        email=email,
        password=hashed,
        first_name=first_name,
        last_name=last_name,
        account_name=account_name,
        language=language,
        token_hash=_token_hash(token),
    )
    email_queue(
        kind="signup_confirm",
        to=email,
        language=language,
        context={
            **_site(site_url),
            "name": first_name,
            "confirm_path": reverse("accounts:signup-confirm", args=[token]),
            "hours": int(LINK_VALID.total_seconds() // 3600),
        },
    )


@transaction.atomic
def password_reset_request(*, email: str, language: str = "en", site_url: str = "") -> None:
    """Queue the reset link to the address's account (active, with a password), or a note
    that no account uses the address: one message either way, and the same answer. The link
    works once, within ``PASSWORD_RESET_TIMEOUT`` (Django's token)."""
    email = normalise_email(email)
    user = User.objects.filter(email__iexact=email, is_active=True).first()
    if user is not None and user.has_usable_password():
        uid = urlsafe_base64_encode(force_bytes(user.pk))
        token = default_token_generator.make_token(user)
        email_queue(
            kind="password_reset",
            to=user.email,
            language=language,  # the visitor's, as the page they just used
            context={
                **_site(site_url),
                "new_password_path": reverse("accounts:password-reset-confirm", args=[uid, token]),
            },
        )
        return
    email_queue(
        kind="password_reset_unknown",
        to=email,
        language=language,
        context={**_site(site_url), "signup_path": reverse("accounts:signup")},
    )


def signup_pending(*, token: str) -> SignupRequest | None:
    """The sign-up a link confirms, while the link is valid."""
    return SignupRequest.objects.filter(
        token_hash=_token_hash(token), created_at__gte=timezone.now() - LINK_VALID
    ).first()


@transaction.atomic
def signup_confirm(*, token: str) -> User | None:
    """Create the account a link confirms (once: the request is gone after). None when the
    link is unknown, used or expired. ``EmailTaken`` when the address got an account meanwhile
    (another link of the same address was opened first)."""
    pending = (
        SignupRequest.objects.select_for_update()
        .filter(token_hash=_token_hash(token), created_at__gte=timezone.now() - LINK_VALID)
        .first()
    )
    if pending is None:
        return None
    SignupRequest.objects.filter(email__iexact=pending.email).delete()
    user = user_create(
        email=pending.email,
        password=None,
        first_name=pending.first_name,
        last_name=pending.last_name,
        account_name=pending.account_name or None,
        language=pending.language,
    )
    user.password = pending.password  # already hashed
    user.save(update_fields=["password"])
    return user


def email_change_request(*, user: User, new_email: str, site_url: str = "") -> None:
    """Mail the new address a link that moves the account to it, or (it has an account) a
    note saying so; the page answers the same either way."""
    new_email = normalise_email(new_email)
    if User.objects.filter(email__iexact=new_email).exists():
        message(
            kind="email_change_taken",
            to=new_email,
            language=user.language,
            context={**_site(site_url), "reset_path": reverse("accounts:password-reset")},
        ).send()
        return
    token = signing.dumps(
        {"user": user.pk, "from": user.email, "to": new_email}, salt=EMAIL_CHANGE_SALT
    )
    message(
        kind="email_change_confirm",
        to=new_email,
        language=user.language,
        context={
            **_site(site_url),
            "name": user.first_name,
            "old_email": user.email,
            "new_email": new_email,
            "confirm_path": reverse("accounts:email-confirm", args=[token]),
            "hours": int(LINK_VALID.total_seconds() // 3600),
        },
    ).send()


def email_change_pending(*, token: str) -> dict | None:
    """What a change-of-email link asks for, while it is valid and not yet used."""
    try:
        wanted = signing.loads(token, salt=EMAIL_CHANGE_SALT, max_age=LINK_VALID)
    except signing.BadSignature:
        return None
    user = User.objects.filter(pk=wanted.get("user"), is_active=True).first()
    if user is None or user.email != wanted.get("from"):
        return None  # used already (the address moved), or the user is gone
    return {"user": user, "new_email": wanted["to"]}


def email_change_confirm(*, token: str, site_url: str = "") -> User | None:
    """Move the account to the link's address (once: a used link no longer matches the old
    address) and tell the old address. ``EmailTaken`` if the address got an account meanwhile."""
    wanted = email_change_pending(token=token)
    if wanted is None:
        return None
    user, old_email = wanted["user"], wanted["user"].email
    with transaction.atomic():
        locked = User.objects.select_for_update().get(pk=user.pk)
        if locked.email != old_email:
            return None
        if User.objects.filter(email__iexact=wanted["new_email"]).exclude(pk=user.pk).exists():
            raise EmailTaken()
        locked.email = wanted["new_email"]
        locked.save(update_fields=["email"])
    message(
        kind="email_changed",
        to=old_email,
        language=locked.language,
        context={
            **_site(site_url),
            "new_email": locked.email,
            "reset_path": reverse("accounts:password-reset"),
        },
    ).send()
    return locked
