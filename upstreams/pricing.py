"""Prices over cost (docs/pricing.md; docs/contract.md §14, "Prices over cost").

Staff set price rules: a markup percent over the cheapest healthy route's cost, for a
country, an operator or one product; a product's rule beats its operator's, which beats its
country's. A product with routes is priced

    price = cost * rate * (1 + markup / 100), rounded half up to the cent

where ``cost`` is its cheapest healthy route's cost in the provider account's currency and
``rate`` converts it into the product's price currency (the catalog's FX table). Without a
rule its price stays what it was (set by staff, an import, or the sync that created it).
Either way it is *offered* only while

    price >= cost * rate * (1 + PRICE_MIN_MARGIN_PERCENT / 100)

otherwise it leaves the catalog and orders of it are refused with 409
``product_unavailable``; the back office lists it. A product without routes (the
simulator's demo catalog) keeps its price and is offered.

A range product (contract section 17) is priced on a line, ``price(A) = A / rate + fee``,
rounded up to the cent: the line through (1 + markup / 100) times the cheapest healthy
route's cost at its smallest amount and at its largest (the rule's markup, or
``PROVIDER_DEFAULT_MARKUP_PERCENT`` without one). Routes may cross between the ends, so an
amount is checked when it is ordered (``amount_offered_check``): refused with 409
``product_unavailable`` when no route serves it at ``PRICE_MIN_MARGIN_PERCENT``.

Repricing happens when a rule is set or removed and after each catalog sync
(``upstreams.services.catalog_sync``), which is when costs change. The decision is stored
on the product (``catalog.services.product_prices_set``), so the catalog and the orders
read it without knowing about routes.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from catalog.errors import FxRateNotFound, ProductUnavailable
from catalog.models import Country, Operator, Product, ceil_cent
from catalog.selectors import fx_rate
from catalog.services import ProductPrice, product_prices_set
from reseller.errors import ApplicationError, NotFound
from reseller.money import CENT, quantize
from upstreams import health
from upstreams.models import MARKUP_MAX, PriceRule, Route

HUNDRED = Decimal(100)


class PriceRuleInvalid(ApplicationError):
    status = 400
    code = "validation_error"


# -- the arithmetic ---------------------------------------------------------------------------


def price_over_cost(*, cost: Decimal, rate: Decimal, markup_percent: Decimal) -> Decimal:
    """``cost`` (the provider's currency) converted at ``rate`` into the product's currency,
    plus ``markup_percent``, rounded half up to the cent."""
    return quantize(cost * rate * (1 + markup_percent / HUNDRED))


def margin_enough(*, price: Decimal, cost: Decimal, floor_percent: Decimal) -> bool:
    """Does ``price`` leave at least ``floor_percent`` over ``cost`` (both in the product's
    currency; the cost converted, not rounded)?"""
    return price >= cost * (1 + floor_percent / HUNDRED)


def floor_percent() -> Decimal:
    return Decimal(str(settings.PRICE_MIN_MARGIN_PERCENT))


def markup_parse(value: object) -> Decimal:
    """A markup percent from the CLI or a form: a number from 0 to 1000, two places."""
    try:
        markup = Decimal(str(value).strip())
    except InvalidOperation:
        markup = Decimal("NaN")
    if not markup.is_finite() or not Decimal(0) <= markup <= MARKUP_MAX:
        raise PriceRuleInvalid(
            f"The markup percent must be a number from 0 to {MARKUP_MAX}, not {value!r}.",
            fields=[{"field": "markup_percent", "code": "invalid", "message": "0 to 1000"}],
        )
    return quantize(markup)


# -- what each product costs and is priced at -------------------------------------------------


@dataclass(frozen=True)
class Repriced:
    products: int  # products with routes looked at
    changed: int  # products whose price or offered flag changed
    withdrawn: int  # of those looked at, how many are not offered now

    def line(self) -> str:
        return (
            f"products repriced {self.products}, changed {self.changed}, "
            f"not offered {self.withdrawn}"
        )


class _Rates:
    """FX rates read once per pair for one repricing; None where the table has no rate."""

    def __init__(self) -> None:
        self._rates: dict[tuple[str, str], Decimal | None] = {}

    def get(self, source: str, target: str) -> Decimal | None:
        if (source, target) not in self._rates:
            try:
                self._rates[(source, target)] = fx_rate(
                    from_currency=source, to_currency=target
                ).rate
            except FxRateNotFound:
                self._rates[(source, target)] = None
        return self._rates[(source, target)]


def _cheapest_cost(
    routes: list[Route],
    *,
    currency: str,
    rates: _Rates,
    open_circuits: dict[str, bool],
    amount: Decimal | None = None,
) -> tuple[Decimal, Decimal] | None:
    """The cheapest route's cost (of ``amount``, for a range product: among the routes that
    take it) and the rate that converts it into ``currency``: among enabled providers whose
    circuit is not open; when none is, among enabled ones; when none is, among all. None
    when no route's cost converts (no FX rate), or no route takes the amount."""
    routes = [route for route in routes if route.accepts(amount)]

    def is_open(route: Route) -> bool:
        name = route.provider.name
        if name not in open_circuits:
            open_circuits[name] = health.is_open(name)
        return open_circuits[name]

    enabled = [r for r in routes if r.provider.enabled]
    healthy = [r for r in enabled if not is_open(r)]
    candidates = healthy or enabled or routes
    costs = []
    for route in candidates:
        rate = rates.get(route.cost_currency, currency)
        if rate is not None:
            cost = route.cost_at(amount)
            costs.append((cost * rate, cost, rate))
    if not costs:
        return None
    _converted, cost, rate = min(costs)
    return cost, rate


