"""Card checkout and card top-ups (web-only) and the Stripe webhook: thin views on
checkout.services."""

from __future__ import annotations

from decimal import Decimal

from django.conf import settings
from django.http import JsonResponse
from django.utils import translation
from django.utils.decorators import method_decorator
from django.views import View
from django.views.decorators.csrf import csrf_exempt
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.authentication import SessionAuthentication
from rest_framework.permissions import BasePermission
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.permissions import WebSessionRequired
from checkout import services as card
from checkout.errors import CartEmpty
from orders import guest as guest_choice
from orders import selectors, services
from orders.serializers import (
    MAX_LINES,
    WAIT,
    OrderLineIn,
    PaymentOut,
    promotion_choice_field,
    validate_lines,
    validate_units,
)
from payments import gateway
from payments.receipts import guest_receipt_path
from reseller import openapi_examples as ex
from reseller.api import MoneyString, StrictSerializer, problem, problems
from reseller.errors import ApplicationError, NotFound, problem_response
from reseller.net import client_ip
from wallet.services import TOPUP_MAX, TOPUP_MIN

CARD_PROBLEMS = {
    **problems(400, 401, 404, 503, extra=("payment_method_required", "cart_empty")),
    **problem(
        "`web_session_required`: an API key called a web-only endpoint; "
        "`card_purchases_frozen`: a dispute or an early fraud warning froze the account's card "
        "purchases until staff review it (docs/fraud.md). Nothing was charged.",
        403,
        "web_session_required",
        "card_purchases_frozen",
    ),
    **problem(
        "`card_declined` or `card_authentication_failed` (3-D Secure refused). "
        "Nothing was charged and the payment stays payable: call prepare with its `paymentId` "
        "for a fresh `setupClientSecret` and try another card.",
        402,
        "card_declined",
        "card_authentication_failed",
    ),
    **problem(
        "`quote_expired`: the priced order is older than 15 minutes (prepare again); "
        "`payment_not_payable`: the payment is settled; `product_unavailable`: a product is "
        "no longer offered (no provider sells it at a price over its cost).",
        409,
        "quote_expired",
        "payment_not_payable",
        "product_unavailable",
    ),
    **problem(
        "`card_limit_reached`: a card purchase limit (docs/fraud.md) is reached; "
        "nothing was charged. At prepare: the account's (new accounts) or a recipient number's; "
        "at checkout, before the card is charged: those again and the card's own. `Retry-After` "
        "gives the seconds until the oldest payment counted leaves the 24-hour window.",
        429,
        "card_limit_reached",
    ),
}


# Prepare prices order lines: a line's localAmount its product does not take is refused.
PREPARE_PROBLEMS = {
    **CARD_PROBLEMS,
    **problems(400, extra=("payment_method_required", "cart_empty", "invalid_amount")),
}


def _money(value: Decimal) -> str:
    return f"{value:.2f}"


def _iso(value) -> str:
    return value.strftime("%Y-%m-%dT%H:%M:%SZ")


# -- shapes ---------------------------------------------------------------------------------


class PrepareIn(StrictSerializer):
    """Exactly one of: ``sessionId`` (a cart), ``items`` (+ ``baseCurrency``), ``paymentId``."""

    session_id = serializers.CharField(max_length=100, required=False)
    items = OrderLineIn(many=True, allow_empty=False, max_length=MAX_LINES, required=False)  # type: ignore[call-arg]
    base_currency = serializers.RegexField(r"^[A-Z]{3}$", max_length=3, required=False)
    payment_id = serializers.CharField(max_length=40, required=False)
    when_promotion_scheduled = promotion_choice_field()

    def validate(self, data):
        given = [k for k in ("session_id", "items", "payment_id") if k in data]
        if len(given) != 1:
            raise serializers.ValidationError(
                {"session_id": [_one_of("sessionId, items or paymentId")]}
            )
        if "items" in data:
            validate_units(data["items"], max_units=settings.API_KEY_UNITS_PER_REQUEST_LIVE)
            data["lines"] = validate_lines(data["items"])
        return data


def _one_of(what: str):
    from rest_framework.exceptions import ErrorDetail

    return ErrorDetail(f"Send exactly one of {what}.", code="invalid")


