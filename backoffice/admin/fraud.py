"""Card fraud in the back office (docs/fraud.md): each account's own card limits."""

from __future__ import annotations

from django import forms
from django.contrib import admin
from django.utils.translation import gettext_lazy as _

from backoffice.services import audit
from checkout.limits import card_limits_set
from checkout.models import CARD_LIMITS, CardLimitOverride

LIMIT_NAMES = [name for name, _setting in CARD_LIMITS]


class CardLimitsForm(forms.ModelForm):
    class Meta:
        model = CardLimitOverride
        fields = ["account", *LIMIT_NAMES, "note"]

    def clean(self):
        cleaned = super().clean()
        if all(cleaned.get(name) is None for name in LIMIT_NAMES):
            raise forms.ValidationError(
                _("Set at least one limit; to go back to the settings, delete these limits.")
            )
        return cleaned


@admin.register(CardLimitOverride)
class CardLimitOverrideAdmin(admin.ModelAdmin):
    """Saved through ``checkout.limits.card_limits_set`` and audited; blank is the setting."""

    form = CardLimitsForm
    list_display = ("account", *LIMIT_NAMES, "updated_at", "updated_by")
    search_fields = ("account__name", "account__public_id", "account__users__email")
    autocomplete_fields = ("account",)
    readonly_fields = ("updated_at", "updated_by")

    def get_readonly_fields(self, request, obj=None):
        # The account of existing limits stays: delete them and add others instead.
        return (*self.readonly_fields, "account") if obj is not None else self.readonly_fields

    def save_model(self, request, obj, form, change):
        values = {name: form.cleaned_data.get(name) for name in LIMIT_NAMES}
        row = card_limits_set(
            account=obj.account,
            values=values,
            note=form.cleaned_data.get("note", ""),
            by=request.user,
        )
        assert row is not None  # the form asks for one limit at least
        obj.pk, obj.updated_at, obj.updated_by = row.pk, row.updated_at, row.updated_by
        audit(actor=request.user, action="account.card_limits", target=obj.account, detail=values)

    def delete_model(self, request, obj):
        card_limits_set(account=obj.account, values=dict.fromkeys(LIMIT_NAMES), by=request.user)
        audit(actor=request.user, action="account.card_limits", target=obj.account, detail={})

    def delete_queryset(self, request, queryset):
        for obj in queryset.select_related("account"):
            self.delete_model(request, obj)
