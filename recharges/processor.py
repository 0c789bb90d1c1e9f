"""The recharge processor (docs/contract.md §5, docs/processor.md): one path for every live
recharge, whatever the providers are.

    recharge_process(id)
      1. claim      under the row's lock: a ``queued`` row is given its target (the cheapest
                    healthy route, or ``AIRTIME_PROVIDER`` when no provider row sells its
                    product) and becomes ``dispatched``; committed before any call
      2. slot       one of the target provider's slots of calls in flight (waits, woken)
      3. call       outside any lock: look the reference up first when the row was in flight
                    already, else send; every call recorded and counted towards the
                    provider's health
      4. answer     under the row's lock: ``delivered`` (cost, margin, books, event), or
                    ``failed`` and refunded once, or retried later; after a definite refusal,
                    the next route (back to 2)

Steps 1 and 4 are written in batches: each worker thread carries one recharge, and the
threads of a process hand their claims and answers to a ``Batcher``, which writes every one
waiting in one transaction (``claims_write``, ``answers_write``). A recharge alone is a batch
of one. Everything is safe to run twice or concurrently for the same row:

- Under the row lock, only a ``queued`` (or an in-flight ``dispatched``) row moves on. A
  product whose promotion is scheduled within the waitlist horizon is ``waitlisted``. A
  ``dispatched`` row moves on only for the task its last attempt scheduled (``attempt``) or
  once nothing has touched it since a cutoff (``quiet_since``: the sweeper's, or
  RECHARGE_STUCK_DISPATCHED_SECONDS ago): any other copy of the task might otherwise call the
  provider while the first call is still on its way.
- A ``dispatched`` row taken over is first looked up at its provider by our reference, so an
  earlier attempt whose answer was lost is never sent twice.
- The row always names the one provider that may hold it, recorded before the call. It moves
  to the next route only after a definite refusal (a documented refusal, or a connection the
  provider never took); an unclear answer (timeout, 5xx, a reference already used) is settled
  at that same provider by looking the reference up, and retried there, never sent elsewhere
  meanwhile.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from decimal import Decimal
from functools import cache
from urllib.parse import quote, urlsplit, urlunsplit

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from accounts.models import Account
from books.services import Sale, books_sales_record
from catalog.errors import FxRateNotFound
from catalog.models import Product
from catalog.selectors import fx_rate, product_waitlist_promotion, products_get
from network.commissions import Purchase, commission_earners, commissions_book
from payments.gateway import card_refund
from payments.models import Payment
from payments.services import payment_add_refunded, payment_lock
from recharges import lanes
from recharges.events import recharge_emit, recharges_emit
from recharges.models import Recharge, RechargeAttempt
from recharges.pins import PIN_FIELDS, pin_receipts_queue, pin_seal
from recharges.state import IllegalTransition, transition, transition_many
from reseller.batching import Batcher
from reseller.db import connection_release
from reseller.errors import ApplicationError
from reseller.metrics import PROVIDER_CALL_SECONDS, PROVIDER_CALLS
from reseller.money import quantize
from upstreams import health, semaphore
from upstreams.adapters import (
    PermanentError,
    ProviderError,
    ProviderResult,
    TopupRequest,
    TransientError,
    UpstreamTimeout,
    adapter_for,
    connection_refused,
    provider_unnamed,
)
from upstreams.models import Provider
from upstreams.routing import Router, Target, providers_knock, route_target, settings_target
from wallet.services import wallet_debit, wallet_lock, wallet_refund, wallets_lock_top_down

logger = logging.getLogger(__name__)
S = Recharge.Status
A = RechargeAttempt.Outcome


@dataclass(frozen=True)
class Progress:
    """Where a recharge stands after a task: its status, and when the task should run again
    (``retry_in`` seconds, carrying ``attempt`` to ``recharge_process``), if it should."""

    status: str
    retry_in: float | None = None
    attempt: int | None = None


# A staff retry starts a recharge's attempts at 0 again: the attempt a retry carries is set
# apart per staff retry, so one scheduled before it never matches an attempt after it.
ATTEMPTS_PER_RETRY = 10_000
NO_ROUTE_WAIT = 30.0  # seconds a queued recharge waits when no route is usable now
RATE_LIMITED = "upstream_rate_limited"


def attempt_token(recharge: Recharge) -> int:
    """What a retry of the recharge's current attempt carries (``Progress.attempt``)."""
    return recharge.retries * ATTEMPTS_PER_RETRY + recharge.attempts


