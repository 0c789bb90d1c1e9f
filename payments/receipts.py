"""A guest's receipt link (docs/site.md): the payment's id, signed. The link alone opens the
receipt page (``orders.guest``); the orders app makes it at payment, the recharges app again
when a PIN is delivered later (``recharges.pins``), so it sits below both."""

from __future__ import annotations

from django.core import signing
from django.urls import reverse

RECEIPT_SALT = "orders.guest-receipt"


def receipt_token(payment_id: str) -> str:
    return signing.Signer(salt=RECEIPT_SALT).sign(payment_id)


def receipt_payment_id(token: str) -> str | None:
    """The payment a receipt link names, or None for a link that was not ours."""
    try:
        return signing.Signer(salt=RECEIPT_SALT).unsign(token)
    except signing.BadSignature:
        return None


def guest_receipt_path(payment_id: str) -> str:
    """The guest's receipt page: its link is the only way to it."""
    return reverse("orders:guest-receipt", args=[receipt_token(payment_id)])
