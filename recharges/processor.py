"""The recharge processor (docs/contract.md §5): one recharge, moved forward safely.

``recharge_process`` is idempotent and safe to run twice or concurrently for the same row:

1. Under the row lock, only a ``queued`` (or an in-flight ``dispatched``) row moves on.
   A product whose promotion is scheduled within the waitlist horizon is ``waitlisted``.
   A ``dispatched`` row moves on only for the task its last attempt scheduled (``attempt``)
   or once nothing has touched it since a cutoff (``quiet_since``: the sweeper's, or
   RECHARGE_STUCK_DISPATCHED_SECONDS ago): any other copy of the task (a queued row the
   sweeper re-enqueued while its message still waited, a redelivery) might otherwise call
   the provider while the first call is still on its way.
2. A ``dispatched`` row is first reconciled: the provider is asked for the outcome by our
   reference, so an earlier attempt whose answer was lost is never sent twice.
3. The provider is called outside any database lock, with the recharge id as reference.
4. The answer is applied under the lock: ``delivered``; or, on a permanent refusal (or a
   top-up the provider already took back), ``failed`` with the amount refunded exactly once;
   transient errors and timeouts are retried with backoff until RECHARGE_MAX_ATTEMPTS, then
   failed and refunded.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from catalog.selectors import product_waitlist_promotion
from payments.gateway import card_refund
from payments.models import Payment
from payments.services import payment_add_refunded, payment_lock
from recharges import throttle
from recharges.events import recharge_emit
from recharges.models import Recharge
from recharges.providers import (
    PermanentError,
    ProviderResult,
    TopupRequest,
    TransientError,
    UpstreamTimeout,
    get_provider,
)
from recharges.state import IllegalTransition, transition
from reseller.db import connection_release
from reseller.errors import ApplicationError
from wallet.services import wallet_debit, wallet_lock, wallet_refund

logger = logging.getLogger(__name__)
S = Recharge.Status


@dataclass(frozen=True)
class Outcome:
    status: str
    retry_in: float | None = None
    attempt: int | None = None  # the attempt a retry continues (``recharge_process(attempt=)``)


# A staff retry starts a recharge's attempts at 0 again: the attempt a retry carries is set
# apart per staff retry, so one scheduled before it never matches an attempt after it.
ATTEMPTS_PER_RETRY = 10_000


def attempt_token(recharge: Recharge) -> int:
    """What a retry of the recharge's current attempt carries (``Outcome.attempt``)."""
    return recharge.retries * ATTEMPTS_PER_RETRY + recharge.attempts


def _lock(recharge_id: int) -> Recharge:
    return (
        Recharge.objects.select_for_update(of=("self",))
        .select_related("product__operator", "product__country")
        .get(pk=recharge_id)
    )


def backoff(attempt: int) -> float:
    """Seconds before retry number ``attempt``: 5, 10, 20, 40 … capped at 10 minutes."""
    return float(min(600, 5 * 2 ** max(0, attempt - 1)))


def topup_request(recharge: Recharge) -> TopupRequest:
    product = recharge.product
    return TopupRequest(
        reference=recharge.public_id,
        recipient_number=recharge.recipient_number,
        country=product.country_id,
        operator_id=product.operator.public_id,
        product_id=product.public_id,
        amount=product.local_amount,
        currency=product.local_currency,
    )


def recharge_refund(*, recharge: Recharge, actor=None) -> None:
    """Give a failed recharge's amount back to where it was paid from, exactly once."""
    if recharge.refunded:
        return
    payment = payment_lock(payment_id=recharge.payment_id)
    if payment.method == Payment.Method.WALLET and payment.wallet_id:
        wallet_refund(
            wallet_id=payment.wallet_id,
            amount=recharge.amount,
            reference=recharge.ledger_reference,
            memo=f"refund of {recharge.public_id}",
            by=actor,
        )
    else:
        # Card payments go back to the card: recorded here, sent to Stripe after commit (no
        # lock held during the call); the sweeper re-sends one whose call did not come back.
        recharge_id = recharge.pk
        transaction.on_commit(lambda: card_refund_send(recharge_id=recharge_id), robust=True)
    payment_add_refunded(payment, recharge.amount)
    recharge.refunded = True
    recharge.save(update_fields=["refunded"])


