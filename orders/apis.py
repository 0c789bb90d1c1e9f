"""Carts, quotes, payment history, wallet checkout and B2B recharges (thin views)."""

from __future__ import annotations

from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.authentication import request_api_key, request_livemode, request_units_per_request
from accounts.permissions import B2BApiKeyRequired, TestKeyRequired
from accounts.throttling import RECHARGE_THROTTLE_CLASSES
from orders import selectors, services
from orders.filters import RechargeFilter
from orders.idempotency import IdempotentReply, fingerprint, read_key
from orders.models import Order
from orders.pricing import line_requests, price_order
from orders.serializers import (
    WAIT,
    CartItemIn,
    CartItemOut,
    CartOut,
    CartQuery,
    OrderIn,
    OrderOut,
    PaymentOut,
    QuoteIn,
    QuoteOut,
    SandboxOut,
    order_body,
)
from recharges.models import Recharge
from recharges.sandbox import sandbox_present, sandbox_settled_event
from recharges.serializers import FINAL_STATUSES_NOTE, RechargeDetailOut, recharge_detail
from reseller import openapi_examples as ex
from reseller.api import B2B_ORDER_CODES, ORDER_STATUSES, problems
from reseller.errors import PROBLEM_CONTENT_TYPE, ValidationFailed, refuse_unknown_params
from reseller.money import ZERO
from reseller.pagination import PagePagination
from sandbox.balances import sandbox_balance

IDEMPOTENCY_HEADER = OpenApiParameter(
    name="Idempotency-Key",
    location=OpenApiParameter.HEADER,
    required=False,
    type=str,
    description="Unique per order (1-255 characters). A replay within 24 h returns the first "
    "answer with `Idempotent-Replayed: true`; a different body with the same key is 422.",
)


def _cart_payload(request, session_id: str) -> dict:
    account = request.user.account
    livemode = request_livemode(request)
    cart = services.cart_get_or_create(account=account, livemode=livemode, session_id=session_id)
    items = list(selectors.cart_items(cart=cart))
    currency = account.wallet_currency
    priced = price_order(  # showing the cart, not selling it: a withdrawn product shows
        account=account,
        currency=currency,
        lines=line_requests(items),
        for_sale=False,
    )
    return {
        "session_id": cart.session_id,
        "items": [
            _Priced(item, line, currency, livemode)
            for item, line in zip(items, priced.lines, strict=True)
        ],
        "total": priced.total if items else ZERO,
        "currency": currency,
        "livemode": livemode,
    }


class _Priced:
    def __init__(self, item, line, currency, livemode):
        self.public_id = item.public_id
        self.product = item.product
        self.recipient_number = item.recipient_number
        self.quantity = item.quantity
        self.local_amount = line.local_amount
        self.unit_price = line.unit_price
        # The item's own quantity: an add to a line already in the cart answers that line.
        self.line_total = line.unit_price * item.quantity
        self.currency = currency
        self.livemode = livemode


class CartApi(APIView):
    @extend_schema(
        tags=["cart"],
        summary="The current cart",
        parameters=[
            OpenApiParameter(
                "sessionId",
                str,
                description="Cart label. Without it, the cart the caller added to last "
                "(`default` before any).",
            )
        ],
        examples=[ex.response("One line", ex.CART)],
        responses={200: CartOut, **problems(400, 401, 403)},
    )
    def get(self, request):
        if "sessionId" in request.query_params:
            query = CartQuery(data={"session_id": request.query_params["sessionId"]})
            query.is_valid(raise_exception=True)
            session_id = query.validated_data["session_id"]
        else:
            session_id = selectors.cart_current_session(
                account=request.user.account, livemode=request_livemode(request)
            )
        return Response(CartOut(_cart_payload(request, session_id)).data)


