"""What an account pays for a product (contract section 18, "Price lists"; docs/network.md).

The price walks the account's chain from its top account down to it:

- the top account's price is the product's price of the amount (``Product.price_at``) at the
  order's FX ``rate``, then
  - with a platform price list assigned: * (1 + m/100), rounded UP to the cent (``m`` the most
    specific rule of that list for the product; it may be negative, a discount under retail);
  - without one: less its ``discount_percent``, rounded half up to the cent, exactly as before
    networks (contract section 4), so nothing changes for an account outside any network;
- each agent below: its parent's price * (1 + m/100), rounded UP to the cent, ``m`` from the
  list its parent assigned it (the list's most specific rule for the product: the product's,
  else its operator's, else its country's; no rule, or no list: 0).

Each level rounds once, from the price its parent pays, so an agent never pays less than its
parent (a parent's markups are ≥ 0) and the differences are the ancestors' commissions.

Loading costs two queries at most, whatever the number of products priced: one for the chain
(the account and its ancestors along ``parent``, each with the list assigned to it) and, when
some level has a list, one for the rules of those lists. A top account without a list costs
only the first. Nothing is kept between requests: ``account_prices`` loads afresh each time,
and one loaded ``AccountPrices`` prices every line of an order, a batch or a catalog page.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import ROUND_FLOOR, Decimal
from typing import Any

from django.conf import settings
from django.db.models import F, OuterRef, Q, Subquery

from accounts.models import Account
from catalog.models import CENT, Product, ceil_cent
from catalog.pricing_hook import RetailWindow
from network.models import PriceListAssignment, PriceListRule
from reseller.money import ZERO, quantize, rate_round

HUNDRED = Decimal(100)


@dataclass(frozen=True)
class Level:
    """One account of a chain and the price list assigned to it (None: no list)."""

    account_id: int
    price_list_id: int | None


@dataclass(frozen=True)
class LevelPrice:
    """What one account of a chain pays for a unit."""

    account_id: int
    price: Decimal


@dataclass
class ListRules:
    """The rules of one price list, by scope."""

    products: dict[int, Decimal] = field(default_factory=dict)
    operators: dict[int, Decimal] = field(default_factory=dict)
    countries: dict[str, Decimal] = field(default_factory=dict)

    def markup(self, product: Product) -> Decimal:
        """The most specific rule for the product: its own, its operator's, its country's; 0."""
        if product.pk in self.products:
            return self.products[product.pk]
        if product.operator_id in self.operators:
            return self.operators[product.operator_id]
        return self.countries.get(product.country_id, ZERO)


@dataclass(frozen=True)
class AccountPrices:
    """An account's chain (top first, the account last) with its lists' rules, loaded once:
    it prices any number of products without another query."""

    levels: tuple[Level, ...]
    top_discount_percent: Decimal
    rules: dict[int, ListRules]

    @property
    def account_id(self) -> int:
        return self.levels[-1].account_id

    @property
    def plain(self) -> bool:
        """A top account without a price list: priced as before networks (its discount)."""
        return len(self.levels) == 1 and self.levels[0].price_list_id is None

    def markup(self, level: Level, product: Product) -> Decimal:
        """The markup percent of ``level``'s list for the product (0 without a list or rule)."""
        if level.price_list_id is None:
            return ZERO
        rules = self.rules.get(level.price_list_id)
        return rules.markup(product) if rules is not None else ZERO

    def chain(
        self, *, product: Product, local_amount: Decimal | None, rate: Decimal
    ) -> list[LevelPrice]:
        """Each level's unit price in the order currency, top first, the account last."""
        base = product.price_at(local_amount) * rate
        top = self.levels[0]
        if top.price_list_id is None:
            # Contract section 4, unchanged: the same arithmetic as orders.pricing had.
            discount = (HUNDRED - self.top_discount_percent) / HUNDRED
            price = quantize(base * discount)
        else:
            price = ceil_cent(base * (HUNDRED + self.markup(top, product)) / HUNDRED)
        prices = [LevelPrice(top.account_id, price)]
        for level in self.levels[1:]:
            price = ceil_cent(price * (HUNDRED + self.markup(level, product)) / HUNDRED)
            prices.append(LevelPrice(level.account_id, price))
        return prices

    def unit_price(
        self, *, product: Product, local_amount: Decimal | None, rate: Decimal
    ) -> Decimal:
        """The account's own unit price in the order currency."""
        return self.chain(product=product, local_amount=local_amount, rate=rate)[-1].price

    # -- what the catalog shows (catalog.pricing_hook.CallerPrices) -------------------------

    def price(self, product: Product) -> Decimal | None:
        """A fixed product's price for this account, in the product's own currency; None for
        a range product or one without a price (the catalog shows null, as for anyone)."""
        if product.is_range or not product.priced:
            return None
        return self.unit_price(product=product, local_amount=None, rate=Decimal(1))

    def price_at(self, product: Product, amount: Decimal | None) -> Decimal | None:
        """This account's own price of a unit of ``amount`` (None: a fixed product) in the
        product's currency, as a quote gives it; None for a product without a price. The
        catalog's ``minPrice``/``maxPrice`` compare a range product's at its two ends."""
        if not product.priced:
            return None
        return self.unit_price(product=product, local_amount=amount, rate=Decimal(1))

    def retail_window(self, *, low: Decimal | None, high: Decimal | None) -> RetailWindow:
        """What this account's price bounds ``[low, high]`` (None: no bound) say of a
        product's catalog price (``Product.price_at``), for SQL to decide most products at
        once (catalog.pricing_hook.RetailWindow): outside its ``low``..``high`` this
        account's price cannot be within the bounds; inside ``sure_low``..``sure_high`` it
        is, whatever rules price the product. It holds for every product whose rules were
        loaded (all of them when no products were given, as for the catalog).

        This account's price is B * F plus the roundings, B the catalog price and F between
        the product of each level's smallest factor and the product of its largest (its
        list's rules and 0, the markup where no rule applies; the top's discount; 1 without
        a list). Each level rounds by less than a cent, which the factors below it multiply:
        n levels move a price by less than n cents * the largest such product (``slack``)."""
        lowest = highest = tail = Decimal(1)
        for index, level in enumerate(self.levels):
            if level.price_list_id is None:
                top = index == 0
                factors = [(HUNDRED - self.top_discount_percent) / HUNDRED if top else Decimal(1)]
            else:
                rules = self.rules.get(level.price_list_id, ListRules())
                markups = [
                    ZERO,
                    *rules.products.values(),
                    *rules.operators.values(),
                    *rules.countries.values(),
                ]
                factors = [(HUNDRED + markup) / HUNDRED for markup in markups]
            lowest *= min(factors)
            highest *= max(factors)
            tail *= max(Decimal(1), max(factors))
        if lowest <= 0:  # a 100 % discount: prices of nothing, no product decided in SQL
            return RetailWindow(low=None, high=None, sure=False)
        slack = CENT * len(self.levels) * tail
        return RetailWindow(
            low=None if low is None else _floor_cent((low - slack) / highest),
            high=None if high is None else ceil_cent((high + slack) / lowest),
            sure=True,
            sure_low=None if low is None else ceil_cent((low + slack) / lowest),
            sure_high=None if high is None else _floor_cent((high - slack) / highest),
        )

    def pricing(self, product: Product) -> tuple[Decimal, Decimal] | None:
        """A range product's guide for this account (contract section 18): each level shows
        its parent's ``rate`` / (1 + m) (eight places) and ``fee`` * (1 + m) (to the cent),
        from the top account's, which is the product's (before any discount, section 17) or,
        with a platform list, the product's by the same rule. A guide only: the exact price
        of an amount rounds at every level (quotes give it)."""
        if not product.is_range or not product.priced:
            return None
        assert product.pricing_rate is not None and product.pricing_fee is not None
        rate, fee = product.pricing_rate, product.pricing_fee
        for level in self.levels:
            if level.price_list_id is None:
                continue  # no list (a top account's discount is not in its guide): as shown
            factor = (HUNDRED + self.markup(level, product)) / HUNDRED
            rate, fee = rate_round(rate / factor), quantize(fee * factor)
        return rate_round(rate), quantize(fee)


