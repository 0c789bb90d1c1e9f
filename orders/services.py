"""Writes for carts and wallet-funded orders: the money core of the product.

``order_place_with_wallet`` is the one path for wallet checkout and B2B recharges: price,
lock the wallet, check the balance, write the order, its captured payment, one queued
recharge per unit and the ledger debit in one transaction, and enqueue the processor only
after commit. A failure anywhere leaves nothing behind.
"""

from __future__ import annotations

import logging

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from accounts.models import Account, User
from orders.errors import CurrencyMismatch
from orders.models import (
    Cart,
    CartItem,
    Order,
    OrderLine,
    Payment,
    Recharge,
    RechargeEvent,
)
from orders.pricing import LineRequest, PricedOrder, price_order
from reseller.money import fmt
from reseller.tasks import enqueue
from wallet.errors import InsufficientBalance
from wallet.models import Wallet
from wallet.services import wallet_debit, wallet_lock

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
    cart = cart_get_or_create(account=account, livemode=livemode, session_id=session_id)
    Cart.objects.filter(pk=cart.pk).update(updated_at=timezone.now())
    return CartItem.objects.create(
        cart=cart,
        product=line.product,
        recipient_number=line.recipient_number,
        quantity=line.quantity,
    )


def cart_remove_item(*, item: CartItem) -> None:
    item.delete()


def cart_clear(*, cart: Cart) -> None:
    cart.items.all().delete()


def _create_order_rows(
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
) -> tuple[Order, Payment, list[OrderLine]]:
    now = timezone.now()
    order = Order.objects.create(
        account=account,
        livemode=livemode,
        channel=channel,
        total=priced.total,
        currency=priced.currency,
        created_by=user,
        api_key=api_key,
        created_at=now,
    )
    lines = OrderLine.objects.bulk_create(
        [
            OrderLine(
                order=order,
                product=line.product,
                recipient_number=line.recipient_number,
                quantity=line.quantity,
                unit_price=line.unit_price,
                line_total=line.line_total,
                promotion_name=line.promotion.name if line.promotion else "",
            )
            for line in priced.lines
        ]
    )
    payment = Payment.objects.create(
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


def recharges_create(
    *, order: Order, payment: Payment, lines: list[OrderLine] | None = None
) -> list[Recharge]:
    """One queued recharge per unit of every line, with its first history event.

    ``lines`` are the order's lines when the caller has them in memory (saves a query).
    """
    now = timezone.now()
    if lines is None:
        lines = list(order.lines.select_related("product"))
    recharges = [
        Recharge(
            order=order,
            payment=payment,
            account_id=order.account_id,
            livemode=order.livemode,
            product=line.product,
            recipient_number=line.recipient_number,
            amount=line.unit_price,
            currency=order.currency,
            status=Recharge.Status.QUEUED,
            queued_at=now,
            created_at=now,
            updated_at=now,
        )
        for line in lines
        for _unit in range(line.quantity)
    ]
    Recharge.objects.bulk_create(recharges)
    RechargeEvent.objects.bulk_create(
        [
            RechargeEvent(
                recharge=r,
                from_status="",
                to_status=Recharge.Status.QUEUED,
                note="order placed",
                created_at=now,
            )
            for r in recharges
        ]
    )
    if not order.livemode:
        from orders.recharges.sandbox import sandbox_simulate

        sandbox_simulate(recharges=recharges)  # test keys never reach the processor
        payment.refresh_from_db(fields=["status", "refunded_amount", "updated_at"])
        return recharges
    ids = [r.pk for r in recharges]
    transaction.on_commit(lambda: recharges_enqueue(recharge_ids=ids))
    return recharges


def recharges_enqueue(*, recharge_ids: list[int]) -> None:
    """Hand recharges to the processor; a lost message is found again by the sweeper."""
    from orders.recharges.tasks import recharge_process_task

    for recharge_id in recharge_ids:
        try:
            enqueue(recharge_process_task, recharge_id)
        except Exception:  # broker down: the periodic sweeper re-enqueues queued rows
            logger.warning(
                "could not enqueue recharge %s; the sweeper will retry", recharge_id, exc_info=True
            )
            return


def order_place_with_wallet(
    *,
    account: Account,
    wallet: Wallet,
    livemode: bool,
    channel: str,
    lines: list[LineRequest],
    currency: str,
    user: User | None = None,
    api_key=None,
) -> Order:
    """Price and pay an order from a wallet; the caller owns the transaction."""
    assert transaction.get_connection().in_atomic_block, "order placement needs a transaction"
    if currency.upper() != wallet.currency:
        raise CurrencyMismatch(
            _("baseCurrency %(given)s differs from the wallet currency %(wallet)s.")
            % {"given": currency.upper(), "wallet": wallet.currency}
        )
    priced = price_order(account=account, lines=lines, currency=wallet.currency)
    locked = wallet_lock(wallet_id=wallet.pk)
    if locked.balance < priced.total:
        raise InsufficientBalance(
            _("Available balance %(balance)s is below the order total %(total)s.")
            % {
                "balance": fmt(locked.balance, locked.currency),
                "total": fmt(priced.total, locked.currency),
            }
        )
    order, payment, order_lines = _create_order_rows(
        account=account,
        livemode=livemode,
        channel=channel,
        priced=priced,
        user=user,
        api_key=api_key,
        payment_status=Payment.Status.CAPTURED,
        method=Payment.Method.WALLET,
        wallet=locked,
    )
    wallet_debit(
        wallet=locked,
        amount=priced.total,
        reference=payment.public_id,
        memo=f"order {order.public_id}",
        fresh_reference=True,  # the payment was created just above
    )
    recharges = recharges_create(order=order, payment=payment, lines=order_lines)
    order_graph_attach(order=order, payment=payment, lines=order_lines, recharges=recharges)
    return order


def order_graph_attach(
    *, order: Order, payment: Payment, lines: list[OrderLine], recharges: list[Recharge]
) -> Order:
    """Give a just-created order its payment, lines and recharges as if prefetched, so the
    201 answer is rendered from memory instead of read back (the same objects, same values)."""
    order.payment = payment
    order._prefetched_objects_cache = {
        "lines": _as_prefetched(order.lines, lines),
        "recharges": _as_prefetched(order.recharges, recharges),
    }
    payment._prefetched_objects_cache = {"recharges": _as_prefetched(payment.recharges, recharges)}
    return order


def _as_prefetched(manager, objects: list):
    """A queryset that already holds its rows, as prefetch_related leaves it."""
    queryset = manager.get_queryset()
    queryset._result_cache = list(objects)
    queryset._prefetch_done = True
    return queryset


def cart_item_set_quantity(*, item: CartItem, quantity: int) -> CartItem:
    """Change how many recharges of a cart line to send (1..20, as when adding it)."""
    item.quantity = quantity
    item.save(update_fields=["quantity"])
    Cart.objects.filter(pk=item.cart_id).update(updated_at=timezone.now())
    return item