def _locked(
    ids: list[int], *, related: tuple[str, ...] = ("product__operator",)
) -> dict[int, Recharge]:
    """The recharges, locked for this transaction in id order (the processor's one way), with
    ``related`` read in the same statement (each join costs the ORM a good part of a
    millisecond to compile; what a rare path needs more is read when it needs it)."""
    rows = (
        Recharge.objects.select_for_update(of=("self",))
        .filter(pk__in=ids)
        .select_related(*related)
        .order_by("pk")
    )
    return {recharge.pk: recharge for recharge in rows}


def recharge_lock(recharge_id: int) -> Recharge:
    """One recharge, locked for this transaction."""
    found = _locked(
        [recharge_id],
        related=("product__operator", "route__provider", "route__upstream_operator"),
    )
    if recharge_id not in found:
        raise Recharge.DoesNotExist(recharge_id)
    return found[recharge_id]


def backoff(attempt: int) -> float:
    """Seconds before retry number ``attempt``: 5, 10, 20, 40 … capped at 10 minutes."""
    return float(min(600, 5 * 2 ** max(0, attempt - 1)))


def _later(recharge: Recharge) -> Progress:
    """Still in flight: ask again after the backoff of its attempts."""
    return Progress(
        S.DISPATCHED, retry_in=backoff(recharge.attempts), attempt=attempt_token(recharge)
    )


def topup_request(recharge: Recharge) -> TopupRequest:
    product = recharge.product
    return TopupRequest(
        reference=recharge.public_id,
        recipient_number=recharge.recipient_number,
        country=product.country_id,
        operator_id=product.operator.public_id,
        product_id=product.public_id,
        amount=recharge.face_value,
        currency=product.local_currency,
        fields=dict(recharge.fields or {}),
        product_type=product.product_type,
    )


def request_for(recharge: Recharge, target: Target) -> TopupRequest:
    """The top-up in the target's terms: by a route, the provider's operator and product and
    what to send; to ``AIRTIME_PROVIDER``, our own."""
    request = topup_request(recharge)
    route = target.route
    if route is None:
        return request
    return replace(
        request,
        operator_id=route.upstream_operator.upstream_id,
        sku=route.sku,
        send_value=route.send_value_at(_ranged(recharge)),
        send_currency=route.send_currency,
        callback_url=callback_url(route.provider),
        field_names=dict(route.field_names or {}),
    )


def callback_url(provider: Provider) -> str:
    """Where the provider calls back: ``SITE_URL`` + ``/webhooks/providers/<name>``, with the
    provider's callback secret as HTTP Basic credentials in it when staff set one (the
    callback endpoint then refuses callbacks without them)."""
    url = f"{settings.SITE_URL.rstrip('/')}/webhooks/providers/{provider.name}"
    if not provider.callback_secret:
        return url
    parts = urlsplit(url)
    userinfo = f"{quote(provider.name, safe='')}:{quote(provider.callback_secret, safe='')}@"
    return urlunsplit(parts._replace(netloc=userinfo + parts.netloc))


def target_of(recharge: Recharge) -> Target:
    """Where a dispatched recharge was sent: its route, or ``AIRTIME_PROVIDER`` when it has
    none (no provider row sold its product then); settled there, whatever the routes are
    now."""
    if recharge.route is not None:
        return route_target(recharge.route, _ranged(recharge))
    return settings_target(recharge.product, _ranged(recharge))


def _ranged(recharge: Recharge) -> Decimal | None:
    """The amount that routes and costs depend on: a range product's chosen local amount;
    None for a fixed product (its routes sell it as it is)."""
    return recharge.face_value if recharge.product.is_range else None


# -- money back ------------------------------------------------------------------------------


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


def _fail(
    recharge: Recharge,
    *,
    code: str,
    message: str,
    raw=None,
    actor=None,
    refunds: list[Recharge] | None = None,
) -> Progress:
    """Fail the (locked) recharge and refund it once, or leave its refund and event to the
    answer batch that passes ``refunds`` (``answers_write``: after its wallets are locked).
    ``message`` is the reseller's to read (``failureMessage``, the history): it names no
    provider."""
    message = provider_unnamed(message)
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
    if refunds is not None:
        refunds.append(recharge)
        return Progress(S.FAILED)
    recharge_refund(recharge=recharge, actor=actor)
    recharge_emit(recharge)  # after the refund: the event says the money is back
    return Progress(S.FAILED)


# -- the books -------------------------------------------------------------------------------