def card_refund_send(*, recharge_id: int) -> str | None:
    """Send the card refund a failed recharge owes to Stripe; idempotent, never under a lock.

    Stripe's idempotency key (the recharge's ledger reference) makes a resend return the first
    refund. Returns the refund id, or None when nothing is owed or Stripe is unreachable.
    """
    recharge = Recharge.objects.select_related("payment").get(pk=recharge_id)
    payment = recharge.payment
    if not recharge.refunded or recharge.card_refund_id or payment.method != Payment.Method.CARD:
        return recharge.card_refund_id or None
    try:
        refund_id = card_refund(
            payment=payment, amount=recharge.amount, reference=recharge.ledger_reference
        )
    except ApplicationError:
        logger.warning("card refund of %s not sent; the sweeper retries", recharge.public_id)
        return None
    Recharge.objects.filter(pk=recharge_id, card_refund_id="").update(card_refund_id=refund_id)
    return refund_id


def _fail(recharge: Recharge, *, code: str, message: str, raw=None, actor=None) -> Outcome:
    transition(
        recharge,
        S.FAILED,
        note=f"{code}: {message}"[:255],
        actor=actor,
        extra_fields={
            "failure_code": code[:64],
            "failure_message": message[:255],
            "provider_response": raw if raw is not None else recharge.provider_response,
        },
    )
    recharge_refund(recharge=recharge, actor=actor)
    recharge_emit(recharge)  # after the refund: the event says the money is back
    return Outcome(S.FAILED)


# What a provider's answer that leaves the recipient nothing does to a dispatched recharge:
# it fails and is refunded once. A top-up taken back before we recorded it delivered is one
# (the provider gave its cost back); taken back after, it is the reconciliation's.
NOT_DELIVERED = {
    ProviderResult.FAILED: ("upstream_failed", "The provider could not deliver the top-up."),
    ProviderResult.REVERSED: ("upstream_reversed", "The provider took the top-up back."),
}


def apply_result(recharge_id: int, result: ProviderResult, provider_name: str) -> Outcome:
    with transaction.atomic():
        recharge = _lock(recharge_id)
        if recharge.status != S.DISPATCHED:
            return Outcome(recharge.status)
        if result.status == ProviderResult.DELIVERED:
            transition(
                recharge,
                S.DELIVERED,
                note=f"{provider_name} {result.transaction_id}",
                extra_fields={
                    "provider": provider_name,
                    "provider_transaction_id": result.transaction_id,
                    "provider_response": result.raw,
                },
            )
            recharge_emit(recharge)
            return Outcome(S.DELIVERED)
        if result.status in NOT_DELIVERED:
            code, message = NOT_DELIVERED[result.status]
            return _fail(
                recharge,
                code=result.code or code,
                message=result.message or message,
                raw=result.raw,
            )
        recharge.provider_response = result.raw
        recharge.provider_transaction_id = result.transaction_id or recharge.provider_transaction_id
        recharge.save(update_fields=["provider_response", "provider_transaction_id"])
        return Outcome(
            S.DISPATCHED, retry_in=backoff(recharge.attempts), attempt=attempt_token(recharge)
        )


def _give_up_or_retry(recharge_id: int, *, code: str, message: str) -> Outcome:
    with transaction.atomic():
        recharge = _lock(recharge_id)
        if recharge.status != S.DISPATCHED:
            return Outcome(recharge.status)
        if recharge.attempts >= settings.RECHARGE_MAX_ATTEMPTS:
            return _fail(recharge, code=code, message=message)
        return Outcome(
            S.DISPATCHED, retry_in=backoff(recharge.attempts), attempt=attempt_token(recharge)
        )


RATE_LIMITED = "upstream_rate_limited"


def _not_counted(recharge_id: int, *, retry_in: float) -> Outcome:
    """Retry later without spending an attempt: the call was refused before any work."""
    with transaction.atomic():
        recharge = _lock(recharge_id)
        if recharge.status != S.DISPATCHED:
            return Outcome(recharge.status)
        if recharge.attempts > 0:
            recharge.attempts -= 1
            recharge.save(update_fields=["attempts"])
        jitter = random.uniform(0, min(retry_in, 5.0))  # noqa: S311 (spreading, not a secret)
        return Outcome(S.DISPATCHED, retry_in=retry_in + jitter, attempt=attempt_token(recharge))


