"""Server-rendered SVG charts for the staff dashboard: no JavaScript, nothing from a CDN.

Each function returns safe markup (every label is escaped) to drop into a template. The
charts scale with their ``viewBox``; hovering a bar shows its exact figure (an SVG <title>).
Colours come from the ``PALETTE``; the CSS in reseller/templates/backoffice/dashboard.html
sizes them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

PALETTE = {
    "primary": "#2f6fb3",
    "delivered": "#2e9d5b",
    "failed": "#d0453a",
    "queued": "#8a94a6",
    "waitlisted": "#c9a227",
    "dispatched": "#5b8def",
    "other": "#8a94a6",
    "grid": "#e3e6eb",
    "text": "#4a5160",
}
FONT = 'font-family="system-ui, sans-serif" font-size="11"'


@dataclass(frozen=True)
class Series:
    name: str
    color: str


def nice_max(value: float, ticks: int = 5, *, integer: bool = False) -> tuple[float, float]:
    """A round axis maximum at or above ``value`` and its tick step: the smallest step of
    1, 2 or 5 x 10^n that reaches ``value`` in at most ``ticks`` steps (0-2-4-6-8-10, never
    the 2.5 steps that print as 2 and 8 once rounded). ``integer``: counts, so the step is
    a whole number (1 at least)."""
    if value <= 0:
        return (1.0, 1.0) if integer else (1.0, 0.25)
    exponent = math.floor(math.log10(value / ticks))
    while True:
        for factor in (1, 2, 5):
            step = factor * 10.0**exponent
            if integer and step < 1:
                continue
            count = math.ceil(round(value / step, 9))
            if count <= ticks:
                return round(count * step, 10), round(step, 10)
        exponent += 1


def tick_decimals(step: float) -> int:
    """How many decimals show a tick of ``step`` exactly (0.25 → 2, 0.5 → 1, 20 → 0)."""
    decimals = 0
    while decimals < 6 and abs(step * 10**decimals - round(step * 10**decimals)) > 1e-9:
        decimals += 1
    return decimals


def _fmt(value: float | Decimal, decimals: int = 0) -> str:
    return f"{value:,.{decimals}f}"


def _svg(width: int, height: int, label: str, body: list[str]) -> SafeString:
    # Every label and figure above went through escape(); the rest is our own markup.
    return mark_safe(  # noqa: S308
        f'<svg class="chart" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="{escape(label)}" xmlns="http://www.w3.org/2000/svg" {FONT}>'
        f"<title>{escape(label)}</title>" + "".join(body) + "</svg>"
    )


def _empty(width: int, height: int, label: str, message: str) -> SafeString:
    return _svg(
        width,
        height,
        label,
        [
            f'<rect x="0" y="0" width="{width}" height="{height}" fill="#f7f8fa" rx="6"/>',
            f'<text x="{width / 2}" y="{height / 2}" text-anchor="middle" '
            f'fill="{PALETTE["text"]}">{escape(message)}</text>',
        ],
    )


def column_chart(
    *,
    labels: Sequence[str],
    series: Sequence[Series],
    values: Sequence[Sequence[float | Decimal]],
    label: str,
    decimals: int = 0,
    unit: str = "",
    empty: str = "No data yet",
    width: int = 760,
    height: int = 240,
) -> SafeString:
    """Vertical (stacked when several series) columns, one per label; ``values[i][s]``."""
    totals = [sum(float(v) for v in row) for row in values]
    if not any(totals):
        return _empty(width, height, label, empty)
    left, right, top, bottom = 56, 8, 10, 34
    plot_w, plot_h = width - left - right, height - top - bottom
    top_value, step = nice_max(max(totals), integer=decimals == 0)
    tick_places = max(decimals, tick_decimals(step)) if step < 1 else 0
    body: list[str] = []
    ticks = round(top_value / step)
    for i in range(ticks + 1):
        tick = round(step * i, 10)
        y = top + plot_h - plot_h * tick / top_value
        body.append(
            f'<line x1="{left}" x2="{width - right}" y1="{y:.1f}" y2="{y:.1f}" '
            f'stroke="{PALETTE["grid"]}"/>'
            f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end" fill="{PALETTE["text"]}">'
            f"{escape(_fmt(tick, tick_places))}</text>"
        )
    slot = plot_w / len(labels)
    bar = max(slot * 0.72, 1)
    every = max(1, math.ceil(len(labels) / 10))
    for index, (name, row) in enumerate(zip(labels, values, strict=True)):
        x = left + slot * index + (slot - bar) / 2
        base = top + plot_h
        for serie, value in zip(series, row, strict=True):
            value = float(value)
            if value <= 0:
                continue
            h = plot_h * value / top_value
            base -= h  # type: ignore[assignment]
            body.append(
                f'<rect x="{x:.1f}" y="{base:.1f}" width="{bar:.1f}" height="{h:.1f}" '
                f'fill="{serie.color}"><title>{escape(name)}: '
                f"{escape(serie.name)} {escape(_fmt(value, decimals))}{escape(unit)}</title></rect>"
            )
        if (len(labels) - 1 - index) % every == 0:  # always label the latest day
            body.append(
                f'<text x="{x + bar / 2:.1f}" y="{height - bottom + 16}" text-anchor="middle" '
                f'fill="{PALETTE["text"]}">{escape(name)}</text>'
            )
    body.append(
        f'<line x1="{left}" x2="{width - right}" y1="{top + plot_h}" y2="{top + plot_h}" '
        f'stroke="{PALETTE["text"]}"/>'
    )
    return _svg(width, height, label, body)


@dataclass(frozen=True)
class Bar:
    label: str
    value: float
    text: str  # what is written at the end of the bar
    color: str = PALETTE["primary"]


def bar_chart(
    *,
    bars: Sequence[Bar],
    label: str,
    maximum: float | None = None,
    empty: str = "No data yet",
    width: int = 520,
    row: int = 26,
) -> SafeString:
    """Horizontal bars with their label on the left and their figure on the right."""
    if not bars or not any(b.value for b in bars):
        return _empty(width, 3 * row, label, empty)
    label_w, text_w = 150, 140
    plot_w = width - label_w - text_w
    top = maximum if maximum is not None else max(b.value for b in bars)
    height = row * len(bars) + 6
    body: list[str] = []
    for index, item in enumerate(bars):
        y = 3 + row * index
        w = plot_w * (item.value / top) if top else 0
        name = item.label if len(item.label) <= 22 else item.label[:21] + "…"
        body.append(
            f'<text x="{label_w - 8}" y="{y + row / 2 + 4:.1f}" text-anchor="end" '
            f'fill="{PALETTE["text"]}">{escape(name)}</text>'
            f'<rect x="{label_w}" y="{y + 4}" width="{plot_w}" height="{row - 8}" '
            f'fill="{PALETTE["grid"]}" rx="3"/>'
            f'<rect x="{label_w}" y="{y + 4}" width="{max(w, 0):.1f}" height="{row - 8}" '
            f'fill="{item.color}" rx="3"><title>{escape(item.label)}: {escape(item.text)}'
            f"</title></rect>"
            f'<text x="{label_w + plot_w + 8}" y="{y + row / 2 + 4:.1f}" '
            f'fill="{PALETTE["text"]}">{escape(item.text)}</text>'
        )
    return _svg(width, height, label, body)
