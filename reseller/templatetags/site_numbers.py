"""Numbers as the visitor's language writes them, for the inputs that take an amount."""

from __future__ import annotations

from django import template
from django.utils.formats import get_format

register = template.Library()


@register.simple_tag
def decimal_separator() -> str:
    """The active language's decimal separator: "." in English, "," in Spanish and French."""
    return str(get_format("DECIMAL_SEPARATOR"))
