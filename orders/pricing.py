"""Order pricing (docs/contract.md §4): one place computes unit prices and totals.

unit price = what the account pays for the product's price of the line's local amount (a
fixed product: its retail price; a range product: A / rate + fee rounded up to the cent,
contract section 17) converted to the order currency: ``network.prices`` walks the account's
chain (a top account: less its discount, rounded half up to cents, or its platform price
list's markup; each agent: its parent's price plus the markup of the list its parent gave it,
rounded up; contract section 18, docs/network.md); line total = unit price * quantity.

A product the catalog no longer offers (its price too close to its cost, docs/pricing.md),
or a range product not priced yet, or an amount of a range no route serves over the price
floor (``upstreams.pricing.amount_offered_check``), is refused here with 409
``product_unavailable``, and a line whose amount its product does not take with 400
``invalid_amount``: every way of
placing an order (quotes, wallet and B2B orders, card prepare, batches) prices through
``price_order``. Showing a cart that holds one (``for_sale=False``) is not placing an order.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal

from django.utils import timezone
from django.utils.translation import gettext as _

from accounts.models import Account
from catalog.models import Product, Promotion
from catalog.selectors import FxQuote, fx_rate, product_offered_check, product_promotion
from network.prices import AccountPrices, account_prices
from orders.errors import InvalidAmount
from reseller.money import ZERO, quantize
from upstreams.pricing import amount_offered_check

QUOTE_VALIDITY = timedelta(minutes=15)
QUANTITY_MIN, QUANTITY_MAX = 1, 20  # recharges of one line (docs/orders.md)


@dataclass(frozen=True)
class LineRequest:
    product: Product
    recipient_number: str  # E.164, already validated against the product's country
    quantity: int
    # The amount the recipient gets, in the product's local currency (contract section 17):
    # required for a range product; a fixed product's face value, or None for it.
    local_amount: Decimal | None = None
    # The extra fields the product needs (catalog.fields), clean: {"senderPhone": "+1…"}.
    fields: dict[str, str] = field(default_factory=dict)


def line_requests(items: Iterable) -> list[LineRequest]:
    """The lines to price for cart items (or any rows with product, number, quantity and
    local amount)."""
    return [
        LineRequest(
            product=i.product,
            recipient_number=i.recipient_number,
            quantity=i.quantity,
            local_amount=i.local_amount,
            fields=dict(getattr(i, "fields", None) or {}),
        )
        for i in items
    ]


def amount_refused(product: Product) -> str:
    """Why a line's local amount is refused (400 ``invalid_amount``): the amounts the product
    takes, with its currency."""
    if product.is_range:
        return _("Send localAmount from %(min)s to %(max)s %(currency)s, in steps of %(step)s.") % {
            "min": f"{product.range_min:.2f}",
            "max": f"{product.range_max:.2f}",
            "step": f"{product.step:.2f}",
            "currency": product.local_currency,
        }
    return _(
        "This product sends exactly %(amount)s %(currency)s: leave localAmount out or send "
        "%(amount)s."
    ) % {"amount": f"{product.local_amount:.2f}", "currency": product.local_currency}


def amounts_check(lines: Iterable[LineRequest]) -> None:
    """Raise ``InvalidAmount`` (400 ``invalid_amount``) for the first line whose product does
    not take its amount: a cart line whose product's range changed since it was added (lines
    of a request body are checked by ``orders.serializers.check_lines`` first)."""
    for line in lines:
        if not line.product.accepts(line.local_amount):
            raise InvalidAmount(
                f"{line.product.name} ({line.product.public_id}): " + amount_refused(line.product)
            )


def amounts_offered_check(lines: Iterable[LineRequest]) -> None:
    """Raise ``ProductUnavailable`` (409 ``product_unavailable``) for the first range line
    whose amount no route serves at the price floor (``upstreams.pricing``; routes may cross
    between the ends of a range): each product and amount checked once, however many lines
    (a batch) ask for it."""
    seen: set[tuple[int, Decimal | None]] = set()
    for line in lines:
        key = (line.product.pk, line.local_amount)
        if line.product.is_range and key not in seen:
            seen.add(key)
            amount_offered_check(product=line.product, amount=line.local_amount)


@dataclass(frozen=True)
class PricedLine:
    product: Product
    recipient_number: str
    quantity: int
    local_amount: Decimal | None  # what the recipient gets (None: a line that cannot be sold)
    unit_price: Decimal
    line_total: Decimal
    promotion: Promotion | None
    fields: dict[str, str] = field(default_factory=dict)


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


def unit_price(
    *,
    product: Product,
    account: Account,
    rate: Decimal,
    local_amount: Decimal | None = None,
    prices: AccountPrices | None = None,
) -> Decimal:
    """The price ``account`` pays for one unit of ``local_amount`` (``Product.price_at``) at
    ``rate`` (``network.prices``: its discount, or its price list and its ancestors'); pass
    the account's loaded ``prices`` to price many lines with no further query. A line that
    cannot be priced any more (a range product without its rate, or without an amount) shows
    0.00: it is only ever shown, never sold (``price_order`` refuses it ``for_sale``)."""
    if not _priceable(product, local_amount):
        return ZERO
    if prices is None:
        prices = account_prices(account=account, products=[product])
    return prices.unit_price(product=product, local_amount=local_amount, rate=rate)


def _priceable(product: Product, local_amount: Decimal | None) -> bool:
    return product.priced and (local_amount is not None or not product.is_range)


def amount_sent(product: Product, local_amount: Decimal | None) -> Decimal | None:
    """What a line sends: its amount, or a fixed product's face value."""
    return product.local_amount if not product.is_range else local_amount


def price_order(
    *,
    account: Account,
    lines: list[LineRequest],
    currency: str,
    at: datetime | None = None,
    for_sale: bool = True,
) -> PricedOrder:
    """Price the lines; ``for_sale`` (placing or quoting an order) refuses a product that
    is not offered (``ProductUnavailable``, 409) and an amount its product does not take
    (``InvalidAmount``, 400)."""
    if for_sale:
        product_offered_check(products=(line.product for line in lines))
        amounts_check(lines)
        amounts_offered_check(lines)
    at = at or timezone.now()
    currency = currency.upper()
    rates: dict[str, FxQuote] = {}
    # The account's chain and its lists' rules for these products: loaded once for all lines.
    prices = account_prices(account=account, products=(line.product for line in lines))
    priced: list[PricedLine] = []
    total = ZERO
    for line in lines:
        source = line.product.retail_currency
        if source not in rates:
            rates[source] = fx_rate(from_currency=source, to_currency=currency)
        price = unit_price(
            product=line.product,
            account=account,
            rate=rates[source].rate,
            local_amount=line.local_amount,
            prices=prices,
        )
        line_total = quantize(price * line.quantity)
        total += line_total
        priced.append(
            PricedLine(
                product=line.product,
                recipient_number=line.recipient_number,
                quantity=line.quantity,
                local_amount=amount_sent(line.product, line.local_amount),
                fields=line.fields,
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
