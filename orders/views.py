"""Site pages: the cart, the card checkout, receipts that follow recharges live, history.

Thin views: forms validate with the API's serializers, writes go through orders.services and
the checkout app (via the JSON API that checkout.js calls), reads through orders.selectors.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any
from urllib.parse import parse_qsl, urlsplit, urlunsplit

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.dateparse import parse_date
from django.utils.http import urlencode
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST
from rest_framework.exceptions import ValidationError

from accounts.http import AuthenticatedRequest
from accounts.services import guest_account
from catalog.fields import fields_check
from catalog.models import Product
from catalog.phone import number_display
from catalog.selectors import products_get, promotion_is_waitlisting
from orders import guest, selectors, services
from orders.amounts import (
    AMOUNT,
    AMOUNT_FOR,
    amount_check,
    amount_price,
    number_shown,
    visitor_account,
)
from orders.errors import CartAlreadyPaid
from orders.line_fields import FIELDS_FOR, fields_forget, fields_keep, fields_posted
from orders.models import DEFAULT_SESSION, Order
from orders.pricing import line_requests, price_order
from orders.serializers import QUANTITY_MAX, QUANTITY_MIN, SEND_NOW, WAIT, CartItemIn
from payments import gateway
from payments.models import Payment
from payments.receipts import receipt_payment_id
from recharges.serializers import recharge_pin
from recharges.state import DELIVERED, FINAL
from recipients.selectors import recipient_names, top_up_url
from reseller.errors import ApplicationError, NotFound, flatten_validation_errors
from reseller.net import local_url
from wallet.services import wallet_get_or_create

SITE_CART = DEFAULT_SESSION  # the site's cart is the API's default cart of the account
# "Buy now" pays one item through a cart of its own, replaced at every "Buy now": never the
# lines left in the site's cart (an abandoned "Buy now", a declined card that kept them).
SITE_BUY_NOW = "buy-now"
SITE_CARTS = (SITE_CART, SITE_BUY_NOW)


def _back(request: HttpRequest, fallback: str) -> str:
    target = request.POST.get("next") or request.headers.get("Referer") or ""
    return local_url(request, target) or fallback


def _cart(request: AuthenticatedRequest, session_id: str = SITE_CART):
    return services.cart_get_or_create(
        account=request.user.account, livemode=True, session_id=session_id
    )


def _cart_asked(request: HttpRequest) -> str:
    """Which of the site's carts a checkout pays: ``?cart=buy-now`` (or the POSTed ``cart``)
    for the item of a "Buy now", else the site's cart."""
    asked = request.POST.get("cart") or request.GET.get("cart") or SITE_CART
    return asked if asked in SITE_CARTS else SITE_CART


def _quote(request: HttpRequest, items, *, for_sale: bool):
    """The cart priced: to show it (``for_sale=False``), or to pay it (a product no longer
    offered raises ``ProductUnavailable``)."""
    account = request.user.account  # type: ignore[union-attr]
    currency = wallet_get_or_create(account=account).currency
    priced = price_order(
        account=account,
        currency=currency,
        lines=line_requests(items),
        for_sale=for_sale,
    )
    return priced, list(zip(items, priced.lines, strict=True))


def _scheduled(priced):
    """The first promotion of the lines that starts soon (their recharges would wait for it),
    or None: the buyer then chooses before paying to send now or wait (contract §5)."""
    return next(
        (
            line.promotion
            for line in priced.lines
            if promotion_is_waitlisting(promotion=line.promotion)
        ),
        None,
    )


SEND_CHOICES = {WAIT: True, SEND_NOW: False}  # the site's answer, as the API spells it


def _form_int(raw: str) -> int | str:
    """A form's digits as the integer the API serializers take (anything else stays as is,
    and is refused by them with a clear message)."""
    raw = raw.strip()
    return int(raw) if raw.isascii() and raw.isdigit() and len(raw) < 6 else raw


def _messages_of(exc: ValidationError) -> list[str]:
    return [entry["message"] for entry in flatten_validation_errors(exc.detail)]