class PrepareOut(serializers.Serializer):
    payment_id = serializers.CharField()
    setup_client_secret = serializers.CharField()
    publishable_key = serializers.CharField()
    amount = serializers.CharField()
    currency = serializers.CharField()
    expires_at = serializers.DateTimeField()
    livemode = serializers.BooleanField()
    test_mode = serializers.BooleanField(help_text="True when no real card is charged.")


class CheckoutIn(StrictSerializer):
    payment_id = serializers.CharField(max_length=40)


class RequiresActionOut(serializers.Serializer):
    status = serializers.ChoiceField(choices=["requires_action", "processing"])
    client_secret = serializers.CharField(required=False)
    payment_id = serializers.CharField()


class TopUpRequiresActionOut(serializers.Serializer):
    status = serializers.ChoiceField(choices=["requires_action", "processing"])
    client_secret = serializers.CharField(required=False)
    topup_id = serializers.CharField()


class TopUpPrepareIn(StrictSerializer):
    amount = MoneyString(
        max_digits=12,
        decimal_places=2,
        min_value=TOPUP_MIN,
        max_value=TOPUP_MAX,
        required=False,
    )
    topup_id = serializers.CharField(max_length=40, required=False)

    def validate(self, data):
        if ("amount" in data) == ("topup_id" in data):
            raise serializers.ValidationError({"amount": [_one_of("amount or topupId")]})
        return data


class TopUpPrepareOut(serializers.Serializer):
    topup_id = serializers.CharField()
    setup_client_secret = serializers.CharField()
    publishable_key = serializers.CharField()
    amount = serializers.CharField()
    currency = serializers.CharField()
    expires_at = serializers.DateTimeField()
    test_mode = serializers.BooleanField()


class TopUpCheckoutIn(StrictSerializer):
    topup_id = serializers.CharField(max_length=40)


class TopUpOut(serializers.Serializer):
    id = serializers.CharField(source="public_id")
    status = serializers.CharField()
    method = serializers.CharField()
    amount = serializers.DecimalField(max_digits=12, decimal_places=2)
    currency = serializers.CharField()
    created_at = serializers.DateTimeField()


def _prepared(prepared: card.Prepared, *, id_field: str) -> dict:
    checkout = prepared.checkout
    return {
        id_field: checkout.public_id,
        "setup_client_secret": prepared.setup_client_secret,
        "publishable_key": gateway.publishable_key(),
        "amount": _money(checkout.amount),
        "currency": checkout.currency,
        "expires_at": checkout.expires_at,
        "livemode": True,
        "test_mode": gateway.test_mode(),
    }


def _payment_body(checkout) -> dict:
    order = selectors.order_for_response(order_id=checkout.payment.order_id)
    return dict(PaymentOut(order.payment).data)


def _pending_body(result: card.CheckoutResult, *, id_field: str) -> dict:
    body = {"status": result.status, id_field: result.checkout.public_id}
    if result.client_secret:
        body["client_secret"] = result.client_secret
    return body


# -- views ----------------------------------------------------------------------------------


class PaymentPrepareApi(APIView):
    permission_classes = [WebSessionRequired]

    @extend_schema(
        tags=["payments"],
        summary="Start a card checkout (web-only)",
        description="Prices a cart (`sessionId`) or `items` in the account's currency, opens a "
        "pending card payment and a Stripe SetupIntent. The browser confirms the card with "
        "Stripe.js `confirmCardSetup(setupClientSecret)` and then calls checkout. The price "
        "holds until `expiresAt` (15 minutes). Send `{paymentId}` after a declined or failed "
        "attempt to get a fresh `setupClientSecret` for the same payment. API keys get 403 "
        "`web_session_required`.",
        request=PrepareIn,
        examples=[
            *ex.exchange("Telcel 100 MXN", ex.PREPARE_REQUEST, ex.PREPARE, status=201),
            ex.request("Retry after a decline", {"paymentId": ex.PAYMENT_ID}),
        ],
        responses={201: PrepareOut, **PREPARE_PROBLEMS},
    )
    def post(self, request):
        data = PrepareIn(data=request.data)
        data.is_valid(raise_exception=True)
        account = request.user.account
        values = data.validated_data
        if "payment_id" in values:
            checkout = card.card_checkout_for_payment(
                account=account, payment_id=values["payment_id"]
            )
            prepared = card.card_checkout_renew_setup(checkout=checkout)
            return Response(PrepareOut(_prepared(prepared, id_field="payment_id")).data, 201)
        cart = None
        if "session_id" in values:
            cart = services.cart_get_or_create(
                account=account, livemode=True, session_id=values["session_id"]
            )
        prepared = card.card_payment_prepare(
            account=account,
            user=request.user,
            lines=values.get("lines"),
            cart=cart,
            currency=values.get("base_currency"),
            promotion_wait=values["when_promotion_scheduled"] == WAIT,
            client_address=client_ip(request),
        )
        return Response(PrepareOut(_prepared(prepared, id_field="payment_id")).data, 201)


