"""Queue an email in the caller's transaction (the outbox): ``emails.services`` sends it."""

from __future__ import annotations

import logging
from typing import Any

from django.db import transaction

from accounts.models import User
from accounts.selectors import account_contact
from emails.models import Email
from emails.tasks import email_send_task
from reseller.tasks import enqueue

logger = logging.getLogger(__name__)


def email_queue(*, kind: str, to: str, language: str, context: dict[str, Any]) -> Email | None:
    """Write the message in the caller's transaction; a worker sends it after the commit."""
    if not to:
        return None
    email = Email.objects.create(kind=kind, to=to, language=language or "en", context=context)
    transaction.on_commit(lambda: _wake(email.pk))
    return email


def email_queue_to_user(*, user: User, kind: str, context: dict[str, Any]) -> Email | None:
    """``email_queue`` to a person, in their language."""
    return email_queue(kind=kind, to=user.email, language=user.language, context=context)


def email_queue_to_account(*, account_id: int, kind: str, context: dict[str, Any]) -> Email | None:
    """``email_queue`` to whoever hears from us about an account (its first active user)."""
    contact = account_contact(account_id=account_id)
    if contact is None:
        return None
    return email_queue_to_user(user=contact, kind=kind, context=context)


def _wake(email_id: int) -> None:
    try:
        enqueue(email_send_task, email_id)
    except Exception:  # broker down: the sweeper sends it later
        logger.warning("could not publish email %s", email_id, exc_info=True)
