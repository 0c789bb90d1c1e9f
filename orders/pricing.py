"""Order pricing (docs/contract.md §4): one place computes unit prices and totals.

unit price = the product's retail price converted to the order currency, less the
account's discount, rounded half up to cents; line total = unit price * quantity.

A product the catalog no longer offers (its price too close to its cost, docs/pricing.md)
is refused here with 409 ``product_unavailable``: every way of placing an order (quotes,
wallet and B2B orders, card prepare, batches) prices through ``price_order``. Showing a
cart that holds one (``for_sale=False``) is not placing an order.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal

from django.utils import timezone

from accounts.models import Account
from catalog.models import Product, Promotion
from catalog.selectors import FxQuote, fx_rate, product_offered_check, product_promotion
from reseller.money import ZERO, quantize

QUOTE_VALIDITY = timedelta(minutes=15)
QUANTITY_MIN, QUANTITY_MAX = 1, 20  # recharges of one line (docs/orders.md)


@dataclass(frozen=True)
class LineRequest:
    product: Product
    recipient_number: str  # E.164, already validated against the product's country
    quantity: int


def line_requests(items: Iterable) -> list[LineRequest]:
    """The lines to price for cart items (or any rows with product, number and quantity)."""
    return [
        LineRequest(product=i.product, recipient_number=i.recipient_number, quantity=i.quantity)
        for i in items
    ]


@dataclass(frozen=True)
class PricedLine:
    product: Product
    recipient_number: str
    quantity: int
    unit_price: Decimal
    line_total: Decimal
    promotion: Promotion | None


@dataclass(frozen=True)
class PricedOrder:
    lines: list[PricedLine]
    total: Decimal
    currency: str
    fx: FxQuote | None  # the rate used when the product prices are in another currency
    expires_at: datetime

    @property
    def units(self) -> int:
        return sum(line.quantity for line in self.lines)


def unit_price(*, product: Product, account: Account, rate: Decimal) -> Decimal:
    discount = (Decimal(100) - account.discount_percent) / Decimal(100)
    return quantize(product.retail_price * rate * discount)


def price_order(
    *,
    account: Account,
    lines: list[LineRequest],
    currency: str,
    at: datetime | None = None,
    for_sale: bool = True,
) -> PricedOrder:
    """Price the lines; ``for_sale`` (placing or quoting an order) refuses a product that
    is not offered (``ProductUnavailable``, 409)."""
    if for_sale:
        product_offered_check(products=(line.product for line in lines))
    at = at or timezone.now()
    currency = currency.upper()
    rates: dict[str, FxQuote] = {}
    priced: list[PricedLine] = []
    total = ZERO
    for line in lines:
        source = line.product.retail_currency
        if source not in rates:
            rates[source] = fx_rate(from_currency=source, to_currency=currency)
        price = unit_price(product=line.product, account=account, rate=rates[source].rate)
        line_total = quantize(price * line.quantity)
        total += line_total
        priced.append(
            PricedLine(
                product=line.product,
                recipient_number=line.recipient_number,
                quantity=line.quantity,
                unit_price=price,
                line_total=line_total,
                promotion=product_promotion(product=line.product, at=at),
            )
        )
    fx = next((q for q in rates.values() if q.from_currency != q.to_currency), None)
    return PricedOrder(
        lines=priced,
        total=quantize(total),
        currency=currency,
        fx=fx,
        expires_at=at + QUOTE_VALIDITY,
    )
