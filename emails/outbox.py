"""Queue an email in the caller's transaction (the outbox): ``emails.services`` sends it."""

from __future__ import annotations

import logging
from typing import Any, Protocol

from django.db import transaction

from emails.models import Email
from emails.tasks import email_send_task
from reseller import crypto
from reseller.tasks import enqueue

logger = logging.getLogger(__name__)


def email_queue(
    *,
    kind: str,
    to: str,
    language: str,
    context: dict[str, Any],
    secret: dict[str, Any] | None = None,
) -> Email | None:
    """Write the message in the caller's transaction; a worker sends it after the commit.
    ``secret``: more context that is stored encrypted (a PIN), until the message is sent."""
    if not to:
        return None
    email = Email.objects.create(
        kind=kind,
        to=to,
        language=language or "en",
        context=context,
        secret_context=crypto.encrypt_json(secret) if secret else "",
    )
    transaction.on_commit(lambda: _wake(email.pk))
    return email


class Person(Protocol):
    """Whom an email goes to: ``accounts.User`` (emails sits below accounts, so it names
    only what it reads)."""

    email: str
    language: str


def email_queue_to_user(
    *, user: Person, kind: str, context: dict[str, Any], secret: dict[str, Any] | None = None
) -> Email | None:
    """``email_queue`` to a person, in their language."""
    return email_queue(
        kind=kind, to=user.email, language=user.language, context=context, secret=secret
    )


def _wake(email_id: int) -> None:
    try:
        enqueue(email_send_task, email_id)
    except Exception:  # broker down: the sweeper sends it later
        logger.warning("could not publish email %s", email_id, exc_info=True)
