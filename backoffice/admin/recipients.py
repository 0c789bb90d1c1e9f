"""Staff view of customers' saved recipients: read-only (a customer manages their own)."""

from django.contrib import admin

from backoffice.admin.tools import ReadOnlyAdmin
from recipients.models import SavedRecipient


@admin.register(SavedRecipient)
class SavedRecipientAdmin(ReadOnlyAdmin):
    list_display = ("name", "phone_number", "account", "operator", "created_at")
    search_fields = ("phone_number", "name", "account__name", "account__public_id")
    list_select_related = ("account", "operator")
    fields = ("public_id", "account", "name", "phone_number", "operator", "created_at")
