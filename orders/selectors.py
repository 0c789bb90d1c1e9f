"""Reads of carts, orders, payments and recharges, scoped to the caller's account and mode."""

from __future__ import annotations

from django.db.models import Prefetch, QuerySet

from accounts.models import Account
from orders.models import DEFAULT_SESSION, Cart, CartItem, Order, OrderLine
from payments.models import Payment
from recharges.models import Recharge
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
    """Payments with their recharges and what was bought (the order's lines), newest first."""
    return (
        Payment.objects.filter(account=account, livemode=livemode)
        .select_related("order")
        .prefetch_related(
            Prefetch("recharges", queryset=_recharges()),
            Prefetch(
                "order__lines",
                queryset=OrderLine.objects.select_related("product__operator").order_by("id"),
            ),
        )
        .order_by("-id")
    )


def cart_items(*, cart: Cart) -> QuerySet[CartItem]:
    return cart.items.select_related("product__operator", "product__country").order_by("id")


def cart_current_session(*, account: Account, livemode: bool) -> str:
    """The label of the caller's current cart, for ``GET /cart`` without ``sessionId``: the
    cart with items that changed last (an add or a new quantity), else ``default``. Looking
    at a cart is not a change."""
    label = (
        Cart.objects.filter(account=account, livemode=livemode, items__isnull=False)
        .order_by("-updated_at", "-pk")
        .values_list("session_id", flat=True)
        .first()
    )
    return label or DEFAULT_SESSION


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


# -- lookups after the 201 (docs/contract.md §11) ------------------------------------


def recharge_lookup(*, account: Account, livemode: bool, recharge_id: str) -> Recharge:
    """One recharge of the caller's account and mode, with its history; 404 otherwise."""
    recharge = (
        Recharge.objects.filter(account=account, livemode=livemode, public_id=recharge_id)
        .select_related("product", "order", "payment")
        .prefetch_related("events")
        .first()
    )
    if recharge is None:
        raise NotFound()
    return recharge


def recharge_search(*, account: Account, livemode: bool) -> QuerySet[Recharge]:
    """The caller's recharges, newest first, as the lookup renders them; the list's filters
    narrow it (``orders.filters.RechargeFilter``)."""
    return (
        Recharge.objects.filter(account=account, livemode=livemode)
        .select_related("product", "order", "payment")
        .prefetch_related("events")
        .order_by("-id")
    )


def payment_lookup(*, account: Account, livemode: bool, payment_id: str) -> Payment:
    payment = payment_history(account=account, livemode=livemode).filter(public_id=payment_id)
    found = payment.first()
    if found is None:
        raise NotFound()
    return found
