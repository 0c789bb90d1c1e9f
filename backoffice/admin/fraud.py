"""Card fraud in the back office (docs/fraud.md): each account's own card limits, and the
review queue of frozen accounts, cards and recipient numbers with their evidence (the
changelist of "frozen cards and numbers"): unfreeze, block for good, and send a dispute's
prefilled evidence to Stripe. Every action is audited."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.http import HttpResponseBadRequest, HttpResponseForbidden, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from accounts.models import Account
from backoffice.admin.tools import ReadOnlyAdmin
from backoffice.services import audit, staff_account_unfreeze_cards
from checkout import review
from checkout.disputes import card_key_review, card_purchases_block
from checkout.limits import card_limits_set
from checkout.models import CARD_LIMITS, CardDispute, CardKeyFreeze, CardLimitOverride
from reseller.errors import ApplicationError

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


class ReviewForm(forms.Form):
    what = forms.ChoiceField(choices=[(w, w) for w in ("account", "card", "number", "dispute")])
    action = forms.ChoiceField(choices=[(a, a) for a in ("unfreeze", "block", "evidence")])
    id = forms.IntegerField(min_value=1, max_value=2**62)

    def clean(self):
        cleaned = super().clean()
        evidence = cleaned.get("what") == "dispute"
        if evidence != (cleaned.get("action") == "evidence"):
            raise forms.ValidationError("evidence is a dispute's action, and its only one")
        return cleaned


@admin.register(CardKeyFreeze)
class CardFraudReviewAdmin(ReadOnlyAdmin):
    """The review queue: its changelist is the queue page."""

    def changelist_view(self, request, extra_context=None):
        if not self.has_view_permission(request):
            return HttpResponseForbidden()
        if request.method == "POST":
            if not self.has_operate_permission(request):
                return HttpResponseForbidden()
            form = ReviewForm(request.POST)
            if not form.is_valid():
                return HttpResponseBadRequest(form.errors.as_text())
            try:
                done = self._act(request, **form.cleaned_data)
            except ApplicationError as exc:
                messages.error(request, str(exc.detail))
            except (CardKeyFreeze.DoesNotExist, CardDispute.DoesNotExist, Account.DoesNotExist):
                return HttpResponseBadRequest("nothing to review with that id")
            else:
                messages.success(request, done)
            return HttpResponseRedirect(request.path)
        queue = review.review_queue()
        evidence = [
            (dispute, review.dispute_evidence(dispute))
            for dispute in review.disputes_awaiting_evidence()
        ]
        context = {
            **self.admin_site.each_context(request),
            "title": gettext("Card fraud review"),
            "opts": self.opts,
            "queue": queue,
            "sections": [
                ("accounts", gettext("Frozen accounts"), queue["accounts"]),
                ("cards", gettext("Frozen cards"), queue["cards"]),
                ("numbers", gettext("Frozen recipient numbers"), queue["numbers"]),
            ],
            "blocked": review.blocked_counts(),
            "evidence": evidence,
            "can_operate": self.has_operate_permission(request),
            **(extra_context or {}),
        }
        return TemplateResponse(request, "backoffice/fraud_review.html", context)

    def _act(self, request, *, what: str, action: str, id: int) -> str:
        actor = request.user
        if what == "dispute":
            dispute = CardDispute.objects.select_related("checkout__account").get(pk=id)
            review.dispute_evidence_send(dispute=dispute, by=actor)
            audit(actor=actor, action="dispute.evidence", target=dispute.checkout.account,
                  detail={"dispute": dispute.stripe_id})  # fmt: skip
            return gettext("Evidence of %(dispute)s sent to Stripe.") % {
                "dispute": dispute.stripe_id
            }
        if what == "account":
            account = review.account_of(id)
            if action == "block":
                card_purchases_block(account=account, by=actor)
                audit(actor=actor, action="account.block_cards", target=account)
                return gettext("Card purchases of %(account)s blocked for good.") % {
                    "account": account.name
                }
            staff_account_unfreeze_cards(account=account, actor=actor)
            return gettext("Card purchases of %(account)s unfrozen.") % {"account": account.name}
        row = CardKeyFreeze.objects.get(pk=id, kind=what)
        row = card_key_review(freeze_id=row.pk, block=action == "block", by=actor)
        audit(actor=actor, action=f"card_freeze.{action}", target=row,
              detail={"kind": row.kind, "value": row.value})  # fmt: skip
        if action == "block":
            return gettext("%(value)s blocked for good.") % {"value": row.value}
        return gettext("%(value)s unfrozen.") % {"value": row.value}
