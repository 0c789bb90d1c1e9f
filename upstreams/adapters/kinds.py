"""Reading what a product gives from a provider's words (contract section 17, "Kinds").

Reloadly describes a data or bundle amount only in prose (``fixedAmountsDescriptions``,
``localFixedAmountsDescriptions``: "3GB + 100 min, 30 days"), Ding in its
``DefaultDisplayText`` ("3GB Data, 30 Days") beside the kinds in ``Benefits`` and an ISO 8601
``ValidityPeriodIso``. ``text_benefits`` finds the amounts of data, minutes and SMS a text
names (English and Spanish, the providers' languages for our countries), and
``text_validity_days`` its validity; ``iso_validity_days`` reads an ISO 8601 duration.
"""

from __future__ import annotations

import math
import re
from datetime import timedelta
from decimal import Decimal, InvalidOperation
from typing import Any

from django.utils import timezone

from catalog.benefits import benefit

_NUMBER = r"(\d+(?:[.,]\d+)?)"
_DATA = re.compile(_NUMBER + r"\s*(TB|GB|MB|KB|Go|Mo)\b", re.IGNORECASE)
_VOICE = re.compile(
    _NUMBER + r"\s*(min|mins|minutes?|minutos?|mn)\b(?!\s*de\s+datos)", re.IGNORECASE
)
_SMS = re.compile(_NUMBER + r"\s*(sms|texts?|mensajes)\b", re.IGNORECASE)
_UNLIMITED = re.compile(
    r"\b(?:unlimited|ilimitad[oa]s?)\s+(data|datos|calls?|llamadas|minutes|minutos|voice|sms|texts?)\b"
    r"|\b(data|datos|calls?|llamadas|minutes|minutos|voice|sms|texts?)\s+(?:unlimited|ilimitad[oa]s?)\b",
    re.IGNORECASE,
)
_UNLIMITED_KIND = {
    "data": "data",
    "datos": "data",
    "call": "voice",
    "calls": "voice",
    "llamadas": "voice",
    "minutes": "voice",
    "minutos": "voice",
    "voice": "voice",
    "sms": "sms",
    "text": "sms",
    "texts": "sms",
}
_VALIDITY = re.compile(
    r"(\d+)\s*-?\s*(days?|d[ií]as?|d|weeks?|semanas?|months?|mes(?:es)?|hours?|hrs?|horas?|h)\b",
    re.IGNORECASE,
)
_DATA_UNITS = {"TB": "TB", "GB": "GB", "MB": "MB", "KB": "KB", "GO": "GB", "MO": "MB"}
_ISO = re.compile(
    r"^P(?:(\d+)Y)?(?:(\d+)M)?(?:(\d+)W)?(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)S)?)?$"
)


def _decimal(text: str) -> Decimal | None:
    try:
        return Decimal(text.replace(",", "."))
    except InvalidOperation:
        return None


def text_benefits(text: str) -> list[dict[str, Any]]:
    """The data, minutes and SMS a provider's text names, in the order it names them
    ("3GB + 100 min + 50 SMS" gives three; "Unlimited calls" a voice benefit without an
    amount). Each keeps the words it was read from as its ``text``."""
    found: list[tuple[int, dict[str, Any]]] = []
    for match in _DATA.finditer(text):
        amount = _decimal(match.group(1))
        unit = _DATA_UNITS[match.group(2).upper()]
        found.append((match.start(), benefit("data", amount, unit, match.group(0).strip())))
    for match in _VOICE.finditer(text):
        found.append(
            (match.start(), benefit("voice", _decimal(match.group(1)), "min", match.group(0)))
        )
    for match in _SMS.finditer(text):
        found.append(
            (match.start(), benefit("sms", _decimal(match.group(1)), "SMS", match.group(0)))
        )
    kinds = {item["kind"] for _at, item in found}
    for match in _UNLIMITED.finditer(text):
        word = (match.group(1) or match.group(2)).lower()
        kind = _UNLIMITED_KIND.get(word, "other")
        if kind not in kinds:
            kinds.add(kind)
            found.append((match.start(), benefit(kind, None, "", match.group(0).strip())))
    return [item for _at, item in sorted(found, key=lambda pair: pair[0])]


def text_validity_days(text: str) -> int | None:
    """The validity a text names ("30 days", "7 días", "1 month", "24 hrs"), in days (a
    month is 30, part of a day counts as one)."""
    match = _VALIDITY.search(text)
    if match is None:
        return None
    number, unit = int(match.group(1)), match.group(2).lower()
    if number <= 0:
        return None
    if unit.startswith(("w", "sem")):
        return number * 7
    if unit.startswith(("mo", "mes")):
        return number * 30
    if unit.startswith("h"):
        return math.ceil(number / 24)
    return number


def valid_until(days: int | None) -> str:
    """The date (ISO, UTC) a code sold today stays valid to, for a validity of ``days``; ""
    when the validity is unknown or unlimited (a PIN's ``validUntil``, null then)."""
    if days is None:
        return ""
    return (timezone.now() + timedelta(days=days)).date().isoformat()


def iso_validity_days(value: Any) -> int | None:
    """An ISO 8601 duration (Ding's ``ValidityPeriodIso``: ``P30D``, ``P1M``, ``PT24H``) in
    days: a year is 365, a month 30, part of a day counts as one; None when absent or
    unreadable."""
    match = _ISO.match(str(value or "").strip().upper())
    if match is None or not any(match.groups()):
        return None
    years, months, weeks, days, hours, minutes, seconds = (int(g or 0) for g in match.groups())
    total = years * 365 + months * 30 + weeks * 7 + days
    part = hours * 3600 + minutes * 60 + seconds
    total += math.ceil(part / 86400)
    return total or None