@require_POST
def cart_add(request: HttpRequest) -> HttpResponse:
    back = _back(request, reverse("catalog:index"))
    if (refused := _card_refused(request, back)) is not None:
        return refused
    if not request.user.is_authenticated and request.POST.get("then") == "checkout":
        return _buy_now_logged_out(request, back)
    if not request.user.is_authenticated:
        messages.info(request, _("Log in or sign up to add top-ups to your cart."))
        # Encoded, so the page comes back as it was: "?phone=%2B234…" must not turn its "+"
        # into a space on the way through the login page.
        return redirect(f"{reverse('accounts:login')}?{urlencode({'next': back})}")
    line = _posted_line(request, SITE_CART)
    if line is None:
        return redirect(back)
    fields_forget(request.session)
    if request.POST.get("then") == "checkout":  # "Buy now": straight to paying that one item
        services.cart_set_only(
            account=request.user.account, livemode=True, session_id=SITE_BUY_NOW, line=line
        )
        return redirect(f"{reverse('orders:checkout')}?{urlencode({'cart': SITE_BUY_NOW})}")
    try:
        item = services.cart_add_item(
            account=request.user.account, livemode=True, session_id=SITE_CART, line=line
        )
    except ApplicationError as exc:  # the line already holds what one line may
        messages.error(request, exc.detail)
        return redirect("orders:cart")
    if item.quantity > line.quantity:  # added to the line of this product and number
        messages.success(
            request,
            ngettext(
                "Added to your cart: it now has %(count)d of this top-up for %(number)s.",
                "Added to your cart: it now has %(count)d of this top-up for %(number)s.",
                item.quantity,
            )
            % {"count": item.quantity, "number": number_display(item.recipient_number)},
        )
    else:
        messages.success(request, _("Added to your cart."))
    return redirect("orders:cart")


def _posted_line(request: HttpRequest, session_id: str):
    """The line a product page posted (product, number, quantity, a range product's amount
    and the extra fields its product needs), or None once what is wrong with it is in the
    page's messages."""
    data = {
        "session_id": session_id,
        "product_id": request.POST.get("product", ""),
        "recipient_number": request.POST.get("recipient_number", "").strip(),
        "quantity": _form_int(request.POST.get("quantity", "1")),
        "fields": fields_posted(request.POST),
    }
    if "local_amount" in request.POST:  # checked by _amount_refused first
        data["local_amount"] = request.POST["local_amount"].strip().replace(",", ".")
    form = CartItemIn(data=data)
    try:
        form.is_valid(raise_exception=True)
    except ValidationError as exc:
        for message in _messages_of(exc):
            messages.error(request, message)
        return None
    return form.validated_data["line"]


def _card_refused(request: HttpRequest, back: str) -> HttpResponse | None:
    """A card posted without JavaScript whose range amount (not a number, out of its range,
    off its step, not sold at the moment) or extra fields (one missing or malformed,
    ``catalog.fields.fields_check`` as the API checks them) are refused: back to the product
    page, which shows why under each field, with what was typed (``site_pages.views.
    operator``). The amount comes back in the query (``?amount_for=<id>&amount=…``); the
    fields, which may be an email or a phone, wait in the session (``orders.line_fields``)
    and the query only names the card (``?fields_for=<id>``). None when the card holds."""
    product_id = request.POST.get("product", "")
    product = products_get(product_ids=[product_id]).get(product_id)
    if product is None:
        return None
    raw = request.POST.get("local_amount", "")
    amount_refused = False
    if product.is_range:
        try:
            amount_check(product=product, raw=raw)
        except ApplicationError:
            amount_refused = True
    given = fields_posted(request.POST)
    _clean, fields_refused = fields_check(required=product.required_fields or [], given=given)
    if not amount_refused and not fields_refused:
        return None
    target = urlsplit(back)
    query = [
        (name, value)
        for name, value in parse_qsl(target.query)
        if name not in (AMOUNT_FOR, AMOUNT, FIELDS_FOR)
    ]
    if product.is_range:  # kept as typed, refused or not, with its price or why
        query += [(AMOUNT_FOR, product.public_id), (AMOUNT, raw[:20])]
    if product.required_fields or given:
        fields_keep(request.session, product_id=product.public_id, given=given)
        query.append((FIELDS_FOR, product.public_id))
    return redirect(urlunsplit(target._replace(query=urlencode(query), fragment=product.public_id)))


