"""Staff views of the email outbox and of sign-ups waiting for their confirmation: read-only
(what was sent, to whom, whether it failed); no password hash or token is shown."""

from django.contrib import admin
from django.utils.translation import gettext_lazy as _

from accounts.models import SignupRequest
from backoffice.admin.tools import ReadOnlyAdmin
from emails.models import Email
from emails.services import context_without_links


@admin.register(Email)
class EmailAdmin(ReadOnlyAdmin):
    list_display = ("kind", "to", "language", "created_at", "sent_at", "attempts", "last_error")
    list_filter = ("kind", "language")
    search_fields = ("to",)
    readonly_fields = ("context_shown",)
    fields = (
        "kind",
        "to",
        "language",
        "context_shown",
        "created_at",
        "next_attempt_at",
        "attempts",
        "sent_at",
        "last_error",
    )

    @admin.display(description=_("context"))
    def context_shown(self, email: Email) -> dict:
        """The context, without the one-time links a message carries until it is sent."""
        return context_without_links(email.context)


@admin.register(SignupRequest)
class SignupRequestAdmin(ReadOnlyAdmin):
    list_display = ("email", "language", "created_at")
    search_fields = ("email",)
    fields = ("email", "first_name", "last_name", "account_name", "language", "created_at")
