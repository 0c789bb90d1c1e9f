"""Back-office pages of reconciliation runs (docs/providers.md, "Reconciliation"): each run
with its counts and the discrepancies it found, read-only, and a CSV export of the items of
the runs selected. Runs are made by ``reconcile_provider`` and the daily beat task."""

from __future__ import annotations

from django.contrib import admin
from django.utils.translation import gettext_lazy as _

from backoffice import services as staff
from backoffice.admin.tools import ReadOnlyAdmin, ReadOnlyInline, csv_response
from reconciliation.models import ReconciliationItem, ReconciliationRun

# A discrepancy as the run's page and its CSV show it (the CSV adds the run's own columns).
ITEM_FIELDS = (
    "kind",
    "recharge",
    "our_reference",
    "provider_reference",
    "ours_status",
    "theirs_status",
    "ours_amount",
    "ours_currency",
    "theirs_amount",
    "theirs_currency",
    "detail",
)
ITEM_CSV = ["run", "provider", "day", *ITEM_FIELDS]


class ReconciliationItemInline(ReadOnlyInline, admin.TabularInline):
    model = ReconciliationItem
    fields = ITEM_FIELDS
    readonly_fields = fields
    show_change_link = False
    verbose_name_plural = _("discrepancies and reversals applied")


@admin.register(ReconciliationRun)
class ReconciliationRunAdmin(ReadOnlyAdmin):
    list_display = (
        "day",
        "provider",
        "matched",
        "missing_here",
        "missing_there",
        "mismatched",
        "reversals_applied",
        "report_lines",
        "error",
        "started_at",
    )
    list_filter = ("provider", "day", "provider_kind")
    search_fields = ("provider", "public_id", "items__our_reference", "items__provider_reference")
    date_hierarchy = "day"
    fields = (
        "public_id",
        "provider",
        "provider_kind",
        "day",
        "started_at",
        "finished_at",
        "report_lines",
        "recharges",
        "matched",
        "missing_here",
        "missing_there",
        "mismatched",
        "reversals_applied",
        "error",
    )
    readonly_fields = fields
    inlines = [ReconciliationItemInline]
    actions = ["export_csv"]

    @admin.action(description=_("Export the items of the selected runs as CSV"))
    def export_csv(self, request, queryset):
        runs = {run.pk: run for run in queryset}
        items = list(
            ReconciliationItem.objects.filter(run_id__in=runs)
            .select_related("recharge")
            .order_by("run_id", "id")
        )
        staff.staff_export(
            actor=request.user,
            what="reconciliation",
            ids=[runs[pk].public_id for pk in sorted(runs)],
        )
        return csv_response(
            filename="reconciliation",
            header=ITEM_CSV,
            rows=(
                [
                    runs[i.run_id].public_id,
                    runs[i.run_id].provider,
                    runs[i.run_id].day,
                    i.kind,
                    i.recharge.public_id if i.recharge is not None else "",
                    i.our_reference,
                    i.provider_reference,
                    i.ours_status,
                    i.theirs_status,
                    i.ours_amount,
                    i.ours_currency,
                    i.theirs_amount,
                    i.theirs_currency,
                    i.detail,
                ]
                for i in items
            ),
        )