def _floor_cent(value: Decimal) -> Decimal:
    return value.quantize(CENT, rounding=ROUND_FLOOR)


def _chain_levels(*, account_id: int, hops: int) -> tuple[tuple[Level, ...], Decimal]:
    """The chain of ``account_id``, top first, and the top account's discount: one query (the
    account's row joined ``hops`` levels up its ``parent`` path, each level's assignment a
    subquery). A chain longer than ``hops`` is followed further (never in a consistent tree:
    ``hops`` is the account's depth, or NETWORK_MAX_DEPTH when it is not known)."""
    hops = max(hops, 1)
    limit = max(settings.NETWORK_MAX_DEPTH, hops) + 8
    while True:
        fields: dict[str, Any] = {}
        for k in range(hops):
            path = "parent__" * k
            fields[f"a{k}"] = F(f"{path}pk")
            fields[f"d{k}"] = F(f"{path}discount_percent")
            fields[f"l{k}"] = Subquery(
                PriceListAssignment.objects.filter(account_id=OuterRef(f"{path}pk")).values(
                    "price_list_id"
                )[:1]
            )
        fields["above"] = F(f"{'parent__' * (hops - 1)}parent_id")
        row: dict[str, Any] = dict(Account.objects.filter(pk=account_id).values(**fields).get())
        if row["above"] is None or hops >= limit:
            break
        hops += 1
    found = [k for k in range(hops) if row[f"a{k}"] is not None]
    levels = tuple(
        Level(account_id=row[f"a{k}"], price_list_id=row[f"l{k}"]) for k in reversed(found)
    )
    return levels, row[f"d{found[-1]}"]


