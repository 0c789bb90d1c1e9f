"""Numbers as the visitor's language writes them, for the inputs that take an amount."""

from __future__ import annotations

from django import template
from django.utils.formats import get_format

register = template.Library()


@register.simple_tag
def decimal_separator() -> str:
    """The active language's decimal separator: "." in English, "," in Spanish and French."""
    return str(get_format("DECIMAL_SEPARATOR"))


@register.filter
def unbroken(value: str) -> str:
    """A number written in groups ("4242 4242 4242 4242") kept on one line: its spaces become
    no-break spaces, which a translated sentence around it cannot break."""
    return str(value).replace(" ", "\u00a0")
