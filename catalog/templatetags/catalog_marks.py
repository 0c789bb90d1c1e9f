"""Country flags and operator marks for the site's pages.

``{% flag country.code %}`` shows the vendored SVG flag (reseller/static/vendor/flag-icons, see its
README.txt) instead of an emoji, which many systems draw as two boxes. ``{% operator_mark
operator %}`` shows a monogram badge in the operator's colour. Both are decorative: the country
or operator name is always written beside them, so they carry an empty alt or aria-hidden.
"""

from __future__ import annotations

import re
from functools import lru_cache
from itertools import pairwise
from typing import Any

from django import template
from django.contrib.staticfiles import finders
from django.contrib.staticfiles.storage import staticfiles_storage
from django.templatetags.static import static
from django.utils.html import format_html

from catalog.benefits import benefits_parts
from catalog.field_inputs import fields_shown as _fields_shown
from catalog.models import Operator
from catalog.phone import number_display

register = template.Library()

FLAG_PATH = "vendor/flag-icons/flags/4x3/{code}.svg"
FLAG_WIDTH = 32  # px; the flags are 4:3

DEFAULT_COLOUR = "#5f6b7a"
WHITE = "#ffffff"
DARK = "#000000"
MIN_CONTRAST = 4.5  # WCAG AA for text of the badge's size
_COLOUR = re.compile(r"^#[0-9a-fA-F]{6}$")
_WORD = re.compile(r"[^\W_]+")  # runs of letters and digits: "AT&T" is "AT", "T"


@lru_cache(maxsize=512)
def flag_path(code: str) -> str | None:
    """The static path of a country's flag, or None when there is none (looked up once)."""
    code = (code or "").strip().lower()
    if not re.fullmatch(r"[a-z]{2}", code):
        return None
    path = FLAG_PATH.format(code=code)
    found = finders.find(path) or staticfiles_storage.exists(path)  # source, or collected
    return path if found else None


@register.simple_tag
def flag(code: str, width: int = FLAG_WIDTH) -> str:
    """``<img class="flag">`` of a country's flag; nothing for a code without one."""
    path = flag_path(str(code or ""))
    if path is None:
        return ""
    width = int(width)
    return format_html(
        '<img class="flag" src="{}" alt="" width="{}" height="{}">',
        static(path),
        width,
        round(width * 3 / 4),
    )


def _parts(word: str) -> list[str]:
    """A word cut where letters meet digits or a capital follows a small letter."""
    parts = [word[0]]
    for previous, char in pairwise(word):
        if previous.isdigit() != char.isdigit() or (previous.islower() and char.isupper()):
            parts.append(char)
        else:
            parts[-1] += char
    return parts


def monogram(name: str) -> str:
    """One or two characters for an operator's badge.

    A first word in capitals gives its first two ("MTN" → "MT", "AT&T" → "AT", "BSNL" → "BS");
    else the first letters of the first two words or word parts ("Vodafone Idea" → "VI",
    "T-Mobile" → "TM", "9mobile" → "9M", "AirtelTigo" → "AT"); else the one word's first
    letter ("Telcel" → "T").
    """
    words = _WORD.findall(name or "")
    if not words:
        return ""
    first = words[0]
    if len(first) >= 2 and first.upper() == first and any(c.isalpha() for c in first):
        return first[:2]
    parts = [part for word in words for part in _parts(word)]
    if len(parts) >= 2:
        return (parts[0][0] + parts[1][0]).upper()
    return first[0].upper()


def _channel(value: int) -> float:
    c = value / 255
    return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4


def relative_luminance(colour: str) -> float:
    """WCAG 2 relative luminance of ``#rrggbb``."""
    r, g, b = (int(colour[i : i + 2], 16) for i in (1, 3, 5))
    return 0.2126 * _channel(r) + 0.7152 * _channel(g) + 0.0722 * _channel(b)


def contrast_ratio(first: str, second: str) -> float:
    lighter, darker = sorted((relative_luminance(first), relative_luminance(second)), reverse=True)
    return (lighter + 0.05) / (darker + 0.05)


def text_colour(background: str) -> str:
    """White when it reaches 4.5:1 on the colour, else black: one of the two always does
    (the worst colour gives both 4.58:1)."""
    if contrast_ratio(WHITE, background) >= MIN_CONTRAST:
        return WHITE
    return DARK


@register.simple_tag
def operator_mark(operator: Operator) -> str:
    """A round badge with the operator's initials on its colour (decorative)."""
    colour = operator.color if _COLOUR.match(operator.color or "") else DEFAULT_COLOUR
    colour = colour.lower()
    name = operator.name_localized or operator.name
    return format_html(
        '<span class="operator-mark" style="background:{};color:{}" aria-hidden="true">{}</span>',
        colour,
        text_colour(colour),
        monogram(name),
    )


@register.filter
def phone(number: str) -> str:
    """A number as people write it in its country, in international form
    (``+525512345601`` → ``+52 55 1234 5601``): pages show it so; forms and links keep the
    E.164 value."""
    return number_display(number)


@register.filter
def benefits_line(product: Any) -> str:
    """What a data, bundle or PIN product gives, as a person reads it in the active language:
    "5 GB · 30 days", "100 min · 50 SMS · 30 days" ("" without benefits). A line that wraps
    breaks only after a "·": each part ("50 SMS", "30 days") and the dot before the next
    are held together by no-break spaces."""
    benefits = getattr(product, "benefits", None) or []
    if not benefits:
        return ""
    parts = benefits_parts(benefits, getattr(product, "validity_days", None))
    return "\u00a0· ".join(part.replace(" ", "\u00a0") for part in parts)


@register.filter
def fields_shown(fields) -> list[tuple[str, str]]:
    """A line's extra fields, ``(label, value)`` each, as its buyer reads them
    (``catalog.field_inputs.fields_shown``):
    ``{% for label, value in line.fields|fields_shown %}``."""
    return _fields_shown(fields)
