"""Send the business's own email (docs/contract.md §12) through Django's email framework and
``EMAIL_URL``; ``emails.outbox.email_queue`` writes what is sent here.

``email_send`` claims a row (moves its next attempt on, a lease), renders it in the
recipient's language and sends it with no database lock held, then marks it sent. A message
whose send fails is tried again with a growing delay; the sweeper finds what a lost task or a
killed worker left.
"""

from __future__ import annotations

import logging
import re
from datetime import timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.core.mail import EmailMultiAlternatives
from django.template.loader import render_to_string
from django.utils import formats, timezone, translation

from emails.models import Email
from reseller import crypto

logger = logging.getLogger(__name__)

# Context keys that carry a one-time link (a sign-up's, a password reset's): the row needs them
# until the message is sent, then forgets them; staff never see them (backoffice admin).
LINK_KEYS = frozenset({"confirm_path", "new_password_path", "accept_path"})
LEASE = timedelta(minutes=5)
MAX_ATTEMPTS = 12  # about a day and a half of retries (1, 2, 4 … minutes, at most 6 hours)
KEEP_SENT = timedelta(days=30)


def message(
    *, kind: str, to: str, language: str, context: dict[str, Any]
) -> EmailMultiAlternatives:
    """A message as its recipient reads it: the ``emails/<kind>`` subject, plain text and HTML
    templates rendered in their language, with ``site_url`` for links."""
    language = language or "en"
    with translation.override(language):
        # The amounts a message carries are stored as "1.57"; its reader sees "1,57" in
        # Spanish (and the HTML says lang="es"), like the site's pages.
        context = {
            "site_url": settings.SITE_URL.rstrip("/"),
            **_amounts_localized(context),
            "LANGUAGE_CODE": language,
        }
        subject = render_to_string(f"emails/{kind}_subject.txt", context, using="text")
        text = render_to_string(f"emails/{kind}.txt", context, using="text")
        html = render_to_string(f"emails/{kind}.html", context)
    built = EmailMultiAlternatives(subject=" ".join(subject.split()), body=text, to=[to])
    built.attach_alternative(html, "text/html")
    return built


AMOUNT = re.compile(r"-?\d+\.\d{2}")


def _amounts_localized(value: Any) -> Any:
    """Every string of the context that is an amount ("1234.50") written in the active
    language's format; the rest as it is."""
    if isinstance(value, dict):
        return {key: _amounts_localized(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_amounts_localized(item) for item in value]
    if isinstance(value, str) and AMOUNT.fullmatch(value):
        return formats.number_format(Decimal(value), decimal_pos=2, use_l10n=True)
    return value


def render(email: Email) -> EmailMultiAlternatives:
    context = email.context
    if email.secret_context:  # a PIN: opened only to be sent
        context = {**context, **crypto.decrypt_json(email.secret_context)}
    return message(kind=email.kind, to=email.to, language=email.language, context=context)


def _claim(email_id: int) -> Email | None:
    """Take the message for LEASE if it is due and unsent (one UPDATE; no lock kept)."""
    now = timezone.now()
    claimed = Email.objects.filter(
        pk=email_id, sent_at__isnull=True, next_attempt_at__lte=now, attempts__lt=MAX_ATTEMPTS
    ).update(next_attempt_at=now + LEASE)
    return Email.objects.filter(pk=email_id).first() if claimed else None


def email_send(email_id: int) -> bool:
    """Send one queued message; True when it went out now."""
    email = _claim(email_id)
    if email is None:
        return False
    try:
        render(email).send()
    except Exception as exc:
        attempts = email.attempts + 1
        delay = min(timedelta(minutes=2 ** (attempts - 1)), timedelta(hours=6))
        Email.objects.filter(pk=email.pk).update(
            attempts=attempts,
            next_attempt_at=timezone.now() + delay,
            last_error=f"{type(exc).__name__}: {exc}"[:255],
        )
        logger.warning("email %s (%s) not sent, attempt %s", email.pk, email.kind, attempts)
        return False
    Email.objects.filter(pk=email.pk).update(
        attempts=email.attempts + 1,
        sent_at=timezone.now(),
        last_error="",
        context=context_without_links(email.context),
        secret_context="",
    )
    return True


def context_without_links(context: dict[str, Any]) -> dict[str, Any]:
    """The context with its one-time links replaced by a placeholder."""
    return {key: "(link)" if key in LINK_KEYS else value for key, value in context.items()}


def emails_due(limit: int = 200) -> list[int]:
    """Unsent messages whose time has come: never published, lost, or waiting for a retry."""
    return list(
        Email.objects.filter(
            sent_at__isnull=True, next_attempt_at__lte=timezone.now(), attempts__lt=MAX_ATTEMPTS
        )
        .order_by("next_attempt_at")
        .values_list("pk", flat=True)[:limit]
    )


def emails_purge() -> int:
    """Sent messages are kept a month (what was sent, to whom), then deleted."""
    deleted, _ = Email.objects.filter(sent_at__lt=timezone.now() - KEEP_SENT).delete()
    return deleted
