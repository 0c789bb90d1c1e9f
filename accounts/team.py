"""Team members (issue 18): the owner invites people by email with a role, changes roles and
removes members. An account always keeps an active owner."""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from django.contrib.auth.hashers import make_password
from django.core.mail import EmailMultiAlternatives
from django.db import transaction
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _

from accounts.models import Account, Invitation, User
from accounts.roles import OWNER, ROLES
from accounts.services import normalise_email
from emails.outbox import email_queue
from emails.services import message
from reseller.errors import ValidationFailed

INVITATION_VALID = timedelta(days=7)


def _invalid(field: str, text: str) -> ValidationFailed:
    return ValidationFailed(fields=[{"field": field, "code": "invalid", "message": text}])


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def members(*, account: Account):
    return User.objects.filter(account=account, is_active=True).order_by("pk")


def invitations_pending(*, account: Account):
    return Invitation.objects.filter(
        account=account,
        accepted_at__isnull=True,
        created_at__gte=timezone.now() - INVITATION_VALID,
    ).order_by("-pk")


def invitation_waiting(*, email: str) -> bool:
    """Whether an invitation to any account still waits for this address (sent, not
    accepted, not expired)."""
    return Invitation.objects.filter(
        email__iexact=normalise_email(email),
        accepted_at__isnull=True,
        created_at__gte=timezone.now() - INVITATION_VALID,
    ).exists()


def invitations_latest(*, accounts: list[Account]) -> dict[int, Invitation]:
    """Each account's latest unaccepted invitation (expired ones included), by account id."""
    latest: dict[int, Invitation] = {}
    for invitation in Invitation.objects.filter(
        account__in=accounts, accepted_at__isnull=True
    ).order_by("pk"):
        latest[invitation.account_id] = invitation
    return latest


def invitation_expired(invitation: Invitation) -> bool:
    return invitation.created_at < timezone.now() - INVITATION_VALID


def invitations_withdraw(*, account: Account) -> None:
    """The account's unaccepted invitations stop working (their links are forgotten)."""
    Invitation.objects.filter(account=account, accepted_at__isnull=True).delete()


def member_invite(*, by: User, email: str, role: str, site_url: str = "") -> None:
    """Email an invitation link (or, if the address has an account already, a note: a person
    belongs to one account)."""
    if role not in ROLES:
        raise _invalid("role", _("Choose owner, developer or finance."))
    email = normalise_email(email)
    existing = User.objects.filter(email__iexact=email).first()
    if existing is not None:
        context = _context(account=by.account, by=by, role=role, site_url=site_url)
        message(kind="invitation_existing", to=email, language=existing.language,
                context=context).send()  # fmt: skip
        return
    invitation_create(account=by.account, by=by, email=email, role=role, site_url=site_url).send()


def _context(*, account: Account, by: User, role: str, site_url: str) -> dict[str, str]:
    context = {"account": account.name, "inviter": by.get_full_name(), "role": role}
    if site_url:
        context["site_url"] = site_url.rstrip("/")
    return context


def _invitation_new(
    *, account: Account, by: User, email: str, role: str, site_url: str
) -> tuple[str, dict[str, str]]:
    """A pending invitation to join ``account`` with ``role``: its address and its email's
    context. The link works once, for 7 days; only a hash of its token is kept."""
    email = normalise_email(email)
    token = secrets.token_urlsafe(32)
    # Inviting the same address again replaces its pending invitation (the new link wins).
    Invitation.objects.filter(account=account, email=email, accepted_at__isnull=True).delete()
    Invitation.objects.create(
        account=account, email=email, role=role, token_hash=_hash(token), invited_by=by
    )
    context = _context(account=account, by=by, role=role, site_url=site_url)
    context["accept_path"] = reverse("accounts:invitation", args=[token])
    return email, context


def invitation_create(
    *, account: Account, by: User, email: str, role: str, site_url: str = ""
) -> EmailMultiAlternatives:
    """A pending invitation and its email, which the caller sends at once (a team
    invitation: the page says whether it went)."""
    email, context = _invitation_new(
        account=account, by=by, email=email, role=role, site_url=site_url
    )
    return message(kind="invitation", to=email, language=by.language, context=context)


def invitation_queue(
    *, account: Account, by: User, email: str, role: str, site_url: str = ""
) -> None:
    """A pending invitation, its email written to the outbox in the caller's transaction and
    sent by a worker after the commit, retried while the mail server is away (a new agent's
    owner: the agent exists whether or not the mail server answers now). The outbox forgets
    the link once the message is sent."""
    email, context = _invitation_new(
        account=account, by=by, email=email, role=role, site_url=site_url
    )
    email_queue(kind="invitation", to=email, language=by.language, context=context)


def invitation_pending(*, token: str) -> Invitation | None:
    return (
        Invitation.objects.select_related("account")
        .filter(
            token_hash=_hash(token),
            accepted_at__isnull=True,
            created_at__gte=timezone.now() - INVITATION_VALID,
        )
        .first()
    )


@transaction.atomic
def invitation_accept(
    *, token: str, password: str, first_name: str = "", last_name: str = "", language: str = "en"
) -> User | None:
    """Join the account with the invitation's role (once). None when the link is unknown, used
    or expired, or the address got an account meanwhile."""
    invitation = (
        Invitation.objects.select_for_update()
        .filter(
            token_hash=_hash(token),
            accepted_at__isnull=True,
            created_at__gte=timezone.now() - INVITATION_VALID,
        )
        .first()
    )
    if invitation is None or User.objects.filter(email__iexact=invitation.email).exists():
        return None
    user = User(
        email=invitation.email,
        account=invitation.account,
        role=invitation.role,
        first_name=first_name,
        last_name=last_name,
        language=language,
        password=make_password(password),
    )
    user.save()
    invitation.accepted_at = timezone.now()
    invitation.save(update_fields=["accepted_at"])
    return user


def _other_owners(member: User) -> bool:
    return (
        User.objects.filter(account_id=member.account_id, role=OWNER, is_active=True)
        .exclude(pk=member.pk)
        .exists()
    )


@transaction.atomic
def member_set_role(*, member: User, role: str) -> User:
    if role not in ROLES:
        raise _invalid("role", _("Choose owner, developer or finance."))
    # Serialise changes of one account's owners: two owners demoting each other at once
    # would otherwise leave none.
    Account.objects.select_for_update().filter(pk=member.account_id).first()
    if member.role == OWNER and role != OWNER and not _other_owners(member):
        raise _invalid("role", _("An account keeps at least one owner."))
    User.objects.filter(pk=member.pk).update(role=role)
    member.role = role
    return member


@transaction.atomic
def member_remove(*, member: User) -> None:
    """The member can no longer log in (the row stays: orders and keys name their creator)."""
    Account.objects.select_for_update().filter(pk=member.account_id).first()
    if member.role == OWNER and not _other_owners(member):
        raise _invalid("member", _("An account keeps at least one owner."))
    User.objects.filter(pk=member.pk).update(is_active=False)
