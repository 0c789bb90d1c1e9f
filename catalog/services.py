"""Writes of the catalog. seed_demo, import_catalog and the admin call these.

Every upsert is keyed by a natural key (country code, country + slug, SKU, promotion code,
currency pair), writes only when something differs, and says what it did, so running the
same input twice changes nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from enum import StrEnum
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from catalog.benefits import benefits_clean
from catalog.cache import catalog_changed
from catalog.fields import required_fields_clean
from catalog.i18n import clean_translations
from catalog.ids import operator_public_id, product_public_id, promotion_public_id
from catalog.models import (
    Country,
    Denomination,
    FxRate,
    Operator,
    Product,
    ProductType,
    Promotion,
)
from reseller.money import quantize, rate_round


class UpsertResult(StrEnum):
    """What an upsert did to its row (the CLI, the import and a provider's sync count them)."""

    CREATED = "created"
    UPDATED = "updated"
    UNCHANGED = "unchanged"


def _apply(obj: Any, values: dict[str, Any]) -> list[str]:
    """Set the values that differ; return the names of the fields changed."""
    changed = []
    for name, value in values.items():
        if getattr(obj, name) != value:
            setattr(obj, name, value)
            changed.append(name)
    return changed


def _validate(obj: Any) -> None:
    """Field validators and ``clean()``; the database enforces uniqueness, constraints and
    foreign keys (the related objects were given as objects), so no query is spent on them.
    """
    relations = [f.name for f in obj._meta.concrete_fields if f.is_relation]
    obj.full_clean(exclude=relations, validate_unique=False, validate_constraints=False)


def _save(obj: Any, *, created: bool, changed: list[str]) -> UpsertResult:
    if created:
        _validate(obj)
        obj.save()
        return UpsertResult.CREATED
    if not changed:
        return UpsertResult.UNCHANGED
    _validate(obj)
    obj.save(update_fields=changed)
    return UpsertResult.UPDATED


@transaction.atomic
def country_upsert(
    *,
    code: str,
    name: str,
    calling_code: str,
    currency: str,
    active: bool = True,
    translations: dict | None = None,
) -> tuple[Country, UpsertResult]:
    code = code.strip().upper()
    values = {
        "name": name.strip(),
        "calling_code": calling_code.strip(),
        "currency": currency.strip().upper(),
        "active": active,
        "translations": clean_translations(translations, fields=Country.TRANSLATABLE_FIELDS),
    }
    country = Country.objects.select_for_update().filter(code=code).first()
    created = country is None
    if created:
        country = Country(code=code, **values)
        return country, _save(country, created=True, changed=[])
    return country, _save(country, created=False, changed=_apply(country, values))  # type: ignore[return-value]


@transaction.atomic
def operator_upsert(
    *,
    country: Country,
    slug: str,
    name: str,
    color: str = "#5f6b7a",
    logo_url: str = "",
    carrier_names: Iterable[str] = (),
    prefixes: Iterable[str] = (),
    active: bool = True,
    translations: dict | None = None,
) -> tuple[Operator, UpsertResult]:
    """Create or update the operator ``slug`` of ``country`` (its country never changes)."""
    values = {
        "name": name.strip(),
        "color": color,
        "logo_url": logo_url,
        "carrier_names": list(carrier_names),
        "prefixes": list(prefixes),
        "active": active,
        "translations": clean_translations(translations, fields=Operator.TRANSLATABLE_FIELDS),
    }
    operator = Operator.objects.select_for_update().filter(country=country, slug=slug).first()
    if operator is None:
        operator = Operator(
            country=country,
            slug=slug,
            public_id=operator_public_id(country.code, slug),
            **values,
        )
        return operator, _save(operator, created=True, changed=[])
    return operator, _save(operator, created=False, changed=_apply(operator, values))


def _product_write(
    *, sku: str, operator: Operator, values: dict[str, Any], kept: tuple[str, ...] = ()
) -> tuple[Product, UpsertResult]:
    """The product with this SKU created with ``values``, or updated with those that differ
    (``kept``: fields an existing product keeps as staff left them); under its row lock."""
    sku = sku.strip()
    product = Product.objects.select_for_update().filter(sku=sku).first()
    if product is None:
        product = Product(sku=sku, public_id=product_public_id(sku), **values)
        product.operator = operator
        product.country_id = operator.country_id
        return product, _save(product, created=True, changed=[])
    changed = _apply(product, {k: v for k, v in values.items() if k not in kept})
    if changed:
        product.updated_at = timezone.now()
        changed.append("updated_at")
        if "operator_id" in changed:
            product.operator = operator
            product.country_id = operator.country_id
            changed.append("country_id")
    return product, _save(product, created=False, changed=changed)


@transaction.atomic
def product_upsert(
    *,
    sku: str,
    operator: Operator,
    name: str,
    local_amount: Decimal,
    local_currency: str,
    retail_price: Decimal,
    retail_currency: str = "EUR",
    product_type: str = ProductType.AIRTIME,
    description: str = "",
    validity_days: int | None = None,
    active: bool = True,
    translations: dict | None = None,
    benefits: Iterable[Mapping[str, Any]] = (),
) -> tuple[Product, UpsertResult]:
    """Create or update the product with this SKU; its public id derives from the SKU.
    ``benefits``: what a data, bundle or PIN product gives (``catalog.benefits``).

    Raises ``django.core.exceptions.ValidationError`` for invalid values.
    """
    values = {
        "operator_id": operator.pk,
        "name": name.strip(),
        "description": description.strip(),
        "product_type": product_type,
        "local_amount": quantize(local_amount),
        "local_currency": local_currency.strip().upper(),
        "retail_price": quantize(retail_price),
        "retail_currency": retail_currency.strip().upper(),
        "validity_days": validity_days,
        "benefits": benefits_clean(list(benefits)),
        "active": active,
        "translations": clean_translations(translations, fields=Product.TRANSLATABLE_FIELDS),
    }
    return _product_write(sku=sku, operator=operator, values=values)


@transaction.atomic
def product_range_upsert(
    *,
    sku: str,
    operator: Operator,
    name: str,
    local_currency: str,
    range_min: Decimal,
    range_max: Decimal,
    range_step: Decimal,
    retail_currency: str = "EUR",
    product_type: str = ProductType.AIRTIME,
    description: str = "",
    pricing: tuple[Decimal, Decimal] | None = None,
    benefits: Iterable[Mapping[str, Any]] | None = None,
    validity_days: int | None = None,
    translations: dict | None = None,
) -> tuple[Product, UpsertResult]:
    """Create or update the range product with this SKU (contract section 17): any local
    amount ``range_min``, ``range_min + range_step``, … up to ``range_max``. Its price (rate
    and fee) is the pricing's to set from its routes; a new one has none until then, unless
    ``pricing`` gives it (a catalog no provider row sells: the demo's). ``benefits`` and
    ``validity_days`` (None: keep them) say what a data, bundle or PIN range gives;
    ``translations`` name and describe a new one in other languages (kept, as its name is)."""
    values = {
        "operator_id": operator.pk,
        "name": name.strip(),
        "description": description.strip(),
        "product_type": product_type,
        "denomination": Denomination.RANGE,
        "local_amount": None,
        "retail_price": None,
        "local_currency": local_currency.strip().upper(),
        "range_min": quantize(range_min),
        "range_max": quantize(range_max),
        "range_step": quantize(range_step),
        "retail_currency": retail_currency.strip().upper(),
    }
    if pricing is not None:
        values["pricing_rate"], values["pricing_fee"] = pricing[0], quantize(pricing[1])
    if benefits is not None:
        values["benefits"] = benefits_clean(list(benefits))
        values["validity_days"] = validity_days
    if translations is not None:
        values["translations"] = clean_translations(
            translations, fields=Product.TRANSLATABLE_FIELDS
        )
    # Staff may have named, described or priced it: only what the routes decide is kept up.
    return _product_write(
        sku=sku,
        operator=operator,
        values=values,
        kept=("name", "description", "retail_currency", "translations"),
    )


@transaction.atomic
def product_set_active(*, products: Iterable[Product], active: bool) -> int:
    """Activate or deactivate products (admin action); returns how many changed."""
    ids = [p.pk for p in products]
    changed = (
        Product.objects.filter(pk__in=ids)
        .exclude(active=active)
        .update(active=active, updated_at=timezone.now())
    )
    catalog_changed()  # update() sends no signal
    return changed


@dataclass(frozen=True)
class ProductPrice:
    """What pricing decided for one product: its price (None: keep it) and whether it is
    offered (docs/pricing.md)."""

    product_id: int
    retail_price: Decimal | None
    offered: bool
    # A range product's price line (contract section 17); None: keep it.
    pricing_rate: Decimal | None = None
    pricing_fee: Decimal | None = None


@transaction.atomic
def product_prices_set(*, prices: Iterable[ProductPrice]) -> int:
    """Set the prices and the offered flags pricing decided (upstreams.pricing); only rows
    that differ are written, under their row locks taken in id order. Returns how many
    changed."""
    wanted = {p.product_id: p for p in prices}
    if not wanted:
        return 0
    now = timezone.now()
    changed: list[Product] = []
    for product in (
        Product.objects.select_for_update(of=("self",)).filter(pk__in=wanted).order_by("pk")
    ):
        decided = wanted[product.pk]
        values: dict[str, Any] = {"offered": decided.offered}
        if decided.retail_price is not None:
            values["retail_price"] = quantize(decided.retail_price)
        if decided.pricing_rate is not None and decided.pricing_fee is not None:
            values["pricing_rate"] = decided.pricing_rate
            values["pricing_fee"] = quantize(decided.pricing_fee)
        if _apply(product, values):
            product.updated_at = now
            changed.append(product)
    if changed:
        Product.objects.bulk_update(
            changed, ["retail_price", "pricing_rate", "pricing_fee", "offered", "updated_at"]
        )
        catalog_changed()  # bulk_update sends no signal
    return len(changed)


@transaction.atomic
def product_required_fields_set(*, required: Mapping[int, Iterable[str]]) -> int:
    """Set what each product needs besides the number (contract section 17, "Extra fields"):
    ``required`` maps product ids to field names (catalog.fields; a provider's sync passes
    the union of the product's active routes'). Only rows that differ are written, under
    their row locks taken in id order. Returns how many changed."""
    wanted = {pk: required_fields_clean(list(names)) for pk, names in required.items()}
    if not wanted:
        return 0
    now = timezone.now()
    changed: list[Product] = []
    for product in (
        Product.objects.select_for_update(of=("self",)).filter(pk__in=wanted).order_by("pk")
    ):
        if product.required_fields != wanted[product.pk]:
            product.required_fields = wanted[product.pk]
            product.updated_at = now
            changed.append(product)
    if changed:
        Product.objects.bulk_update(changed, ["required_fields", "updated_at"])
        catalog_changed()  # bulk_update sends no signal
    return len(changed)


@dataclass(frozen=True)
class ProductKind:
    """What a provider says a product gives (contract section 17, "Kinds"): its benefits
    (``catalog.benefits`` shape) and validity in days (None: not said)."""

    benefits: tuple[Mapping[str, Any], ...]
    validity_days: int | None = None


@transaction.atomic
def product_kinds_set(*, kinds: Mapping[int, ProductKind]) -> int:
    """Set the benefits and validity a provider's sync read for each product (``kinds`` maps
    product ids to them). What the provider does not say is kept: empty benefits leave the
    product's, a validity of None leaves its validity. Only rows that differ are written,
    under their row locks taken in id order. Returns how many changed.

    Raises ``ValidationError`` for benefits of the wrong shape."""
    wanted = {
        pk: (benefits_clean(list(kind.benefits)), kind.validity_days) for pk, kind in kinds.items()
    }
    if not wanted:
        return 0
    now = timezone.now()
    changed: list[Product] = []
    for product in (
        Product.objects.select_for_update(of=("self",)).filter(pk__in=wanted).order_by("pk")
    ):
        benefits, validity_days = wanted[product.pk]
        values: dict[str, Any] = {}
        if benefits:
            values["benefits"] = benefits
        if validity_days is not None:
            values["validity_days"] = validity_days
        if _apply(product, values):
            product.updated_at = now
            changed.append(product)
    if changed:
        Product.objects.bulk_update(changed, ["benefits", "validity_days", "updated_at"])
        catalog_changed()  # bulk_update sends no signal
    return len(changed)


@transaction.atomic
def promotion_upsert(
    *,
    code: str,
    operator: Operator,
    name: str,
    description: str,
    starts_at: datetime,
    ends_at: datetime,
    terms: str = "",
    products: Iterable[Product] = (),
    translations: dict | None = None,
) -> tuple[Promotion, UpsertResult]:
    """Create or update a promotion; ``products`` empty means every product of the operator.

    Raises ``ValidationError`` when a listed product belongs to another operator or the
    window is empty.
    """
    products = list(products)
    strangers = [p.public_id for p in products if p.operator_id != operator.pk]
    if strangers:
        raise ValidationError(
            {"products": f"Products of another operator: {', '.join(sorted(strangers))}."}
        )
    values = {
        "operator_id": operator.pk,
        "name": name.strip(),
        "description": description.strip(),
        "terms": terms.strip(),
        "starts_at": starts_at,
        "ends_at": ends_at,
        "translations": clean_translations(translations, fields=Promotion.TRANSLATABLE_FIELDS),
    }
    promotion = Promotion.objects.select_for_update().filter(code=code).first()
    created = promotion is None
    if created:
        promotion = Promotion(code=code, public_id=promotion_public_id(code), **values)
        outcome = _save(promotion, created=True, changed=[])
    else:
        outcome = _save(promotion, created=False, changed=_apply(promotion, values))
    wanted = {p.pk for p in products}
    current = set(promotion.products.values_list("pk", flat=True)) if not created else set()  # type: ignore[union-attr]
    if wanted != current:
        promotion.products.set(wanted)  # type: ignore[union-attr]
        if outcome == UpsertResult.UNCHANGED:
            outcome = UpsertResult.UPDATED
    return promotion, outcome  # type: ignore[return-value]


@transaction.atomic
def fx_rate_set(
    *, base_currency: str, quote_currency: str, rate: Decimal, at: datetime | None = None
) -> tuple[FxRate, UpsertResult]:
    """Set 1 base = ``rate`` quote; the time changes only when the rate does."""
    base, quote = base_currency.strip().upper(), quote_currency.strip().upper()
    if base == quote:  # the database's fxrate_distinct_currencies, said before it refuses
        raise ValidationError({"quote_currency": "A rate converts between two currencies."})
    try:
        rate = rate_round(rate)
    except ArithmeticError as exc:  # 1e400: more digits than a Decimal context holds
        raise ValidationError({"rate": "The rate is too large."}) from exc
    fx = FxRate.objects.select_for_update().filter(base_currency=base, quote_currency=quote).first()
    if fx is None:
        fx = FxRate(
            base_currency=base, quote_currency=quote, rate=rate, set_at=at or timezone.now()
        )
        return fx, _save(fx, created=True, changed=[])
    if fx.rate == rate:
        return fx, UpsertResult.UNCHANGED
    fx.rate, fx.set_at = rate, at or timezone.now()
    return fx, _save(fx, created=False, changed=["rate", "set_at"])
