"""Writes for carts and wallet-funded orders: the money core of the product.

``order_pay_with_wallet`` is the one path for wallet checkout and B2B recharges: price,
lock the wallet (one read), check the balance, write the order, its captured payment, one queued
recharge per unit and the ledger debit in one transaction, and enqueue the processor only
after commit. A failure anywhere leaves nothing behind.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from accounts.models import Account, User
from accounts.selectors import account_contact
from catalog.phone import number_display
from emails.models import Email
from emails.outbox import Person, email_queue_to_user
from orders.errors import CartAlreadyPaid, CartLineFull, CurrencyMismatch
from orders.idempotency import IdempotentReply, run_idempotent
from orders.models import Cart, CartItem, Order, OrderLine
from orders.pricing import (
    QUANTITY_MAX,
    LineRequest,
    PricedOrder,
    amount_sent,
    line_requests,
    price_order,
)
from orders.selectors import cart_items
from payments.models import Payment
from payments.services import payment_create
from recharges.models import Recharge
from recharges.services import recharges_create
from wallet.models import Wallet
from wallet.services import (
    balance_check,
    wallet_debit,
    wallet_lock,
    wallet_lock_for,
)

logger = logging.getLogger(__name__)


def cart_get_or_create(*, account: Account, livemode: bool, session_id: str) -> Cart:
    cart, _created = Cart.objects.get_or_create(
        account=account, livemode=livemode, session_id=session_id
    )
    return cart


@transaction.atomic
def cart_add_item(
    *, account: Account, livemode: bool, session_id: str, line: LineRequest
) -> CartItem:
    """Add ``line`` to the cart. The same product to the same number for the same local
    amount makes one line: a line already there grows by the quantity added (the answer is
    that line), up to ``QUANTITY_MAX``; past it ``CartLineFull`` (400) and the cart is left as
    it was. Another amount of a range product is another line (contract section 17).

    The cart's row lock serialises adds to one cart, so two at once add up on one line."""
    cart = cart_get_or_create(account=account, livemode=livemode, session_id=session_id)
    Cart.objects.select_for_update(of=("self",)).filter(pk=cart.pk).first()
    amount = amount_sent(line.product, line.local_amount)
    same = (
        CartItem.objects.filter(
            cart=cart,
            product=line.product,
            recipient_number=line.recipient_number,
            local_amount=amount,
            fields=line.fields,
        )
        .order_by("id")
        .first()
    )
    if same is not None and same.quantity + line.quantity > QUANTITY_MAX:
        raise _line_full(same, room=QUANTITY_MAX - same.quantity)
    Cart.objects.filter(pk=cart.pk).update(updated_at=timezone.now())
    if same is not None:
        same.quantity += line.quantity
        same.save(update_fields=["quantity"])
        return same
    return CartItem.objects.create(
        cart=cart,
        product=line.product,
        recipient_number=line.recipient_number,
        quantity=line.quantity,
        local_amount=amount,
        fields=line.fields,
    )


def _line_full(item: CartItem, *, room: int) -> CartLineFull:
    """What to say when a line cannot take what was added: what it holds, and how many more
    it takes."""
    holds = ngettext(
        "Your cart already has %(count)d of this top-up for %(number)s.",
        "Your cart already has %(count)d of this top-up for %(number)s.",
        item.quantity,
    ) % {"count": item.quantity, "number": number_display(item.recipient_number)}
    if room:
        more = ngettext(
            "A cart line holds at most %(max)d recharges: add at most %(room)d more.",
            "A cart line holds at most %(max)d recharges: add at most %(room)d more.",
            room,
        ) % {"max": QUANTITY_MAX, "room": room}
    else:
        more = _("A cart line holds at most %(max)d recharges: this one is full.") % {
            "max": QUANTITY_MAX
        }
    message = f"{holds} {more}"
    return CartLineFull(
        message, fields=[{"field": "quantity", "code": "max_value", "message": message}]
    )


