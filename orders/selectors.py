"""Reads of carts, orders, payments and recharges, scoped to the caller's account and mode."""

from __future__ import annotations

from django.db.models import Prefetch, QuerySet

from accounts.models import Account
from orders.models import Cart, CartItem, Order, OrderLine, Payment, Recharge
from reseller.errors import NotFound


def _recharges() -> QuerySet[Recharge]:
    return Recharge.objects.select_related("product").order_by("id")


def order_for_response(*, order_id: int) -> Order:
    return (
        Order.objects.select_related("payment__order")
        .prefetch_related(
            Prefetch("lines", queryset=OrderLine.objects.select_related("product").order_by("id")),
            Prefetch("recharges", queryset=_recharges()),
            Prefetch("payment__recharges", queryset=_recharges()),
        )
        .get(pk=order_id)
    )


def payment_history(*, account: Account, livemode: bool) -> QuerySet[Payment]:
    return (
        Payment.objects.filter(account=account, livemode=livemode)
        .select_related("order")
        .prefetch_related(Prefetch("recharges", queryset=_recharges()))
        .order_by("-id")
    )


def cart_items(*, cart: Cart) -> QuerySet[CartItem]:
    return cart.items.select_related("product__operator", "product__country").order_by("id")


def cart_item_get(*, account: Account, livemode: bool, item_id: str) -> CartItem:
    item = (
        CartItem.objects.filter(public_id=item_id, cart__account=account, cart__livemode=livemode)
        .select_related("cart")
        .first()
    )
    if item is None:
        raise NotFound()
    return item


def sandbox_recharges(*, api_key, limit: int = 20) -> list[Recharge]:
    """The latest simulated recharges ordered with one test key, newest first."""
    return list(
        Recharge.objects.filter(order__api_key=api_key, livemode=False)
        .select_related("product")
        .order_by("-id")[:limit]
    )