@require_GET
def product_price(request: HttpRequest, product_id: str) -> JsonResponse:
    """What the product page asks as the buyer types an amount (``?amount=150``): the price
    of one top-up of that amount for the visitor (their currency, their discount), or why the
    amount is refused (400 ``invalid_amount``, 409 ``product_unavailable``), in their words."""
    product: Product | None = products_get(product_ids=[product_id]).get(product_id)
    if product is None or not product.is_range:
        return JsonResponse({"code": "not_found", "message": _("No such top-up.")}, status=404)
    try:
        found = amount_price(
            product=product,
            raw=request.GET.get("amount", ""),
            account=visitor_account(request.user),
        )
    except ApplicationError as exc:
        return JsonResponse({"code": exc.code, "message": str(exc.detail)}, status=exc.status)
    return JsonResponse(
        {
            "amount": str(found.amount.quantize(Decimal("0.01"))),
            "localCurrency": found.local_currency,
            "price": str(found.price),
            "currency": found.currency,
            "message": _("You pay %(price)s %(currency)s")
            % {
                "price": number_shown(found.price, "2g"),
                "currency": found.currency,
            },
        }
    )


def _buy_now_logged_out(request: HttpRequest, back: str) -> HttpResponse:
    """A logged-out "Buy now": the choice is kept in the session (orders.guest) and the
    visitor pays it as a guest, or logs in or signs up and lands on its checkout."""
    line = _posted_line(request, SITE_BUY_NOW)
    if line is None:
        return redirect(back)
    fields_forget(request.session)
    guest.pending_keep(
        request.session,
        product_id=line.product.public_id,
        recipient_number=line.recipient_number,
        quantity=line.quantity,
        local_amount=line.local_amount if line.product.is_range else None,
        fields=line.fields,
    )
    return redirect("orders:guest-checkout")


RESUME_URL = "orders:checkout-resume"


@require_GET
def guest_checkout(request: HttpRequest) -> HttpResponse:
    """The item of a logged-out "Buy now", priced: pay it as a guest (an email for the
    receipt, a card), or log in or sign up and come back to its checkout."""
    if request.user.is_authenticated:
        return redirect(RESUME_URL)
    line = guest.pending_line(request.session)
    if line is None:
        messages.info(request, _("Choose a top-up first."))
        return redirect("home")
    account = guest_account()
    priced = price_order(
        account=account,
        currency=wallet_get_or_create(account=account).currency,
        lines=[line],
        for_sale=False,
    )
    resume = urlencode({"next": reverse(RESUME_URL)})
    return render(
        request,
        "orders/guest_checkout.html",
        {
            "rows": list(zip([line], priced.lines, strict=True)),
            "quote": priced,
            "cards_enabled": gateway.configured(),
            "test_mode": gateway.card_test_mode(),
            "stripe_js_url": settings.STRIPE_JS_URL,
            "publishable_key": gateway.publishable_key(),
            "scheduled": _scheduled(priced),
            "login_url": f"{reverse('accounts:login')}?{resume}",
            "signup_url": f"{reverse('accounts:signup')}?{resume}",
        },
    )


@login_required
@require_GET
def checkout_resume(request: AuthenticatedRequest) -> HttpResponse:
    """After a login or a sign-up: the item chosen before it, alone in the "Buy now" cart,
    and its checkout. With nothing pending (or a product gone since), the cart."""
    line = guest.pending_line(request.session)
    guest.pending_drop(request.session)
    if line is None:
        return redirect("orders:cart")
    services.cart_set_only(
        account=request.user.account, livemode=True, session_id=SITE_BUY_NOW, line=line
    )
    return redirect(f"{reverse('orders:checkout')}?{urlencode({'cart': SITE_BUY_NOW})}")


