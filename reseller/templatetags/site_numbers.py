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


# Names a sentence must not break inside: "3-D Secure" broke after its hyphen on a 390 px phone
# ("… el banco pide 3-" / "D Secure"). Their hyphen becomes a non-breaking one (U+2011), their
# space a no-break space.
UNBROKEN_TERMS = {"3-D Secure": "3\u2011D\u00a0Secure"}


@register.filter(is_safe=True)
def unbroken_terms(value: str) -> str:
    """Text (a translated sentence, HTML already escaped) with the names of UNBROKEN_TERMS kept
    on one line."""
    for term, kept in UNBROKEN_TERMS.items():
        value = value.replace(term, kept)
    return value