class PaymentCheckoutApi(APIView):
    permission_classes = [WebSessionRequired]

    @extend_schema(
        tags=["payments"],
        summary="Pay a prepared card payment (web-only)",
        description="Creates and confirms the PaymentIntent with the card of the confirmed "
        "SetupIntent. `200` with the captured payment and its queued recharges (the cart is "
        'emptied); `202` `{"status": "requires_action", "clientSecret"}` for 3-D Secure: run '
        "Stripe.js `confirmCardPayment(clientSecret)` and call checkout again. Calling again "
        "after success changes nothing and answers the same payment.",
        request=CheckoutIn,
        examples=[
            *ex.exchange("Paid", {"paymentId": ex.PAYMENT_ID}, ex.PAID),
            ex.response("3-D Secure", ex.REQUIRES_ACTION, status=202),
        ],
        responses={200: PaymentOut, 202: RequiresActionOut, **CARD_PROBLEMS},
    )
    def post(self, request):
        data = CheckoutIn(data=request.data)
        data.is_valid(raise_exception=True)
        checkout = card.card_checkout_for_payment(
            account=request.user.account, payment_id=data.validated_data["payment_id"]
        )
        result = card.card_checkout(checkout=checkout, client_address=client_ip(request))
        if result.status == "succeeded":
            return Response(_payment_body(result.checkout))
        return Response(_pending_body(result, id_field="payment_id"), status=202)


CANCEL_PROBLEMS = {
    **problems(400, 401, 404, 503),
    **problem(
        "`web_session_required`: an API key called a web-only endpoint.",
        403,
        "web_session_required",
    ),
    **problem(
        "`payment_not_cancellable`: the payment is paid (or the bank is answering its charge "
        "at that moment); nothing changed.",
        409,
        "payment_not_cancellable",
    ),
}


class PaymentCancelApi(APIView):
    permission_classes = [WebSessionRequired]

    @extend_schema(
        tags=["payments"],
        summary="Cancel a card payment not paid yet (web-only)",
        description="Ends a card payment that is not paid: prepared and never confirmed, "
        "declined, or waiting for the bank (3-D Secure), whose PaymentIntent is then cancelled "
        "on Stripe so the bank can no longer approve it. The payment becomes `canceled`, "
        "nothing is charged, and it no longer counts in the card limits (docs/fraud.md). "
        "Cancelling a payment already expired or cancelled changes nothing and answers it as "
        "it is; a paid one is 409 `payment_not_cancellable`. (A payment left unpaid also "
        "expires by itself at its `expiresAt`.)",
        request=CheckoutIn,
        examples=ex.exchange("Cancelled", {"paymentId": ex.PAYMENT_ID}, ex.CANCELED),
        responses={200: PaymentOut, **CANCEL_PROBLEMS},
    )
    def post(self, request):
        data = CheckoutIn(data=request.data)
        data.is_valid(raise_exception=True)
        checkout = card.card_checkout_for_payment(
            account=request.user.account, payment_id=data.validated_data["payment_id"]
        )
        return Response(_payment_body(card.card_payment_cancel(checkout=checkout)))


class TopUpPrepareApi(APIView):
    permission_classes = [WebSessionRequired]

    @extend_schema(
        tags=["wallet"],
        summary="Start a card top-up of the wallet (web-only)",
        description="Opens a pending card top-up of `amount` (wallet currency) and a SetupIntent; "
        "same flow as the card checkout. `{topupId}` renews the SetupIntent after a failure.",
        request=TopUpPrepareIn,
        examples=ex.exchange("200 EUR", {"amount": "200.00"}, ex.TOPUP_PREPARE, status=201),
        responses={201: TopUpPrepareOut, **CARD_PROBLEMS},
    )
    def post(self, request):
        data = TopUpPrepareIn(data=request.data)
        data.is_valid(raise_exception=True)
        account = request.user.account
        if topup_id := data.validated_data.get("topup_id"):
            checkout = card.card_checkout_for_topup(account=account, topup_id=topup_id)
            prepared = card.card_checkout_renew_setup(checkout=checkout)
        else:
            prepared = card.card_topup_prepare(
                account=account,
                user=request.user,
                amount=data.validated_data["amount"],
                client_address=client_ip(request),
            )
        body = _prepared(prepared, id_field="topup_id")
        body.pop("livemode")
        return Response(TopUpPrepareOut(body).data, status=201)


