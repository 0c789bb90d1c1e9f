"""A product card's extra fields on the site (contract section 17, catalog.fields): read from
the posted form, and kept for the card when the cart refuses them.

The card posts each field its product needs as ``fields-<name>`` (``fields-senderPhone``);
they become the line's ``fields``, checked by the API's serializer. A form posted without
JavaScript whose fields (or amount) are refused goes back to the card: the values typed wait
in the visitor's session, never in the URL (an email or a phone in a link ends up in logs
and histories); the page's query only names the product (``?fields_for=<id>``), and shows
them with why each was refused (``site_pages.views.operator``).
"""

from __future__ import annotations

from typing import Any

from django.contrib.sessions.backends.base import SessionBase
from django.http import QueryDict

from catalog.fields import FIELD_NAMES

FIELD_PREFIX = "fields-"
FIELDS_FOR = "fields_for"  # the query naming the card whose fields wait in the session
KEPT_KEY = "card_fields"
VALUE_MAX = 300  # what is kept of a value as typed (a field's longest clean value is 254)


def fields_posted(data: QueryDict) -> dict[str, str]:
    """The extra fields a card posted, by their wire names; anything else is ignored."""
    return {
        name: str(data.get(f"{FIELD_PREFIX}{name}", ""))
        for name in FIELD_NAMES
        if f"{FIELD_PREFIX}{name}" in data
    }


def fields_keep(session: SessionBase, *, product_id: str, given: dict[str, str]) -> None:
    """The fields typed on a card the cart refused, kept for that card (one card at a time)."""
    session[KEPT_KEY] = {
        "product_id": product_id,
        "fields": {name: str(value)[:VALUE_MAX] for name, value in given.items()},
    }


def fields_kept(session: SessionBase, *, product_id: str) -> dict[str, str] | None:
    """The fields kept for a product's card, or None."""
    found: Any = session.get(KEPT_KEY)
    if not isinstance(found, dict) or found.get("product_id") != product_id:
        return None
    fields = found.get("fields")
    return fields if isinstance(fields, dict) else None


def fields_forget(session: SessionBase) -> None:
    """Once a card's line is accepted, what was kept of a refused one goes."""
    session.pop(KEPT_KEY, None)
