"""One way to show a moment on the site's pages: ``{{ value|when }}``.

The date and time in the visitor's language (Django's ``DATETIME_FORMAT`` of the active
language) and time zone (``reseller.middleware.TimeZoneMiddleware``), with the zone's
abbreviation, in a ``<time>`` element that carries the exact instant.
"""

from __future__ import annotations

import re
from datetime import datetime

from django import template
from django.utils import timezone
from django.utils.formats import date_format, get_format
from django.utils.html import escape, format_html
from django.utils.safestring import SafeString, mark_safe

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


# A language's time of day with its seconds: the hour and minutes (H:i, G:i) get ":s"; English's
# "P" (3:52 a.m., noon) becomes "g:i:s a". A backslash escapes a letter in a format.
_MINUTES = re.compile(r"(?<!\\)([HG]:i)|(?<!\\)P")


def _with_seconds(form: str) -> str:
    return _MINUTES.sub(lambda m: f"{m.group(1)}:s" if m.group(1) else "g:i:s a", form)


@register.filter
def when_seconds(value: datetime | None) -> SafeString | str:
    """``when`` to the second: a log's moments (the request log), a minute holds many."""
    return _time(value, _with_seconds(get_format("DATETIME_FORMAT")))


@register.filter
def path_breaks(value: str) -> SafeString:
    """A URL path that wraps after its slashes (``<wbr>``), never in the middle of a segment."""
    return mark_safe(escape(value).replace("/", "/<wbr>"))  # noqa: S308 - escaped above
