from django.contrib import admin
from django.contrib.auth.admin import UserAdmin as BaseUserAdmin
from django.utils.translation import gettext_lazy as _

from accounts.models import Account, BillingProfile, User


class BillingInline(admin.StackedInline):
    model = BillingProfile
    can_delete = False


@admin.register(Account)
class AccountAdmin(admin.ModelAdmin):
    list_display = (
        "name",
        "public_id",
        "is_b2b",
        "wallet_currency",
        "discount_percent",
        "created_at",
    )
    list_filter = ("is_b2b", "wallet_currency")
    search_fields = ("name", "public_id", "users__email")
    readonly_fields = ("public_id", "created_at")
    inlines = [BillingInline]


@admin.register(User)
class UserAdmin(BaseUserAdmin):
    ordering = ("email",)
    list_display = (
        "email",
        "first_name",
        "last_name",
        "account",
        "is_staff",
        "is_active",
        "date_joined",
    )
    list_filter = ("is_staff", "is_active", "account__is_b2b")
    search_fields = ("email", "first_name", "last_name", "public_id", "account__name")
    readonly_fields = ("public_id", "date_joined", "last_login")
    list_select_related = ("account",)
    fieldsets = (
        (None, {"fields": ("public_id", "email", "password", "account")}),
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
