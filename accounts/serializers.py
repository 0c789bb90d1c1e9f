from __future__ import annotations

import phonenumbers
from django.utils.translation import gettext_lazy as _
from django_countries import countries
from rest_framework import serializers

from accounts.models import LANGUAGE_CHOICES
from reseller.api import StrictSerializer


class UserOut(serializers.Serializer):
    id = serializers.CharField(source="public_id")
    email = serializers.EmailField()
    first_name = serializers.CharField()
    last_name = serializers.CharField()
    phone = serializers.CharField()
    language = serializers.CharField()
    is_staff = serializers.BooleanField()


class AccountOut(serializers.Serializer):
    id = serializers.CharField(source="public_id")
    name = serializers.CharField()
    is_b2b = serializers.BooleanField()
    wallet_currency = serializers.CharField()
    discount_percent = serializers.DecimalField(max_digits=5, decimal_places=2)


class BillingOut(serializers.Serializer):
    company_name = serializers.CharField()
    vat_number = serializers.CharField()
    address_line1 = serializers.CharField()
    address_line2 = serializers.CharField()
    city = serializers.CharField()
    postal_code = serializers.CharField()
    country = serializers.CharField()


class ApiKeyOut(serializers.Serializer):
    """The public data of a key; never its hash or plaintext."""

    name = serializers.CharField()
    prefix = serializers.CharField(
        help_text="The visible start of the key, e.g. rsl_test_AbCd1234."
    )
    mode = serializers.ChoiceField(choices=["live", "test"])
    ip_whitelist = serializers.ListField(
        child=serializers.CharField(), help_text="Exact addresses; empty means any address."
    )
    created_at = serializers.DateTimeField()
    last_used_at = serializers.DateTimeField(
        allow_null=True, help_text="Updated at most once a minute."
    )


class MeOut(serializers.Serializer):
    user = UserOut(source="*")
    account = AccountOut()
    billing = BillingOut(source="account.billing")
    # Filled in by the view, and only when the caller used an API key.
    api_key = ApiKeyOut(required=False, help_text="Present only when called with an API key.")


def validate_phone(value: str) -> str:
    if not value:
        return value
    try:
        number = phonenumbers.parse(value, None)
    except phonenumbers.NumberParseException as exc:
        raise serializers.ValidationError(
            _("Enter the number in international format with a leading plus sign."),
            code="invalid_phone_number",
        ) from exc
    if not phonenumbers.is_valid_number(number):
        raise serializers.ValidationError(
            _("This phone number is not valid."), code="invalid_phone_number"
        )
    return phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.E164)


class UserIn(StrictSerializer):
    first_name = serializers.CharField(max_length=150, required=False, allow_blank=True)
    last_name = serializers.CharField(max_length=150, required=False, allow_blank=True)
    phone = serializers.CharField(max_length=20, required=False, allow_blank=True)
    language = serializers.ChoiceField(choices=[c for c, _n in LANGUAGE_CHOICES], required=False)

    def validate_phone(self, value: str) -> str:
        return validate_phone(value)


class AccountIn(StrictSerializer):
    name = serializers.CharField(max_length=200, required=False)


def validate_country(value: str) -> str:
    """An ISO 3166-1 alpha-2 code of a real country (any case): "ES", not "SP" nor "XX"."""
    value = value.upper()
    if value and value not in countries:
        raise serializers.ValidationError(
            _("Use an ISO 3166-1 alpha-2 code such as ES."), code="invalid_country"
        )
    return value


class BillingIn(StrictSerializer):
    company_name = serializers.CharField(max_length=200, required=False, allow_blank=True)
    vat_number = serializers.CharField(max_length=40, required=False, allow_blank=True)
    address_line1 = serializers.CharField(max_length=200, required=False, allow_blank=True)
    address_line2 = serializers.CharField(max_length=200, required=False, allow_blank=True)
    city = serializers.CharField(max_length=100, required=False, allow_blank=True)
    postal_code = serializers.CharField(max_length=20, required=False, allow_blank=True)
    country = serializers.CharField(max_length=2, required=False, allow_blank=True)

    def validate_country(self, value: str) -> str:
        return validate_country(value)


class MeIn(StrictSerializer):
    user = UserIn(required=False)
    account = AccountIn(required=False)
    billing = BillingIn(required=False)


class LoginIn(StrictSerializer):
    email = serializers.CharField(max_length=254)
    password = serializers.CharField(max_length=1024, trim_whitespace=False)
    otp = serializers.CharField(
        max_length=32,
        required=False,
        default="",
        help_text="Staff only: the 6-digit code of the authenticator app, or a recovery code.",
    )


class LoginOut(serializers.Serializer):
    access = serializers.CharField()
    refresh = serializers.CharField()
    user = UserOut()


class RefreshIn(StrictSerializer):
    refresh = serializers.CharField()


class RefreshOut(serializers.Serializer):
    access = serializers.CharField()
    refresh = serializers.CharField()