class CartItemsApi(APIView):
    @extend_schema(
        tags=["cart"],
        summary="Add a recipient line to the cart",
        description="The same product to the same number already in the cart makes one "
        "line: its `quantity` grows by the one sent and the answer is that line (same `id`, "
        "201 as for a new line). A line holds at most 20 recharges: an add past it is 400 "
        "`validation_error` naming `quantity` (what the line holds and how many more it "
        "takes), and the cart is left as it was.",
        request=CartItemIn,
        examples=ex.exchange("Telcel 100 MXN", ex.CART_ITEM_REQUEST, ex.CART_ITEM, status=201),
        responses={201: CartItemOut, **problems(400, 401, 403, 409, extra=("invalid_amount",))},
    )
    def post(self, request):
        data = CartItemIn(data=request.data)
        data.is_valid(raise_exception=True)
        account = request.user.account
        # Priced first: a product no longer offered (409) is not put in the cart.
        priced = price_order(
            account=account, currency=account.wallet_currency, lines=[data.validated_data["line"]]
        )
        livemode = request_livemode(request)
        item = services.cart_add_item(
            account=account,
            livemode=livemode,
            session_id=data.validated_data["session_id"],
            line=data.validated_data["line"],
        )
        return Response(
            CartItemOut(_Priced(item, priced.lines[0], account.wallet_currency, livemode)).data,
            status=201,
        )


class CartItemApi(APIView):
    @extend_schema(
        tags=["cart"],
        summary="Remove an item from the cart",
        responses={204: None, **problems(401, 403, 404)},
    )
    def delete(self, request, item_id: str):
        item = selectors.cart_item_get(
            account=request.user.account, livemode=request_livemode(request), item_id=item_id
        )
        services.cart_remove_item(item=item)
        return Response(status=204)


class QuoteApi(APIView):
    @extend_schema(
        tags=["payments"],
        summary="Price an order or a cart",
        description='Send `{"sessionId"}` to price a cart or `{"items", "baseCurrency"}`. '
        "The quote converts to any currency of the FX table and shows the rate used.",
        request=QuoteIn,
        examples=ex.exchange("Two units", ex.QUOTE_REQUEST, ex.QUOTE),
        responses={200: QuoteOut, **problems(400, 401, 403, 409, extra=("invalid_amount",))},
    )
    def post(self, request):
        data = QuoteIn(data=request.data, context={"max_units": request_units_per_request(request)})
        data.is_valid(raise_exception=True)
        account = request.user.account
        livemode = request_livemode(request)
        lines = data.validated_data.get("lines")
        if lines is None:
            cart = services.cart_get_or_create(
                account=account, livemode=livemode, session_id=data.validated_data["session_id"]
            )
            lines = line_requests(selectors.cart_items(cart=cart))
        quote = price_order(
            account=account, lines=lines, currency=data.validated_data.get("base_currency", "EUR")
        )
        return Response(QuoteOut(quote, context={"livemode": livemode}).data)


class PaymentHistoryApi(APIView):
    # Read by drf-spectacular: the 200 is documented as the page envelope, as it is sent.
    pagination_class = PagePagination

    @extend_schema(
        tags=["payments"],
        summary="Payment history, newest first",
        examples=[ex.response("A wallet payment", ex.PAID)],
        responses={200: PaymentOut(many=True), **problems(400, 401, 403)},
    )
    def get(self, request):
        return payment_history_response(
            self, request, account=request.user.account, livemode=request_livemode(request)
        )


def payment_history_response(
    view, request, *, account, livemode: bool, buyer: bool = True
) -> Response:
    """A page of an account's payments (the caller's, or a network agent's read by an
    ancestor: ``orders.apis_agents``, ``buyer`` False: without the recharges' PINs and extra
    fields)."""
    paginator = PagePagination()
    page = paginator.paginate_queryset(
        selectors.payment_history(account=account, livemode=livemode), request, view=view
    )
    _present_payments(page)
    return paginator.get_paginated_response(
        PaymentOut(page, many=True, context={"buyer": buyer}).data
    )


def _present_payments(payments) -> None:
    """Test mode: due ``processing`` recharges shown as the sandbox will settle them."""
    now = timezone.now()
    for payment in payments:
        if not payment.livemode:
            sandbox_present(payment.recharges.all(), now=now)


