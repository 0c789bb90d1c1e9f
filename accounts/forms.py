from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth import password_validation
from django.contrib.auth.forms import AuthenticationForm
from django.http import HttpRequest
from django.utils.translation import gettext_lazy as _
from django_otp.admin import OTPAdminAuthenticationForm

from accounts import keys
from accounts.errors import AccountSuspended
from accounts.models import ApiKey, BillingProfile, User
from accounts.serializers import validate_phone
from accounts.services import (
    BILLING_FIELDS,
    login_rate_check,
    normalise_email,
    second_factor_device,
)
from accounts.suspension import account_suspended
from reseller.errors import RateLimited
from reseller.net import client_ip


class SignupForm(forms.Form):
    email = forms.EmailField(label=_("Email"), max_length=254)
    first_name = forms.CharField(label=_("First name"), max_length=150, required=False)
    last_name = forms.CharField(label=_("Last name"), max_length=150, required=False)
    account_name = forms.CharField(
        label=_("Company or account name"),
        max_length=200,
        required=False,
        help_text=_("Optional. Resellers usually put their company name."),
    )
    password1 = forms.CharField(label=_("Password"), widget=forms.PasswordInput, strip=False)
    password2 = forms.CharField(label=_("Password again"), widget=forms.PasswordInput, strip=False)

    def clean_email(self) -> str:
        # Whether the address has an account is never said here: the email tells its owner.
        return normalise_email(self.cleaned_data["email"])

    def clean(self):
        data = super().clean()
        if data.get("password1") != data.get("password2"):
            self.add_error("password2", _("The two passwords differ."))
        elif data.get("password1"):
            probe = User(email=data.get("email", ""), first_name=data.get("first_name", ""))
            try:
                password_validation.validate_password(data["password1"], probe)
            except forms.ValidationError as exc:
                self.add_error("password1", exc)
        return data


class RateLimitedLogin:
    """The login limits (per address and per email) for a Django login form: every login door
    (the site, the API, the admin) counts and refuses the same way."""

    request: HttpRequest | None
    data: Any

    def clean(self):
        email = self.data.get("username", "")
        try:
            login_rate_check(address=client_ip(self.request), email=email)
        except RateLimited as exc:
            raise forms.ValidationError(exc.detail, code="rate_limited") from exc
        return super().clean()


class EmailLoginForm(RateLimitedLogin, AuthenticationForm):
    username = forms.EmailField(
        label=_("Email"), widget=forms.EmailInput(attrs={"autofocus": True})
    )

    def confirm_login_allowed(self, user):
        super().confirm_login_allowed(user)
        if account_suspended(user.account):  # its people log in again once it is resumed
            raise forms.ValidationError(AccountSuspended.default_detail, code="account_suspended")


class AdminLoginForm(RateLimitedLogin, OTPAdminAuthenticationForm):
    """The admin's login: limited like the site's, and staff give their second factor (the
    authenticator's code, or a recovery code, in ``otp_token``).

    One code field and plain messages: no device list to choose from (the code's shape says
    which device it is for), no "challenge" button, and the password is never written back
    into the page after a wrong code.
    """

    otp_device = None
    otp_challenge = None
    otp_token = forms.CharField(
        label=_("Authentication code"),
        required=False,
        max_length=32,
        help_text=_("The 6-digit code of your authenticator app, or one of your recovery codes."),
        widget=forms.TextInput(attrs={"autocomplete": "one-time-code", "spellcheck": "false"}),
    )
    otp_error_messages = {
        **OTPAdminAuthenticationForm.otp_error_messages,
        "token_required": _(
            "Enter the 6-digit code of your authenticator app (or a recovery code)."
        ),
        "invalid_token": _(
            "That code is not right. Enter the code your authenticator app shows now, or a "
            "recovery code."
        ),
        "n_failed_attempts": _("Too many wrong codes. Wait a moment, then try again."),
        "verification_not_allowed": _("Too many wrong codes. Wait a moment, then try again."),
    }

    def _verify_token(self, user, token, device=None):
        device = second_factor_device(user=user, code=token)
        if device is None:
            raise forms.ValidationError(
                self.otp_error_messages["invalid_token"], code="invalid_token"
            )
        return super()._verify_token(user, token.strip(), device)

    def _update_form(self, user):
        """django-otp fills a device dropdown and echoes the password here: neither; the
        wrong code is cleared for the next one."""
        if self.is_bound and self.data.get("otp_token"):
            self.data = self.data.copy()
            self.data["otp_token"] = ""