@login_required
@require_GET
def cart(request: AuthenticatedRequest) -> HttpResponse:
    items = list(selectors.cart_items(cart=_cart(request)))
    quote, rows = _quote(request, items, for_sale=False)
    wallet = wallet_get_or_create(account=request.user.account)
    return render(
        request,
        "orders/cart.html",
        {
            "rows": rows,
            "quote": quote,
            "wallet": wallet,
            "cards_enabled": gateway.configured(),
            "scheduled": _scheduled(quote),
        },
    )


def _own_item(request: HttpRequest, item_id: str):
    try:
        return selectors.cart_item_get(account=request.user.account, livemode=True, item_id=item_id)  # type: ignore[union-attr]
    except NotFound as exc:
        raise Http404 from exc


@login_required
@require_POST
def cart_item_update(request: AuthenticatedRequest, item_id: str) -> HttpResponse:
    item = _own_item(request, item_id)
    try:
        quantity = int(request.POST.get("quantity", ""))
    except ValueError:
        quantity = 0
    if not QUANTITY_MIN <= quantity <= QUANTITY_MAX:
        messages.error(request, _("Choose a quantity from 1 to 20."))  # the bounds above
    else:
        services.cart_item_set_quantity(item=item, quantity=quantity)
        messages.success(request, _("Cart updated."))
    return redirect("orders:cart")


@login_required
@require_POST
def cart_item_remove(request: AuthenticatedRequest, item_id: str) -> HttpResponse:
    services.cart_remove_item(item=_own_item(request, item_id))
    messages.success(request, _("Removed from your cart."))
    return redirect("orders:cart")


@login_required
@require_GET
def checkout(request: AuthenticatedRequest) -> HttpResponse:
    """The quote and the card form; checkout.js runs prepare → confirmCardSetup → checkout.
    Every line it will charge is on the page: the site's cart, or (``?cart=buy-now``) the one
    item of a "Buy now"."""
    which = _cart_asked(request)
    items = list(selectors.cart_items(cart=_cart(request, which)))
    if not items:
        messages.info(request, _("Your cart is empty."))
        return redirect("orders:cart")
    try:
        quote, rows = _quote(request, items, for_sale=True)
    except ApplicationError as exc:  # a product no longer offered
        messages.error(request, exc.detail)
        return redirect("orders:cart")
    return render(
        request,
        "orders/checkout.html",
        {
            "rows": rows,
            "quote": quote,
            "cards_enabled": gateway.configured(),
            "test_mode": gateway.card_test_mode(),
            "stripe_js_url": settings.STRIPE_JS_URL,
            "publishable_key": gateway.publishable_key(),
            "session_id": which,
            "scheduled": _scheduled(quote),
        },
    )


@login_required
@require_POST
def checkout_wallet(request: AuthenticatedRequest) -> HttpResponse:
    """Pay the cart from the wallet: the same order service as POST /wallet/checkout.

    The cart's lines are read under its lock inside the order's transaction, so a double
    click (or a retried request) pays the cart once; the later submits land on the receipt.
    """
    cart_obj = _cart(request, _cart_asked(request))
    if not selectors.cart_items(cart=cart_obj).exists():
        return redirect("orders:cart")
    account = request.user.account
    choice = request.POST.get("when_promotion_scheduled", "")
    if choice not in SEND_CHOICES:
        items = list(selectors.cart_items(cart=cart_obj))
        if _scheduled(_quote(request, items, for_sale=False)[0]) is not None:
            messages.error(request, _("Choose whether to send now or wait for the promotion."))
            return redirect("orders:cart")
        choice = "wait"  # nothing starts soon: the choice changes nothing
    try:
        reply = services.order_place(
            account=account,
            user=request.user,
            channel=Order.Channel.WALLET,
            cart=cart_obj,
            promotion_wait=SEND_CHOICES[choice],
            currency=wallet_get_or_create(account=account).currency,
            render=lambda placed: {"paymentId": placed.payment.public_id},
        )
    except CartAlreadyPaid:
        latest = selectors.payment_history(account=account, livemode=True).first()
        if latest is None:
            return redirect("orders:cart")
        return redirect("orders:receipt", payment_id=latest.public_id)
    except ApplicationError as exc:
        messages.error(request, exc.detail)
        return redirect("orders:cart")
    return redirect("orders:receipt", payment_id=reply.body["paymentId"])


