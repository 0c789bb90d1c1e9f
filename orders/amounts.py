"""What the site says a product costs before the cart, and the amount a buyer chooses on the
site for a range product (contract section 17): its price for the visitor, the common amounts
offered as presets, and why an amount is refused, in the visitor's language.

The price of an amount is ``orders.pricing``'s, as the cart and the checkout will charge it:
in the visitor's currency (their wallet's; a logged-out visitor's is the guest account's), at
their account's own price (``network.prices``: its discount, or its price list and its
ancestors'). The product page asks for it as the buyer types
(``orders.views.product_price``) and shows it again after a form posted without JavaScript.

A product's card (``prices_shown``) says the same account's price, in the product's own
currency as the API catalog does (contract section 18: "The catalog, quotes, carts and orders
of an agent show its own price"; docs/network.md, "What the site shows").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

from django.template.defaultfilters import floatformat
from django.utils.translation import gettext as _

from accounts.models import Account
from accounts.services import guest_account
from catalog.errors import ProductUnavailable
from catalog.models import Product
from network.prices import account_prices_of
from orders.pricing import LineRequest, price_order
from reseller.errors import ApplicationError
from reseller.money import CENT, amount_typed
from upstreams.pricing import amount_offered_check
from wallet.services import wallet_get_or_create

PRESETS_MAX = 4
# The query of a product page that shows a refused amount under its field (a form posted
# without JavaScript): the product, the amount as typed.
AMOUNT_FOR, AMOUNT = "amount_for", "amount"
AMOUNT_DIGITS_MAX = 12  # an amount column's digits (reseller.money.MONEY)


@dataclass(frozen=True)
class AmountPrice:
    """What the visitor pays for one top-up of ``amount`` (in the product's local currency)."""

    amount: Decimal
    local_currency: str
    price: Decimal
    currency: str


def number_shown(value: Decimal, places: str = "-2g") -> str:
    """A number as the site shows it in the active language (``150``, ``1,000``, ``7,65``)."""
    return str(floatformat(value, places))


def amount_parse(raw: str) -> Decimal | None:
    """The amount a form or a query gave (``150``, ``150.5``; a decimal comma too), or None
    when it is not a plain positive number in ASCII digits, of about twelve digits at most."""
    if len(raw.strip()) > AMOUNT_DIGITS_MAX + 3:
        return None
    amount = amount_typed(raw)
    return amount if amount is not None and amount > 0 else None


def amount_refused_message(product: Product) -> str:
    """The amounts a range product takes, as the product page says them."""
    words = {
        "min": number_shown(product.range_min or Decimal(0)),
        "max": number_shown(product.range_max or Decimal(0)),
        "step": number_shown(product.step),
        "currency": product.local_currency,
    }
    if product.step == 1 or product.step == Decimal("0.01"):
        return _("Choose an amount from %(min)s to %(max)s %(currency)s.") % words
    return _("Choose an amount from %(min)s to %(max)s %(currency)s, in steps of %(step)s.") % words


def amount_check(*, product: Product, raw: str) -> Decimal:
    """The amount asked for a range product, checked as the order will check it: a number
    within its range and on a step (else ``invalid_amount``, 400), and one a provider can
    sell at the moment (else ``product_unavailable``, 409). The messages are the visitor's."""
    amount = amount_parse(raw)
    if amount is None and not raw.strip():
        raise ApplicationError(
            _("Enter the amount to send, in %(currency)s.") % {"currency": product.local_currency},
            code="invalid_amount",
        )
    if amount is None or not product.accepts(amount):
        raise ApplicationError(amount_refused_message(product), code="invalid_amount")
    if not product.offered or not product.priced:
        raise ProductUnavailable(_("This top-up is not available at the moment."))
    try:
        amount_offered_check(product=product, amount=amount)
    except ProductUnavailable as exc:
        raise ProductUnavailable(
            _("%(amount)s %(currency)s cannot be sent at the moment: choose another amount.")
            % {"amount": number_shown(amount), "currency": product.local_currency}
        ) from exc
    return amount


def visitor_account(user) -> Account:
    """Whose prices the visitor sees: their account's, or the guest account's."""
    return user.account if user.is_authenticated else guest_account()


def prices_shown(*, account_id: int | None, products: Sequence[Product]) -> dict[int, Decimal]:
    """What each product's card on the site says it costs, by product pk, in the product's own
    currency: a fixed product's price, a range product's price at its smallest amount ("from").

    A signed-in member's account (``account_id``) sees its own price, the one the cart charges
    it before any currency conversion: ``network.prices`` (the service the API catalog's
    ``catalog.pricing_hook`` loads), its chain and its lists' rules loaded once for all the
    products, two queries at most. A visitor without an account sees the catalog's retail
    prices, with no query. Nothing here is kept between requests. A product without a price is
    absent."""
    priced = [product for product in products if product.priced]
    if account_id is None:
        return {product.pk: product.price_at(_smallest(product)) for product in priced}
    prices = account_prices_of(account_id=account_id, products=priced)
    shown = {product.pk: prices.price_at(product, _smallest(product)) for product in priced}
    return {pk: price for pk, price in shown.items() if price is not None}


def _smallest(product: Product) -> Decimal | None:
    """The amount a card's price is of: a range product's smallest (None: a fixed product)."""
    return product.range_min if product.is_range else None


def amount_price(*, product: Product, raw: str, account: Account) -> AmountPrice:
    """The price of ``raw`` (as typed) of a range product for ``account`` (``amount_check``
    raises for an amount it does not take)."""
    amount = amount_check(product=product, raw=raw)
    currency = wallet_get_or_create(account=account).currency
    priced = price_order(
        account=account,
        currency=currency,
        lines=[LineRequest(product=product, recipient_number="", quantity=1, local_amount=amount)],
        for_sale=True,
    )
    return AmountPrice(
        amount=amount,
        local_currency=product.local_currency,
        price=priced.lines[0].unit_price,
        currency=priced.currency,
    )


def amount_presets(product: Product) -> list[Decimal]:
    """Three to four round amounts a range product takes, spread over its range (1, 2, 5, 10,
    20, 50 … on its step); its ends and middle when the range holds fewer round ones."""
    low, high = product.range_min, product.range_max
    if not product.is_range or low is None or high is None:
        return []
    round_ones = [
        digit * Decimal(10) ** exponent for exponent in range(-2, 10) for digit in (1, 2, 5)
    ]
    found = [amount for amount in round_ones if product.accepts(amount)]
    if len(found) < 3:
        middle = low + ((high - low) / 2 // product.step) * product.step
        found = sorted({*found, low, middle, high})
    if len(found) > PRESETS_MAX:
        last = len(found) - 1
        found = [found[round(i * last / (PRESETS_MAX - 1))] for i in range(PRESETS_MAX)]
    return [amount.quantize(Decimal(1) if amount % 1 == 0 else CENT) for amount in found]