def margin_of(
    recharge: Recharge,
    *,
    cost: Decimal | None,
    cost_currency: str,
    rate: Callable[[str, str], Decimal] | None = None,
    price: Decimal | None = None,
) -> Decimal | None:
    """What the sale earned: the price paid to the platform (``price``: an agent's recharge
    is the top account's price, docs/network.md; else the recharge's amount) less the cost
    converted into the order's currency (the FX table now; ``rate`` a batch's memo of it);
    None when the cost or a rate is unknown."""
    if cost is None or not cost_currency:
        return None
    try:
        converted = (rate or _fx)(cost_currency, recharge.currency)
    except FxRateNotFound:
        return None
    return (recharge.amount if price is None else price) - quantize(cost * converted)


def _fx(from_currency: str, to_currency: str) -> Decimal:
    return fx_rate(from_currency=from_currency, to_currency=to_currency).rate


def purchase_of(recharge: Recharge) -> Purchase:
    """A delivered live recharge as the network's commissions see it."""
    return Purchase(
        recharge=recharge.public_id,
        reference=recharge.ledger_reference,
        buyer_id=recharge.account_id,
        product=recharge.product,
        local_amount=recharge.local_amount if recharge.product.is_range else None,
        paid=recharge.amount,
        currency=recharge.currency,
    )


def sale_of(recharge: Recharge, *, price: Decimal | None = None) -> Sale:
    """A delivered live recharge as the books record it (docs/books.md): at ``price``, what
    the platform was paid for it (an agent's recharge: its top account's price, the amount
    less the network's commissions, docs/network.md); by default the recharge's amount."""
    product = recharge.product
    return Sale(
        reference=recharge.public_id,
        customer_id=recharge.account_id,
        price=recharge.amount if price is None else price,
        currency=recharge.currency,
        provider=recharge.provider,
        operator_id=product.operator_id,
        country=product.country_id,
        cost=recharge.cost,
        cost_currency=recharge.cost_currency,
        margin=recharge.margin,
    )


# -- 1. the claim ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Claim:
    """A task's request to move a recharge on (``recharge_process``'s arguments)."""

    recharge_id: int
    attempt: int | None = None
    quiet_since: datetime | None = None


@dataclass(frozen=True)
class Ticket:
    """A recharge in hand: where to send what. ``reconcile_first``: look the reference up
    before sending (the row was in flight already); ``tried``: the providers this task sent
    it to and that refused it (a failover goes on down the list)."""

    recharge_id: int
    account_id: int
    target: Target
    request: TopupRequest
    reconcile_first: bool = False
    tried: frozenset[str] = frozenset()


def _taken_over(recharge: Recharge, *, attempt: int | None, quiet_since: datetime | None) -> bool:
    """May this task go on with a ``dispatched`` row (see the module docstring)?"""
    if attempt is not None:
        return attempt == attempt_token(recharge)
    if quiet_since is None:
        stuck = timedelta(seconds=settings.RECHARGE_STUCK_DISPATCHED_SECONDS)
        quiet_since = timezone.now() - stuck
    return recharge.updated_at <= quiet_since


def _refused_by(recharge: Recharge) -> set[str]:
    """Providers that refused this recharge for good (a documented refusal) since it was last
    queued: a staff retry asks every provider again."""
    if recharge.attempts == 0:
        return set()  # never sent since it was queued: nobody refused it (no query)
    calls = RechargeAttempt.objects.filter(recharge_id=recharge.pk, outcome=A.REFUSED)
    if recharge.queued_at is not None:
        calls = calls.filter(created_at__gte=recharge.queued_at)
    return set(calls.values_list("provider", flat=True))


DEFINITE = (A.REFUSED, A.UNREACHABLE)


def _definitely_not_held(recharge: Recharge, *, since) -> bool:
    """Did the row's provider answer its last call for it with a definite "no"? Then nobody
    holds it. Anything else (no answer recorded: a worker killed mid-call; unclear; pending)
    is settled at that provider first. A look-up that did not get through answers nothing:
    the send before it may have been made."""
    last = (
        # Only the calls of its last dispatch (the row is touched before every send): an
        # older "no" says nothing about a send made since, whose worker died in the call.
        RechargeAttempt.objects.filter(
            recharge_id=recharge.pk, provider=recharge.provider, created_at__gte=since
        )
        .exclude(action="status", outcome=A.UNREACHABLE)
        .order_by("-id")
        .values_list("outcome", flat=True)
        .first()
    )
    return last in DEFINITE


