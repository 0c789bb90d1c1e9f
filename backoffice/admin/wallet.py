"""Staff views of wallets and the ledger: read-only money, changes only through services.

The ledger is never edited by hand: a correction is an adjustment entry (the wallet list's
"Adjust balance" action), and every staff decision is recorded by ``backoffice.services``.
"""

from decimal import Decimal

from django import forms
from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext_lazy

from backoffice import services as staff
from backoffice.admin.tools import ReadOnlyAdmin, form_action, run_each
from wallet.models import LedgerEntry, TopUp, Wallet


class AdjustForm(forms.Form):
    amount = forms.DecimalField(
        label=_("Amount"),
        max_digits=12,
        decimal_places=2,
        help_text=_("Positive credits, negative debits: a new ledger entry."),
    )
    reason = forms.CharField(label=_("Reason"), max_length=200)

    def clean_amount(self):
        amount = self.cleaned_data["amount"]
        if amount == Decimal("0"):
            raise forms.ValidationError(_("Not zero."))
        return amount


class RejectForm(forms.Form):
    note = forms.CharField(
        label=_("Note"), max_length=200, help_text=_("Why, for the customer and the audit trail.")
    )


@admin.register(Wallet)
class WalletAdmin(ReadOnlyAdmin):
    list_display = ("public_id", "account", "kind", "balance", "currency", "updated_at")
    list_filter = ("kind", "currency")
    search_fields = ("public_id", "account__name", "account__public_id", "account__users__email")
    list_select_related = ("account",)
    readonly_fields = ("ledger",)
    actions = ["adjust"]

    @admin.display(description=_("ledger"))
    def ledger(self, obj: Wallet) -> str:
        url = reverse("admin:wallet_ledgerentry_changelist") + f"?wallet__id__exact={obj.pk}"
        return format_html('<a href="{}">{}</a>', url, _("All entries of this wallet"))

    @admin.action(description=_("Adjust balance (adds a ledger entry)"), permissions=["operate"])
    def adjust(self, request, queryset):
        def apply(data):
            run_each(
                self,
                request,
                queryset.order_by("pk"),
                lambda wallet: staff.staff_wallet_adjust(
                    wallet=wallet, amount=data["amount"], reason=data["reason"], actor=request.user
                ),
                done_message=ngettext_lazy(
                    "%(count)d wallet adjusted.", "%(count)d wallets adjusted.", "count"
                ),
            )

        return form_action(
            self,
            request,
            queryset,
            form_class=AdjustForm,
            title=_("Adjust wallet balance"),
            apply=apply,
        )


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
    date_hierarchy = "created_at"
    actions = ["approve", "reject"]

    @admin.action(
        description=_("Approve selected pending top-ups (credits the wallet)"),
        permissions=["operate"],
    )
    def approve(self, request, queryset):
        run_each(
            self,
            request,
            queryset.filter(status=TopUp.Status.PENDING).order_by("pk"),
            lambda topup: staff.staff_topup_approve(topup=topup, actor=request.user),
            done_message=ngettext_lazy(
                "%(count)d top-up approved.", "%(count)d top-ups approved.", "count"
            ),
        )

    @admin.action(description=_("Reject selected pending top-ups"), permissions=["operate"])
    def reject(self, request, queryset):
        def apply(data):
            run_each(
                self,
                request,
                queryset.filter(status=TopUp.Status.PENDING).order_by("pk"),
                lambda topup: staff.staff_topup_reject(
                    topup=topup, actor=request.user, note=data["note"]
                ),
                done_message=ngettext_lazy(
                    "%(count)d top-up rejected.", "%(count)d top-ups rejected.", "count"
                ),
            )

        return form_action(
            self,
            request,
            queryset,
            form_class=RejectForm,
            title=_("Reject top-ups"),
            apply=apply,
        )