class ProfileForm(forms.ModelForm):
    class Meta:
        model = User
        fields = ["first_name", "last_name", "phone", "language"]
        help_texts = {"phone": _("International format, e.g. +34600123456.")}

    def clean_phone(self) -> str:
        from rest_framework.exceptions import ValidationError as DRFValidationError

        try:
            return validate_phone(self.cleaned_data.get("phone", ""))
        except DRFValidationError as exc:
            raise forms.ValidationError(exc.detail[0]) from exc  # type: ignore[index]


class AccountNameForm(forms.Form):
    account_name = forms.CharField(label=_("Account name"), max_length=200)


class BillingForm(forms.ModelForm):
    class Meta:
        model = BillingProfile
        fields = list(BILLING_FIELDS)


class IpWhitelistField(forms.CharField):
    """Addresses typed one per line (or separated by commas); cleans to a normalised list."""

    widget = forms.Textarea(attrs={"rows": 3, "spellcheck": "false", "autocapitalize": "off"})

    def __init__(self, **kwargs):
        kwargs.setdefault("required", False)
        kwargs.setdefault("label", _("IP whitelist"))
        kwargs.setdefault(
            "help_text",
            _(
                "Exact IPv4 or IPv6 addresses, one per line. Leave empty to accept requests "
                "from any address."
            ),
        )
        super().__init__(**kwargs)

    def prepare_value(self, value):
        if isinstance(value, list | tuple):
            return "\n".join(value)
        return value

    def to_python(self, value) -> list[str]:  # type: ignore[override]
        return keys.split_whitelist(super().to_python(value) or "")

    def validate(self, value) -> None:
        if self.required and not value:
            raise forms.ValidationError(self.error_messages["required"], code="required")

    def clean(self, value) -> list[str]:
        return keys.normalise_whitelist(super().clean(value))


class ApiKeyCreateForm(forms.Form):
    name = forms.CharField(
        label=_("Name"),
        max_length=ApiKey._meta.get_field("name").max_length,
        help_text=_("Which integration or environment uses it, e.g. “Shop staging”."),
    )
    mode = forms.ChoiceField(
        label=_("Mode"),
        choices=[("test", _("Test")), ("live", _("Live"))],
        initial="test",
        help_text=_(
            "Test keys use a sandbox balance and never send a real recharge. Live keys send "
            "real recharges, paid from your wallet."
        ),
    )
    ip_whitelist = IpWhitelistField()
    # One-time token of this form, so a reload of the result page cannot create a second key.
    form_token = forms.CharField(widget=forms.HiddenInput)


class ApiKeyWhitelistForm(forms.Form):
    ip_whitelist = IpWhitelistField()


class EmailChangeForm(forms.Form):
    """A new address for the account, with the current password (a stolen session alone
    cannot move the account away)."""

    email = forms.EmailField(label=_("New email"), max_length=254)
    password = forms.CharField(label=_("Current password"), widget=forms.PasswordInput, strip=False)

    def __init__(self, *args, user: User, **kwargs):
        super().__init__(*args, **kwargs)
        self.user = user

    def clean_email(self) -> str:
        email = normalise_email(self.cleaned_data["email"])
        if email == self.user.email:
            raise forms.ValidationError(_("This is already your email."))
        return email

    def clean_password(self) -> str:
        password = self.cleaned_data["password"]
        if not self.user.check_password(password):
            raise forms.ValidationError(_("The password is not right."))
        return password


ROLE_CHOICES = [
    ("owner", _("Owner: everything, and the team")),
    ("developer", _("Developer: API keys, webhooks and logs; no money")),
    ("finance", _("Finance: wallet, statements and payments; no keys")),
]


class InviteForm(forms.Form):
    email = forms.EmailField(label=_("Email"), max_length=254)
    # One choice a line with all its words (a dropdown cut "Developer: API keys, webhooks an…").
    role = forms.ChoiceField(
        label=_("Role"), choices=ROLE_CHOICES, initial="developer", widget=forms.RadioSelect
    )


class InvitationAcceptForm(forms.Form):
    first_name = forms.CharField(label=_("First name"), max_length=150, required=False)
    last_name = forms.CharField(label=_("Last name"), max_length=150, required=False)
    password1 = forms.CharField(label=_("Password"), widget=forms.PasswordInput, strip=False)
    password2 = forms.CharField(label=_("Password again"), widget=forms.PasswordInput, strip=False)

    def __init__(self, *args, email: str = "", **kwargs):
        super().__init__(*args, **kwargs)
        self.email = email

    def clean(self):
        data = super().clean()
        if data.get("password1") != data.get("password2"):
            self.add_error("password2", _("The two passwords differ."))
        elif data.get("password1"):
            probe = User(email=self.email, first_name=data.get("first_name", ""))
            try:
                password_validation.validate_password(data["password1"], probe)
            except forms.ValidationError as exc:
                self.add_error("password1", exc)
        return data