@transaction.atomic
def cart_set_only(
    *, account: Account, livemode: bool, session_id: str, line: LineRequest
) -> CartItem:
    """Make ``line`` the only item of the cart ``session_id`` (the site's "Buy now" cart: it
    pays exactly the item chosen, never what an earlier visit left there)."""
    cart = cart_get_or_create(account=account, livemode=livemode, session_id=session_id)
    Cart.objects.select_for_update(of=("self",)).filter(pk=cart.pk).first()
    CartItem.objects.filter(cart=cart).delete()
    return cart_add_item(account=account, livemode=livemode, session_id=session_id, line=line)


def cart_remove_item(*, item: CartItem) -> None:
    item.delete()


def cart_items_remove(*, cart_id: int, item_ids: list[int]) -> None:
    """Remove exactly these lines of a cart (the ones a card payment paid for); a line added
    since, or one already gone, is left alone."""
    CartItem.objects.filter(cart_id=cart_id, pk__in=item_ids).delete()


def order_new(
    *,
    account: Account,
    livemode: bool,
    channel: str,
    priced: PricedOrder,
    user: User | None,
    api_key,
    payment_status: str,
    method: str,
    wallet: Wallet | None,
    promotion_wait: bool = True,
    idempotency_key: str = "",
) -> tuple[Order, Payment, list[OrderLine]]:
    """An order, its lines and its one payment, built and not yet saved (``order_create``).
    ``promotion_wait``: hold recharges for a scheduled promotion (``whenPromotionScheduled``
    "wait") or send them at once ("sendNow"). ``idempotency_key``: the key it is placed with."""
    now = timezone.now()
    order = Order(
        account=account,
        livemode=livemode,
        channel=channel,
        promotion_wait=promotion_wait,
        idempotency_key=idempotency_key,
        total=priced.total,
        currency=priced.currency,
        created_by=user,
        api_key=api_key,
        created_at=now,
    )
    lines = [
        OrderLine(
            order=order,
            product=line.product,
            recipient_number=line.recipient_number,
            quantity=line.quantity,
            local_amount=line.local_amount,
            fields=line.fields,
            unit_price=line.unit_price,
            line_total=line.line_total,
            promotion_name=line.promotion.name if line.promotion else "",
        )
        for line in priced.lines
    ]
    payment = Payment(
        order=order,
        account=account,
        livemode=livemode,
        method=method,
        status=payment_status,
        amount=priced.total,
        currency=priced.currency,
        wallet=wallet,
        captured_at=now if payment_status == Payment.Status.CAPTURED else None,
        created_at=now,
        updated_at=now,
    )
    return order, payment, lines


def order_create(**kwargs) -> tuple[Order, Payment, list[OrderLine]]:
    """Write an order, its lines and its one payment (wallet-paid or a pending card payment);
    arguments as ``order_new``.

    Recharges are created separately (``order_recharges_start``) once the payment is captured.
    """
    order, payment, lines = order_new(**kwargs)
    order.save(force_insert=True)
    for line in lines:
        line.order = order  # the saved order's id
    lines = OrderLine.objects.bulk_create(lines)
    payment.order = order
    payment_create(payment)
    return order, payment, lines


def order_recharges_start(
    *,
    order: Order,
    payment: Payment,
    lines: list[OrderLine] | None = None,
    references: list[str] | None = None,
    receipt_to: Person | None = None,
    receipt_path: str = "",
) -> list[Recharge]:
    """A paid order's recharges (``recharges.services.recharges_create``) and, for a live
    site order, its receipt. ``receipt_to`` and ``receipt_path``: a guest's (their email and
    language, and their receipt link), instead of the buyer's account and receipt page."""
    if receipt_to is not None and not order.receipt_email:
        # Kept for the receipts that come later: a PIN's, once delivered (recharges.pins).
        order.receipt_email, order.receipt_language = receipt_to.email, receipt_to.language
        order.save(update_fields=["receipt_email", "receipt_language"])
    if lines is None:
        lines = list(order.lines.select_related("product"))
    recharges = recharges_create(order=order, payment=payment, lines=lines, references=references)
    if order.livemode and order.channel in (Order.Channel.WALLET, Order.Channel.CARD):
        _receipt_queue(
            order=order,
            payment=payment,
            lines=lines,
            receipt_to=receipt_to,
            receipt_path=receipt_path,
        )
    return recharges


