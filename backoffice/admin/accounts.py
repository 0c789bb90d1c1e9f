from django import forms
from django.contrib import admin
from django.contrib.auth.admin import UserAdmin as BaseUserAdmin
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext, ngettext_lazy

from accounts.models import Account, ApiKey, BillingProfile, Invitation, User
from accounts.services import STAFF_LEVEL
from backoffice import services as staff
from backoffice.admin.tools import ReadOnlyAdmin, form_action, run_each
from network.agents import network_tree


class DiscountForm(forms.Form):
    discount_percent = forms.DecimalField(
        label=_("Discount percent"), min_value=0, max_value=100, max_digits=5, decimal_places=2
    )


class LimitsForm(forms.Form):
    rate_limit_per_minute = forms.IntegerField(
        label=_("Requests per minute"),
        min_value=1,
        required=False,
        help_text=_("Empty restores the default."),
    )
    max_units_per_request = forms.IntegerField(
        label=_("Units per request"),
        min_value=1,
        required=False,
        help_text=_("Empty restores the default."),
    )


class BillingInline(admin.StackedInline):
    model = BillingProfile
    can_delete = False


class SuspendedFilter(admin.SimpleListFilter):
    title = _("suspended")
    parameter_name = "suspended"

    def lookups(self, request, model_admin):
        return [("yes", _("Suspended")), ("no", _("Active"))]

    def queryset(self, request, queryset):
        if self.value() == "yes":
            return queryset.filter(suspended_at__isnull=False)
        if self.value() == "no":
            return queryset.filter(suspended_at__isnull=True)
        return queryset


@admin.register(Account)
class AccountAdmin(admin.ModelAdmin):
    list_display = (
        "name",
        "public_id",
        "is_b2b",
        "wallet_currency",
        "discount_percent",
        "parent",
        "depth",
        "suspended_at",
        "created_at",
    )
    list_filter = ("is_b2b", "wallet_currency", "depth", SuspendedFilter)
    list_select_related = ("parent",)
    search_fields = ("name", "public_id", "users__email")
    # B2B, the discount, the network and suspension change through the audited actions (or
    # the network's own services), not by editing the form.
    readonly_fields = (
        "public_id",
        "created_at",
        "is_b2b",
        "discount_percent",
        "parent",
        "depth",
        "suspended_at",
        "suspended_by_depth",
        "network",
    )
    inlines = [BillingInline]
    actions = [
        "mark_b2b",
        "unmark_b2b",
        "set_discount",
        "unfreeze_card_purchases",
        "suspend",
        "resume",
    ]

    @admin.display(description=_("network"))
    def network(self, obj: Account):
        """The whole network the account belongs to, from its top account: each account's
        level, its status, and this one in bold."""
        if obj.pk is None:
            return "-"
        rows = []
        for node in network_tree(account=obj):
            account = node.account
            url = reverse("admin:accounts_account_change", args=[account.pk])
            name = (
                format_html("<strong>{}</strong>", account.name)
                if account.pk == obj.pk
                else (account.name)
            )
            state = _("suspended") if account.suspended_at else _("active")
            rows.append(("\u2014 " * node.level, url, name, _("level"), account.depth, state))
        return format_html(
            '<ul class="network-tree">{}</ul>',
            format_html_join("", '<li>{}<a href="{}">{}</a> · {} {} · {}</li>', rows),
        )

    @admin.action(
        description=_("Suspend selected accounts (and their agents)"), permissions=["change"]
    )
    def suspend(self, request, queryset):
        # An account its parent suspended is taken over too: from then on only staff resume it.
        unheld = queryset.exclude(suspended_at__isnull=False, suspended_by_depth=STAFF_LEVEL)
        self._set_suspended(request, unheld, True)

    @admin.action(description=_("Resume selected accounts"), permissions=["change"])
    def resume(self, request, queryset):
        self._set_suspended(request, queryset.filter(suspended_at__isnull=False), False)

    def _set_suspended(self, request, queryset, suspended: bool):
        run_each(
            self,
            request,
            queryset.order_by("pk"),
            lambda account: staff.staff_account_set_suspended(
                account=account, suspended=suspended, actor=request.user
            ),
            done_message=ngettext_lazy(
                "%(count)d account changed.", "%(count)d accounts changed.", "count"
            ),
        )

    @admin.action(description=_("Mark selected accounts B2B"), permissions=["change"])
    def mark_b2b(self, request, queryset):
        self._set_b2b(request, queryset, True)

    @admin.action(description=_("Remove B2B from selected accounts"), permissions=["change"])
    def unmark_b2b(self, request, queryset):
        self._set_b2b(request, queryset, False)

    def _set_b2b(self, request, queryset, is_b2b: bool):
        run_each(
            self,
            request,
            queryset.exclude(is_b2b=is_b2b).order_by("pk"),
            lambda account: staff.staff_account_set_b2b(
                account=account, is_b2b=is_b2b, actor=request.user
            ),
            done_message=ngettext_lazy(
                "%(count)d account changed.", "%(count)d accounts changed.", "count"
            ),
        )

    @admin.action(description=_("Set discount of selected accounts"), permissions=["change"])
    def set_discount(self, request, queryset):
        def apply(data):
            run_each(
                self,
                request,
                queryset.order_by("pk"),
                lambda account: staff.staff_account_set_discount(
                    account=account,
                    discount_percent=data["discount_percent"],
                    actor=request.user,
                ),
                done_message=ngettext_lazy(
                    "Discount set on %(count)d account.",
                    "Discount set on %(count)d accounts.",
                    "count",
                ),
            )

        return form_action(
            self,
            request,
            queryset,
            form_class=DiscountForm,
            title=_("Set discount"),
            apply=apply,
        )

    @admin.action(
        description=_("Unfreeze card purchases of selected accounts (after review)"),
        permissions=["change"],
    )
    def unfreeze_card_purchases(self, request, queryset):
        run_each(
            self,
            request,
            queryset.order_by("pk"),
            lambda account: staff.staff_account_unfreeze_cards(account=account, actor=request.user),
            done_message=ngettext_lazy(
                "%(count)d account unfrozen.", "%(count)d accounts unfrozen.", "count"
            ),
        )


