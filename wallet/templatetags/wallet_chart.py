"""The wallet page's monthly chart: ``{% monthly_chart monthly wallet.currency %}`` draws the
credits and debits of each month as bars of an inline SVG, on the server (no script, no
library), with the numbers in a table under it for whoever does not see the picture."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django import template

register = template.Library()

# The drawing takes the width it is given (a phone's or the page's) at a fixed height: across, the
# coordinates are percentages of that width, so the bars spread over it and the text keeps its
# size; up and down they are pixels.
TOP = 22  # room for the scale's label above the tallest bar
BARS = 130  # the tallest bar
LABELS = 34  # the month names (and the year) under the baseline
BAR = 0.3  # a bar's width, as a share of its month's slot
GAP = 0.04  # between a month's two bars, as a share of its slot


def _n(value: float) -> str:
    """A coordinate as SVG reads it: never localized ("12,5" is no number to SVG)."""
    return f"{value:.1f}"


def _pc(value: float) -> str:
    """A share of the width, as SVG reads it (never localized either)."""
    return f"{value:.2f}%"


def _height(value: Decimal, scale: Decimal) -> float:
    if value <= 0 or scale <= 0:
        return 0.0
    return max(float(value / scale) * BARS, 1.5)  # a small month still shows a sliver


@register.inclusion_tag("wallet/_monthly_chart.html")
def monthly_chart(monthly: list[dict[str, Any]], currency: str) -> dict[str, Any]:
    """``monthly``: the view's months, each ``{"total": MonthTotal, "url": its statement}``."""
    scale = max(
        [m["total"].credits for m in monthly] + [-m["total"].debits for m in monthly],
        default=Decimal(0),
    )
    slot = 100 / max(len(monthly), 1)
    bar, gap = BAR * slot, GAP * slot
    baseline = TOP + BARS
    months = []
    for index, item in enumerate(monthly):
        total = item["total"]
        left = index * slot + (slot - 2 * bar - gap) / 2
        credit = _height(total.credits, scale)
        debit = _height(-total.debits, scale)
        months.append(
            {
                "total": total,
                "url": item["url"],
                "credit": {"x": _pc(left), "y": _n(baseline - credit), "h": _n(credit)},
                "debit": {"x": _pc(left + bar + gap), "y": _n(baseline - debit), "h": _n(debit)},
                "label_x": _pc(index * slot + slot / 2),
                "with_year": index == 0 or total.month.month == 1,
            }
        )
    return {
        "months": months,
        "currency": currency,
        "empty": scale == 0,
        "scale": scale,
        "height": str(TOP + BARS + LABELS),
        "top": str(TOP),
        "scale_y": str(TOP - 7),
        "baseline": str(baseline),
        "month_y": str(baseline + 15),
        "year_y": str(baseline + 29),
        "bar": _pc(bar),
    }
