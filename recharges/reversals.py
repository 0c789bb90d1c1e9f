"""After delivery: a provider takes a top-up back (docs/providers.md, "Reversals"; contract §14).

DT One says REVERSED, Reloadly REFUNDED after a success: the recipient's airtime was taken
back and the provider returned what it charged us. The recharge moves from ``delivered`` to
the final status ``reversed``, its amount goes back to where it was paid from (the wallet, or
the card), and ``recharge.reversed`` is emitted: once, whatever the number of callbacks,
look-ups and reconciliation runs that notice it, because the move happens under the row lock
and only from ``delivered``.

It is noticed by a look-up at the provider (``recharge_reversal_check``), never by trusting a
callback: DT One's callback for a delivered recharge only enqueues that look-up; the daily
reconciliation applies the reversals it finds in the provider's report.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.db import transaction

from books.services import books_reversal_record
from network.commissions import commissions_take_back, commissions_taken
from recharges.events import recharge_emit
from recharges.models import Recharge
from recharges.processor import (
    provider_call_recorded,
    recharge_lock,
    recharge_refund,
    sale_of,
    topup_request,
)
from recharges.state import transition
from reseller.money import ZERO
from upstreams.adapters import ProviderError, ProviderResult, adapter_for
from upstreams.models import Provider
from upstreams.routing import settings_provider

logger = logging.getLogger(__name__)

S = Recharge.Status

REVERSED_CODE = "upstream_reversed"
REVERSED_MESSAGE = "The operator took the top-up back; its amount was refunded."


def recharge_reverse(*, recharge_id: int, source: str, actor=None) -> bool:
    """Reverse a delivered recharge its provider took back: ``reversed``, refunded once, its
    event emitted. True when this call reversed it; False when it is not ``delivered`` (already
    reversed, or never delivered: nothing to do). ``source`` says who noticed it (history)."""
    with transaction.atomic():
        recharge = recharge_lock(recharge_id)
        if recharge.status != S.DELIVERED or not recharge.livemode:
            return False
        transition(
            recharge,
            S.REVERSED,
            note=f"reversed by the provider ({source})"[:255],
            actor=actor,
            extra_fields={"failure_code": REVERSED_CODE, "failure_message": REVERSED_MESSAGE},
        )
        # The network's commissions back first: the ancestors' wallets are locked from the
        # top down, before the refund locks the buyer's (docs/network.md, "Lock order").
        commissions_take_back(reference=recharge.ledger_reference, recharge=recharge.public_id)
        recharge_refund(recharge=recharge, actor=actor)
        earned = commissions_taken(references=[recharge.ledger_reference])
        price = recharge.amount - earned.get(recharge.ledger_reference, ZERO)
        books_reversal_record(sale=sale_of(recharge, price=price))
        recharge_emit(recharge)  # after the refund: the event says the money is back
    logger.info("recharge %s reversed (%s)", recharge.public_id, source)
    return True


def recharge_reversal_check(*, recharge_id: int, source: str = "look-up") -> bool:
    """Ask the provider that delivered the recharge what became of it, and reverse it if the
    provider says it took it back. No lock is held during the call. True when reversed now."""
    recharge = (
        Recharge.objects.select_related("product__operator", "product__country", "route")
        .filter(pk=recharge_id, status=S.DELIVERED, livemode=True)
        .first()
    )
    if recharge is None or not recharge.provider:
        return False
    provider = Provider.objects.filter(name=recharge.provider).first()
    if provider is None and recharge.provider == settings.AIRTIME_PROVIDER:
        provider = settings_provider()  # sent while no provider row sold its product
    if provider is None:
        return False  # a provider that no longer exists: reconciliation has the last word
    adapter = adapter_for(provider)
    try:
        result = provider_call_recorded(recharge.pk, adapter, "status", topup_request(recharge))
    except ProviderError as exc:
        logger.info("reversal look-up of %s failed: %s", recharge.public_id, exc)
        return False
    if result is None or result.status != ProviderResult.REVERSED:
        return False
    return recharge_reverse(recharge_id=recharge.pk, source=source)
