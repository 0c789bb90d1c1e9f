"""The extra fields a sale may need (contract section 17, "Extra fields").

Some providers need more than the recipient's number: Reloadly the sender's phone, and the
recipient's email for Nauta Cuba; DT One the sender's and beneficiary's names and numbers
its product lists as required; Ding the settings a product marks mandatory. A product lists
them as ``required_fields`` (from ``FIELD_NAMES``), an order line carries them as ``fields``
(``{"senderPhone": "+1…"}``), and ``fields_check`` says what is wrong with a line's fields:
one missing is ``missing_field``, one malformed or unknown ``invalid_field``. The clean
values travel with the recharge to its provider, under the provider's own names (its
adapter), and are shown back to the buyer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from catalog.errors import InvalidPhoneNumber
from catalog.models import EXTRA_FIELDS
from catalog.phone import phone_parse

SENDER_NAME, SENDER_PHONE, RECIPIENT_EMAIL, RECIPIENT_NAME = EXTRA_FIELDS
FIELD_NAMES = EXTRA_FIELDS
NAME_MAX = 100
EMAIL_MAX = 254


@dataclass(frozen=True)
class FieldError:
    field: str  # the field's wire name, e.g. "senderPhone"
    code: str  # "missing_field" or "invalid_field"
    message: str


def _name(value: str) -> str | None:
    text = " ".join(value.split())
    if not text or len(text) > NAME_MAX or any(ord(c) < 32 for c in value):
        return None
    return text


def _phone(value: str) -> str | None:
    """A phone number in international format (any line type: a sender may call from a
    landline), as E.164."""
    try:
        return phone_parse(value, mobile_only=False).e164
    except InvalidPhoneNumber:
        return None


def _email(value: str) -> str | None:
    text = value.strip()
    if len(text) > EMAIL_MAX:
        return None
    try:
        validate_email(text)
    except ValidationError:
        return None
    return text


_CLEAN = {
    SENDER_NAME: _name,
    RECIPIENT_NAME: _name,
    SENDER_PHONE: _phone,
    RECIPIENT_EMAIL: _email,
}

_WANTED = {
    SENDER_NAME: gettext_noop("The sender's name, up to 100 characters."),
    RECIPIENT_NAME: gettext_noop("The recipient's name, up to 100 characters."),
    SENDER_PHONE: gettext_noop(
        "The sender's phone number in international format, e.g. +14155550123."
    ),
    RECIPIENT_EMAIL: gettext_noop("The recipient's email address."),
}


def fields_check(*, required: list[str], given: Any) -> tuple[dict[str, str], list[FieldError]]:
    """A line's ``fields`` (``given``, as it came) against its product's ``required`` names:
    the clean values (E.164 phones, trimmed names and emails) and the errors, one per field,
    in ``FIELD_NAMES`` order then the unknown ones."""
    if given is None:
        given = {}
    if not isinstance(given, dict):
        return {}, [FieldError("fields", "invalid_field", _("An object of named fields."))]
    clean: dict[str, str] = {}
    errors: list[FieldError] = []
    for name in FIELD_NAMES:
        value = given.get(name)
        if value is None or (isinstance(value, str) and not value.strip()):
            if name in required:
                needed = _("This product needs it: %(wanted)s") % {"wanted": _(_WANTED[name])}
                errors.append(FieldError(name, "missing_field", needed))
            continue
        cleaned = _CLEAN[name](value) if isinstance(value, str) else None
        if cleaned is None:
            errors.append(FieldError(name, "invalid_field", _(_WANTED[name])))
            continue
        clean[name] = cleaned
    for name in given:
        if name not in FIELD_NAMES:
            errors.append(
                FieldError(
                    str(name)[:40],
                    "invalid_field",
                    _("Unknown field: use %(names)s.") % {"names": ", ".join(FIELD_NAMES)},
                )
            )
    return clean, errors


def required_fields_clean(value: Any) -> list[str]:
    """``Product.required_fields`` / ``Route.required_fields`` as stored: known names, each
    once, in ``FIELD_NAMES`` order."""
    names = set(value) if isinstance(value, list | tuple | set) else set()
    return [name for name in FIELD_NAMES if name in names]
