"""The network's money in the back office (contract section 18, "Back office"): every
transfer, every commission, and the transfers' Idempotency-Key answers. Read-only: money moves
only through the services (docs/network.md)."""

from django.contrib import admin

from backoffice.admin.tools import ReadOnlyAdmin
from network.models import Commission, Transfer, TransferKey


@admin.register(Transfer)
class TransferAdmin(ReadOnlyAdmin):
    list_display = ("public_id", "parent", "agent", "direction", "amount", "currency", "created_at")
    list_filter = ("direction", "currency")
    search_fields = ("public_id", "parent__name", "parent__public_id", "agent__name",
                     "agent__public_id", "memo")  # fmt: skip
    list_select_related = ("parent", "agent")
    date_hierarchy = "created_at"


@admin.register(Commission)
class CommissionAdmin(ReadOnlyAdmin):
    list_display = ("recharge", "account", "branch", "buyer", "amount", "sale", "currency",
                    "created_at", "reversed_at")  # fmt: skip
    list_filter = ("currency", ("reversed_at", admin.EmptyFieldListFilter))
    search_fields = ("recharge", "reference", "account__name", "account__public_id",
                     "buyer__public_id")  # fmt: skip
    list_select_related = ("account", "branch", "buyer")
    date_hierarchy = "created_at"


@admin.register(TransferKey)
class TransferKeyAdmin(ReadOnlyAdmin):
    list_display = ("key", "account", "response_status", "created_at")
    list_filter = ("response_status",)
    search_fields = ("key", "account__name", "account__public_id")
    list_select_related = ("account",)
    date_hierarchy = "created_at"