def order_discard(*, order_id: int) -> None:
    """Remove an order whose payment never started (its lines go with it)."""
    Order.objects.filter(pk=order_id).delete()


def _receipt_queue(
    *,
    order: Order,
    payment: Payment,
    lines: list[OrderLine],
    receipt_to: Person | None = None,
    receipt_path: str = "",
) -> None:
    """The receipt of a paid site order (card or wallet; docs/contract.md §12), by email, in
    the transaction that took the money. API orders are followed by webhooks and statements."""
    user = receipt_to or order.created_by or account_contact(account_id=order.account_id)
    if user is None:
        return
    email_queue_to_user(
        user=user,
        kind=Email.Kind.RECEIPT,
        context={
            "name": getattr(user, "first_name", ""),
            "reference": payment.public_id,
            "method": payment.method,
            "total": f"{order.total:.2f}",
            "currency": order.currency,
            "receipt_path": receipt_path or reverse("orders:receipt", args=[payment.public_id]),
            "lines": [
                {
                    "product": line.product.name,
                    "recipient": number_display(line.recipient_number),
                    "quantity": line.quantity,
                    # What the recipient gets (a range product's chosen amount, said beside
                    # the product's name; a fixed product's name says it already).
                    "local_amount": f"{line.face_value:.2f}",
                    "local_currency": line.product.local_currency,
                    "is_range": line.product.is_range,
                    # The extra fields given (catalog.fields), clean; labelled in the email's
                    # language when it is written (the catalog_marks filter fields_shown).
                    "fields": dict(line.fields or {}),
                    "unit_price": f"{line.unit_price:.2f}",
                    "line_total": f"{line.line_total:.2f}",
                }
                for line in lines
            ],
        },
    )


@dataclass(frozen=True)
class PlacedOrder:
    """An order just paid, with the rows written beside it: its payment, its lines (each with
    its product) and its recharges. Its 201 answer is rendered from these objects rather than
    read back (the same values a fresh read gives: tests/test_orders_wallet_checkout.py)."""

    order: Order
    payment: Payment
    lines: list[OrderLine]
    recharges: list[Recharge]


def order_place_with_wallet(
    *,
    account: Account,
    livemode: bool,
    channel: str,
    lines: list[LineRequest],
    currency: str,
    wallet: Wallet | None = None,
    user: User | None = None,
    api_key=None,
    references: list[str] | None = None,
    promotion_wait: bool = True,
    idempotency_key: str = "",
) -> Order:
    """``order_pay_with_wallet`` for a caller that needs the order only (a batch, the tests)."""
    return order_pay_with_wallet(
        account=account,
        livemode=livemode,
        channel=channel,
        lines=lines,
        currency=currency,
        wallet=wallet,
        user=user,
        api_key=api_key,
        references=references,
        promotion_wait=promotion_wait,
        idempotency_key=idempotency_key,
    ).order