def _rule_for(product: Product, rules: list[PriceRule]) -> PriceRule | None:
    """The most specific rule of the product: its own, its operator's, its country's."""
    for matches in (
        lambda r: r.product_id == product.pk,
        lambda r: r.operator_id == product.operator_id,
        lambda r: r.country_id == product.country_id,
    ):
        for rule in rules:
            if matches(rule):
                return rule
    return None


def products_reprice(*, product_ids: Iterable[int]) -> Repriced:
    """Price the products (ids) with routes under their rules and decide whether each is
    offered; one that has no route left is offered again at the price it has."""
    ids = set(product_ids)
    if not ids:
        return Repriced(products=0, changed=0, withdrawn=0)
    with transaction.atomic():
        products = list(
            Product.objects.filter(pk__in=ids).only(
                *("pk", "operator_id", "country_id", "retail_price", "retail_currency"),
                *("offered", "denomination", "range_min", "range_max", "range_step"),
                *("pricing_rate", "pricing_fee"),
            )
        )
        routes: dict[int, list[Route]] = defaultdict(list)
        for route in Route.objects.filter(product_id__in=ids, active=True).select_related(
            "provider"
        ):
            routes[route.product_id].append(route)
        rules = list(
            PriceRule.objects.filter(
                Q(product_id__in=ids)
                | Q(operator_id__in={p.operator_id for p in products})
                | Q(country_id__in={p.country_id for p in products})
            )
        )
        floor, rates = floor_percent(), _Rates()
        open_circuits: dict[str, bool] = {}
        decided: list[ProductPrice] = []
        withdrawn = looked = 0
        for product in products:
            if not routes[product.pk]:
                if not product.offered:
                    decided.append(ProductPrice(product.pk, retail_price=None, offered=True))
                continue
            looked += 1
            rule = _rule_for(product, rules)
            if product.is_range:
                decided.append(
                    _range_price(product, routes[product.pk], rule, rates, open_circuits)
                )
                withdrawn += not decided[-1].offered
                continue
            cheapest = _cheapest_cost(
                routes[product.pk],
                currency=product.retail_currency,
                rates=rates,
                open_circuits=open_circuits,
            )
            new_price = None
            if cheapest is None:  # no FX rate: what it costs is unknown, so is the margin
                offered = False
            else:
                cost, rate = cheapest
                if rule is not None:
                    computed = price_over_cost(
                        cost=cost, rate=rate, markup_percent=rule.markup_percent
                    )
                    new_price = computed if computed >= CENT else None
                price = new_price if new_price is not None else product.retail_price
                assert price is not None  # a fixed product has its price
                offered = margin_enough(price=price, cost=cost * rate, floor_percent=floor)
            withdrawn += not offered
            decided.append(ProductPrice(product.pk, retail_price=new_price, offered=offered))
        changed = product_prices_set(prices=decided)
    return Repriced(products=looked, changed=changed, withdrawn=withdrawn)


def _range_price(
    product: Product,
    routes: list[Route],
    rule: PriceRule | None,
    rates: _Rates,
    open_circuits: dict[str, bool],
) -> ProductPrice:
    """A range product's rate and fee: the line through the marked-up cheapest cost at its
    two ends; offered when both ends are priced over the floor."""
    low, high = product.range_min, product.range_max
    assert low is not None and high is not None
    markup = (
        rule.markup_percent
        if rule is not None
        else Decimal(str(settings.PROVIDER_DEFAULT_MARKUP_PERCENT))
    )
    ends = []
    for amount in (low, high):
        cheapest = _cheapest_cost(
            routes,
            currency=product.retail_currency,
            rates=rates,
            open_circuits=open_circuits,
            amount=amount,
        )
        if cheapest is None:
            return ProductPrice(product.pk, retail_price=None, offered=False)
        cost, rate = cheapest
        ends.append((amount, cost * rate))
    (low, cost_low), (high, cost_high) = ends
    line = price_line(
        low=low,
        high=high,
        price_low=cost_low * (1 + markup / HUNDRED),
        price_high=cost_high * (1 + markup / HUNDRED),
    )
    if line is None:
        return ProductPrice(product.pk, retail_price=None, offered=False)
    rate, fee = line
    floor = floor_percent()
    offered = all(
        margin_enough(price=ceil_cent(amount / rate + fee), cost=converted, floor_percent=floor)
        for amount, converted in ends
    )
    return ProductPrice(
        product.pk, retail_price=None, offered=offered, pricing_rate=rate, pricing_fee=fee
    )


