"""Celery tasks of the email outbox: thin wrappers around ``emails.services``."""

from __future__ import annotations

from celery import shared_task

from emails import services


@shared_task(ignore_result=True)
def email_send_task(email_id: int) -> bool:
    return services.email_send(email_id)


@shared_task(ignore_result=True)
def emails_sweep_task() -> int:
    """Every minute (beat): send what is due (retries, messages whose task was lost), and
    forget messages sent more than a month ago."""
    due = services.emails_due()
    for email_id in due:
        services.email_send(email_id)
    services.emails_purge()
    return len(due)