def claims_write(claims: list[Claim]) -> list[Ticket | Progress]:
    """Step 1 for a batch of recharges, in one transaction (see the module docstring): each
    ``queued`` live row gets its target and becomes ``dispatched``; a ``dispatched`` row is
    taken over by the task allowed to; anything else says where it stands."""
    providers_knock()  # before any lock: a knock is a TCP connection to a provider
    with transaction.atomic():
        rows = _locked([claim.recharge_id for claim in claims])
        router = Router((recharge.product for recharge in rows.values()), kept=True)
        # The products as this process keeps them, with their promotions: one read for the
        # batch (a product not kept, an inactive one, reads its own promotions).
        kept = products_get(
            product_ids={r.product.public_id for r in rows.values() if r.promotion_wait}
        )
        dispatching: list[Recharge] = []
        answers: list[Ticket | Progress] = []
        seen: set[int] = set()
        for claim in claims:
            recharge = rows.get(claim.recharge_id)
            if recharge is None or claim.recharge_id in seen:
                # Gone, or a second copy of a task in this very batch: the first has it.
                answers.append(Progress(recharge.status if recharge else ""))
                continue
            seen.add(claim.recharge_id)
            if recharge.status == S.QUEUED and recharge.livemode:
                answers.append(_claim_queued(recharge, router, kept, dispatching))
            elif recharge.status == S.DISPATCHED and recharge.livemode:
                answers.append(_claim_in_flight(recharge, claim, router))
            else:
                answers.append(Progress(recharge.status))  # final, waitlisted, or test mode
        transition_many(
            dispatching,
            S.DISPATCHED,
            fields=("route", "provider"),
            values={"attempts": F("attempts") + 1},
        )
    return answers


def _claim_queued(
    recharge: Recharge, router: Router, kept: dict[str, Product], dispatching: list[Recharge]
) -> Ticket | Progress:
    product = kept.get(recharge.product.public_id)
    if product is None or product.pk != recharge.product_id:
        product = recharge.product
    promotion = (
        product_waitlist_promotion(product=product)
        if recharge.promotion_wait
        else None  # the buyer chose to send it now (``whenPromotionScheduled``)
    )
    if promotion is not None:
        transition(
            recharge,
            S.WAITLISTED,
            note=f"waiting for promotion {promotion.public_id}",
            extra_fields={"waitlisted_until": promotion.starts_at},
        )
        recharge_emit(recharge)
        return Progress(S.WAITLISTED)
    target = router.choose(
        recharge.product, exclude=_refused_by(recharge), amount=_ranged(recharge)
    )
    if target is None:
        # Every provider selling it is down, open or out of balance: wait, still queued.
        return Progress(S.QUEUED, retry_in=NO_ROUTE_WAIT + random.uniform(0, 5))  # noqa: S311
    recharge.route, recharge.provider = target.route, target.name
    recharge.attempts += 1  # as ``transition_many`` leaves it
    dispatching.append(recharge)
    return Ticket(recharge.pk, recharge.account_id, target, request_for(recharge, target))


def _claim_in_flight(recharge: Recharge, claim: Claim, router: Router) -> Ticket | Progress:
    if not _taken_over(recharge, attempt=claim.attempt, quiet_since=claim.quiet_since):
        return Progress(recharge.status)  # another task has it in hand
    last_dispatch = recharge.updated_at  # when its last send was about to start
    recharge.attempts += 1
    recharge.updated_at = timezone.now()
    changed = ["attempts", "updated_at"]
    target, reconcile_first = target_of(recharge), True
    if recharge.route is not None and _definitely_not_held(recharge, since=last_dispatch):
        # Its provider refused it for sure: nobody holds it; the cheapest healthy route now,
        # without a look-up.
        chosen = router.choose(
            recharge.product, exclude=_refused_by(recharge), amount=_ranged(recharge)
        )
        if chosen is None:
            recharge.save(update_fields=changed)
            return _later(recharge)
        target, reconcile_first = chosen, False
        recharge.route, recharge.provider = chosen.route, chosen.name
        changed += ["route", "provider"]
    recharge.save(update_fields=changed)
    request = request_for(recharge, target)
    return Ticket(recharge.pk, recharge.account_id, target, request, reconcile_first)


# -- 2 and 3. the call, outside any lock -----------------------------------------------------


@dataclass
class Call:
    """What one task's calls to a provider came to: the calls made (``attempts``, saved with
    the answer) and the ``verdict`` the answer step applies.

    - ``result``: the provider said where the top-up stands (``ProviderResult``)
    - ``refused``: it definitely did not and will not deliver: the next route
    - ``unclear``: it may still deliver: retry there later, or give up after the last attempt
    - ``not_counted``: nothing was sent (no slot, paused, rate limited): later, the attempt
      given back
    """

    ticket: Ticket
    verdict: str = "unclear"
    result: ProviderResult | None = None
    error: ProviderError | None = None
    retry_in: float = 0.0
    attempts: list[RechargeAttempt] = field(default_factory=list)