def place_wallet_order(request, *, channel: str, key_required: bool) -> Response:
    """Wallet checkout and B2B recharge: validate, then place through the one order service."""
    key = read_key(request.headers.get("Idempotency-Key"), required=key_required)
    data = OrderIn(data=request.data, context={"max_units": request_units_per_request(request)})
    data.is_valid(raise_exception=True)
    reply = services.order_place(
        account=request.user.account,
        user=request.user,
        api_key=request_api_key(request),
        channel=channel,
        lines=data.validated_data["lines"],
        currency=data.validated_data["base_currency"],
        render=order_body,
        idempotency_key=key,
        request_fingerprint=fingerprint(
            method=request.method, path=request.path, body=request.data
        ),
        request_id=getattr(request, "request_id", None),
        promotion_wait=data.validated_data["when_promotion_scheduled"] == WAIT,
    )
    return reply_response(reply)


def reply_response(reply: IdempotentReply) -> Response:
    """An idempotent operation's answer: its body and status, problem+json when it is one,
    ``Idempotent-Replayed: true`` on a replay."""
    response = Response(
        reply.body,
        status=reply.status,
        content_type=PROBLEM_CONTENT_TYPE if reply.is_problem else None,
    )
    if reply.replayed:
        response["Idempotent-Replayed"] = "true"
    return response


class WalletCheckoutApi(APIView):
    throttle_classes = RECHARGE_THROTTLE_CLASSES

    @extend_schema(
        tags=["wallet"],
        summary="Pay an order from the wallet and queue its recharges",
        description="Debits the wallet (a test key's sandbox balance) and creates one queued "
        "recharge per unit. `baseCurrency` must be the wallet currency.",
        parameters=[IDEMPOTENCY_HEADER],
        request=OrderIn,
        examples=ex.exchange("Telcel 100 MXN", ex.order_request(), ex.order(), status=201),
        responses={
            201: OrderOut,
            **problems(*ORDER_STATUSES, extra=("currency_mismatch", "invalid_amount")),
        },
    )
    def post(self, request):
        return place_wallet_order(request, channel=Order.Channel.WALLET, key_required=False)


class SandboxApi(APIView):
    permission_classes = [TestKeyRequired]

    @extend_schema(
        tags=["sandbox"],
        summary="Test balance and the latest simulated recharges",
        description="Test keys only. Outcomes by the recipient number's last four digits: "
        "`0002` rejected (amount returned), `0003` processing for 10 s then success, `0004` "
        "timeout (amount returned), anything else success.",
        examples=[ex.response("A recharge processing", ex.SANDBOX)],
        responses={200: SandboxOut, **problems(401, 403)},
    )
    def get(self, request):
        key = request_api_key(request)
        balance, currency = sandbox_balance(key=key)
        recharges = selectors.sandbox_recharges(api_key=key)
        sandbox_present(recharges, now=timezone.now())
        return Response(
            SandboxOut({"balance": balance, "currency": currency, "recharges": recharges}).data
        )


# -- after the 201: lookups (docs/contract.md §11) -----------------------------------

RECHARGE_FILTERS = set(RechargeFilter.base_filters)


class RechargeDetailApi(APIView):
    @extend_schema(
        tags=["b2b"],
        operation_id="recharge_retrieve",
        summary="A recharge by id, with its history",
        description="Any recharge of the caller's account in the key's mode (a test key sees "
        "test recharges). Another account's id, or the other mode's, is 404. "
        + FINAL_STATUSES_NOTE,
        examples=[
            ex.response("Delivered", ex.recharge_detail()),
            ex.response("Failed", ex.recharge_failed()),
        ],
        responses={200: RechargeDetailOut, **problems(401, 403, 404)},
    )
    def get(self, request, recharge_id: str):
        recharge = selectors.recharge_lookup(
            account=request.user.account,
            livemode=request_livemode(request),
            recharge_id=recharge_id,
        )
        return Response(_recharge_shown(recharge, now=timezone.now()))


def _recharge_shown(recharge: Recharge, *, now, buyer: bool = True) -> dict:
    """``RechargeDetailOut`` of a looked-up recharge; a due sandbox ``processing`` one as the
    sandbox will settle it, with the history row it will add (nothing is written)."""
    events = list(recharge.events.all())
    if sandbox_present([recharge], now=now):
        events.append(sandbox_settled_event(recharge))
    return recharge_detail(
        recharge,
        order_id=recharge.order.public_id,
        payment_id=recharge.payment.public_id,
        events=events,
        buyer=buyer,
    )