class TopUpCheckoutApi(APIView):
    permission_classes = [WebSessionRequired]

    @extend_schema(
        tags=["wallet"],
        summary="Pay a card top-up (web-only)",
        description="As payment checkout: `200` with the approved top-up (the wallet is "
        "credited once), `202` for 3-D Secure, `402` on a decline.",
        request=TopUpCheckoutIn,
        examples=[
            *ex.exchange("Approved", {"topupId": ex.TOPUP_ID}, ex.TOPUP),
            ex.response("3-D Secure", ex.TOPUP_REQUIRES_ACTION, status=202),
        ],
        responses={200: TopUpOut, 202: TopUpRequiresActionOut, **CARD_PROBLEMS},
    )
    def post(self, request):
        data = TopUpCheckoutIn(data=request.data)
        data.is_valid(raise_exception=True)
        checkout = card.card_checkout_for_topup(
            account=request.user.account, topup_id=data.validated_data["topup_id"]
        )
        result = card.card_checkout(checkout=checkout, client_address=client_ip(request))
        if result.status == "succeeded":
            return Response(TopUpOut(result.checkout.topup).data)
        return Response(_pending_body(result, id_field="topup_id"), status=202)


# -- a guest's card checkout (no account; docs/site.md) --------------------------------------


class SameSiteBrowser(BasePermission):
    """A guest's checkout is a browser's, with no credential: its CSRF token is checked here
    (DRF checks it only for a logged-in session), so another site cannot drive it."""

    def has_permission(self, request, view) -> bool:
        SessionAuthentication().enforce_csrf(request)
        return True


class GuestPrepareIn(StrictSerializer):
    email = serializers.EmailField(
        max_length=254, help_text="Where the receipt goes (and its link). No account is made."
    )
    payment_id = serializers.CharField(max_length=40, required=False)
    when_promotion_scheduled = promotion_choice_field()


class GuestPrepareOut(PrepareOut):
    receipt_url = serializers.CharField(
        help_text="The receipt page of this payment (also emailed once it is paid)."
    )


class GuestCheckoutOut(serializers.Serializer):
    status = serializers.ChoiceField(choices=["succeeded", "requires_action", "processing"])
    payment_id = serializers.CharField()
    client_secret = serializers.CharField(required=False)
    receipt_url = serializers.CharField()


