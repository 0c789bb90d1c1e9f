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

With provider rows (``upstreams``; docs/providers.md) a recharge goes by the cheapest healthy
route of its product, recorded on the row before the call: the row always names the one
provider that may hold it. It moves to the next route only after a definite refusal (a
documented refusal, or a connection the provider never took); an unclear answer (timeout,
5xx, a reference already used) is settled at that same provider by looking the reference up,
and retried there, never sent elsewhere meanwhile. Every call is kept (``RechargeAttempt``)
and counts towards the provider's health.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from decimal import Decimal
from urllib.parse import quote, urlsplit, urlunsplit

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from books.services import Sale, books_sales_record
from catalog.errors import FxRateNotFound
from catalog.selectors import fx_convert, product_waitlist_promotion
from payments.gateway import card_refund
from payments.models import Payment
from payments.services import payment_add_refunded, payment_lock
from recharges.events import recharge_emit
from recharges.models import Recharge, RechargeAttempt
from recharges.state import IllegalTransition, transition
from reseller.db import connection_release
from reseller.errors import ApplicationError
from reseller.metrics import PROVIDER_CALL_SECONDS, PROVIDER_CALLS
from upstreams import health, throttle
from upstreams.adapters import (
    AirtimeProvider,
    PermanentError,
    ProviderError,
    ProviderResult,
    TopupRequest,
    TransientError,
    UpstreamTimeout,
    adapter_for,
    connection_refused,
    get_provider,
)
from upstreams.models import Provider, Route
from upstreams.routing import (
    product_has_routes,
    providers_knock,
    route_choose,
    routing_active,
)
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


