"""The audit trail of staff actions in the admin."""

from __future__ import annotations

import json

from django.contrib import admin
from django.utils.html import format_html
from django.utils.translation import gettext_lazy as _

from backoffice.admin.tools import ReadOnlyAdmin
from backoffice.models import StaffAction


@admin.register(StaffAction)
class StaffActionAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "actor", "action", "target_type", "target_id", "target_repr")
    list_filter = ("action", "target_type", ("actor", admin.RelatedOnlyFieldListFilter))
    search_fields = ("target_id", "target_repr", "actor__email", "action")
    list_select_related = ("actor",)
    date_hierarchy = "created_at"
    fields = (
        "created_at",
        "actor",
        "action",
        "target_type",
        "target_id",
        "target_repr",
        "detail_pretty",
    )
    readonly_fields = fields

    @admin.display(description=_("detail"))
    def detail_pretty(self, obj: StaffAction) -> str:
        return format_html("<pre>{}</pre>", json.dumps(obj.detail, indent=2, sort_keys=True))