def _taken_over(recharge: Recharge, *, attempt: int | None, quiet_since: datetime | None) -> bool:
    """May this task go on with a ``dispatched`` row (step 1 of the module docstring)?"""
    if attempt is not None:
        return attempt == attempt_token(recharge)
    if quiet_since is None:
        stuck = timedelta(seconds=settings.RECHARGE_STUCK_DISPATCHED_SECONDS)
        quiet_since = timezone.now() - stuck
    return recharge.updated_at <= quiet_since


def recharge_process(
    *,
    recharge_id: int,
    provider=None,
    attempt: int | None = None,
    quiet_since: datetime | None = None,
) -> Outcome:
    """Move one recharge forward as far as it can go now; see the module docstring.
    ``attempt``: the attempt whose retry this is (``Outcome.attempt``); ``quiet_since``: take
    over a dispatched row that nothing has touched since then (the sweeper's cutoff)."""
    with transaction.atomic():
        recharge = _lock(recharge_id)
        if recharge.status == S.QUEUED:
            if not recharge.livemode:
                return Outcome(recharge.status)  # test mode never reaches a provider
            promotion = product_waitlist_promotion(product=recharge.product)
            if promotion is not None:
                transition(
                    recharge,
                    S.WAITLISTED,
                    note=f"waiting for promotion {promotion.public_id}",
                    extra_fields={"waitlisted_until": promotion.starts_at},
                )
                recharge_emit(recharge)
                return Outcome(S.WAITLISTED)
            transition(recharge, S.DISPATCHED, extra_fields={"attempts": recharge.attempts + 1})
            reconcile_first = False
        elif recharge.status == S.DISPATCHED and recharge.livemode:
            if not _taken_over(recharge, attempt=attempt, quiet_since=quiet_since):
                return Outcome(recharge.status)  # another task has it in hand
            recharge.attempts += 1
            recharge.updated_at = timezone.now()
            recharge.save(update_fields=["attempts", "updated_at"])
            reconcile_first = True
        else:
            return Outcome(recharge.status)  # final, waitlisted, or a sandbox row in flight
        request = topup_request(recharge)

    connection_release()  # no connection held while the provider answers (with a pool)
    return recharge_call(recharge_id, request, provider=provider, reconcile_first=reconcile_first)


Apply = Callable[[int, ProviderResult, str], Outcome]


def recharge_call(
    recharge_id: int,
    request: TopupRequest,
    *,
    provider=None,
    reconcile_first: bool = False,
    apply: Apply | None = None,
) -> Outcome:
    """Steps 2-4 for a recharge this task has just made ``dispatched`` (step 1, committed):
    reconcile if asked, call the provider outside any lock, apply its answer. ``apply``
    writes an answer (default ``apply_result``; the group commit writes deliveries in bulk)."""
    apply = apply or apply_result
    provider = provider or get_provider()
    if reconcile_first:
        try:
            known = provider.status(request.reference)
        except (TransientError, UpstreamTimeout) as exc:
            return _give_up_or_retry(recharge_id, code=exc.code, message=str(exc))
        if known is not None:
            return apply(recharge_id, known, provider.name)
    try:
        result = provider.send(request)
    except PermanentError as exc:
        with transaction.atomic():
            recharge = _lock(recharge_id)
            if recharge.status != S.DISPATCHED:
                return Outcome(recharge.status)
            return _fail(recharge, code=exc.code, message=str(exc), raw=exc.raw)
    except UpstreamTimeout as exc:
        try:
            known = provider.status(request.reference)
        except (TransientError, UpstreamTimeout):
            known = None
        if known is not None:
            return apply(recharge_id, known, provider.name)
        return _give_up_or_retry(recharge_id, code="upstream_timeout", message=str(exc))
    except TransientError as exc:
        if exc.code == RATE_LIMITED:
            # The provider asks us to slow down: every worker pauses its calls for the
            # Retry-After, and this recharge waits its turn without losing an attempt.
            wait = exc.retry_after or 1.0
            throttle.pause(provider.name, wait)
            return _not_counted(recharge_id, retry_in=wait)
        outcome = _give_up_or_retry(recharge_id, code=exc.code, message=str(exc))
        if outcome.retry_in is not None and exc.retry_after:
            retry_in = max(outcome.retry_in, exc.retry_after)
            return Outcome(outcome.status, retry_in=retry_in, attempt=outcome.attempt)
        return outcome
    return apply(recharge_id, result, provider.name)


