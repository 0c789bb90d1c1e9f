"""How the site asks for a product's extra fields and shows them back (catalog.fields,
contract section 17): each field's label and the input that asks for it (its type and
autocomplete hint), and a line's values in order, each with its label.

The sender is the buyer: their name and phone take the browser's own ``name`` and ``tel``.
The recipient is someone else: their email and name are hinted in a ``section-recipient``
group, so that a browser does not offer the buyer's own address for them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _

from catalog.fields import (
    EMAIL_MAX,
    FIELD_NAMES,
    NAME_MAX,
    RECIPIENT_EMAIL,
    RECIPIENT_NAME,
    SENDER_NAME,
    SENDER_PHONE,
)
from catalog.phone import number_display

PHONE_MAX = 32  # as typed, spaces and all (a line's recipient number is 32 at most too)


@dataclass(frozen=True)
class FieldInput:
    name: str  # the wire name, e.g. "senderPhone"
    label: Promise
    type: str  # the <input>'s type
    autocomplete: str
    maxlength: int
    # An example of the form wanted, shown in the empty input: a phone with its country code.
    placeholder: str = ""


FIELD_INPUTS: dict[str, FieldInput] = {
    SENDER_NAME: FieldInput(SENDER_NAME, _("Sender's name"), "text", "name", NAME_MAX),
    SENDER_PHONE: FieldInput(
        SENDER_PHONE, _("Sender's phone"), "tel", "tel", PHONE_MAX, placeholder="+1 415 555 0123"
    ),
    RECIPIENT_EMAIL: FieldInput(
        RECIPIENT_EMAIL, _("Recipient's email"), "email", "section-recipient email", EMAIL_MAX
    ),
    RECIPIENT_NAME: FieldInput(
        RECIPIENT_NAME, _("Recipient's name"), "text", "section-recipient name", NAME_MAX
    ),
}


def fields_shown(fields: Any) -> list[tuple[str, str]]:
    """A line's clean fields as its buyer reads them: ``(label, value)`` in ``FIELD_NAMES``
    order, a phone written the international way (``+1 415-555-0123``); nothing for a line
    without fields (or a value that is not a dict, as a JSON column may hold)."""
    if not isinstance(fields, dict):
        return []
    shown = []
    for name in FIELD_NAMES:
        value = fields.get(name)
        if not isinstance(value, str) or not value:
            continue
        shown.append(
            (
                str(FIELD_INPUTS[name].label),
                number_display(value) if name == SENDER_PHONE else value,
            )
        )
    return shown
