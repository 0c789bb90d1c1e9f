"""What a data, bundle or PIN product gives (contract section 17, "Kinds").

A product's ``benefits`` is a list of ``{"kind", "amount", "unit", "text"}``:

- ``kind``: ``data``, ``voice``, ``sms``, ``credit`` or ``other``;
- ``amount``: a decimal string (``"5"``, ``"1.5"``), or null when the provider gives no
  number or the benefit is unlimited (DT One's ``-1``);
- ``unit``: what ``amount`` counts: ``GB``/``MB`` for data, ``min`` for voice, ``SMS``, a
  currency code for credit, or ``""``;
- ``text``: the provider's own words for it (``"3GB Data"``), or ``""``.

``benefits_clean`` checks that shape (the model's ``clean()``, the services); ``benefits_line``
is how a person reads them ("5 GB · 30 days"), in the active language; ``benefits_signature``
tells two plans apart by what they give (the catalog sync's identity of a product).
"""

from __future__ import annotations

import hashlib
from decimal import Decimal, InvalidOperation
from typing import Any

from django.core.exceptions import ValidationError
from django.utils import formats
from django.utils.translation import gettext as _
from django.utils.translation import ngettext, pgettext

BENEFIT_KINDS = ("data", "voice", "sms", "credit", "other")
BENEFIT_KEYS = frozenset({"kind", "amount", "unit", "text"})
UNIT_MAX = 20
TEXT_MAX = 200
BENEFITS_MAX = 10


def benefit(kind: str, amount: Decimal | str | None, unit: str = "", text: str = "") -> dict:
    """One benefit in the catalog's shape (``amount`` written as a plain decimal string)."""
    if amount is not None:
        amount = Decimal(str(amount))
        amount = f"{amount.normalize():f}" if amount == amount.to_integral() else f"{amount:f}"
    return {"kind": kind, "amount": amount, "unit": unit, "text": text}


def benefits_clean(value: Any) -> list[dict[str, Any]]:
    """``value`` checked as a product's benefits; raises ``ValidationError`` naming the first
    entry that is wrong."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise ValidationError(_("A list of benefits."), code="invalid")
    if len(value) > BENEFITS_MAX:
        raise ValidationError(
            _("At most %(max)s benefits.") % {"max": BENEFITS_MAX}, code="invalid"
        )
    clean = []
    for index, item in enumerate(value):
        where = _("Benefit %(n)s") % {"n": index + 1}
        if not isinstance(item, dict) or set(item) != BENEFIT_KEYS:
            raise ValidationError(
                _("%(where)s: an object with kind, amount, unit and text.") % {"where": where},
                code="invalid",
            )
        if item["kind"] not in BENEFIT_KINDS:
            raise ValidationError(
                _("%(where)s: kind is one of %(kinds)s.")
                % {"where": where, "kinds": ", ".join(BENEFIT_KINDS)},
                code="invalid",
            )
        amount = item["amount"]
        if amount is not None:
            try:
                number = Decimal(str(amount)) if isinstance(amount, (str, int)) else None
            except InvalidOperation:
                number = None
            if number is None or not number.is_finite() or number < 0:
                raise ValidationError(
                    _("%(where)s: amount is a number written as a string, or null.")
                    % {"where": where},
                    code="invalid",
                )
            amount = benefit("other", number)["amount"]
        for key, limit in (("unit", UNIT_MAX), ("text", TEXT_MAX)):
            if not isinstance(item[key], str) or len(item[key]) > limit:
                raise ValidationError(
                    _("%(where)s: %(key)s is a text of at most %(limit)s characters.")
                    % {"where": where, "key": key, "limit": limit},
                    code="invalid",
                )
        clean.append(
            {
                "kind": item["kind"],
                "amount": amount,
                "unit": item["unit"].strip(),
                "text": item["text"].strip(),
            }
        )
    return clean


def benefits_signature(benefits: Any) -> str:
    """A short, stable signature of what ``benefits`` give: 8 hex digits, or "" for none
    (airtime). It reads each benefit's kind, amount and unit (an unlimited one, amount null,
    without its unit), never the order of the list nor the provider's words, so one plan
    described by two providers ("5GB" or no words) signs the same and two plans that give
    different things do not; only a benefit of kind ``other`` without a number is told by its
    words. Raises ``ValidationError`` for benefits of another shape (``benefits_clean``)."""
    parts = []
    for item in benefits_clean(list(benefits or [])):
        amount = item["amount"]
        unit = item["unit"].lower() if amount is not None else ""
        told_by_words = item["kind"] == "other" and amount is None
        words = " ".join(item["text"].lower().split()) if told_by_words else ""
        parts.append("|".join((item["kind"], amount or "", unit, words)))
    if not parts:
        return ""
    return hashlib.sha256("\n".join(sorted(parts)).encode()).hexdigest()[:8]


def _number(amount: str) -> str:
    value = Decimal(amount)
    places = 0 if value == value.to_integral() else max(0, -value.as_tuple().exponent)  # type: ignore[operator]
    return formats.number_format(value, decimal_pos=places, use_l10n=True)


def _unit(kind: str, unit: str) -> str:
    """The unit as a person of the active language writes it."""
    if kind == "data":
        return {
            "GB": pgettext("data unit", "GB"),
            "MB": pgettext("data unit", "MB"),
            "TB": pgettext("data unit", "TB"),
            "KB": pgettext("data unit", "KB"),
        }.get(unit.upper(), unit)
    if kind == "voice":
        return pgettext("voice unit", "min")
    if kind == "sms":
        return pgettext("sms unit", "SMS")
    return unit


UNLIMITED = {
    "data": lambda: pgettext("benefit", "Unlimited data"),
    "voice": lambda: pgettext("benefit", "Unlimited calls"),
    "sms": lambda: pgettext("benefit", "Unlimited SMS"),
}


def benefit_text(item: dict[str, Any]) -> str:
    """One benefit as a person reads it: "5 GB", "100 min", "50 SMS", "20 MXN"; its
    provider's words when it has no number."""
    amount, kind = item.get("amount"), item.get("kind", "other")
    if amount is None:
        if item.get("text"):
            return str(item["text"])
        unlimited = UNLIMITED.get(kind)
        return unlimited() if unlimited else ""
    unit = _unit(kind, str(item.get("unit") or ""))
    return f"{_number(str(amount))} {unit}".strip()


def validity_text(days: int | None) -> str:
    if not days:
        return ""
    return ngettext("%(days)s day", "%(days)s days", days) % {
        "days": formats.number_format(days, use_l10n=True)
    }


def benefits_parts(benefits: list[dict[str, Any]] | None, validity_days: int | None) -> list[str]:
    """Each benefit, then the validity, as a person reads them: ["5 GB", "30 days"]."""
    parts = [benefit_text(item) for item in benefits or []]
    parts.append(validity_text(validity_days))
    return [part for part in parts if part]


def benefits_line(benefits: list[dict[str, Any]] | None, validity_days: int | None) -> str:
    """A product's benefits and validity as one line: "5 GB · 30 days",
    "100 min · 50 SMS · 30 days" ("" when there is nothing to say)."""
    return " · ".join(benefits_parts(benefits, validity_days))