def _list_rules(list_ids: set[int], products: Iterable[Product] | None) -> dict[int, ListRules]:
    """The rules of the lists, those that can apply to ``products`` when given: one query."""
    query = PriceListRule.objects.filter(price_list_id__in=list_ids)
    if products is not None:
        chosen = list(products)
        query = query.filter(
            Q(product_id__in={p.pk for p in chosen})
            | Q(operator_id__in={p.operator_id for p in chosen})
            | Q(country_id__in={p.country_id for p in chosen})
        )
    rules: dict[int, ListRules] = {list_id: ListRules() for list_id in list_ids}
    for list_id, product_id, operator_id, country_id, markup in query.values_list(
        "price_list_id", "product_id", "operator_id", "country_id", "markup_percent"
    ):
        found = rules[list_id]
        if product_id is not None:
            found.products[product_id] = markup
        elif operator_id is not None:
            found.operators[operator_id] = markup
        else:
            found.countries[country_id] = markup
    return rules


def account_prices(*, account: Account, products: Iterable[Product] | None = None) -> AccountPrices:
    """Load what prices ``account``: its chain and its lists' rules (only those that can
    apply to ``products`` when given; all of them for a catalog page). Two queries at most;
    one for a top account without a list."""
    if account.pk is None:  # an account not saved (never an order's): priced as a top account
        levels: tuple[Level, ...] = (Level(account_id=0, price_list_id=None),)
        discount = account.discount_percent
    else:
        levels, discount = _chain_levels(account_id=account.pk, hops=account.depth)
    return _loaded(levels, discount, products)


def account_prices_of(
    *, account_id: int, products: Iterable[Product] | None = None
) -> AccountPrices:
    """``account_prices`` from an account's id alone (the catalog's caller: no need to load
    the account first). Same queries."""
    levels, discount = _chain_levels(account_id=account_id, hops=settings.NETWORK_MAX_DEPTH)
    return _loaded(levels, discount, products)


def _loaded(
    levels: tuple[Level, ...], discount: Decimal, products: Iterable[Product] | None
) -> AccountPrices:
    list_ids = {level.price_list_id for level in levels if level.price_list_id is not None}
    rules = _list_rules(list_ids, products) if list_ids else {}
    return AccountPrices(levels=levels, top_discount_percent=discount, rules=rules)


def account_prices_chain(
    *, account: Account, product: Product, local_amount: Decimal | None, rate: Decimal
) -> list[LevelPrice]:
    """Each level's unit price for one product, top account first, ``account`` last. An
    ancestor X of the buyer earns (its child's price - X's price) on a delivered unit."""
    prices = account_prices(account=account, products=[product])
    return prices.chain(product=product, local_amount=local_amount, rate=rate)


def account_unit_price(
    *, account: Account, product: Product, local_amount: Decimal | None, rate: Decimal
) -> Decimal:
    """The unit price ``account`` pays for ``local_amount`` of ``product`` (None for a fixed
    product) in the order currency, ``rate`` being the FX rate from the product's currency."""
    return account_prices_chain(
        account=account, product=product, local_amount=local_amount, rate=rate
    )[-1].price


def catalog_prices(*, account_id: int) -> AccountPrices | None:
    """What the catalog shows an account (registered as ``catalog.pricing_hook``): its own
    prices, or None for a top account without a list (the catalog's prices, as before)."""
    prices = account_prices_of(account_id=account_id)
    return None if prices.plain else prices
