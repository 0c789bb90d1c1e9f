"""The audit trail in the admin, and the dashboard page mounted at /admin/dashboard/."""

from __future__ import annotations

import json

from django.contrib import admin
from django.urls import path
from django.utils.html import format_html
from django.utils.translation import gettext_lazy as _

from backoffice import views
from backoffice.admin_tools import ReadOnlyAdmin
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


def _with_dashboard(get_urls):
    """Mount the dashboard on the default admin site, behind its staff login."""

    def urls():
        site = admin.site
        return [
            path(
                "dashboard/",
                site.admin_view(lambda request: views.dashboard(request, admin_site=site)),
                name="dashboard",
            ),
            *get_urls(),
        ]

    return urls


if not getattr(admin.site.get_urls, "with_dashboard", False):
    admin.site.get_urls = _with_dashboard(admin.site.get_urls)
    admin.site.get_urls.with_dashboard = True