def _own_payment(request: HttpRequest, payment_id: str) -> Payment:
    payment = (
        selectors.payment_history(account=request.user.account, livemode=True)  # type: ignore[union-attr]
        .filter(public_id=payment_id)
        .prefetch_related("order__lines__product__operator")
        .first()
    )
    if payment is None:
        raise Http404
    return payment


# The payments whose page is a receipt: paid (with what was refunded of it since).
PAID = (Payment.Status.CAPTURED, Payment.Status.REFUNDED, Payment.Status.PARTIALLY_REFUNDED)


def _card_finish(payment: Payment, *, guest_token: str | None, allowed: bool) -> dict | None:
    """How the page of a card payment not paid yet offers "Finish payment" and "Cancel
    payment" (checkout.js), or None when it cannot be finished any more (docs/payments.md).
    A payment waiting for the bank goes back to the bank's check; another one takes a card,
    a member's only: a guest's card form needs the email of the guest checkout page, so a
    guest's declined payment just expires with its hold ("Buy now" starts a new one)."""
    if not payment.finishable or not allowed:
        return None
    waiting = payment.waiting_for_bank
    if guest_token is not None:
        if not waiting:
            return None
        return {
            "kind": "guest",
            "waiting": True,
            "card": False,
            "prepare_url": reverse("guest-payments-prepare"),
            "checkout_url": reverse("guest-payments-checkout"),
            "cancel_url": reverse("guest-payments-cancel"),
            "success_url": reverse("orders:guest-receipt", args=[guest_token]),
        }
    return {
        "kind": "payment",
        "waiting": waiting,
        "card": not waiting,
        "prepare_url": reverse("payments-prepare"),
        "checkout_url": reverse("payments-checkout"),
        "cancel_url": reverse("payments-cancel"),
        "success_url": reverse("orders:receipt", args=[payment.public_id]),
    }


def _pin_shown(pin: dict[str, Any] | None) -> dict[str, Any] | None:
    """A PIN as the receipt page shows it: its code in groups of 4 (read aloud, typed on a
    keypad; copied whole), and its date as a date where the provider wrote one."""
    if pin is None:
        return None
    code = str(pin["code"])
    groups = [code[i : i + 4] for i in range(0, len(code), 4)] if len(code) > 6 else [code]
    try:
        valid_until_date = parse_date(str(pin.get("valid_until") or "")[:10])
    except ValueError:
        valid_until_date = None
    return {**pin, "groups": groups, "valid_until_date": valid_until_date}


def _receipt(
    request: HttpRequest,
    payment: Payment,
    *,
    status_url: str,
    guest_token: str | None = None,
    numbers: list[dict] | None = None,
) -> HttpResponse:
    """A payment's page: the receipt of a paid one, with its recharges followed live; for a
    card payment not paid yet, what it is ("Waiting for your bank", "Payment expired" …),
    what it would buy, and while it can still be paid "Finish payment" and "Cancel payment"."""
    recharges = list(payment.recharges.all())
    for recharge in recharges:  # a delivered PIN, for its buyer (contract section 17)
        recharge.pin_shown = _pin_shown(recharge_pin(recharge))  # type: ignore[attr-defined]
    lines = list(payment.order.lines.all())
    unpaid = payment.method == Payment.Method.CARD and payment.status not in PAID
    allowed = guest_token is None or guest.guest_payment_allowed(request.session, payment.public_id)
    finish = _card_finish(payment, guest_token=guest_token, allowed=allowed) if unpaid else None
    # Over: expired, cancelled, or failed past its hold (a pending one past its hold is shown
    # expired, and followed until the sweeper ends it: the bank may have approved it in time).
    over = unpaid and not payment.finishable and payment.status != Payment.Status.PENDING
    context = {
        "payment": payment,
        "recharges": recharges,
        "lines": lines,
        "guest": guest_token is not None,
        "unpaid": unpaid,
        "state": payment.status_shown,
        "finish": finish,
        "numbers": numbers if not (unpaid and payment.finishable) else None,
        # A paid payment is final once every recharge is; an unpaid one once it is over.
        "final": over or (bool(recharges) and all(r.status in FINAL for r in recharges)),
        "status_url": status_url,
    }
    if finish is not None:
        context.update(
            {
                "cards_enabled": gateway.configured(),
                "test_mode": gateway.card_test_mode(),
                "stripe_js_url": settings.STRIPE_JS_URL,
                "publishable_key": gateway.publishable_key(),
            }
        )
    response = render(request, "orders/receipt.html", context)
    if any(recharge.pin_shown for recharge in recharges):  # type: ignore[attr-defined]
        response["Cache-Control"] = "no-store"  # a page with a PIN is kept by no cache
    return response


