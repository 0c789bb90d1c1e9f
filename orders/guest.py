"""A visitor's choice kept through login and sign-up, and a guest's receipt link
(docs/site.md, "Buying without logging in").

- **The pending choice.** A logged-out "Buy now" keeps the product, the number, the
  quantity, a range product's amount and the extra fields its product needs (a sender's
  phone …) in the visitor's session. The guest checkout page
  pays it without an account; after a login or a sign-up (whose confirmation link logs in, in
  the same browser) the checkout's resume page puts it in the "Buy now" cart and opens the
  checkout of exactly that item. Only a POST with its CSRF token sets it; nothing in a URL can.
- **The guest's receipt.** A guest purchase belongs to the house guest account, which nobody
  logs in to. Its receipt page is reached by a link that names the payment and carries an HMAC
  of it (Django's signing, keyed by SECRET_KEY): a link cannot be guessed, and one receipt's
  link opens no other.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.contrib.sessions.backends.base import SessionBase
from rest_framework.exceptions import ValidationError

from orders.pricing import LineRequest
from orders.serializers import CartItemIn

PENDING_KEY = "buy_now_pending"
GUEST_PAYMENTS_KEY = "guest_payments"
GUEST_PAYMENTS_KEPT = 20


def pending_keep(
    session: SessionBase,
    *,
    product_id: str,
    recipient_number: str,
    quantity: int,
    local_amount: Decimal | None = None,
    fields: dict[str, str] | None = None,
) -> None:
    session[PENDING_KEY] = {
        "product_id": product_id,
        "recipient_number": recipient_number,
        "quantity": quantity,
        # A range product's amount (contract section 17), as text: sessions are JSON.
        **({"local_amount": str(local_amount)} if local_amount is not None else {}),
        # The extra fields its product needs (catalog.fields), clean: checked again on use.
        **({"fields": dict(fields)} if fields else {}),
    }


def pending_of(session: SessionBase) -> dict[str, Any] | None:
    found = session.get(PENDING_KEY)
    return found if isinstance(found, dict) else None


def pending_drop(session: SessionBase) -> None:
    session.pop(PENDING_KEY, None)


def pending_line(session: SessionBase) -> LineRequest | None:
    """The pending choice, checked again as when it was chosen (the product may have gone
    since): None when there is none or it no longer holds."""
    found = pending_of(session)
    if found is None:
        return None
    form = CartItemIn(data={**found, "session_id": "buy-now"})
    try:
        form.is_valid(raise_exception=True)
    except ValidationError:
        return None
    return form.validated_data["line"]


def guest_payment_allow(session: SessionBase, payment_id: str) -> None:
    """The guest payments this browser prepared: only they can be paid from it."""
    kept = [p for p in session.get(GUEST_PAYMENTS_KEY, []) if p != payment_id]
    session[GUEST_PAYMENTS_KEY] = [*kept, payment_id][-GUEST_PAYMENTS_KEPT:]


def guest_payment_allowed(session: SessionBase, payment_id: str) -> bool:
    return payment_id in session.get(GUEST_PAYMENTS_KEY, [])