class RechargeListApi(APIView):
    pagination_class = PagePagination

    @extend_schema(
        tags=["b2b"],
        operation_id="recharges_list",
        summary="Search recharges, newest first",
        description="Filters: `status` (repeat it, or separate with commas), `recipientNumber` "
        "(E.164), `orderId`, `createdAfter`/`createdBefore` (RFC 3339), `idempotencyKey` (the "
        "recharges of the orders or batches placed with that key, found after its stored answer "
        "expires, 24 h). An unknown parameter is 400. " + FINAL_STATUSES_NOTE,
        parameters=[
            OpenApiParameter("status", str, many=True, enum=Recharge.Status.values),
            OpenApiParameter("recipientNumber", str),
            OpenApiParameter("orderId", str),
            OpenApiParameter("createdAfter", OpenApiTypes.DATETIME),
            OpenApiParameter("createdBefore", OpenApiTypes.DATETIME),
            OpenApiParameter("idempotencyKey", str),
            OpenApiParameter("page", int),
            OpenApiParameter("limit", int),
        ],
        examples=[ex.response("Delivered", ex.recharge_detail())],
        responses={200: RechargeDetailOut(many=True), **problems(400, 401, 403)},
    )
    def get(self, request):
        return recharge_search_response(
            self, request, account=request.user.account, livemode=request_livemode(request)
        )


def recharge_search_response(
    view, request, *, account, livemode: bool, buyer: bool = True
) -> Response:
    """A page of an account's recharges, filtered by the query (the caller's, or a network
    agent's read by an ancestor: ``orders.apis_agents``, ``buyer`` False: without their PINs
    and extra fields)."""
    refuse_unknown_params(request.query_params, allowed=RECHARGE_FILTERS | {"page", "limit"})
    now = timezone.now()
    search = RechargeFilter(
        request.query_params,
        queryset=selectors.recharge_search(account=account, livemode=livemode),
        account=account,
        livemode=livemode,
        now=now,
    )
    if not search.is_valid():
        raise ValidationFailed(fields=search.error_fields())
    paginator = PagePagination()
    page = paginator.paginate_queryset(search.qs, request, view=view)
    return paginator.get_paginated_response(
        [_recharge_shown(recharge, now=now, buyer=buyer) for recharge in page]
    )


class PaymentDetailApi(APIView):
    @extend_schema(
        tags=["payments"],
        summary="A payment by id, with its recharges",
        description="Any payment of the caller's account in the key's mode; others are 404.",
        examples=[ex.response("Captured", ex.PAID)],
        responses={200: PaymentOut, **problems(401, 403, 404)},
    )
    def get(self, request, payment_id: str):
        payment = selectors.payment_lookup(
            account=request.user.account,
            livemode=request_livemode(request),
            payment_id=payment_id,
        )
        _present_payments([payment])
        return Response(PaymentOut(payment).data)


class B2BRechargeApi(RechargeListApi):
    """``/api-access/b2b/recharges``: POST places (B2B keys), GET searches (key or web)."""

    def get_permissions(self):
        if self.request.method == "POST":
            return [B2BApiKeyRequired()]
        return [IsAuthenticated()]

    def get_throttles(self):
        classes = RECHARGE_THROTTLE_CLASSES if self.request.method == "POST" else None
        return [throttle() for throttle in classes] if classes else super().get_throttles()

    @extend_schema(
        tags=["b2b"],
        summary="Dispatch recharges from the wallet (B2B API keys)",
        description="Requires an API key of a B2B account and an `Idempotency-Key`. Answers "
        "201 with the order, its payment and every recharge with its current status.",
        parameters=[
            IDEMPOTENCY_HEADER.__class__(
                name="Idempotency-Key",
                location=OpenApiParameter.HEADER,
                required=True,
                type=str,
                description=IDEMPOTENCY_HEADER.description,
            )
        ],
        request=OrderIn,
        examples=ex.exchange("Telcel 100 MXN", ex.order_request(), ex.order(), status=201),
        responses={201: OrderOut, **problems(*ORDER_STATUSES, extra=B2B_ORDER_CODES)},
    )
    def post(self, request):
        return place_wallet_order(request, channel=Order.Channel.B2B, key_required=True)
