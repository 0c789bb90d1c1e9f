"""Every error code the API answers with, and where its documentation lives.

A problem's ``type`` is the address of a page of ours that explains its code
(``{SITE_URL}/api/v1/docs/errors/<code>``, rendered from this table by ``reseller.views``), so
the link an integrator follows from an error always opens. The OpenAPI examples of error
responses (``reseller.openapi_examples``) are built from the same table.
tests/test_api_docs.py checks that every code the code raises is listed here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.conf import settings
from django.utils.text import format_lazy
from django.utils.translation import gettext_lazy as _

if TYPE_CHECKING:
    from django_stubs_ext import StrOrPromise

ERRORS_PATH = "/api/v1/docs/errors/"


@dataclass(frozen=True)
class ProblemType:
    statuses: tuple[int, ...]
    title: StrOrPromise
    detail: str  # a typical detail in English, as the API words it (the examples')
    when: StrOrPromise  # when it happens and what to do


def _p(statuses, title, detail, when) -> ProblemType:
    return ProblemType(
        statuses if isinstance(statuses, tuple) else (statuses,), title, detail, when
    )


PROBLEM_TYPES: dict[str, ProblemType] = {
    # 400
    "validation_error": _p(
        400,
        _("Validation error"),
        "The request has invalid fields.",
        _(
            "A field of the body or the query is missing, malformed, unknown or read-only. "
            "errors lists each field (its camelCase path), what is wrong with it and why; fix "
            "those fields and send the request again."
        ),
    ),
    "invalid_json": _p(
        400,
        _("Invalid JSON"),
        "The request body is not valid JSON: line 1, column 15: Expecting ',' delimiter.",
        _(
            "The body is not JSON, or is nested too deeply. The detail gives the line and "
            "column where parsing stopped."
        ),
    ),
    "ambiguous_credentials": _p(
        400,
        _("Ambiguous credentials"),
        "Send either an x-api-key header or an Authorization header, not both.",
        _("The request carried both an x-api-key header and an Authorization header: send one."),
    ),
    "idempotency_key_required": _p(
        400,
        _("Idempotency-Key required"),
        "Send an Idempotency-Key header (1 to 255 characters), unique per order.",
        _(
            "B2B recharges and batches need an Idempotency-Key header, unique per order, so "
            "that a retry never charges twice."
        ),
    ),
    "currency_mismatch": _p(
        400,
        _("Currency mismatch"),
        "baseCurrency must equal the wallet currency.",
        _("baseCurrency differs from the wallet's currency: send the wallet's currency."),
    ),
    "invalid_amount": _p(
        400,
        _("Invalid amount"),
        "Send localAmount from 10.00 to 500.00 MXN, in steps of 5.00.",
        _(
            "An order line's localAmount is one its product does not send: a range product "
            "needs one within its range and on a step, a fixed product none or its own "
            "localAmount. The detail names the amounts accepted and their currency, and errors "
            "names each line (items[0].localAmount); nothing was charged."
        ),
    ),
    "unsupported_currency": _p(
        400,
        _("Unsupported currency"),
        "There is no exchange rate for this currency pair.",
        _("We do not price in this currency: use the wallet's currency (EUR by default)."),
    ),
    "cart_empty": _p(
        (400, 409),
        _("Cart empty"),
        "The cart is empty: add a recharge first.",
        _(
            "The cart has no lines to pay (400), or it was paid meanwhile (409). Add a "
            "recharge with POST /cart/items, or read the payment history."
        ),
    ),
    "payment_method_required": _p(
        400,
        _("Card details missing"),
        (
            "The card has not been confirmed yet: confirm the SetupIntent (confirmCardSetup) "
            "before calling checkout."
        ),
        _("Checkout was called before the browser confirmed the card with Stripe.js."),
    ),
    "sandbox_balance_cap": _p(
        400,
        _("Sandbox balance cap"),
        "A sandbox balance never goes above 1000.00 EUR.",
        _("A test key's sandbox balance is capped at 1,000 euros: add a smaller amount."),
    ),
    "invalid_signature": _p(
        400,
        _("Invalid signature"),
        "The Stripe-Signature header does not match the payload.",
        _("Only on our Stripe webhook: the event's signature does not verify."),
    ),
    "bad_request": _p(
        400,
        _("Bad request"),
        "Bad request",
        _("The request cannot be processed as sent; the detail says why."),
    ),
    # 401
    "not_authenticated": _p(
        401,
        _("Not authenticated"),
        "Authentication credentials were not provided.",
        _(
            "No credentials were sent, or the email or password is wrong at login. Send an "
            "x-api-key header, or an Authorization: Bearer token from POST /auth/login."
        ),
    ),
    "invalid_api_key": _p(
        401,
        _("Not authenticated"),
        "The API key is not valid.",
        _("The x-api-key header holds no key of ours: copy the whole key, rsl_live_ or rsl_test_."),
    ),
    "api_key_revoked": _p(
        401,
        _("Not authenticated"),
        "This API key was revoked. Create a new key on your profile page.",
        _("The key was revoked and never works again: create a new key on the profile page."),
    ),
    "token_invalid": _p(
        401,
        _("Not authenticated"),
        "The token is invalid, expired or already used.",
        _(
            "The Bearer token is expired (access tokens live 15 minutes), malformed or a "
            "refresh token already used: refresh it with POST /auth/refresh, or log in again."
        ),
    ),
    "otp_required": _p(
        401,
        _("Not authenticated"),
        (
            "Staff accounts log in with a second factor: send otp, the 6-digit code of your "
            "authenticator app or one of your recovery codes."
        ),
        _("Staff log in with a second factor: send otp with the email and password."),
    ),
    # 402
    "insufficient_balance": _p(
        402,
        _("Insufficient balance"),
        (
            "Available balance 5.00 EUR is below the order total 12.00 EUR. Add at least "
            "7.00 EUR: top up the wallet by card or bank transfer on the site's Wallet page, "
            "https://reseller.example/wallet/ This Idempotency-Key keeps this answer for 24 "
            "hours: once the balance covers the order, send it again with a new "
            "Idempotency-Key."
        ),
        format_lazy(
            "{} {}",
            _(
                "The wallet (or a test key's sandbox balance, which starts at 0) is below the "
                "order total; nothing was charged. Top up the wallet, or add to the sandbox "
                "balance on the key's page."
            ),
            _(
                "A request with an Idempotency-Key keeps this answer for 24 hours, even once "
                "the wallet is funded: send the order again with a new key."
            ),
        ),
    ),
    "card_declined": _p(
        402,
        _("Card declined"),
        "Your card was declined. Nothing was charged; try another card. Your cart is kept.",
        _(
            "The bank declined the card; nothing was charged. Call prepare again with the "
            "paymentId for a fresh setupClientSecret and try another card."
        ),
    ),
    "card_authentication_failed": _p(
        402,
        _("Card authentication failed"),
        (
            "The 3-D Secure authentication of your card failed. Nothing was charged; try "
            "again or use another card."
        ),
        _("3-D Secure was refused; nothing was charged. Try again or use another card."),
    ),
    # 403
    "permission_denied": _p(
        403,
        _("Forbidden"),
        "You do not have permission to perform this action.",
        _(
            "The credential is valid but may not do this: an admin endpoint called by a "
            "non-staff account, or a team role without access to this area."
        ),
    ),
    "web_session_required": _p(
        403,
        _("Forbidden"),
        "This endpoint is for the web application only; API keys are refused.",
        _("Card payments are web-only: call them with a browser session, not an API key."),
    ),
    "api_key_required": _p(
        403,
        _("Forbidden"),
        "This endpoint needs an API key in the x-api-key header.",
        _("This endpoint is for server-to-server calls: send an x-api-key header."),
    ),
    "ip_not_allowed": _p(
        403,
        _("Forbidden"),
        "This API key does not accept requests from your address.",
        _(
            "The key has an IP whitelist and the request came from another address: add the "
            "address to the key's whitelist on the profile page."
        ),
    ),
    "b2b_not_enabled": _p(
        403,
        _("Forbidden"),
        "The B2B API is not enabled for this account. Contact us to enable it.",
        _("The account is not tagged B2B: contact us to enable the B2B API."),
    ),
    "test_key_required": _p(
        403,
        _("Forbidden"),
        "This endpoint needs a test API key (rsl_test_…).",
        _("The sandbox endpoint answers test keys (rsl_test_…) only."),
    ),
    "account_suspended": _p(
        403,
        _("Forbidden"),
        "This account is suspended. Contact whoever manages it.",
        _(
            "The account, or the account above it in a reseller network, is suspended: its "
            "API keys, tokens and sessions, and those of its own agents, are refused until it "
            "is resumed. Nothing was done."
        ),
    ),
    "card_purchases_frozen": _p(
        403,
        _("Card purchases frozen"),
        (
            "Card purchases of this account are frozen after a dispute or a fraud warning on "
            "one of its payments. Nothing was charged; contact us."
        ),
        _(
            "A dispute or an early fraud warning froze the account's card purchases until "
            "staff review it; nothing was charged. The wallet still works."
        ),
    ),
    # 404, 405, 406
    "not_found": _p(
        404,
        _("Not found"),
        "No such object.",
        _(
            "Unknown path or id, or an object of another account (we never say which). Check "
            "the id and the key's mode: live and test objects are apart."
        ),
    ),
    "method_not_allowed": _p(
        405,
        _("Method not allowed"),
        'Method "PUT" not allowed.',
        _("The path exists but not with this method: the Allow header lists the methods."),
    ),
    "not_acceptable": _p(
        406,
        _("Not acceptable"),
        "Could not satisfy the request Accept header.",
        _("The Accept header asks for a format we do not send: accept application/json."),
    ),
    # 409
    "idempotency_key_in_use": _p(
        409,
        _("Conflict"),
        "A request with this Idempotency-Key is still being processed. Retry in a moment.",
        _("The first request with this Idempotency-Key is still running: retry in a moment."),
    ),
    "product_unavailable": _p(
        409,
        _("Product unavailable"),
        "This recharge product is not available at the moment.",
        _(
            "No provider sells the product at a price over its cost right now; nothing was "
            "charged. Choose another product of the operator, or retry later."
        ),
    ),
    "price_list_in_use": _p(
        409,
        _("Price list in use"),
        "This price list is assigned to an account: assign another list (or none) first.",
        _(
            "A price list that prices an account (an agent, or a top account) cannot be "
            "deleted; nothing changed. Assign those accounts another list, or none, then "
            "delete it."
        ),
    ),
    "quote_expired": _p(
        409,
        _("Quote expired"),
        (
            "This price quote has expired. Nothing was charged; prepare the payment again to "
            "get a fresh price."
        ),
        _("The priced card payment is older than 15 minutes: call prepare again."),
    ),
    "payment_not_payable": _p(
        409,
        _("Payment cannot be paid"),
        "This payment is already settled and cannot be paid again.",
        _("The payment is already settled: read it with GET /payments/{paymentId}."),
    ),
    "payment_not_cancellable": _p(
        409,
        _("Payment cannot be cancelled"),
        "This payment is paid, so it can no longer be cancelled.",
        _(
            "POST /payments/cancel on a card payment already paid (or whose charge the bank is "
            "answering at that moment): read it with GET /payments/{paymentId}."
        ),
    ),
    "topup_not_approvable": _p(
        409,
        _("Conflict"),
        "A card top-up is approved only by its succeeded card payment, never by hand.",
        _("Staff only: a card top-up is approved by its card payment, never by hand."),
    ),
    "topup_not_pending": _p(
        409,
        _("Conflict"),
        "This top-up was already decided.",
        _("The top-up was already approved or rejected; nothing changed."),
    ),
    "illegal_transition": _p(
        409,
        _("Conflict"),
        "A recharge cannot go from delivered to queued.",
        _("Staff only: the recharge's status does not allow this action."),
    ),
    "email_taken": _p(
        409,
        _("Email taken"),
        "This email already has a user or a pending invitation: an agent's owner needs an "
        "address of its own.",
        _(
            "A new agent's owner is invited by email, and a person belongs to one account: "
            "give an address that has no user yet and no invitation waiting for it (an "
            "unanswered invitation expires after 7 days)."
        ),
    ),
    "network_too_deep": _p(
        409,
        _("Network too deep"),
        "An agent of this account would be deeper than the network allows.",
        _(
            "A network has at most NETWORK_MAX_DEPTH levels (3 by default: a top account, its "
            "agents and theirs); the agents of the deepest level cannot have agents."
        ),
    ),
    "conflict": _p(
        409,
        _("Conflict"),
        "Conflict",
        _("Staff only: the object already exists or changed meanwhile."),
    ),
    # 413, 415, 422
    "request_too_large": _p(
        413,
        _("Request too large"),
        "The request body is larger than this service accepts.",
        _("The body is too large: split the order, or use a batch."),
    ),
    "unsupported_media_type": _p(
        415,
        _("Unsupported media type"),
        'Unsupported media type "text/plain" in request.',
        _("Send the body as JSON with Content-Type: application/json."),
    ),
    "idempotency_key_reused": _p(
        422,
        _("Unprocessable request"),
        (
            "This Idempotency-Key was already used with a different request body. Use a new "
            "key for a new order."
        ),
        _(
            "The Idempotency-Key was used before with a different body: use a new key for a "
            "new order, or resend the first body to read its answer."
        ),
    ),
    # 429
    "rate_limited": _p(
        429,
        _("Too many requests"),
        "Too many requests. Retry after the time in the Retry-After header.",
        _("A rate limit is reached: wait the seconds in Retry-After (see the RateLimit headers)."),
    ),
    "sandbox_topup_limit": _p(
        429,
        _("Too many sandbox additions"),
        "At most 5 sandbox additions per hour per key.",
        _("At most 5 sandbox additions per hour per key: wait the seconds in Retry-After."),
    ),
    "card_limit_reached": _p(
        429,
        _("Card purchase limit reached"),
        "A card purchase limit is reached. Nothing was charged; try again later.",
        _(
            "A card purchase limit (of a new account, a recipient number or a card) is "
            "reached; nothing was charged. Retry-After says when it frees up."
        ),
    ),
    # 5xx
    "internal_error": _p(
        500,
        _("Internal server error"),
        "Something went wrong on our side. Nothing was charged twice; retry later.",
        _("A bug on our side; nothing is charged twice. Retry later and quote the requestId."),
    ),
    "service_unavailable": _p(
        503,
        _("Service unavailable"),
        "A service we depend on is unavailable. Nothing was charged; retry later.",
        _("A dependency (database, Redis, card payments) is down; nothing was charged."),
    ),
    "error": _p(
        (400, 500),
        _("Error"),
        "Error",
        _("An error without a more specific code; the status and the detail say what it is."),
    ),
}


def problem_type(code: str) -> str:
    """The ``type`` of a problem: the address of its code's page on this site."""
    return f"{settings.SITE_URL.rstrip('/')}{ERRORS_PATH}{code}"
