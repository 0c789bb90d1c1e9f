"""Users log in with their email; each belongs to an account that owns wallets, keys and orders."""

from __future__ import annotations

from decimal import Decimal

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser, BaseUserManager, PermissionsMixin
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models.functions import Lower
from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from django_countries.fields import CountryField

from reseller.ids import make_id

LANGUAGE_CHOICES = [("en", "English"), ("es", "Español"), ("fr", "Français")]


def new_account_id() -> str:
    return make_id("acc")


def new_user_id() -> str:
    return make_id("usr")


class Account(models.Model):
    public_id = models.CharField(
        _("public ID"), max_length=40, unique=True, default=new_account_id, editable=False
    )
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
    # Reseller networks (contract section 18): an agent's parent (None: a top account), its
    # level (a top account is 1, NETWORK_MAX_DEPTH at most), when it was suspended (its and
    # its descendants' keys and sessions are refused while set) and by whom: the level of the
    # ancestor that suspended it, 0 for staff (None: before this was recorded). Only that
    # level or one above it resumes the account, so a parent never lifts a suspension its
    # own parent, or staff, made.
    parent = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="agents",
        verbose_name=_("parent"),
    )
    depth = models.PositiveSmallIntegerField(_("level"), default=1)
    suspended_at = models.DateTimeField(_("suspended"), null=True, blank=True)
    suspended_by_depth = models.PositiveSmallIntegerField(
        _("suspended by level"),
        null=True,
        blank=True,
        help_text=_("0: staff; otherwise the level of the account that suspended it."),
    )
    created_at = models.DateTimeField(_("created at"), default=timezone.now, editable=False)

    class Meta:
        verbose_name = _("account")
        verbose_name_plural = _("accounts")
        constraints = [
            models.CheckConstraint(
                condition=models.Q(discount_percent__gte=0) & models.Q(discount_percent__lte=100),
                name="account_discount_percent_0_100",
            ),
            models.CheckConstraint(
                condition=models.Q(parent__isnull=True, depth=1)
                | models.Q(parent__isnull=False, depth__gt=1),
                name="account_depth_follows_parent",
            ),
        ]

    def __str__(self) -> str:
        return self.name


class BillingProfile(models.Model):
    account = models.OneToOneField(
        Account,
        on_delete=models.CASCADE,
        primary_key=True,
        related_name="billing",
        verbose_name=_("account"),
    )
    company_name = models.CharField(_("company name"), max_length=200, blank=True)
    vat_number = models.CharField(_("VAT number"), max_length=40, blank=True)
    address_line1 = models.CharField(_("address line 1"), max_length=200, blank=True)
    address_line2 = models.CharField(_("address line 2"), max_length=200, blank=True)
    city = models.CharField(_("city"), max_length=100, blank=True)
    postal_code = models.CharField(_("postal code"), max_length=20, blank=True)
    country = CountryField(_("country"), blank=True, help_text=_("ISO 3166-1 alpha-2"))

    class Meta:
        verbose_name = _("billing profile")
        verbose_name_plural = _("billing profiles")

    def __str__(self) -> str:
        return f"Billing of {self.account}"


class UserManager(BaseUserManager["User"]):
    use_in_migrations = True

    def get_by_natural_key(self, username: str) -> User:  # type: ignore[override]
        return self.get(email__iexact=username)

    def create_user(
        self,
        email: str,
        password: str | None = None,
        *,
        account_name: str | None = None,
        is_b2b: bool = False,
        **extra,
    ) -> User:
        """A user with its own account and empty billing profile: every user has both.

        ``accounts.services.user_create`` adds the checks (email taken, password rules).
        A ``None`` password makes the user unable to log in with one.
        """
        account = Account.objects.create(name=account_name or email, is_b2b=is_b2b)
        BillingProfile.objects.create(account=account)
        user = self.model(email=email, account=account, **extra)
        user.set_password(password)
        user.save(using=self._db)
        return user

    def create_superuser(self, email: str, password: str | None = None, **extra) -> User:
        extra.update(is_staff=True, is_superuser=True)
        return self.create_user(email, password, **extra)


class User(AbstractBaseUser, PermissionsMixin):
    public_id = models.CharField(
        _("public ID"), max_length=40, unique=True, default=new_user_id, editable=False
    )
    email = models.EmailField(_("email"), max_length=254, unique=True)
    first_name = models.CharField(_("first name"), max_length=150, blank=True)
    last_name = models.CharField(_("last name"), max_length=150, blank=True)
    phone = models.CharField(_("phone"), max_length=20, blank=True)
    language = models.CharField(_("language"), max_length=5, choices=LANGUAGE_CHOICES, default="en")
    account = models.ForeignKey(
        Account, on_delete=models.PROTECT, related_name="users", verbose_name=_("account")
    )
    # What this member may do in the account (accounts/roles.py): the owner everything, a
    # developer keys, webhooks and logs but no money, finance the money but no keys.
    role = models.CharField(
        _("role"),
        max_length=12,
        choices=[
            ("owner", _("Owner")),
            ("developer", _("Developer")),
            ("finance", _("Finance")),
        ],
        default="owner",
    )
    is_staff = models.BooleanField(_("staff"), default=False)
    is_active = models.BooleanField(_("active"), default=True)
    date_joined = models.DateTimeField(_("date joined"), default=timezone.now, editable=False)

    objects = UserManager()

    USERNAME_FIELD = "email"
    EMAIL_FIELD = "email"
    REQUIRED_FIELDS: list[str] = []  # type: ignore[misc]

    class Meta:
        verbose_name = _("user")
        verbose_name_plural = _("users")
        constraints = [models.UniqueConstraint(Lower("email"), name="user_email_ci_unique")]

    def __str__(self) -> str:
        return self.email

    def get_full_name(self) -> str:
        return f"{self.first_name} {self.last_name}".strip() or self.email

    def get_short_name(self) -> str:
        return self.first_name or self.email