def _outcome_of(result: ProviderResult | None) -> str:
    if result is None:
        return A.NOT_FOUND
    return {
        ProviderResult.DELIVERED: A.DELIVERED,
        ProviderResult.FAILED: A.REFUSED,
        ProviderResult.REVERSED: A.REVERSED,
    }.get(result.status, A.PENDING)


def provider_call_recorded(
    recharge_id: int,
    adapter,
    action: str,
    request: TopupRequest,
    kept: list[RechargeAttempt] | None = None,
) -> ProviderResult | None:
    """Send the top-up (``action`` "send") or look it up ("status") at a provider, keep the
    call (a ``RechargeAttempt``: appended to ``kept`` for the caller to save with its answer,
    else saved now) and count it towards the provider's health; its result or its error,
    unchanged."""
    connection_release()  # no pooled connection held while the provider answers
    started = time.monotonic()
    outcome: str = A.PENDING
    code, message, ok, refused = "", "", True, False
    try:
        result = adapter.send(request) if action == "send" else adapter.status(request.reference)
    except PermanentError as exc:
        outcome, code, message = A.REFUSED, exc.code, str(exc)
        raise
    except UpstreamTimeout as exc:
        outcome, code, message, ok = A.UNCLEAR, exc.code, str(exc), False
        raise
    except TransientError as exc:
        outcome, code, message = A.UNREACHABLE, exc.code, str(exc)
        ok = exc.code == RATE_LIMITED  # it answered: "not now"
        refused = connection_refused(exc)
        raise
    except ProviderError as exc:
        outcome, code, message, ok = A.UNCLEAR, exc.code, str(exc), False
        raise
    else:
        outcome = _outcome_of(result)
        if result is not None:
            code, message = result.code, result.message
        return result
    finally:
        seconds = time.monotonic() - started
        PROVIDER_CALL_SECONDS.labels(adapter.name).observe(seconds)
        PROVIDER_CALLS.labels(adapter.name, action, outcome).inc()
        try:
            health.record(adapter.name, ok=ok, seconds=seconds, refused=refused)
        except Exception:  # the call's answer matters more than its figures
            logger.warning("health of %s not recorded", adapter.name, exc_info=True)
        attempt = RechargeAttempt(
            recharge_id=recharge_id,
            provider=adapter.name,
            action=action,
            outcome=outcome,
            code=code[:64],
            message=message[:255],
            duration_ms=int(seconds * 1000),
        )
        if kept is None:
            attempt.save()
        else:
            kept.append(attempt)


def provider_call(ticket: Ticket) -> Call:
    """Steps 2-3 for a recharge in hand: within the provider's ceiling of calls in flight,
    look up first if asked, else send; a timeout is settled at once by a look-up."""
    call = Call(ticket)
    provider = ticket.target.provider
    adapter = adapter_for(provider)
    wait = settings.PROVIDER_SLOT_WAIT_SECONDS
    connection_release()  # nothing held while waiting for a slot
    # Waiting, the recharge is dispatched but not yet sent: its account's lane counts it
    # among those waiting, so a backlog never has more than a share of threads waiting.
    with semaphore.provider_slot(
        provider.name,
        limit=provider.max_in_flight,
        wait=wait,
        waiting_as=lanes.slot_waiters(ticket.account_id),
    ) as slot:
        if not slot:
            call.verdict = "not_counted"
            call.retry_in = slot.paused_for or 1.0 + random.uniform(0, 2.0)  # noqa: S311
            return call
        _call(call, adapter)
    return call


