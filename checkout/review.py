"""Staff review of card fraud (docs/fraud.md): the queue of frozen accounts, cards and
recipient numbers with their evidence, the actions on them, and a dispute's evidence for
Stripe, prefilled from what we know (the provider's delivery reference, the time delivered).

The back office renders these (``backoffice/admin/fraud.py``); the actions audit there.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from accounts.models import Account, User
from accounts.selectors import account_contact
from checkout.models import CardCheckout, CardDispute, CardFreeze, CardKeyFreeze
from orders.models import OrderLine
from payments import gateway
from recharges.models import Recharge

logger = logging.getLogger(__name__)

EVIDENCE_LIMIT = 20  # purchases shown per frozen thing
# Stripe's statuses of a dispute still waiting for our evidence.
EVIDENCE_DUE = frozenset({"needs_response", "warning_needs_response"})


@dataclass(frozen=True)
class Purchase:
    """One card purchase as evidence: what, by whom, from where, when."""

    reference: str
    account: str
    amount: str
    paid_at: datetime | None
    counted_at: datetime | None
    address: str
    card: str  # the start of the card's fingerprint
    numbers: list[str]
    status: str


@dataclass
class Frozen:
    """One thing frozen and waiting for review, with its evidence."""

    what: str  # "account", "card" or "number"
    id: int
    label: str
    reason: str
    cause: str
    frozen_at: datetime
    purchases: list[Purchase] = field(default_factory=list)
    disputes: list[CardDispute] = field(default_factory=list)


def _purchases(checkouts) -> list[Purchase]:
    rows = list(
        checkouts.select_related("account", "payment", "topup").order_by("-pk")[:EVIDENCE_LIMIT]
    )
    numbers: dict[int, list[str]] = {}
    for payment_id, number in OrderLine.objects.filter(
        order__payment__pk__in=[row.payment_id for row in rows if row.payment_id]
    ).values_list("order__payment__pk", "recipient_number"):
        numbers.setdefault(payment_id, []).append(number)
    found = []
    for row in rows:
        status = row.payment.status if row.payment else f"top-up {row.topup.status}"
        found.append(
            Purchase(
                reference=row.public_id,
                account=f"{row.account.name} ({row.account.public_id})",
                amount=f"{row.amount} {row.currency}",
                paid_at=row.completed_at,
                counted_at=row.limit_counted_at or row.created_at,
                address=row.client_address or "",
                card=row.card_fingerprint[:10],
                numbers=sorted(set(numbers.get(row.payment_id or 0, []))),
                status=status,
            )
        )
    return found


def _disputes(checkouts) -> list[CardDispute]:
    return list(
        CardDispute.objects.filter(checkout__in=checkouts.values("pk"))
        .select_related("checkout__payment", "checkout__topup")
        .order_by("-pk")[:EVIDENCE_LIMIT]
    )


def _paid(checkouts):
    return checkouts.filter(Q(completed_at__isnull=False) | Q(limit_counted_at__isnull=False))


def review_queue() -> dict[str, list[Frozen]]:
    """Everything frozen and not reviewed yet, oldest first: ``accounts``, ``cards``,
    ``numbers``, each with the card purchases and disputes behind it."""
    accounts = []
    for freeze in (
        CardFreeze.objects.filter(unfrozen_at__isnull=True, blocked_at__isnull=True)
        .select_related("account")
        .order_by("frozen_at")
    ):
        checkouts = CardCheckout.objects.filter(account=freeze.account)
        accounts.append(
            Frozen(
                what="account",
                id=freeze.account_id,
                label=f"{freeze.account.name} ({freeze.account.public_id})",
                reason=freeze.reason,
                cause=freeze.cause,
                frozen_at=freeze.frozen_at,
                purchases=_purchases(_paid(checkouts)),
                disputes=_disputes(checkouts),
            )
        )
    cards: list[Frozen] = []
    numbers: list[Frozen] = []
    for key in CardKeyFreeze.objects.filter(status=CardKeyFreeze.Status.FROZEN).order_by(
        "frozen_at"
    ):
        if key.kind == CardKeyFreeze.Kind.CARD:
            checkouts = CardCheckout.objects.filter(card_fingerprint=key.value)
        else:
            checkouts = CardCheckout.objects.filter(
                payment__order__lines__recipient_number=key.value
            ).distinct()
        (cards if key.kind == CardKeyFreeze.Kind.CARD else numbers).append(
            Frozen(
                what=key.kind,
                id=key.pk,
                label=key.value,
                reason=key.reason,
                cause=key.cause,
                frozen_at=key.frozen_at,
                purchases=_purchases(_paid(checkouts)),
                disputes=_disputes(checkouts),
            )
        )
    return {"accounts": accounts, "cards": cards, "numbers": numbers}


def blocked_counts() -> dict[str, int]:
    return {
        "accounts": CardFreeze.objects.filter(blocked_at__isnull=False).count(),
        "cards": CardKeyFreeze.objects.filter(
            kind=CardKeyFreeze.Kind.CARD, status=CardKeyFreeze.Status.BLOCKED
        ).count(),
        "numbers": CardKeyFreeze.objects.filter(
            kind=CardKeyFreeze.Kind.NUMBER, status=CardKeyFreeze.Status.BLOCKED
        ).count(),
    }


# -- a dispute's evidence -------------------------------------------------------------------


def _when(at: datetime | None) -> str:
    return at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC") if at else ""


def dispute_evidence(dispute: CardDispute) -> dict[str, str]:
    """Stripe's evidence fields for a dispute, prefilled: who paid, from where, what was bought
    and its delivery (the provider's reference and the time delivered, per recharge)."""
    checkout = dispute.checkout
    account = checkout.account
    contact = account_contact(account_id=account.pk)
    evidence: dict[str, str] = {
        "customer_name": account.name[:200],
        "customer_email_address": contact.email if contact else "",
        "customer_purchase_ip": checkout.client_address or "",
    }
    paid = f"Paid {checkout.amount} {checkout.currency} by card on {_when(checkout.completed_at)}"
    if checkout.client_address:
        paid += f" from {checkout.client_address}"
    lines = [paid + f" (our reference {checkout.public_id})."]
    if checkout.payment_id:
        recharges = list(Recharge.objects.filter(payment_id=checkout.payment_id).order_by("pk"))
        delivered = [r for r in recharges if r.status == Recharge.Status.DELIVERED]
        evidence["product_description"] = (
            f"Prepaid mobile airtime: {len(recharges)} top-up(s) sent to the phone numbers the "
            "customer entered, delivered electronically within seconds."
        )
        for recharge in recharges:
            line = f"{recharge.public_id}: {recharge.amount} {recharge.currency} to "
            line += f"{recharge.recipient_number}, {recharge.status}"
            if recharge.delivered_at:
                line += f" {_when(recharge.delivered_at)}"
            if recharge.provider:
                line += f" by {recharge.provider}"
            if recharge.provider_transaction_id:
                line += f", provider reference {recharge.provider_transaction_id}"
            lines.append(line + ".")
        if delivered:
            first = min(r.delivered_at for r in delivered if r.delivered_at)
            evidence["service_date"] = first.strftime("%Y-%m-%d")
            evidence["shipping_date"] = first.strftime("%Y-%m-%d")
            evidence["shipping_carrier"] = ", ".join(sorted({r.provider for r in delivered}))[:500]
            evidence["shipping_tracking_number"] = ", ".join(
                r.provider_transaction_id for r in delivered if r.provider_transaction_id
            )[:500]
    else:
        evidence["product_description"] = (
            "Prepaid credit added to the customer's wallet on our airtime platform, "
            "spent on mobile top-ups."
        )
        evidence["service_date"] = (checkout.completed_at or checkout.created_at).strftime(
            "%Y-%m-%d"
        )
    evidence["uncategorized_text"] = "\n".join(lines)[:20000]
    return {name: value for name, value in evidence.items() if value}


def disputes_awaiting_evidence() -> list[CardDispute]:
    """Open disputes whose evidence is due and was not sent from here yet, oldest first."""
    return list(
        CardDispute.objects.filter(
            kind=CardDispute.Kind.DISPUTE,
            status__in=EVIDENCE_DUE,
            evidence_submitted_at__isnull=True,
        )
        .select_related("checkout__account", "checkout__payment", "checkout__topup")
        .order_by("pk")[:50]
    )


def dispute_evidence_send(*, dispute: CardDispute, by: User | None = None) -> dict[str, str]:
    """Send the prefilled evidence to Stripe and submit it, then record that it was sent.
    Stripe is called with no transaction open and no row locked; a Stripe failure raises
    ``CardPaymentsUnavailable`` and records nothing. The evidence sent."""
    evidence = dispute_evidence(dispute)
    gateway.dispute_evidence_submit(dispute_id=dispute.stripe_id, evidence=evidence)
    with transaction.atomic():
        CardDispute.objects.filter(pk=dispute.pk).update(
            evidence_submitted_at=timezone.now(), evidence_submitted_by=by
        )
    logger.info("dispute %s: evidence submitted", dispute.stripe_id)
    return evidence


def account_of(account_id: int) -> Account:
    return Account.objects.get(pk=account_id)
