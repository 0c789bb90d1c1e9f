"""Money is Decimal with two places beside an ISO 4217 currency; rounding happens here only."""

from __future__ import annotations

import re
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

# A money column's arguments (``models.DecimalField(**MONEY)``): twelve digits, two places.
MONEY: dict[str, Any] = {"max_digits": 12, "decimal_places": 2}

CENT = Decimal("0.01")
ZERO = Decimal("0.00")
# An amount as people and programs write one: ASCII digits with at most one point. Decimal()
# reads more: "1_000" as 1000, other scripts' digits (Arabic-Indic, full-width) as numbers,
# and exponents ("1e3").
_PLAIN_DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)")
# The largest amount a money column holds (MONEY's twelve digits, two of them cents).
MONEY_MAX = Decimal("9999999999.99")


def quantize(amount: Decimal | int | str) -> Decimal:
    """Round half up to cents: the one rounding rule of the product."""
    return Decimal(amount).quantize(CENT, rounding=ROUND_HALF_UP)


def to_minor_units(amount: Decimal) -> int:
    """Cents for card processors (EUR, USD and GBP all have two decimals)."""
    return int((quantize(amount) * 100).to_integral_value())


def fmt(amount: Decimal, currency: str) -> str:
    return f"{quantize(amount)} {currency}"


RATE_PLACES = Decimal("0.00000001")


def rate_round(rate: Decimal) -> Decimal:
    """Exchange rates keep eight decimal places, rounded half up."""
    return Decimal(rate).quantize(RATE_PLACES, rounding=ROUND_HALF_UP)


def is_plain_decimal(text: str) -> bool:
    """Whether ``text`` (stripped, a decimal comma already made a point) is written as an
    amount is: only ASCII digits and one optional point, a sign at most."""
    return _PLAIN_DECIMAL.fullmatch(text) is not None


def amount_typed(raw: str) -> Decimal | None:
    """An amount as a person typed it in a form or a query ("150", "150.5", or "150,5" with a
    decimal comma), or None when it is not written as an amount is (``is_plain_decimal``)."""
    text = raw.strip().replace(",", ".")
    return Decimal(text) if is_plain_decimal(text) else None
