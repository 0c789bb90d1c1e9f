"""URL converters: path ids are checked by the URL resolver, so junk never reaches a view.

A NUL byte, an over-long id or any character outside our ids' alphabet is a 404 at routing
(PostgreSQL refuses NUL bytes in text: it used to be a 500).
"""

from __future__ import annotations


class PublicIdConverter:
    """Our public ids: a prefix, an underscore and base62 (``rch_…``, ``pay_…``, ``prd_…``)."""

    regex = "[A-Za-z0-9_]{1,64}"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value