def new_api_key_id() -> str:
    return make_id("key")


class ApiKey(models.Model):
    """A server-to-server credential of an account (docs/contract.md §3).

    Only the SHA-256 of the plaintext is stored, with the visible ``prefix`` used to show and
    find the key. Requests made with the key act as ``user`` (who created it) on ``account``.
    A revoked key stays revoked: nothing sets ``revoked_at`` back to null.
    """

    class Mode(models.TextChoices):
        LIVE = "live", _("live")
        TEST = "test", _("test")

    public_id = models.CharField(
        _("public ID"), max_length=40, unique=True, default=new_api_key_id, editable=False
    )
    account = models.ForeignKey(
        Account, on_delete=models.PROTECT, related_name="api_keys", verbose_name=_("account")
    )
    user = models.ForeignKey(
        User,
        on_delete=models.PROTECT,
        related_name="api_keys",
        verbose_name=_("created by"),
        help_text=_("Requests made with the key act as this user."),
    )
    name = models.CharField(_("name"), max_length=100)
    mode = models.CharField(_("mode"), max_length=4, choices=Mode.choices)
    prefix = models.CharField(_("prefix"), max_length=32, unique=True, editable=False)
    secret_hash = models.CharField(_("secret hash"), max_length=64, unique=True, editable=False)
    ip_whitelist = models.JSONField(
        _("IP whitelist"),
        default=list,
        blank=True,
        help_text=_("Exact IPv4/IPv6 addresses; empty means any address."),
    )
    rate_limit_per_minute = models.PositiveIntegerField(
        _("requests per minute"),
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text=_("Empty: the default (API_KEY_RATE_LIMIT_PER_MINUTE)."),
    )
    max_units_per_request = models.PositiveIntegerField(
        _("units per request"),
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text=_("Empty: the default of the key's mode (100 live, 20 test)."),
    )
    created_at = models.DateTimeField(_("created"), default=timezone.now, editable=False)
    last_used_at = models.DateTimeField(_("last used"), null=True, blank=True, editable=False)
    revoked_at = models.DateTimeField(_("revoked"), null=True, blank=True, editable=False)
    revoked_by = models.ForeignKey(
        User,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        editable=False,
        related_name="+",
        verbose_name=_("revoked by"),
    )

    class Meta:
        verbose_name = _("API key")
        verbose_name_plural = _("API keys")
        indexes = [models.Index(fields=["account", "-created_at"], name="apikey_account_created")]
        constraints = [
            models.CheckConstraint(
                condition=(
                    models.Q(mode="live", prefix__startswith="rsl_live_")
                    | models.Q(mode="test", prefix__startswith="rsl_test_")
                ),
                name="apikey_prefix_matches_mode",
            ),
            models.CheckConstraint(
                condition=models.Q(rate_limit_per_minute__isnull=True)
                | models.Q(rate_limit_per_minute__gte=1),
                name="apikey_rate_limit_positive",
            ),
            models.CheckConstraint(
                condition=models.Q(max_units_per_request__isnull=True)
                | models.Q(max_units_per_request__gte=1),
                name="apikey_units_positive",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None

    @property
    def livemode(self) -> bool:
        return self.mode == self.Mode.LIVE

    @property
    def requests_per_minute(self) -> int:
        return self.rate_limit_per_minute or settings.API_KEY_RATE_LIMIT_PER_MINUTE

    @property
    def units_per_request(self) -> int:
        if self.max_units_per_request:
            return self.max_units_per_request
        if self.livemode:
            return settings.API_KEY_UNITS_PER_REQUEST_LIVE
        return settings.API_KEY_UNITS_PER_REQUEST_TEST


class SignupRequest(models.Model):
    """A sign-up waiting for its email address to be confirmed (docs/contract.md §12).

    The account is created only when the link is opened, so an address nobody confirmed never
    holds an account, and sign-up answers the same whether or not the address has one. Only a
    hash of the link's token is kept; the password is kept hashed, as a user's is.
    """

    email = models.EmailField(_("email"), max_length=254, db_index=True)
    password = models.CharField(_("password"), max_length=128)
    first_name = models.CharField(_("first name"), max_length=150, blank=True)
    last_name = models.CharField(_("last name"), max_length=150, blank=True)
    account_name = models.CharField(_("account name"), max_length=200, blank=True)
    language = models.CharField(_("language"), max_length=5, default="en")
    token_hash = models.CharField(_("token hash"), max_length=64, unique=True)
    created_at = models.DateTimeField(_("created at"), default=timezone.now, db_index=True)

    class Meta:
        verbose_name = _("sign-up request")
        verbose_name_plural = _("sign-up requests")

    def __str__(self) -> str:
        return self.email


class Invitation(models.Model):
    """An invitation to join an account with a role, sent by email; works once, for 7 days.
    Only a hash of the link's token is kept."""

    account = models.ForeignKey(
        Account, on_delete=models.CASCADE, related_name="invitations", verbose_name=_("account")
    )
    email = models.EmailField(_("email"), max_length=254)
    role = models.CharField(_("role"), max_length=12)
    token_hash = models.CharField(_("token hash"), max_length=64, unique=True)
    invited_by = models.ForeignKey(
        User,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        verbose_name=_("invited by"),
    )
    created_at = models.DateTimeField(_("created at"), default=timezone.now)
    accepted_at = models.DateTimeField(_("accepted at"), null=True, blank=True)

    class Meta:
        verbose_name = _("invitation")
        verbose_name_plural = _("invitations")

    def __str__(self) -> str:
        return f"{self.email} ({self.role})"