def recharges_due(*, now: datetime | None = None) -> dict[str, list[int]]:
    """What the sweeper should look at now: lost messages, stuck calls, opened waitlists."""
    now = now or timezone.now()
    stuck_queued = now - timedelta(seconds=settings.RECHARGE_STUCK_QUEUED_SECONDS)
    stuck_dispatched = now - timedelta(seconds=settings.RECHARGE_STUCK_DISPATCHED_SECONDS)
    return {
        "queued": list(
            Recharge.objects.filter(status=S.QUEUED, updated_at__lt=stuck_queued).values_list(
                "pk", flat=True
            )[:1000]
        ),
        "dispatched": list(
            Recharge.objects.filter(
                status=S.DISPATCHED, livemode=True, updated_at__lt=stuck_dispatched
            ).values_list("pk", flat=True)[:1000]
        ),
        "waitlisted": list(
            Recharge.objects.filter(status=S.WAITLISTED, waitlisted_until__lte=now).values_list(
                "pk", flat=True
            )[:1000]
        ),
        "card_refunds": list(
            Recharge.objects.filter(
                refunded=True,
                card_refund_id="",
                payment__method=Payment.Method.CARD,
                updated_at__lt=stuck_queued,
            ).values_list("pk", flat=True)[:1000]
        ),
    }


def waitlist_release(*, recharge_id: int) -> bool:
    """Put a waitlisted recharge whose promotion window opened back in the queue."""
    with transaction.atomic():
        recharge = _lock(recharge_id)
        if recharge.status != S.WAITLISTED:
            return False
        if recharge.waitlisted_until and recharge.waitlisted_until > timezone.now():
            return False
        transition(recharge, S.QUEUED, note="promotion window opened")
        return True


def recharge_retry(
    *, recharge_id: int, actor, enqueue: Callable[..., None] | None = None
) -> Recharge:
    """Staff: send a failed recharge again, paying for it again from the same wallet.

    ``enqueue`` (``recharges_enqueue`` of the tasks module) is called after commit; the
    processor does not import its own tasks. Without it the sweeper picks the row up.
    """
    with transaction.atomic():
        recharge = _lock(recharge_id)
        if recharge.status != S.FAILED:
            raise IllegalTransition("Only a failed recharge can be retried.")
        payment = payment_lock(payment_id=recharge.payment_id)
        if recharge.refunded and payment.wallet_id:
            wallet = wallet_lock(wallet_id=payment.wallet_id)
            wallet_debit(
                wallet=wallet,
                amount=recharge.amount,
                reference=f"{recharge.public_id}:retry{recharge.retries + 1}",
                memo=f"retry of {recharge.public_id}",
            )
            payment_add_refunded(payment, -recharge.amount)
        transition(
            recharge,
            S.QUEUED,
            note="retried by staff",
            actor=actor,
            extra_fields={
                "refunded": False,
                "failure_code": "",
                "failure_message": "",
                "retries": recharge.retries + 1,
                "attempts": 0,
            },
        )
        if enqueue is not None:
            ids = [recharge.pk]
            transaction.on_commit(lambda: enqueue(recharge_ids=ids))
        return recharge


def recharge_fail_by_staff(*, recharge_id: int, actor, reason: str) -> Recharge:
    """Staff: give up on a recharge that is not delivered (e.g. stuck) and refund it once."""
    with transaction.atomic():
        recharge = _lock(recharge_id)
        if recharge.status == S.FAILED:
            recharge_refund(recharge=recharge, actor=actor)  # no-op if already refunded
            return recharge
        _fail(
            recharge,
            code="cancelled_by_staff",
            message=reason or "Cancelled by staff.",
            actor=actor,
        )
        return recharge