def _call(call: Call, adapter) -> None:
    ticket = call.ticket
    request, kept = ticket.request, call.attempts
    try:
        if ticket.reconcile_first:
            known = provider_call_recorded(ticket.recharge_id, adapter, "status", request, kept)
            if known is not None and known.status != ProviderResult.FAILED:
                call.verdict, call.result = "result", known
                return
            if known is not None:  # it refused it: the next route
                call.verdict = "refused"
                call.error = PermanentError(
                    known.message or "refused", code=known.code or "upstream_failed", raw=known.raw
                )
                return
        result = provider_call_recorded(ticket.recharge_id, adapter, "send", request, kept)
        assert result is not None  # a send always answers or raises
        if result.status != ProviderResult.FAILED:
            call.verdict, call.result = "result", result
            return
        call.verdict = "refused"
        call.error = PermanentError(
            result.message or "refused", code=result.code or "upstream_failed", raw=result.raw
        )
    except PermanentError as exc:
        call.verdict, call.error = "refused", exc
    except UpstreamTimeout as exc:
        # It may still deliver: settle it here, never elsewhere meanwhile.
        try:
            known = provider_call_recorded(ticket.recharge_id, adapter, "status", request, kept)
        except (TransientError, UpstreamTimeout):
            known = None
        if known is not None and known.status != ProviderResult.PENDING:
            call.verdict, call.result = "result", known
        else:
            call.verdict = "unclear"
            code = exc.code if exc.code not in ("", "upstream_error") else "upstream_timeout"
            call.error = UpstreamTimeout(str(exc), code=code)
    except TransientError as exc:
        if exc.code == RATE_LIMITED:
            paused = semaphore.pause(adapter.name, exc.retry_after or 1.0)
            call.verdict, call.retry_in = "not_counted", paused
        elif ticket.reconcile_first:  # the look-up did not get through: ask again later
            call.verdict, call.error = "unclear", exc
        else:
            call.verdict, call.error = "refused", exc


# -- 4. the answer ---------------------------------------------------------------------------

# What a provider's answer that leaves the recipient nothing does to a dispatched recharge:
# it fails and is refunded once. A top-up taken back before we recorded it delivered is one
# (the provider gave its cost back); taken back after, it is the reconciliation's.
NOT_DELIVERED = {
    ProviderResult.FAILED: ("upstream_failed", "The provider could not deliver the top-up."),
    ProviderResult.REVERSED: ("upstream_reversed", "The provider took the top-up back."),
}

_TXID_LENGTH = Recharge._meta.get_field("provider_transaction_id").max_length or 0


class _Deliveries:
    """The deliveries of one answer batch, written together: one ``transition_many``, the
    books' lines in one statement, the events in two."""

    def __init__(self) -> None:
        self.rows: list[Recharge] = []
        self.notes: list[str] = []
        self._rates: dict[tuple[str, str], Decimal] = {}

    def rate(self, from_currency: str, to_currency: str) -> Decimal:
        if (from_currency, to_currency) not in self._rates:
            self._rates[(from_currency, to_currency)] = _fx(from_currency, to_currency)
        return self._rates[(from_currency, to_currency)]

    def add(self, recharge: Recharge, result: ProviderResult, target: Target) -> Progress:
        cost, cost_currency = result.cost, result.cost_currency
        if cost is None:  # what the route says one unit costs there
            cost, cost_currency = target.cost, target.cost_currency
        recharge.provider = target.name
        recharge.provider_transaction_id = result.transaction_id
        recharge.provider_response = result.raw
        recharge.cost, recharge.cost_currency = cost, cost_currency if cost is not None else ""
        recharge.delivered_amount = result.delivered_amount
        if result.pin is not None:  # a PIN product's code: kept encrypted, never logged
            pin_seal(recharge, result.pin)
        self.rows.append(recharge)
        # The provider's reference only: the history is the reseller's to read, and resellers
        # never see the provider (contract section 14); staff have it in ``provider``.
        self.notes.append(result.transaction_id)
        return Progress(S.DELIVERED)

    def write(self) -> None:
        fields = [
            *("provider", "provider_transaction_id", "provider_response"),
            *("cost", "cost_currency", "margin", "margin_currency", "delivered_amount"),
            *PIN_FIELDS,
        ]
        # The network's commissions first (docs/network.md): each ancestor's wallet credited,
        # and the platform's price of each sale (its top account's) for the margin and books.
        prices = commissions_book(purchases=[purchase_of(recharge) for recharge in self.rows])
        for recharge in self.rows:
            price = prices[recharge.public_id]
            recharge.margin = margin_of(
                recharge,
                cost=recharge.cost,
                cost_currency=recharge.cost_currency,
                rate=self.rate,
                price=price,
            )
            recharge.margin_currency = recharge.currency if recharge.margin is not None else ""
        transition_many(self.rows, S.DELIVERED, notes=self.notes, fields=fields)
        books_sales_record(
            sales=[sale_of(recharge, price=prices[recharge.public_id]) for recharge in self.rows]
        )
        recharges_emit(self.rows)
        pin_receipts_queue(self.rows)