RATE_PLACES = Decimal("0.00000001")


def price_line(
    *, low: Decimal, high: Decimal, price_low: Decimal, price_high: Decimal
) -> tuple[Decimal, Decimal] | None:
    """``(rate, fee)`` of the line through (low, price_low) and (high, price_high), so that
    ``A / rate + fee`` is the price of A: the rate to eight places and the fee to the cent,
    each the nearest, so the price at either end (rounded up to the cent) is within a cent of
    its point. One point (low == high), or a price that falls as the amount grows: the rate
    through the dearer end and no fee. None when nothing is priced."""
    if price_low <= 0 or price_high <= 0:
        return None
    if high > low and price_high > price_low:
        slope = (price_high - price_low) / (high - low)
        rate = (1 / slope).quantize(RATE_PLACES)
        if rate <= 0:
            return None
        return rate, (price_low - low / rate).quantize(CENT)
    rate = min(low / price_low, high / price_high).quantize(RATE_PLACES)
    if rate <= 0:
        return None
    return rate, Decimal("0.00")


def amount_offered_check(*, product: Product, amount: Decimal | None) -> None:
    """Raise ``ProductUnavailable`` (409 ``product_unavailable``) when no usable route of a
    range product (its provider enabled) takes ``amount`` at a price leaving
    ``PRICE_MIN_MARGIN_PERCENT`` over its cost (routes may cross between the ends of the
    range, and a disabled provider's amounts are nobody's). A product no provider row sells
    (the simulator by setting) takes every amount of its range."""
    if not product.is_range or amount is None:
        return
    routes = list(
        Route.objects.filter(product_id=product.pk, active=True).select_related("provider")
    )
    if not routes:
        return
    usable = [route for route in routes if route.provider.enabled]
    cheapest = _cheapest_cost(
        usable, currency=product.retail_currency, rates=_Rates(), open_circuits={}, amount=amount
    )
    unavailable = cheapest is None
    if cheapest is not None:
        cost, rate = cheapest
        price = product.price_at(amount)
        unavailable = not margin_enough(
            price=price, cost=cost * rate, floor_percent=floor_percent()
        )
    if unavailable:
        raise ProductUnavailable(
            f"{product.name} ({product.public_id}) is not available for {amount} "
            f"{product.local_currency} at the moment: no provider can sell that amount at a "
            "price over its cost."
        )


# -- rules ------------------------------------------------------------------------------------


def _scope(
    *, country: str | None, operator: str | None, product: str | None
) -> dict[str, Country | Operator | Product]:
    given = {
        name: value.strip()
        for name, value in (("country", country), ("operator", operator), ("product", product))
        if value is not None and value.strip()
    }
    if len(given) != 1:
        raise PriceRuleInvalid(
            "A price rule is for exactly one of a country (--country CC), an operator "
            "(--operator OPERATOR_ID) or a product (--product PRODUCT_ID).",
            fields=[{"field": "scope", "code": "invalid", "message": "exactly one"}],
        )
    ((name, value),) = given.items()
    if name == "country":
        found: Country | Operator | Product | None = Country.objects.filter(
            code=value.upper()
        ).first()
    elif name == "operator":
        found = Operator.objects.filter(public_id=value).first()
    else:
        found = Product.objects.filter(public_id=value).first()
    if found is None:
        raise NotFound(f"There is no catalog {name} {value!r}.")
    return {name: found}


def _products_under(rule: PriceRule) -> list[int]:
    if rule.product_id is not None:
        return [rule.product_id]
    if rule.operator_id is not None:
        return list(
            Product.objects.filter(operator_id=rule.operator_id).values_list("pk", flat=True)
        )
    return list(Product.objects.filter(country_id=rule.country_id).values_list("pk", flat=True))


def price_rule_set(
    *,
    markup_percent: object,
    country: str | None = None,
    operator: str | None = None,
    product: str | None = None,
) -> tuple[PriceRule, Repriced]:
    """Set the markup of a country (its code), an operator or a product (their public ids,
    as the catalog API shows them), and reprice the products under it at once."""
    markup = markup_parse(markup_percent)
    scope = _scope(country=country, operator=operator, product=product)
    with transaction.atomic():
        rule = PriceRule.objects.select_for_update().filter(**scope).first()
        if rule is None:
            try:
                with transaction.atomic():
                    rule = PriceRule.objects.create(markup_percent=markup, **scope)
            except IntegrityError:  # set at the same moment by another caller
                rule = PriceRule.objects.select_for_update().get(**scope)
        if rule.markup_percent != markup:
            rule.markup_percent = markup
            rule.updated_at = timezone.now()
            rule.save(update_fields=["markup_percent", "updated_at"])
        repriced = products_reprice(product_ids=_products_under(rule))
    return rule, repriced


def price_rule_delete(*, rule: PriceRule) -> Repriced:
    """Remove a rule; its products keep the price they have (or a broader rule's) and are
    checked against the floor again."""
    with transaction.atomic():
        under = _products_under(rule)
        PriceRule.objects.filter(pk=rule.pk).delete()
        return products_reprice(product_ids=under)
