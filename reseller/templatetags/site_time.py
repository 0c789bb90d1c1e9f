"""One way to show a moment on the site's pages: ``{{ value|when }}``.

The date and time in the visitor's language (Django's ``DATETIME_FORMAT`` of the active
language) and time zone (``reseller.middleware.TimeZoneMiddleware``), with the zone's
abbreviation, in a ``<time>`` element that carries the exact instant.
"""

from __future__ import annotations

from datetime import datetime

from django import template
from django.utils import timezone
from django.utils.formats import date_format
from django.utils.html import format_html
from django.utils.safestring import SafeString

register = template.Library()


def _time(value: datetime | None, form: str) -> SafeString | str:
    if not value:
        return ""
    local = timezone.localtime(value)
    return format_html(
        '<time datetime="{}">{} {}</time>',
        value.isoformat(),
        date_format(local, form),
        local.tzname() or "UTC",
    )


@register.filter
def when(value: datetime | None) -> SafeString | str:
    return _time(value, "DATETIME_FORMAT")


@register.filter
def when_time(value: datetime | None) -> SafeString | str:
    """The time of day only, for a moment within the next hours (a price hold, a retry)."""
    return _time(value, "TIME_FORMAT")