@admin.register(User)
class UserAdmin(BaseUserAdmin):
    ordering = ("email",)
    list_display = (
        "email",
        "first_name",
        "last_name",
        "account",
        "role",
        "is_staff",
        "is_active",
        "date_joined",
    )
    list_filter = ("is_staff", "is_active", "role", "account__is_b2b")
    search_fields = ("email", "first_name", "last_name", "public_id", "account__name")
    readonly_fields = ("public_id", "date_joined", "last_login")
    list_select_related = ("account",)
    fieldsets = (
        (None, {"fields": ("public_id", "email", "password", "account", "role")}),
        (_("Profile"), {"fields": ("first_name", "last_name", "phone", "language")}),
        (
            _("Permissions"),
            {"fields": ("is_active", "is_staff", "is_superuser", "groups", "user_permissions")},
        ),
        (_("Dates"), {"fields": ("last_login", "date_joined")}),
    )
    add_fieldsets = (
        (None, {"classes": ("wide",), "fields": ("email", "account", "password1", "password2")}),
    )


class ApiKeyStatusFilter(admin.SimpleListFilter):
    title = _("status")
    parameter_name = "status"

    def lookups(self, request, model_admin):
        return [("active", _("Active")), ("revoked", _("Revoked"))]

    def queryset(self, request, queryset):
        if self.value() == "active":
            return queryset.filter(revoked_at__isnull=True)
        if self.value() == "revoked":
            return queryset.filter(revoked_at__isnull=False)
        return queryset


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    """Staff see keys and may revoke them or override their limits; never a hash or plaintext.

    Keys are created on the profile dashboard or with the create_api_key command (the only
    places that can show the plaintext once), and never deleted, so a prefix is never reused.
    """

    list_display = (
        "name",
        "prefix",
        "account",
        "mode",
        "is_active",
        "created_at",
        "last_used_at",
        "revoked_at",
    )
    list_filter = ("mode", ApiKeyStatusFilter, "account__is_b2b")
    search_fields = ("name", "prefix", "public_id", "account__name", "user__email")
    list_select_related = ("account", "user")
    ordering = ("-created_at",)
    fields = (
        "public_id",
        "name",
        "prefix",
        "mode",
        "account",
        "user",
        "ip_whitelist",
        "rate_limit_per_minute",
        "max_units_per_request",
        "created_at",
        "last_used_at",
        "revoked_at",
        "revoked_by",
    )
    readonly_fields = (
        "public_id",
        "name",
        "prefix",
        "mode",
        "account",
        "user",
        "ip_whitelist",
        "created_at",
        "last_used_at",
        "revoked_at",
        "revoked_by",
    )
    actions = ["revoke_keys", "set_limits"]

    @admin.display(boolean=True, description=_("active"))
    def is_active(self, obj: ApiKey) -> bool:
        return obj.is_active

    def get_readonly_fields(self, request, obj=None):
        if obj is not None and not obj.is_active:
            return self.fields
        return self.readonly_fields

    def has_add_permission(self, request) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False

    def save_model(self, request, obj, form, change):
        if not obj.is_active:
            return  # a revoked key has nothing left to change
        if not {"rate_limit_per_minute", "max_units_per_request"} & set(form.changed_data):
            return
        current = ApiKey.objects.get(pk=obj.pk)
        staff.staff_api_key_set_limits(
            key=current,
            actor=request.user,
            rate_limit_per_minute=form.cleaned_data.get("rate_limit_per_minute"),
            max_units_per_request=form.cleaned_data.get("max_units_per_request"),
        )

    @admin.action(description=_("Revoke selected API keys"), permissions=["change"])
    def revoke_keys(self, request, queryset):
        run_each(
            self,
            request,
            queryset.filter(revoked_at__isnull=True).order_by("pk"),
            lambda key: staff.staff_api_key_revoke(key=key, actor=request.user),
            done_message=lambda count: (
                ngettext("%(count)d key revoked.", "%(count)d keys revoked.", count)
                % {"count": count}
            ),
        )

    @admin.action(description=_("Set limits of selected API keys"), permissions=["change"])
    def set_limits(self, request, queryset):
        def apply(data):
            run_each(
                self,
                request,
                queryset.filter(revoked_at__isnull=True).order_by("pk"),
                lambda key: staff.staff_api_key_set_limits(
                    key=key,
                    actor=request.user,
                    rate_limit_per_minute=data["rate_limit_per_minute"],
                    max_units_per_request=data["max_units_per_request"],
                ),
                done_message=ngettext_lazy(
                    "Limits set on %(count)d key.", "Limits set on %(count)d keys.", "count"
                ),
            )

        return form_action(
            self,
            request,
            queryset,
            form_class=LimitsForm,
            title=_("Set API key limits"),
            apply=apply,
        )


@admin.register(Invitation)
class InvitationAdmin(ReadOnlyAdmin):
    """Invitations to join an account (read-only; no token is kept, only its hash)."""

    list_display = ("email", "account", "role", "invited_by", "created_at", "accepted_at")
    search_fields = ("email", "account__name")
    list_select_related = ("account", "invited_by")
    fields = ("email", "account", "role", "invited_by", "created_at", "accepted_at")
