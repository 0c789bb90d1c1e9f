"""Reads of the catalog. Other apps (orders, quotes, the recharge processor) call these.

Stable interface, documented in docs/catalog.md:

- ``product_get(product_id=)``: an offered active product by public id (the catalog API).
- ``products_get(product_ids=)``: active products by public id, offered or not (orders check
  ``product_offered_check`` and refuse the others with 409 ``product_unavailable``).
- ``product_promotion(product=, at=)``: the active or scheduled promotion that applies.
- ``product_waitlist_promotion(product=, at=, horizon_hours=)``: the scheduled promotion a
  recharge should wait for, or None (dispatch now).
- ``fx_rate(from_currency=, to_currency=)`` and ``fx_convert(amount=, ...)``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal

from django.conf import settings
from django.db.models import Count, Exists, OuterRef, Q, QuerySet
from django.utils import timezone

from catalog import cache as catalog_cache
from catalog.errors import FxRateNotFound, ProductNotFound, ProductUnavailable
from catalog.i18n import current_language, default_language
from catalog.models import (
    Country,
    FxRate,
    Operator,
    Product,
    Promotion,
    PromotionStatus,
)
from reseller.money import quantize, rate_round

# --- countries and operators ---------------------------------------------------------------


def country_list() -> QuerySet[Country]:
    """Active countries that have at least one active operator, by English name."""
    return Country.objects.filter(active=True, operators__active=True).distinct().order_by("name")


def country_get(*, code: str) -> Country | None:
    return Country.objects.filter(code=code.upper(), active=True).first()


def operator_list(*, country: str | None = None) -> QuerySet[Operator]:
    """Active operators of active countries, with the country loaded."""
    queryset = Operator.objects.filter(active=True, country__active=True).select_related("country")
    if country:
        queryset = queryset.filter(country_id=country.upper())
    return queryset.order_by("country_id", "name")


def operators_with_product_counts(*, country: str) -> QuerySet[Operator]:
    return operator_list(country=country).annotate(
        product_count=Count("products", filter=Q(products__active=True, products__offered=True))
    )


# --- products ------------------------------------------------------------------------------


def product_list(*, offered_only: bool = True) -> QuerySet[Product]:
    """Active products of active operators and countries, in catalog order, one query: the
    catalog offers only those whose price is over their cost (``offered``, docs/pricing.md);
    ``offered_only=False`` also gives the others (orders refuse them by name, providers list
    them).

    The rows carry their operator and country; call ``products_attach_promotions`` on the
    page you render so their promotions come in two more queries, whatever the page size.
    """
    queryset = Product.objects.filter(active=True, operator__active=True, country__active=True)
    if offered_only:
        queryset = queryset.filter(offered=True)
    return queryset.select_related("operator", "country").order_by(
        "country_id", "operator_id", "product_type", "local_amount", "id"
    )


def product_offered_check(*, products: Iterable[Product]) -> None:
    """Raise ``ProductUnavailable`` (409 ``product_unavailable``) for the first product that
    is not offered: its price is too close to what its cheapest route costs, or it is a range
    product not priced yet (no rate and fee, contract section 17)."""
    for product in products:
        if not product.offered or not product.priced:
            raise ProductUnavailable(
                f"{product.name} ({product.public_id}) is not available at the moment: "
                "no provider can sell it at a price over its cost."
            )


def product_search(queryset: QuerySet[Product], *, text: str) -> QuerySet[Product]:
    """Products whose name (English or the active language), operator or country match."""
    text = text.strip()
    if not text:
        return queryset
    condition = (
        Q(name__icontains=text)
        | Q(operator__name__icontains=text)
        | Q(country__name__icontains=text)
        | Q(public_id=text)
    )
    language = current_language()
    if language != default_language():
        condition |= Q(**{f"translations__{language}__name__icontains": text})
        condition |= Q(**{f"country__translations__{language}__name__icontains": text})
    return queryset.filter(condition)


def products_with_promotion(
    queryset: QuerySet[Product], *, at: datetime | None = None, has: bool = True
) -> QuerySet[Product]:
    """Products that have (or, ``has=False``, have not) an active or scheduled promotion."""
    at = at or timezone.now()
    on_product = Promotion.products.through.objects.filter(
        product_id=OuterRef("pk"), promotion__ends_at__gt=at
    )
    on_operator = Promotion.objects.filter(
        operator_id=OuterRef("operator_id"), ends_at__gt=at, products__isnull=True
    )
    condition = Exists(on_product) | Exists(on_operator)
    return queryset.filter(condition if has else ~condition)


def product_get(*, product_id: str, at: datetime | None = None) -> Product:
    """An active, offered product by its public id (``prd_…``), promotions attached.

    Raises ``ProductNotFound`` (404 ``not_found``) for unknown, inactive or withdrawn
    (not offered) products.
    """
    product = product_list().filter(public_id=product_id).first() if product_id else None
    if product is None:
        raise ProductNotFound()
    products_attach_promotions(products=[product], at=at)
    return product


ID_MAX = Product._meta.get_field("public_id").max_length or 40


def products_get(*, product_ids: Iterable[str], at: datetime | None = None) -> dict[str, Product]:
    """Active products by public id in three queries, offered or not (the caller checks
    ``product_offered_check``); unknown ids are simply absent, and so is anything that cannot
    be an id (too long, or a NUL byte PostgreSQL would refuse to compare)."""
    ids = {
        pid
        for pid in product_ids
        if isinstance(pid, str) and pid and len(pid) <= ID_MAX and "\x00" not in pid
    }
    if not ids:
        return {}
    if at is not None or not catalog_cache.enabled():
        products = list(product_list(offered_only=False).filter(public_id__in=ids))
        products_attach_promotions(products=products, at=at)
        return {p.public_id: p for p in products}
    # Now: the rows this process keeps under the catalog's current version (catalog/cache.py),
    # the rest read and kept; the promotion that applies is picked for this very moment.
    at = timezone.now()

    def read(missing: set[str]) -> dict[str, Product]:
        loaded = list(product_list(offered_only=False).filter(public_id__in=missing))
        products_attach_promotions(products=loaded, at=at)
        return {p.public_id: p for p in loaded}

    found = catalog_cache.products.fetch(ids, read)
    for product in found.values():
        product.promotion = _pick(product.promotion_candidates, at)  # type: ignore[attr-defined]
    return found


# --- promotions ----------------------------------------------------------------------------


def _promotion_sort_key(promotion: Promotion, at: datetime) -> tuple:
    specific = 0 if promotion.product_ids else 1  # type: ignore[attr-defined]
    if promotion.status_at(at) == PromotionStatus.ACTIVE:
        return (0, specific, promotion.starts_at, promotion.pk)
    return (1, promotion.starts_at, specific, promotion.pk)


def _pick(candidates: Sequence[Promotion], at: datetime) -> Promotion | None:
    current = [p for p in candidates if p.status_at(at) != PromotionStatus.ENDED]
    if not current:
        return None
    return min(current, key=lambda p: _promotion_sort_key(p, at))


def products_attach_promotions(*, products: Sequence[Product], at: datetime | None = None) -> None:
    """Load the promotions of these products in at most two queries.

    Each product gets ``promotion_candidates`` (promotions not ended at ``at``) and
    ``promotion`` (the one that applies, see ``product_promotion``).
    """
    at = at or timezone.now()
    if not products:
        return
    operator_ids = {p.operator_id for p in products}
    promotions = list(
        Promotion.objects.filter(operator_id__in=operator_ids, ends_at__gt=at).order_by(
            "starts_at", "id"
        )
    )
    targets: dict[int, set[int]] = defaultdict(set)
    if promotions:
        links = Promotion.products.through.objects.filter(
            promotion_id__in=[p.pk for p in promotions]
        ).values_list("promotion_id", "product_id")
        for promotion_id, product_id in links:
            targets[promotion_id].add(product_id)
    for promotion in promotions:
        promotion.product_ids = frozenset(targets.get(promotion.pk, ()))  # type: ignore[attr-defined]
    for product in products:
        product.promotion_candidates = [  # type: ignore[attr-defined]
            promo
            for promo in promotions
            if promo.operator_id == product.operator_id
            and (not promo.product_ids or product.pk in promo.product_ids)  # type: ignore[attr-defined]
        ]
        product.promotions_loaded_at = at  # type: ignore[attr-defined]
        product.promotion = _pick(product.promotion_candidates, at)  # type: ignore[attr-defined]


def product_promotion(*, product: Product, at: datetime | None = None) -> Promotion | None:
    """The promotion of a product at ``at`` (default now): active, else the next scheduled.

    Among active ones a promotion naming the product beats an operator-wide one, then the
    earliest started; among scheduled ones the earliest to start. Ended ones never apply.
    Uses what ``products_attach_promotions`` loaded when it was loaded for a time ≤ ``at``.
    """
    at = at or timezone.now()
    loaded_at = getattr(product, "promotions_loaded_at", None)
    if loaded_at is None or at < loaded_at:
        products_attach_promotions(products=[product], at=at)
    return _pick(product.promotion_candidates, at)  # type: ignore[attr-defined]


def waitlist_horizon(horizon_hours: int | None = None) -> timedelta:
    hours = settings.WAITLIST_HORIZON_HOURS if horizon_hours is None else horizon_hours
    return timedelta(hours=hours)


def promotion_is_waitlisting(
    *, promotion: Promotion | None, at: datetime | None = None, horizon_hours: int | None = None
) -> bool:
    """True when the promotion is scheduled and starts within the horizon (inclusive)."""
    if promotion is None:
        return False
    at = at or timezone.now()
    return promotion.status_at(
        at
    ) == PromotionStatus.SCHEDULED and promotion.starts_at - at <= waitlist_horizon(horizon_hours)


def product_waitlist_promotion(
    *, product: Product, at: datetime | None = None, horizon_hours: int | None = None
) -> Promotion | None:
    """The scheduled promotion a recharge of this product should wait for, or None.

    None means dispatch now: no promotion, an active one, or one starting beyond the
    horizon (``settings.WAITLIST_HORIZON_HOURS``, 72 h by default). Otherwise hold the
    recharge as waitlisted until ``promotion.starts_at``.
    """
    if at is None and getattr(product, "promotions_loaded_at", None) is None:
        _attach_kept_promotions(product)
    at = at or timezone.now()
    promotion = product_promotion(product=product, at=at)
    if promotion_is_waitlisting(promotion=promotion, at=at, horizon_hours=horizon_hours):
        return promotion
    return None


def _attach_kept_promotions(product: Product) -> None:
    """Give the product the promotions this process keeps for it (catalog/cache.py): the
    processor asks for every recharge, mostly of a few products. Not kept (an inactive
    product): ``product_promotion`` reads them."""
    if not catalog_cache.enabled():
        return
    kept = products_get(product_ids=[product.public_id]).get(product.public_id)
    if kept is not None and kept.pk == product.pk:
        product.promotion_candidates = kept.promotion_candidates  # type: ignore[attr-defined]
        product.promotions_loaded_at = kept.promotions_loaded_at  # type: ignore[attr-defined]


def promotion_list(*, at: datetime | None = None) -> QuerySet[Promotion]:
    """Promotions not ended at ``at``, with their operator and country."""
    at = at or timezone.now()
    return (
        Promotion.objects.filter(ends_at__gt=at, operator__active=True)
        .select_related("operator__country")
        .order_by("starts_at", "id")
    )


# --- FX ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FxQuote:
    from_currency: str
    to_currency: str
    rate: Decimal  # 1 from_currency = rate to_currency, 8 decimal places
    set_at: datetime | None  # when the (oldest) stored rate used was set; None for 1:1


def _stored_rates() -> dict[tuple[str, str], FxRate]:
    return {(r.base_currency, r.quote_currency): r for r in FxRate.objects.all()}


def fx_rate(*, from_currency: str, to_currency: str) -> FxQuote:
    """The rate to convert ``from_currency`` into ``to_currency``.

    A stored pair is used as is, its reverse inverted, or else the cross rate through EUR.
    Raises ``FxRateNotFound`` (400 ``unsupported_currency``) when none exists.
    """
    source, target = from_currency.upper(), to_currency.upper()
    if source == target:
        return FxQuote(source, target, Decimal("1.00000000"), None)
    rates = _stored_rates()

    def direct(a: str, b: str) -> tuple[Decimal, datetime] | None:
        if (a, b) in rates:
            return rates[(a, b)].rate, rates[(a, b)].set_at
        if (b, a) in rates:
            return Decimal(1) / rates[(b, a)].rate, rates[(b, a)].set_at
        return None

    found = direct(source, target)
    if found:
        return FxQuote(source, target, rate_round(found[0]), found[1])
    pivot = "EUR"
    first, second = direct(source, pivot), direct(pivot, target)
    if first and second:
        return FxQuote(source, target, rate_round(first[0] * second[0]), min(first[1], second[1]))
    raise FxRateNotFound(
        f"There is no exchange rate from {source} to {target}.",
    )


def fx_convert(*, amount: Decimal, from_currency: str, to_currency: str) -> tuple[Decimal, FxQuote]:
    """Convert an amount, rounded to cents half up; returns the amount and the rate used."""
    quote = fx_rate(from_currency=from_currency, to_currency=to_currency)
    return quantize(Decimal(amount) * quote.rate), quote


def fx_rate_list() -> QuerySet[FxRate]:
    return FxRate.objects.order_by("base_currency", "quote_currency")