@login_required
@require_GET
def receipt(request: AuthenticatedRequest, payment_id: str) -> HttpResponse:
    payment = _own_payment(request, payment_id)
    return _receipt(
        request,
        payment,
        status_url=reverse("orders:receipt-status", args=[payment.public_id]),
        numbers=_numbers_of(request, list(payment.order.lines.all())),
    )


def _guest_payment(token: str) -> Payment:
    """The guest payment a receipt link names (orders.guest); any other link is 404."""
    payment_id = receipt_payment_id(token)
    payment = (
        selectors.payment_history(account=guest_account(), livemode=True)
        .filter(public_id=payment_id)
        .prefetch_related("order__lines__product__operator")
        .first()
        if payment_id
        else None
    )
    if payment is None:
        raise Http404
    return payment


@never_cache  # a link that is its own key: kept by no shared cache
@require_GET
def guest_receipt(request: HttpRequest, token: str) -> HttpResponse:
    """A guest's receipt, reached by its link only (it is also in the receipt email)."""
    return _receipt(
        request,
        _guest_payment(token),
        status_url=reverse("orders:guest-receipt-status", args=[token]),
        guest_token=token,
    )


@never_cache
@require_GET
def guest_receipt_status(request: HttpRequest, token: str) -> JsonResponse:
    return _status_body(_guest_payment(token))


def _numbers_of(request: AuthenticatedRequest, lines) -> list[dict]:
    """The order's recipients, once each: the saved name, and "top up again" at the operator
    bought for."""
    names = recipient_names(account_id=request.user.account_id)
    numbers: dict[str, dict] = {}
    for line in lines:
        operator = line.product.operator
        numbers.setdefault(
            line.recipient_number,
            {
                "number": line.recipient_number,
                "name": names.get(line.recipient_number, ""),
                "operator": f"{operator.country_id}/{operator.slug}",
                "top_up_url": top_up_url(
                    phone_number=line.recipient_number,
                    country=operator.country_id,
                    slug=operator.slug,
                ),
            },
        )
    return list(numbers.values())


@login_required
@require_GET
def receipt_status(request: AuthenticatedRequest, payment_id: str) -> JsonResponse:
    """What receipt.js polls: the payment's and each recharge's current status."""
    return _status_body(_own_payment(request, payment_id))


def _status_body(payment: Payment) -> JsonResponse:
    recharges = list(payment.recharges.all())
    return JsonResponse(
        {
            "id": payment.public_id,
            "status": payment.status,
            # What its buyer reads ("Waiting for your bank" …) and its badge's class.
            "statusLabel": payment.status_label,
            "statusShown": payment.status_shown,
            "recharges": [
                {
                    "id": r.public_id,
                    "status": r.status,
                    "statusLabel": str(r.get_status_display()),
                    # A PIN was delivered: the page shows it once drawn again (never here).
                    "hasPin": bool(r.pin_last4) and r.status in DELIVERED,
                    "failureMessage": (
                        _("The operator took the top-up back; its amount was refunded.")
                        if r.status == "reversed"
                        else r.failure_message or None
                    ),
                }
                for r in recharges
            ],
            "final": payment.status != Payment.Status.PENDING
            and all(r.status in FINAL for r in recharges),
        }
    )


@login_required
@require_GET
def history(request: AuthenticatedRequest) -> HttpResponse:
    page = Paginator(
        selectors.payment_history(account=request.user.account, livemode=True), 20
    ).get_page(request.GET.get("page"))
    return render(request, "orders/history.html", {"page": page})
