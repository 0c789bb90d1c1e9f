"""Money helpers: Decimal only, two places, one rounding rule (half up)."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

CENT = Decimal("0.01")
RATE_PLACES = Decimal("0.00000001")


def money_round(amount: Decimal) -> Decimal:
    """Round an amount to cents, half up (0.005 → 0.01): the one rounding rule for prices."""
    return Decimal(amount).quantize(CENT, rounding=ROUND_HALF_UP)


def rate_round(rate: Decimal) -> Decimal:
    return Decimal(rate).quantize(RATE_PLACES, rounding=ROUND_HALF_UP)