def recharge_lock(recharge_id: int) -> Recharge:
    """The recharge, locked for this transaction (the one way the processor locks it)."""
    return (
        Recharge.objects.select_for_update(of=("self",))
        .select_related(
            "product__operator", "product__country", "route__provider", "route__upstream_operator"
        )
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


def request_by(request: TopupRequest, route: Route) -> TopupRequest:
    """The top-up in the route's terms: the provider's operator and product, what to send."""
    return replace(
        request,
        operator_id=route.upstream_operator.upstream_id,
        sku=route.sku,
        send_value=route.send_value,
        send_currency=route.send_currency,
        callback_url=callback_url(route.provider),
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


def margin_of(recharge: Recharge, *, cost: Decimal | None, cost_currency: str) -> Decimal | None:
    """What the sale earned: the price paid less the cost converted into the order's currency
    (the FX table now); None when the cost or a rate is unknown."""
    if cost is None or not cost_currency:
        return None
    try:
        cost_here, _rate = fx_convert(
            amount=cost, from_currency=cost_currency, to_currency=recharge.currency
        )
    except FxRateNotFound:
        return None
    return recharge.amount - cost_here


def sale_of(recharge: Recharge) -> Sale:
    """A delivered live recharge as the books record it (docs/books.md)."""
    product = recharge.product
    return Sale(
        reference=recharge.public_id,
        customer_id=recharge.account_id,
        price=recharge.amount,
        currency=recharge.currency,
        provider=recharge.provider,
        operator_id=product.operator_id,
        country=product.country_id,
        cost=recharge.cost,
        cost_currency=recharge.cost_currency,
        margin=recharge.margin,
    )


# What a provider's answer that leaves the recipient nothing does to a dispatched recharge:
# it fails and is refunded once. A top-up taken back before we recorded it delivered is one
# (the provider gave its cost back); taken back after, it is the reconciliation's.
NOT_DELIVERED = {
    ProviderResult.FAILED: ("upstream_failed", "The provider could not deliver the top-up."),
    ProviderResult.REVERSED: ("upstream_reversed", "The provider took the top-up back."),
}


def apply_result(recharge_id: int, result: ProviderResult, provider_name: str) -> Outcome:
    with transaction.atomic():
        recharge = recharge_lock(recharge_id)
        if recharge.status != S.DISPATCHED:
            return Outcome(recharge.status)
        if result.status == ProviderResult.DELIVERED:
            route = recharge.route
            cost, cost_currency = result.cost, result.cost_currency
            if cost is None and route is not None and route.provider.name == provider_name:
                cost, cost_currency = route.cost, route.cost_currency
            margin = margin_of(recharge, cost=cost, cost_currency=cost_currency)
            transition(
                recharge,
                S.DELIVERED,
                note=f"{provider_name} {result.transaction_id}",
                extra_fields={
                    "provider": provider_name,
                    "provider_transaction_id": result.transaction_id,
                    "provider_response": result.raw,
                    "cost": cost,
                    "cost_currency": cost_currency if cost is not None else "",
                    "margin": margin,
                    "margin_currency": recharge.currency if margin is not None else "",
                },
            )
            books_sales_record(sales=[sale_of(recharge)])
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
        recharge = recharge_lock(recharge_id)
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
        recharge = recharge_lock(recharge_id)
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
    routed = provider is None and routing_active()
    if routed:
        providers_knock()  # before the row lock: a knock is a TCP connection to a provider
    route: Route | None = None
    with transaction.atomic():
        recharge = recharge_lock(recharge_id)
        if recharge.status == S.QUEUED:
            if not recharge.livemode:
                return Outcome(recharge.status)  # test mode never reaches a provider
            promotion = (
                product_waitlist_promotion(product=recharge.product)
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
                return Outcome(S.WAITLISTED)
            fields: dict = {"attempts": recharge.attempts + 1}
            if routed:
                route = route_choose(product_id=recharge.product_id, exclude=_refused_by(recharge))
                if route is None and product_has_routes(product_id=recharge.product_id):
                    # Every provider of it is down, open or out of balance: wait.
                    return Outcome(S.QUEUED, retry_in=NO_ROUTE_WAIT + random.uniform(0, 5))  # noqa: S311
            if route is not None:  # else no provider sells it: AIRTIME_PROVIDER, as before
                fields.update(route=route, provider=route.provider.name)
            transition(recharge, S.DISPATCHED, extra_fields=fields)
            reconcile_first = False
        elif recharge.status == S.DISPATCHED and recharge.livemode:
            if not _taken_over(recharge, attempt=attempt, quiet_since=quiet_since):
                return Outcome(recharge.status)  # another task has it in hand
            last_dispatch = recharge.updated_at  # when its last send was about to start
            recharge.attempts += 1
            recharge.updated_at = timezone.now()
            changed = ["attempts", "updated_at"]
            reconcile_first = True
            # A row dispatched without a route went to AIRTIME_PROVIDER (no provider rows then,
            # or none selling it): it is settled there, whatever the routes are now.
            if routed and recharge.route is not None:
                route = recharge.route
                if _definitely_not_held(recharge, since=last_dispatch):
                    # Its provider refused it for sure: nobody holds it; the cheapest healthy
                    # route now, without a look-up.
                    route = route_choose(
                        product_id=recharge.product_id, exclude=_refused_by(recharge)
                    )
                    reconcile_first = False
                    if route is None:
                        recharge.save(update_fields=changed)
                        return Outcome(
                            S.DISPATCHED,
                            retry_in=backoff(recharge.attempts),
                            attempt=attempt_token(recharge),
                        )
                    recharge.route, recharge.provider = route, route.provider.name
                    changed += ["route", "provider"]
            recharge.save(update_fields=changed)
        else:
            return Outcome(recharge.status)  # final, waitlisted, or a sandbox row in flight
        request = topup_request(recharge)

    connection_release()  # no connection held while the provider answers (with a pool)
    if route is not None:
        return recharge_call_routed(recharge_id, request, route, reconcile_first=reconcile_first)
    if routing_active() and provider is None:
        # Provider rows exist but none sells this product: AIRTIME_PROVIDER within its ceiling.
        name = settings.AIRTIME_PROVIDER
        with throttle.provider_slot(name, wait=settings.PROVIDER_SLOT_WAIT_SECONDS) as held:
            if not held:
                return _not_counted(recharge_id, retry_in=1.0 + random.uniform(0, 2.0))  # noqa: S311
            return recharge_call(recharge_id, request, reconcile_first=reconcile_first)
    return recharge_call(recharge_id, request, provider=provider, reconcile_first=reconcile_first)


# -- routed: by the cheapest healthy route, failing over on definite refusals ----------------

NO_ROUTE_WAIT = 30.0  # seconds a queued recharge waits when no route is usable now
DEFINITE = (RechargeAttempt.Outcome.REFUSED, RechargeAttempt.Outcome.UNREACHABLE)


def _refused_by(recharge: Recharge) -> set[str]:
    """Providers that refused this recharge for good (a documented refusal)."""
    if recharge.attempts == 0 and recharge.retries == 0:
        return set()  # never sent: nobody refused it (no query)
    return set(
        RechargeAttempt.objects.filter(
            recharge_id=recharge.pk, outcome=RechargeAttempt.Outcome.REFUSED
        ).values_list("provider", flat=True)
    )


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
        .exclude(action="status", outcome=RechargeAttempt.Outcome.UNREACHABLE)
        .order_by("-id")
        .values_list("outcome", flat=True)
        .first()
    )
    return last in DEFINITE


def _outcome_of(result: ProviderResult | None) -> str:
    if result is None:
        return RechargeAttempt.Outcome.NOT_FOUND
    return {
        ProviderResult.DELIVERED: RechargeAttempt.Outcome.DELIVERED,
        ProviderResult.FAILED: RechargeAttempt.Outcome.REFUSED,
        ProviderResult.REVERSED: RechargeAttempt.Outcome.REVERSED,
    }.get(result.status, RechargeAttempt.Outcome.PENDING)


def provider_call_recorded(
    recharge_id: int, adapter: AirtimeProvider, action: str, request: TopupRequest
) -> ProviderResult | None:
    """Send the top-up (``action`` "send") or look it up ("status") at a provider, keep the
    call (``RechargeAttempt``) and count it towards the provider's health; its result or its
    error, unchanged."""
    # Whatever the ORM took since (a lazy load of the route, the last attempt's row, a
    # failover's transaction) goes back to the pool: no connection held during the call.
    connection_release()
    started = time.monotonic()
    outcome: str = RechargeAttempt.Outcome.PENDING
    code, message, ok, refused = "", "", True, False
    try:
        result = adapter.send(request) if action == "send" else adapter.status(request.reference)
    except PermanentError as exc:
        outcome, code, message = RechargeAttempt.Outcome.REFUSED, exc.code, str(exc)
        raise
    except UpstreamTimeout as exc:
        outcome, code, message, ok = RechargeAttempt.Outcome.UNCLEAR, exc.code, str(exc), False
        raise
    except TransientError as exc:
        outcome, code, message = RechargeAttempt.Outcome.UNREACHABLE, exc.code, str(exc)
        ok = exc.code == RATE_LIMITED  # it answered: "not now"
        refused = connection_refused(exc)
        raise
    except ProviderError as exc:
        outcome, code, message, ok = RechargeAttempt.Outcome.UNCLEAR, exc.code, str(exc), False
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
        RechargeAttempt.objects.create(
            recharge_id=recharge_id,
            provider=adapter.name,
            action=action,
            outcome=outcome,
            code=code[:64],
            message=message[:255],
            duration_ms=int(seconds * 1000),
        )


def _failover(
    recharge_id: int, route: Route, refusal: ProviderError, tried: set[str]
) -> Route | Outcome:
    """After a definite refusal by ``route``'s provider: under the lock, the next route
    (recorded on the row before it is called), or the end: failed and refunded when every
    provider refused it, retried later when some were only unreachable."""
    with transaction.atomic():
        recharge = recharge_lock(recharge_id)
        if recharge.status != S.DISPATCHED or recharge.route_id != route.pk:
            return Outcome(recharge.status)  # moved on meanwhile (staff, another task)
        refused = _refused_by(recharge)
        following = route_choose(product_id=recharge.product_id, exclude=refused | tried)
        if following is not None:
            recharge.route, recharge.provider = following, following.provider.name
            recharge.updated_at = timezone.now()
            recharge.save(update_fields=["route", "provider", "updated_at"])
            return following
        if isinstance(refusal, PermanentError) and not (tried - refused):
            return _fail(recharge, code=refusal.code, message=str(refusal), raw=refusal.raw)
        if recharge.attempts >= settings.RECHARGE_MAX_ATTEMPTS:
            return _fail(recharge, code=refusal.code, message=str(refusal), raw=refusal.raw)
        return Outcome(
            S.DISPATCHED, retry_in=backoff(recharge.attempts), attempt=attempt_token(recharge)
        )


def recharge_call_routed(
    recharge_id: int, request: TopupRequest, route: Route, *, reconcile_first: bool
) -> Outcome:
    """Steps 2-4 by route (see the module docstring): within the provider's ceiling of calls
    in flight, look up first if asked, send, apply; on a definite refusal, the next route."""
    tried: set[str] = set()
    while True:
        provider: Provider = route.provider
        adapter = adapter_for(provider)
        sending = request_by(request, route)
        wait = settings.PROVIDER_SLOT_WAIT_SECONDS
        with throttle.provider_slot(provider.name, wait=wait, limit=provider.max_in_flight) as held:
            if not held:
                return _not_counted(recharge_id, retry_in=1.0 + random.uniform(0, 2.0))  # noqa: S311
            refusal: ProviderError
            try:
                if reconcile_first:
                    known = provider_call_recorded(recharge_id, adapter, "status", sending)
                    if known is not None and known.status != ProviderResult.FAILED:
                        return apply_result(recharge_id, known, provider.name)
                    if known is not None:  # it refused it: the next route
                        raise PermanentError(
                            known.message or "refused", code=known.code, raw=known.raw
                        )
                result = provider_call_recorded(recharge_id, adapter, "send", sending)
                assert result is not None  # a send always answers or raises
                if result.status != ProviderResult.FAILED:
                    return apply_result(recharge_id, result, provider.name)
                refusal = PermanentError(
                    result.message or "refused",
                    code=result.code or "upstream_failed",
                    raw=result.raw,
                )
            except PermanentError as exc:
                refusal = exc
            except UpstreamTimeout as exc:
                # It may still deliver: settle it here, never elsewhere meanwhile.
                try:
                    known = provider_call_recorded(recharge_id, adapter, "status", sending)
                except (TransientError, UpstreamTimeout):
                    known = None
                if known is not None and known.status != ProviderResult.PENDING:
                    return apply_result(recharge_id, known, provider.name)
                return _give_up_or_retry(
                    recharge_id, code=exc.code or "upstream_timeout", message=str(exc)
                )
            except TransientError as exc:
                if exc.code == RATE_LIMITED:
                    wait_for = exc.retry_after or 1.0
                    throttle.pause(provider.name, wait_for)
                    return _not_counted(recharge_id, retry_in=wait_for)
                if reconcile_first:  # the look-up did not get through: ask again later
                    return _give_up_or_retry(recharge_id, code=exc.code, message=str(exc))
                refusal = exc
        tried.add(provider.name)
        following = _failover(recharge_id, route, refusal, tried)
        if isinstance(following, Outcome):
            return following
        route, reconcile_first = following, False


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
            with PROVIDER_CALL_SECONDS.labels(provider.name).time():
                known = provider.status(request.reference)
        except (TransientError, UpstreamTimeout) as exc:
            return _give_up_or_retry(recharge_id, code=exc.code, message=str(exc))
        if known is not None:
            return apply(recharge_id, known, provider.name)
    try:
        with PROVIDER_CALL_SECONDS.labels(provider.name).time():
            result = provider.send(request)
    except PermanentError as exc:
        with transaction.atomic():
            recharge = recharge_lock(recharge_id)
            if recharge.status != S.DISPATCHED:
                return Outcome(recharge.status)
            return _fail(recharge, code=exc.code, message=str(exc), raw=exc.raw)
    except UpstreamTimeout as exc:
        try:
            with PROVIDER_CALL_SECONDS.labels(provider.name).time():
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
