"""Users log in with their email; each belongs to an account that owns wallets, keys and orders."""

from __future__ import annotations

from decimal import Decimal

from django.contrib.auth.models import AbstractBaseUser, BaseUserManager, PermissionsMixin
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models.functions import Lower
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from reseller.ids import make_id

LANGUAGE_CHOICES = [("en", "English"), ("es", "Español"), ("fr", "Français")]


def new_account_id() -> str:
    return make_id("acc")


def new_user_id() -> str:
    return make_id("usr")


class Account(models.Model):
    public_id = models.CharField(max_length=40, unique=True, default=new_account_id, editable=False)
    name = models.CharField(_("name"), max_length=200)
    is_b2b = models.BooleanField(
        _("B2B"), default=False, help_text=_("May use the B2B recharge API with its keys.")
    )
    wallet_currency = models.CharField(_("wallet currency"), max_length=3, default="EUR")
    discount_percent = models.DecimalField(
        _("discount percent"),
        max_digits=5,
        decimal_places=2,
        default=Decimal("0.00"),
        validators=[MinValueValidator(Decimal("0")), MaxValueValidator(Decimal("100"))],
    )
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=models.Q(discount_percent__gte=0) & models.Q(discount_percent__lte=100),
                name="account_discount_percent_0_100",
            )
        ]

    def __str__(self) -> str:
        return self.name


class BillingProfile(models.Model):
    account = models.OneToOneField(
        Account, on_delete=models.CASCADE, primary_key=True, related_name="billing"
    )
    company_name = models.CharField(_("company name"), max_length=200, blank=True)
    vat_number = models.CharField(_("VAT number"), max_length=40, blank=True)
    address_line1 = models.CharField(_("address line 1"), max_length=200, blank=True)
    address_line2 = models.CharField(_("address line 2"), max_length=200, blank=True)
    city = models.CharField(_("city"), max_length=100, blank=True)
    postal_code = models.CharField(_("postal code"), max_length=20, blank=True)
    country = models.CharField(_("country"), max_length=2, blank=True, help_text="ISO 3166-1")

    def __str__(self) -> str:
        return f"Billing of {self.account}"


class UserManager(BaseUserManager["User"]):
    use_in_migrations = True

    def get_by_natural_key(self, username: str) -> User:
        return self.get(email__iexact=username)

    def create_user(self, email: str, password: str | None = None, **extra) -> User:
        from accounts.services import user_create

        return user_create(email=email, password=password, **extra)

    def create_superuser(self, email: str, password: str | None = None, **extra) -> User:
        from accounts.services import user_create

        extra.pop("is_staff", None)
        extra.pop("is_superuser", None)
        return user_create(
            email=email, password=password, is_staff=True, is_superuser=True, **extra
        )


class User(AbstractBaseUser, PermissionsMixin):
    public_id = models.CharField(max_length=40, unique=True, default=new_user_id, editable=False)
    email = models.EmailField(_("email"), max_length=254, unique=True)
    first_name = models.CharField(_("first name"), max_length=150, blank=True)
    last_name = models.CharField(_("last name"), max_length=150, blank=True)
    phone = models.CharField(_("phone"), max_length=20, blank=True)
    language = models.CharField(_("language"), max_length=5, choices=LANGUAGE_CHOICES, default="en")
    account = models.ForeignKey(Account, on_delete=models.PROTECT, related_name="users")
    is_staff = models.BooleanField(_("staff"), default=False)
    is_active = models.BooleanField(_("active"), default=True)
    date_joined = models.DateTimeField(default=timezone.now, editable=False)

    objects = UserManager()

    USERNAME_FIELD = "email"
    EMAIL_FIELD = "email"
    REQUIRED_FIELDS: list[str] = []

    class Meta:
        constraints = [models.UniqueConstraint(Lower("email"), name="user_email_ci_unique")]

    def __str__(self) -> str:
        return self.email

    def get_full_name(self) -> str:
        return f"{self.first_name} {self.last_name}".strip() or self.email

    def get_short_name(self) -> str:
        return self.first_name or self.email
