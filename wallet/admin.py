"""Staff views of wallets and the ledger: read-only money, changes only through services."""

from django.contrib import admin, messages
from django.utils.translation import gettext_lazy as _

from reseller.errors import ApplicationError
from wallet import services
from wallet.models import LedgerEntry, TopUp, Wallet


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(Wallet)
class WalletAdmin(ReadOnlyAdmin):
    list_display = ("public_id", "account", "kind", "balance", "currency", "updated_at")
    list_filter = ("kind", "currency")
    search_fields = ("public_id", "account__name", "account__users__email")
    list_select_related = ("account",)


@admin.register(LedgerEntry)
class LedgerEntryAdmin(ReadOnlyAdmin):
    list_display = (
        "public_id",
        "created_at",
        "wallet",
        "kind",
        "amount",
        "balance_after",
        "currency",
        "reference",
        "created_by",
    )
    list_filter = ("kind", "currency", "wallet__kind")
    search_fields = ("public_id", "reference", "wallet__public_id", "wallet__account__name")
    list_select_related = ("wallet__account", "created_by")
    date_hierarchy = "created_at"


@admin.register(TopUp)
class TopUpAdmin(ReadOnlyAdmin):
    list_display = (
        "public_id",
        "created_at",
        "wallet",
        "method",
        "amount",
        "currency",
        "status",
        "external_reference",
        "decided_by",
        "decided_at",
    )
    list_filter = ("status", "method")
    search_fields = ("public_id", "external_reference", "wallet__account__name")
    list_select_related = ("wallet__account", "decided_by")
    actions = ["approve", "reject"]

    def has_change_permission(self, request, obj=None):
        return request.user.is_staff

    @admin.action(description=_("Approve selected pending top-ups (credits the wallet)"))
    def approve(self, request, queryset):
        self._decide(request, queryset, services.topup_approve)

    @admin.action(description=_("Reject selected pending top-ups"))
    def reject(self, request, queryset):
        self._decide(
            request,
            queryset,
            lambda topup_id, by: services.topup_reject(
                topup_id=topup_id, by=by, note="rejected by staff"
            ),
        )

    def _decide(self, request, queryset, decide):
        done = 0
        for topup in queryset.filter(status=TopUp.Status.PENDING):
            try:
                decide(topup_id=topup.pk, by=request.user)
                done += 1
            except ApplicationError as exc:
                self.message_user(request, f"{topup.public_id}: {exc.detail}", messages.ERROR)
        self.message_user(request, _("%(count)d top-up(s) decided.") % {"count": done})