def answers_write(calls: list[Call]) -> list[Ticket | Progress]:
    """Step 4 for a batch of calls, in one transaction: their attempts saved, and each answer
    applied to its row if the row is still ``dispatched`` (staff may have failed it
    meanwhile): deliveries together; a refusal's next route (a ``Ticket``), or the end."""
    with transaction.atomic():
        RechargeAttempt.objects.bulk_create([a for call in calls for a in call.attempts])
        rows = _locked([call.ticket.recharge_id for call in calls], related=("product",))
        deliveries = _Deliveries()
        refunds: list[Recharge] = []
        answers = [
            _answer(rows[call.ticket.recharge_id], call, deliveries, refunds) for call in calls
        ]
        refunds.sort(key=lambda recharge: (recharge.payment_id, recharge.pk))  # payments' locks
        _wallets_lock(
            refunds=refunds, buyer_ids={recharge.account_id for recharge in deliveries.rows}
        )
        deliveries.write()
        for recharge in refunds:
            recharge_refund(recharge=recharge)
            recharge_emit(recharge)  # after the refund: the event says the money is back
    return answers


def _wallets_lock(*, refunds: list[Recharge], buyer_ids: set[int]) -> None:
    """THE LOCK ORDER (``wallet.services.wallets_lock_top_down``) in a batch that refunds:
    every wallet the batch writes (the refunds' and its deliveries' commissions') is locked
    from the top of the network down before any is written, so the batch never holds one
    wallet while it waits for a wallet above it (docs/network.md, "Lock order"). A batch
    without refunds needs nothing here: the commissions lock theirs top down."""
    if not refunds:
        return
    payers = Payment.objects.filter(
        pk__in={recharge.payment_id for recharge in refunds}, method=Payment.Method.WALLET
    ).values_list("account_id", flat=True)
    if not payers:
        return  # card refunds: no wallet
    writing = [
        *Account.objects.filter(pk__in=set(payers)),
        *commission_earners(buyer_ids=buyer_ids),
    ]
    if len({account.pk for account in writing}) > 1:
        wallets_lock_top_down(accounts=writing)


def _answer(
    recharge: Recharge, call: Call, deliveries: _Deliveries, refunds: list[Recharge]
) -> Ticket | Progress:
    if recharge.status != S.DISPATCHED:
        return Progress(recharge.status)
    ticket, target = call.ticket, call.ticket.target
    if call.verdict == "not_counted":
        # Nothing was sent: later, without spending an attempt.
        if recharge.attempts > 0:
            recharge.attempts -= 1
            recharge.save(update_fields=["attempts"])
        jitter = random.uniform(0, min(call.retry_in, 5.0))  # noqa: S311 (spreading)
        retry_in = call.retry_in + jitter
        return Progress(S.DISPATCHED, retry_in=retry_in, attempt=attempt_token(recharge))
    if call.verdict == "result":
        assert call.result is not None
        result = call.result
        if result.status == ProviderResult.DELIVERED:
            if len(result.transaction_id or "") > _TXID_LENGTH:
                # Never cut silently: it stays in flight, staff see it (the sweeper asks again).
                logger.error("%s: transaction id too long", recharge.public_id)
                return Progress(S.DISPATCHED)
            return deliveries.add(recharge, result, target)
        if result.status in NOT_DELIVERED:
            code, message = NOT_DELIVERED[result.status]
            return _fail(
                recharge,
                code=result.code or code,
                message=result.message or message,
                raw=result.raw,
                refunds=refunds,
            )
        recharge.provider_response = result.raw
        recharge.provider_transaction_id = result.transaction_id or recharge.provider_transaction_id
        recharge.save(update_fields=["provider_response", "provider_transaction_id"])
        return _later(recharge)
    error = call.error or ProviderError("no answer", code="upstream_timeout")
    if call.verdict == "refused":
        if recharge.route_id != (target.route.pk if target.route else None):
            return Progress(recharge.status)  # moved on meanwhile (another task)
        return _failover(recharge, ticket, error, refunds)
    # Unclear: retried at the same provider, failed after the last attempt.
    if recharge.attempts >= settings.RECHARGE_MAX_ATTEMPTS:
        code = error.code or "upstream_timeout"
        return _fail(recharge, code=code, message=str(error), refunds=refunds)
    return _later(recharge)


def _failover(
    recharge: Recharge, ticket: Ticket, refusal: ProviderError, refunds: list[Recharge]
) -> Ticket | Progress:
    """After a definite refusal by the ticket's provider: the next route (recorded on the
    row before it is called), or the end: failed and refunded when every provider refused
    it, retried later when some were only unreachable."""
    tried = ticket.tried | {ticket.target.name}
    refused = _refused_by(recharge)
    following = Router([recharge.product]).choose(
        recharge.product, exclude=refused | tried, amount=_ranged(recharge)
    )
    if following is not None:
        recharge.route, recharge.provider = following.route, following.name
        recharge.updated_at = timezone.now()
        recharge.save(update_fields=["route", "provider", "updated_at"])
        request = request_for(recharge, following)
        return Ticket(recharge.pk, recharge.account_id, following, request, tried=tried)
    if isinstance(refusal, PermanentError) and not (tried - refused):
        return _fail(
            recharge, code=refusal.code, message=str(refusal), raw=refusal.raw, refunds=refunds
        )
    if recharge.attempts >= settings.RECHARGE_MAX_ATTEMPTS:
        return _fail(
            recharge, code=refusal.code, message=str(refusal), raw=refusal.raw, refunds=refunds
        )
    return _later(recharge)


