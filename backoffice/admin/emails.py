"""Staff views of the email outbox and of sign-ups waiting for their confirmation: read-only
(what was sent, to whom, whether it failed); no password hash or token is shown."""

from django.contrib import admin

from accounts.models import SignupRequest
from backoffice.admin.tools import ReadOnlyAdmin
from emails.models import Email


@admin.register(Email)
class EmailAdmin(ReadOnlyAdmin):
    list_display = ("kind", "to", "language", "created_at", "sent_at", "attempts", "last_error")
    list_filter = ("kind", "language")
    search_fields = ("to",)
    fields = (
        "kind",
        "to",
        "language",
        "context",
        "created_at",
        "next_attempt_at",
        "attempts",
        "sent_at",
        "last_error",
    )


@admin.register(SignupRequest)
class SignupRequestAdmin(ReadOnlyAdmin):
    list_display = ("email", "language", "created_at")
    search_fields = ("email",)
    fields = ("email", "first_name", "last_name", "account_name", "language", "created_at")
