"""The caller's own prices in the catalog API (contract section 18, "Price lists";
docs/network.md, docs/catalog.md).

An agent of a reseller network pays its parent's price plus its parent's markup, and a top
account may be priced by a platform price list: the catalog shows such an account its own
price (``price`` of a fixed product, the ``pricing`` guide of a range product). Price lists
are the ``network`` app's, a layer above this one (pyproject.toml, ``[tool.importlinter]``):
the catalog cannot import it. So ``network`` passes its loader down at start-up,
``NetworkConfig.ready()`` calling ``pricing_hook_register(network.prices.catalog_prices)``.

The loader is called once per request with the signed-in caller's account id (one query
for the account's chain and lists, one more for their rules when it has some) and returns the
prices of that account (``CallerPrices``), or None when the catalog's own prices are the
caller's (a top account without a price list: its ``discountPercent`` applies when it orders,
as before networks). Without a loader registered (the catalog alone), or for a caller without
an account, the catalog shows its own prices.

The ``minPrice``/``maxPrice`` filters (``catalog.filters``) compare the same prices: those
the response shows the caller, from the same loaded ``CallerPrices``.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Protocol

from catalog.models import Product


@dataclass(frozen=True)
class RetailWindow:
    """What a caller's price bounds say of a product's catalog price (``Product.price_at``,
    at the smallest amount of a range product's range for the low bound and at the largest
    for the high one; None: no bound on that side). A product whose catalog price is outside
    ``low``..``high`` cannot have a caller's price within the caller's bounds; one inside
    ``sure_low``..``sure_high`` has, whatever rules price it (``sure`` False: none is sure).
    The products between are priced one by one."""

    low: Decimal | None
    high: Decimal | None
    sure: bool
    sure_low: Decimal | None = None
    sure_high: Decimal | None = None


class CallerPrices(Protocol):
    def price(self, product: Product) -> Decimal | None:
        """A fixed product's price for the caller, in the product's currency."""
        ...

    def pricing(self, product: Product) -> tuple[Decimal, Decimal] | None:
        """A range product's ``(rate, fee)`` guide for the caller."""
        ...

    def price_at(self, product: Product, amount: Decimal | None) -> Decimal | None:
        """The caller's exact price of a unit of ``amount`` (None: a fixed product), in the
        product's currency; None for a product without a price."""
        ...

    def retail_window(self, *, low: Decimal | None, high: Decimal | None) -> RetailWindow:
        """What the caller's price bounds ``[low, high]`` (None: no bound) say of a
        product's catalog price, for the price filters' SQL."""
        ...


class CallerPricesLoader(Protocol):
    def __call__(self, *, account_id: int) -> CallerPrices | None: ...


_loader: CallerPricesLoader | None = None


def pricing_hook_register(loader: CallerPricesLoader | None) -> None:
    """Set the loader of a caller's prices (None: the catalog's prices for everyone). Called
    by ``NetworkConfig.ready()``; a later call replaces the earlier one."""
    global _loader
    _loader = loader


def caller_prices(*, account_id: int | None) -> CallerPrices | None:
    """The prices the account ``account_id`` sees, or None: the catalog's own."""
    if account_id is None or _loader is None:
        return None
    return _loader(account_id=account_id)


def caller_prices_of_request(request: Any) -> CallerPrices | None:
    """The prices of the request's signed-in account, loaded once per request: the price
    filters (``catalog.filters``) and the serializer (``caller_prices_of``) share them."""
    if request is None:
        return caller_prices(account_id=None)
    if not hasattr(request, "_caller_prices"):
        user = getattr(request, "user", None)
        # The id is on the user's row: the account itself need not be loaded.
        account_id = getattr(user, "account_id", None) if user and user.is_authenticated else None
        request._caller_prices = caller_prices(account_id=account_id)
    return request._caller_prices


def caller_prices_of(context: dict[str, Any]) -> CallerPrices | None:
    """The prices of the request's signed-in account for a serializer's ``context``, loaded
    once per response (the context is shared by every product of a page)."""
    if "_caller_prices" not in context:
        context["_caller_prices"] = caller_prices_of_request(context.get("request"))
    return context["_caller_prices"]
