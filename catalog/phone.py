"""Recipient phone numbers: parse E.164 with a leading plus, check the country, find the operator.

Operator detection uses our own data first (``Operator.prefixes``, national-number prefixes
kept by staff), then the carrier name that the ``phonenumbers`` library gives the number's
range (``Operator.carrier_names``). Both describe the range a number was allocated from:
a number ported to another operator is detected as its original operator, and some countries
(Mexico, for one) publish no such data, so detection is a hint and never a refusal.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

import phonenumbers
from django.utils.translation import gettext as _
from phonenumbers import PhoneNumberType, carrier

from catalog.errors import InvalidPhoneNumber, PhoneCountryMismatch
from catalog.models import Operator, Product

# After the leading plus: digits, with spaces, dots, hyphens or brackets as separators.
_ALLOWED = re.compile(r"^\+[0-9][0-9 ().\-]*$")
_MOBILE_TYPES = {PhoneNumberType.MOBILE, PhoneNumberType.FIXED_LINE_OR_MOBILE}
MAX_LENGTH = 32


@dataclass(frozen=True)
class PhoneNumber:
    e164: str  # "+5215512345678" style, digits only after the plus
    country: str  # ISO 3166-1 alpha-2 of the number, e.g. "MX"
    calling_code: int  # 52
    national_number: str  # the digits after the calling code
    carrier: str  # the phonenumbers carrier name of the range ("" when unknown)

    def __str__(self) -> str:
        return self.e164


def phone_parse(
    raw: str, *, field: str = "recipientNumber", mobile_only: bool = True
) -> PhoneNumber:
    """Parse a mobile number in international format; raise ``InvalidPhoneNumber``.

    Refused: no leading plus, letters (phonenumbers would read ``+1 800 FLOWERS``),
    invalid or unassigned numbers, and numbers that are not mobile (unless not
    ``mobile_only``: a sender's number may be a landline).
    """
    value = (raw or "").strip() if isinstance(raw, str) else ""
    if not value:
        raise InvalidPhoneNumber(_("Enter a phone number."), field=field)
    if len(value) > MAX_LENGTH:
        raise InvalidPhoneNumber(_("This phone number is too long."), field=field)
    if not value.startswith("+"):
        raise InvalidPhoneNumber(
            _(
                "Enter the number in international format: a plus sign, the country "
                "calling code and the number, e.g. +52 55 1234 5678."
            ),
            field=field,
        )
    if not _ALLOWED.match(value):
        raise InvalidPhoneNumber(
            _("A phone number contains only digits after the plus sign."), field=field
        )
    try:
        number = phonenumbers.parse(value, None)
    except phonenumbers.NumberParseException as exc:
        raise InvalidPhoneNumber(_("This is not a valid phone number."), field=field) from exc
    if not phonenumbers.is_valid_number(number):
        raise InvalidPhoneNumber(_("This is not a valid phone number."), field=field)
    if mobile_only and phonenumbers.number_type(number) not in _MOBILE_TYPES:
        raise InvalidPhoneNumber(_("This is not a mobile phone number."), field=field)
    return PhoneNumber(
        e164=phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.E164),
        country=phonenumbers.region_code_for_number(number),  # type: ignore[arg-type]
        calling_code=number.country_code,  # type: ignore[arg-type]
        national_number=phonenumbers.national_significant_number(number),
        carrier=carrier.name_for_number(number, "en") or "",
    )


def phone_international(raw: str, *, region: str) -> str:
    """A number typed the local way in ``region`` ("55 1234 5678", "0803 123 4567" in NG) in
    international format; unchanged when it already starts with a plus, has letters, or
    cannot be read. The home page's country picker sends the region."""
    value = (raw or "").strip()
    if not value or value.startswith("+") or not region or len(value) > MAX_LENGTH:
        return value
    if not re.fullmatch(r"[0-9 ().\-]+", value):
        return value
    try:
        number = phonenumbers.parse(value, region.upper())
    except phonenumbers.NumberParseException:
        return value
    return phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.E164)


def phone_check_country(
    *, phone: PhoneNumber, country_code: str, field: str = "recipientNumber"
) -> None:
    """Raise ``PhoneCountryMismatch`` unless the number belongs to the given country."""
    if phone.country != country_code.upper():
        raise PhoneCountryMismatch(
            _("This number is from %(number_country)s, but the product is for %(country)s.")
            % {"number_country": phone.country, "country": country_code.upper()},
            field=field,
        )


def recipient_validate(
    *, number: str, product: Product, field: str = "recipientNumber"
) -> PhoneNumber:
    """Parse a recipient number and check that it is in the product's country.

    Raises ``InvalidPhoneNumber`` or ``PhoneCountryMismatch`` (both ``PhoneNumberError``).
    The operator is not checked: numbers move between operators (portability).
    """
    phone = phone_parse(number, field=field)
    phone_check_country(phone=phone, country_code=product.country_id, field=field)
    return phone


def operator_detect(
    *, phone: PhoneNumber, operators: Iterable[Operator] | None = None
) -> list[Operator]:
    """The operators a number belongs to (usually one; empty when unknown).

    ``operators`` defaults to the active operators of the number's country (one query).
    The longest matching ``prefixes`` entry wins; without one, the ``carrier_names``.
    """
    if operators is None:
        operators = Operator.objects.filter(country_id=phone.country, active=True)
    candidates = [op for op in operators if op.country_id == phone.country]
    best_length, by_prefix = 0, []
    for op in candidates:
        length = max(
            (len(p) for p in op.prefixes or [] if phone.national_number.startswith(p)), default=0
        )
        if length > best_length:
            best_length, by_prefix = length, [op]
        elif length and length == best_length:
            by_prefix.append(op)
    if by_prefix:
        return by_prefix
    name = phone.carrier.casefold().strip()
    if not name:
        return []
    return [
        op for op in candidates if name in {n.casefold().strip() for n in op.carrier_names or []}
    ]


def number_display(number: str) -> str:
    """A number as people write it, in international form (``+525512345601`` →
    ``+52 55 1234 5601``); anything that does not parse, as it is."""
    try:
        parsed = phonenumbers.parse(str(number), None)
    except phonenumbers.NumberParseException:
        return number
    return phonenumbers.format_number(parsed, phonenumbers.PhoneNumberFormat.INTERNATIONAL)
