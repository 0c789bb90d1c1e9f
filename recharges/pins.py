"""A delivered recharge's PIN (contract section 17, "PINs"): kept encrypted on the row
(``Recharge.pin_encrypted``, ``reseller.crypto``), read for its buyer only (the recharge
bodies, the ``recharge.delivered`` event, the receipt page and email), and shown to staff as
its last 4 digits. Nothing here logs a code."""

from __future__ import annotations

import secrets
from datetime import timedelta
from typing import Any

from django.urls import reverse
from django.utils import timezone

from catalog.phone import number_display
from emails.models import Email
from emails.outbox import email_queue, email_queue_to_user
from payments.receipts import guest_receipt_path
from recharges.models import Recharge
from reseller import crypto
from upstreams.adapters import Pin

PIN_FIELDS = ("pin_encrypted", "pin_last4")


def pin_seal(recharge: Recharge, pin: Pin) -> None:
    """Put ``pin`` on the (locked) recharge, encrypted; the caller saves ``PIN_FIELDS``."""
    recharge.pin_encrypted = crypto.encrypt_json(pin.as_dict())
    recharge.pin_last4 = pin.code[-4:]


def pin_body(recharge: Recharge) -> dict[str, Any] | None:
    """The recharge's PIN as its buyer sees it (snake_case; camelized on the wire), or None
    when it has none. Only for the account that bought it: the callers are scoped to it."""
    if not recharge.pin_encrypted:
        return None
    found = crypto.decrypt_json(recharge.pin_encrypted)
    return {key: found.get(key) for key in ("code", "serial", "instructions", "valid_until")}


def pin_masked(recharge: Recharge) -> str:
    """What staff see of a PIN: its last 4 digits ("" when none)."""
    return f"•••• {recharge.pin_last4}" if recharge.pin_last4 else ""


def pin_simulated() -> Pin:
    """The sandbox's PIN (test keys; contract section 6): random digits, never a real code."""
    code = "".join(secrets.choice("0123456789") for _ in range(16))
    serial = "SBX" + "".join(secrets.choice("0123456789") for _ in range(9))
    valid = (timezone.now() + timedelta(days=30)).date().isoformat()
    return Pin(
        code=code,
        serial=serial,
        instructions="Sandbox PIN: not a real code. Dial *123*<PIN># to redeem.",
        valid_until=valid,
    )


SITE_CHANNELS = ("wallet", "card")  # orders.Order.Channel: the site's orders have a receipt


def pin_receipts_queue(recharges: list[Recharge]) -> None:
    """The receipt email of each PIN just delivered for a live site order (its receipt went
    out at payment, before any PIN existed), to the user who placed the order, or to a guest's
    address and with their receipt link, with the PIN stored encrypted in the outbox
    (``Email.secret_context``) until it is sent."""
    ids = [r.pk for r in recharges if r.pin_encrypted and r.livemode]
    if not ids:
        return
    rows = Recharge.objects.filter(pk__in=ids, order__channel__in=SITE_CHANNELS).select_related(
        "order__created_by", "payment", "product"
    )
    for recharge in rows:
        order, user = recharge.order, recharge.order.created_by
        pin = pin_body(recharge)
        if pin is None or (user is None and not order.receipt_email):
            continue
        payment_id = recharge.payment.public_id
        context = {
            "name": user.first_name if user is not None else "",
            "product": recharge.product.name,
            "recipient": number_display(recharge.recipient_number),
            "reference": recharge.public_id,
        }
        if user is not None:
            context["receipt_path"] = reverse("orders:receipt", args=[payment_id])
            email_queue_to_user(
                user=user, kind=Email.Kind.PIN_RECEIPT, context=context, secret={"pin": pin}
            )
        else:  # a guest's: their address, and the link that alone opens their receipt
            email_queue(
                kind=Email.Kind.PIN_RECEIPT,
                to=order.receipt_email,
                language=order.receipt_language,
                context={**context, "receipt_path": guest_receipt_path(payment_id)},
                secret={"pin": pin},
            )