@transaction.atomic(savepoint=False)  # one transaction with the caller's, if it has one
def order_pay_with_wallet(
    *,
    account: Account,
    livemode: bool,
    channel: str,
    lines: list[LineRequest],
    currency: str,
    wallet: Wallet | None = None,
    user: User | None = None,
    api_key=None,
    references: list[str] | None = None,
    promotion_wait: bool = True,
    idempotency_key: str = "",
) -> PlacedOrder:
    """Price and pay an order from a wallet: price, lock, check, write, debit, queue recharges.

    ``wallet`` defaults to the caller's (a test key's sandbox balance, else the live wallet),
    then found and locked in one read. The lock is taken after pricing: it is held only for
    the checks and the writes.
    """
    priced = price_order(account=account, lines=lines, currency=currency.upper())
    if wallet is None:
        locked = wallet_lock_for(account=account, api_key=api_key)
    else:
        locked = wallet_lock(wallet_id=wallet.pk)
    if currency.upper() != locked.currency:
        raise CurrencyMismatch(
            _("baseCurrency %(given)s differs from the wallet currency %(wallet)s.")
            % {"given": currency.upper(), "wallet": locked.currency}
        )
    rows = {
        "account": account,
        "livemode": livemode,
        "channel": channel,
        "priced": priced,
        "user": user,
        "api_key": api_key,
        "payment_status": Payment.Status.CAPTURED,
        "method": Payment.Method.WALLET,
        "wallet": locked,
        "promotion_wait": promotion_wait,
        "idempotency_key": idempotency_key,
    }
    balance_check(wallet=locked, amount=priced.total)
    order, payment, order_lines = order_create(**rows)
    wallet_debit(
        wallet=locked,
        amount=priced.total,
        reference=payment.public_id,
        memo=f"order {order.public_id}",
        fresh_reference=True,  # the payment was created just above
    )
    recharges = order_recharges_start(
        order=order, payment=payment, lines=order_lines, references=references
    )
    return PlacedOrder(order=order, payment=payment, lines=order_lines, recharges=recharges)


def order_place(
    *,
    account: Account,
    channel: str,
    currency: str,
    render: Callable[[PlacedOrder], dict[str, Any]],
    lines: list[LineRequest] | None = None,
    cart: Cart | None = None,
    user: User | None = None,
    api_key=None,
    idempotency_key: str | None = None,
    request_fingerprint: str = "",
    request_id: str | None = None,
    promotion_wait: bool = True,
) -> IdempotentReply:
    """The one way to pay an order from a wallet: wallet checkout API, B2B API and the site.

    The wallet is the key's sandbox balance for a test key, else the account's live wallet.
    With ``idempotency_key`` the order is placed at most once per key (a replay returns the
    stored answer, ``render``-ed from the ``PlacedOrder`` when it was placed). With ``cart``
    the lines are the cart's, read under the cart's row lock inside the order's transaction,
    and exactly the lines paid are removed: concurrent submits of one cart pay it once, the
    others get ``CartAlreadyPaid``.
    """
    livemode = api_key.livemode if api_key is not None else True

    def operation() -> tuple[int, dict[str, Any]]:
        items: list[CartItem] = []
        order_lines = lines
        if cart is not None:
            Cart.objects.select_for_update(of=("self",)).filter(pk=cart.pk).first()
            items = list(cart_items(cart=cart))
            if not items:
                raise CartAlreadyPaid()
            order_lines = line_requests(items)
        placed = order_pay_with_wallet(
            account=account,
            livemode=livemode,
            channel=channel,
            lines=order_lines or [],
            currency=currency,
            user=user,
            api_key=api_key,
            promotion_wait=promotion_wait,
            idempotency_key=idempotency_key or "",
        )
        if items:
            CartItem.objects.filter(pk__in=[item.pk for item in items]).delete()
        logger.info(
            "order %s placed",
            placed.order.public_id,
            extra={"order": placed.order.public_id, "account": account.pk},
        )
        return 201, render(placed)

    return run_idempotent(
        account=account,
        livemode=livemode,
        key=idempotency_key,
        request_fingerprint=request_fingerprint,
        operation=operation,
        request_id=request_id,
    )


def cart_item_set_quantity(*, item: CartItem, quantity: int) -> CartItem:
    """Change how many recharges of a cart line to send (1..20, as when adding it)."""
    item.quantity = quantity
    item.save(update_fields=["quantity"])
    Cart.objects.filter(pk=item.cart_id).update(updated_at=timezone.now())
    return item