class GuestPaymentPrepareApi(APIView):
    authentication_classes: list = []  # a visitor without an account: no credential is read
    permission_classes = [SameSiteBrowser]

    @extend_schema(
        tags=["payments"],
        summary="Start a guest's card checkout (the site's, no account)",
        description="The site's checkout for a visitor who is not logged in: pays the item "
        'this browser chose with "Buy now" (kept in its session) by card, with an `email` for '
        "the receipt. Same flow as prepare/checkout; the order belongs to the house guest "
        "account and the guest limits apply (docs/fraud.md). `{paymentId, email}` renews the "
        "SetupIntent after a failed attempt, and the receipt goes to that `email` (a corrected "
        "one replaces the first). Needs the site's CSRF token.",
        request=GuestPrepareIn,
        examples=ex.exchange(
            "Telcel 100 MXN", ex.GUEST_PREPARE_REQUEST, ex.GUEST_PREPARE, status=201
        ),
        responses={201: GuestPrepareOut, **CARD_PROBLEMS},
    )
    def post(self, request):
        data = GuestPrepareIn(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        session = request._request.session
        if "payment_id" in values:
            if not guest_choice.guest_payment_allowed(session, values["payment_id"]):
                raise NotFound()
            checkout = card.card_checkout_for_guest(payment_id=values["payment_id"])
            prepared = card.card_checkout_renew_setup(
                checkout=checkout, guest_email=values["email"]
            )
        else:
            line = guest_choice.pending_line(session)
            if line is None:
                raise CartEmpty()
            prepared = card.card_guest_prepare(
                guest=card.Guest(
                    email=values["email"],
                    language=translation.get_language() or "en",
                    client_address=client_ip(request._request),
                ),
                lines=[line],
                promotion_wait=values["when_promotion_scheduled"] == WAIT,
            )
            guest_choice.guest_payment_allow(session, prepared.checkout.public_id)
        body = _prepared(prepared, id_field="payment_id")
        body["receipt_url"] = guest_receipt_path(prepared.checkout.public_id)
        return Response(GuestPrepareOut(body).data, status=201)


class GuestPaymentCheckoutApi(APIView):
    authentication_classes: list = []
    permission_classes = [SameSiteBrowser]

    @extend_schema(
        tags=["payments"],
        summary="Pay a guest's prepared card payment (the site's, no account)",
        description="As checkout, for a payment this browser prepared as a guest. `200` "
        "`{status: succeeded, paymentId, receiptUrl}`: the receipt is emailed to the guest, in "
        "the language of the page; `202` for 3-D Secure. Another browser's payment is 404.",
        request=CheckoutIn,
        examples=[
            *ex.exchange("Paid", {"paymentId": ex.PAYMENT_ID}, ex.GUEST_PAID),
            ex.response("3-D Secure", ex.GUEST_REQUIRES_ACTION, status=202),
        ],
        responses={200: GuestCheckoutOut, 202: GuestCheckoutOut, **CARD_PROBLEMS},
    )
    def post(self, request):
        data = CheckoutIn(data=request.data)
        data.is_valid(raise_exception=True)
        payment_id = data.validated_data["payment_id"]
        session = request._request.session
        if not guest_choice.guest_payment_allowed(session, payment_id):
            raise NotFound()
        checkout = card.card_checkout_for_guest(payment_id=payment_id)
        result = card.card_checkout(checkout=checkout)
        body = _pending_body(result, id_field="payment_id")
        body["receipt_url"] = guest_receipt_path(payment_id)
        if result.status == "succeeded":
            guest_choice.pending_drop(session)  # bought: "Buy now" starts afresh
            return Response(GuestCheckoutOut(body).data)
        return Response(GuestCheckoutOut(body).data, status=202)


class GuestCancelOut(serializers.Serializer):
    status = serializers.CharField(help_text="The payment's status: `canceled`, or `expired`.")
    payment_id = serializers.CharField()
    receipt_url = serializers.CharField()


class GuestPaymentCancelApi(APIView):
    authentication_classes: list = []
    permission_classes = [SameSiteBrowser]

    @extend_schema(
        tags=["payments"],
        summary="Cancel a guest's card payment not paid yet (the site's, no account)",
        description="As `POST /payments/cancel`, for a payment this browser prepared as a "
        "guest (its receipt page's Cancel). Another browser's payment is 404.",
        request=CheckoutIn,
        examples=ex.exchange("Cancelled", {"paymentId": ex.PAYMENT_ID}, ex.GUEST_CANCELED),
        responses={200: GuestCancelOut, **CANCEL_PROBLEMS},
    )
    def post(self, request):
        data = CheckoutIn(data=request.data)
        data.is_valid(raise_exception=True)
        payment_id = data.validated_data["payment_id"]
        if not guest_choice.guest_payment_allowed(request._request.session, payment_id):
            raise NotFound()
        checkout = card.card_payment_cancel(
            checkout=card.card_checkout_for_guest(payment_id=payment_id)
        )
        body = {
            "status": checkout.payment.status,
            "payment_id": payment_id,
            "receipt_url": guest_receipt_path(payment_id),
        }
        return Response(GuestCancelOut(body).data)


@method_decorator(csrf_exempt, name="dispatch")
class StripeWebhookView(View):
    """``POST /webhooks/stripe``: signed by Stripe (no CSRF, no session); 400 when the
    signature does not verify, 200 otherwise (a replayed event id does nothing)."""

    def post(self, request):
        try:
            event = gateway.webhook_event(
                payload=request.body, signature=request.headers.get("Stripe-Signature")
            )
            handled = card.stripe_event_handle(event=event)
        except ApplicationError as exc:
            return problem_response(
                request, status=exc.status, code=exc.code, detail=exc.detail, title=str(exc.title)
            )
        return JsonResponse({"received": True, "replayed": not handled})