# -- the one path ----------------------------------------------------------------------------


@cache
def _batchers() -> tuple[Batcher[Claim, Ticket | Progress], Batcher[Call, Ticket | Progress]]:
    limit = settings.RECHARGE_BATCH_MAX
    return Batcher(claims_write, limit=limit), Batcher(answers_write, limit=limit)


def recharge_process(
    *, recharge_id: int, attempt: int | None = None, quiet_since: datetime | None = None
) -> Progress:
    """Move one recharge forward as far as it can go now; see the module docstring.
    ``attempt``: the attempt whose retry this is (``Progress.attempt``); ``quiet_since``: take
    over a dispatched row that nothing has touched since then (the sweeper's cutoff)."""
    claims, answers = _batchers()
    step = claims.submit(Claim(recharge_id, attempt, quiet_since))
    while isinstance(step, Ticket):
        step = answers.submit(provider_call(step))
    return step


# -- the sweeper and staff -------------------------------------------------------------------


def recharges_due(*, now: datetime | None = None) -> dict[str, list[int]]:
    """What the sweeper should look at now: lost messages, stuck calls, opened waitlists."""
    now = now or timezone.now()
    stuck_queued = now - timedelta(seconds=settings.RECHARGE_STUCK_QUEUED_SECONDS)
    stuck_dispatched = now - timedelta(seconds=settings.RECHARGE_STUCK_DISPATCHED_SECONDS)
    return {
        # Published and left queued (a lost message); a lane's backlog is fed, not flooded.
        "queued": list(
            Recharge.objects.filter(
                status=S.QUEUED,
                livemode=True,
                released_at__isnull=False,
                updated_at__lt=stuck_queued,
            ).values_list("pk", flat=True)[:1000]
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
        recharge = recharge_lock(recharge_id)
        if recharge.status != S.WAITLISTED:
            return False
        if recharge.waitlisted_until and recharge.waitlisted_until > timezone.now():
            return False
        # Published again at once by the caller: it keeps its place, ahead of any backlog.
        transition(
            recharge,
            S.QUEUED,
            note="promotion window opened",
            extra_fields={"released_at": timezone.now()},
        )
        return True


def recharge_retry(
    *, recharge_id: int, actor, enqueue: Callable[..., None] | None = None
) -> Recharge:
    """Staff: send a failed recharge again, paying for it again from the same wallet.

    ``enqueue`` (``recharges_enqueue`` of the tasks module) is called after commit; the
    processor does not import its own tasks. Without it the sweeper picks the row up.
    """
    with transaction.atomic():
        recharge = recharge_lock(recharge_id)
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
                "released_at": timezone.now(),  # published at once, not behind a backlog
            },
        )
        if enqueue is not None:
            ids = [recharge.pk]
            transaction.on_commit(lambda: enqueue(recharge_ids=ids))
        return recharge


def recharge_fail_by_staff(*, recharge_id: int, actor, reason: str) -> Recharge:
    """Staff: give up on a recharge that is not delivered (e.g. stuck) and refund it once."""
    with transaction.atomic():
        recharge = recharge_lock(recharge_id)
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


def recharges_cancel_for_payment(*, payment_id: int, code: str, message: str) -> list[int]:
    """Cancel a payment's recharges not yet sent to a provider (``queued``, ``waitlisted``):
    each fails with ``code`` and is refunded exactly once where it was paid from (a card
    payment: to the card, after commit). A recharge already dispatched is left to its
    provider's answer. Called in the caller's transaction; each row under its lock, taken
    before the payment's (the processor's order). Returns the ids cancelled now."""
    waiting = (S.QUEUED, S.WAITLISTED)
    cancelled = []
    ids = Recharge.objects.filter(payment_id=payment_id, status__in=waiting).order_by("pk")
    for recharge_id in list(ids.values_list("pk", flat=True)):
        recharge = recharge_lock(recharge_id)
        if recharge.status not in waiting:
            continue  # the processor took it meanwhile
        _fail(recharge, code=code, message=message)
        cancelled.append(recharge_id)
    return cancelled
