"""Writes of upstream providers: the rows, their operators' mapping, their routes (catalog
sync) and their balances (docs/providers.md). The only writer of this app's tables.

A provider is called only outside any database transaction: the sync reads the whole
upstream catalog first, then writes in one transaction; the balance is read, then saved.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.text import slugify

from accounts.models import User
from catalog.benefits import benefits_signature
from catalog.errors import FxRateNotFound
from catalog.models import Operator, Product
from catalog.selectors import fx_rate
from catalog.services import (
    ProductKind,
    product_kinds_set,
    product_range_upsert,
    product_required_fields_set,
    product_upsert,
)
from emails.outbox import email_queue_to_user
from reseller.errors import ApplicationError, NotFound
from upstreams.adapters import ProviderError, SkippedProduct, UpstreamProduct, adapter_for
from upstreams.cache import routes_changed
from upstreams.models import Provider, ProviderOperator, Route, SkippedOffer
from upstreams.pricing import products_reprice

logger = logging.getLogger(__name__)

# What each kind needs to reach its provider (docs/contract.md §14, CLI).
REQUIRED: dict[str, tuple[str, ...]] = {
    Provider.Kind.SIMULATOR: (),
    Provider.Kind.RELOADLY: ("client_id", "client_secret", "base_url", "auth_url"),
    Provider.Kind.DTONE: ("api_key", "api_secret", "base_url"),
    Provider.Kind.DING: ("api_key", "base_url"),
}
DEFAULT_URLS: dict[str, dict[str, str]] = {
    Provider.Kind.RELOADLY: {
        "base_url": "https://topups.reloadly.com",
        "auth_url": "https://auth.reloadly.com",
    },
    Provider.Kind.DTONE: {"base_url": "https://dvs-api.dtone.com/v1"},
    Provider.Kind.DING: {"base_url": "https://api.dingconnect.com"},
}
SECRETS = ("client_secret", "api_key", "api_secret", "callback_secret")


class ProviderInvalid(ApplicationError):
    status = 400
    code = "validation_error"


class ProviderExists(ApplicationError):
    status = 409
    code = "conflict"


def provider_get(*, name: str) -> Provider:
    provider = Provider.objects.filter(name=name).first()
    if provider is None:
        raise NotFound(f"There is no provider named {name!r}.")
    return provider


def provider_create(
    *,
    name: str,
    kind: str,
    base_url: str = "",
    auth_url: str = "",
    client_id: str = "",
    client_secret: str = "",
    api_key: str = "",
    api_secret: str = "",
    priority: int = 100,
    currency: str = "",
    max_in_flight: int = 50,
    enabled: bool = True,
) -> Provider:
    """A new provider account. Its secrets are stored and never shown again."""
    if kind not in Provider.Kind.values:
        raise ProviderInvalid(
            f"Unknown kind {kind!r}: one of {', '.join(Provider.Kind.values)}.",
            fields=[{"field": "kind", "code": "invalid", "message": "unknown kind"}],
        )
    values: dict[str, Any] = {
        "base_url": base_url.strip() or DEFAULT_URLS.get(kind, {}).get("base_url", ""),
        "auth_url": auth_url.strip() or DEFAULT_URLS.get(kind, {}).get("auth_url", ""),
        "client_id": client_id.strip(),
        "client_secret": client_secret.strip(),
        "api_key": api_key.strip(),
        "api_secret": api_secret.strip(),
    }
    missing = [field for field in REQUIRED[kind] if not values[field]]
    if missing:
        raise ProviderInvalid(
            f"A {kind} provider needs {', '.join('--' + m.replace('_', '-') for m in missing)}.",
            fields=[{"field": m, "code": "required", "message": "required"} for m in missing],
        )
    provider = Provider(
        name=name.strip(),
        kind=kind,
        priority=priority,
        currency=currency.strip().upper(),
        max_in_flight=max_in_flight,
        enabled=enabled,
        **values,
    )
    try:
        provider.full_clean(validate_unique=False)  # a taken name is a 409 below
    except ValidationError as exc:
        raise ProviderInvalid(
            "; ".join(f"{field}: {' '.join(errors)}" for field, errors in exc.message_dict.items()),
            fields=[
                {"field": field, "code": "invalid", "message": " ".join(errors)}
                for field, errors in exc.message_dict.items()
            ],
        ) from exc
    try:
        with transaction.atomic():
            provider.save()
    except IntegrityError as exc:
        raise ProviderExists(f"A provider named {name!r} exists already.") from exc
    return provider


def provider_set(
    *,
    name: str,
    enabled: bool | None = None,
    priority: int | None = None,
    max_in_flight: int | None = None,
    secrets: dict[str, str] | None = None,
    base_url: str | None = None,
    auth_url: str | None = None,
) -> Provider:
    """Change what staff may change; a secret left empty keeps the stored one. Enabling or
    disabling a provider changes which routes are healthy: the products it routes are priced
    again at once, as after a sync (docs/pricing.md)."""
    with transaction.atomic():
        provider = Provider.objects.select_for_update().filter(name=name).first()
        if provider is None:
            raise NotFound(f"There is no provider named {name!r}.")
        switched = enabled is not None and enabled != provider.enabled
        if enabled is not None:
            provider.enabled = enabled
        if priority is not None:
            provider.priority = priority
        if max_in_flight is not None:
            provider.max_in_flight = max_in_flight
        if base_url:
            provider.base_url = base_url.strip()
        if auth_url:
            provider.auth_url = auth_url.strip()
        for field, value in (secrets or {}).items():
            if field in SECRETS and value.strip():
                setattr(provider, field, value.strip())
        provider.updated_at = timezone.now()
        provider.save()
        if switched:
            routed = Route.objects.filter(provider=provider).values_list("product_id", flat=True)
            products_reprice(product_ids=list(routed))
    return provider


# -- operators ------------------------------------------------------------------------------

_NOT_WORD = re.compile(r"[^a-z0-9 ]+")


def normalise(name: str, *, country_names: tuple[str, ...] = ()) -> str:
    """An operator's name for matching: no accents, case, punctuation or country name
    ("AT&T México" and "AT&T" are both "att")."""
    text = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode().lower()
    text = _NOT_WORD.sub("", text.replace("-", " ").replace("_", " "))
    for country in country_names:
        country = normalise(country)
        if country:
            text = re.sub(rf"\b{re.escape(country)}\b", " ", text)
    return " ".join(text.split())


def _catalog_names(operators: list[Operator]) -> dict[tuple[str, str], Operator]:
    """Every name a catalog operator answers to (its name, its slug, its carrier names),
    normalised, by country."""
    names: dict[tuple[str, str], Operator] = {}
    for operator in operators:
        country_names = (operator.country.name, operator.country_id)
        for raw in (operator.name, operator.slug, *(operator.carrier_names or [])):
            key = normalise(str(raw), country_names=country_names)
            if key:
                names.setdefault((operator.country_id, key), operator)
    return names


def provider_operator_map(
    *, provider: Provider, upstream_id: str, operator_id: str
) -> ProviderOperator:
    """Staff: map a provider's operator to a catalog operator (its public id, as the catalog
    API shows it). The routes come with the next sync."""
    operator = Operator.objects.filter(public_id=operator_id).first()
    if operator is None:
        raise NotFound(f"There is no catalog operator {operator_id!r}.")
    with transaction.atomic():
        upstream = (
            ProviderOperator.objects.select_for_update()
            .filter(provider=provider, upstream_id=upstream_id)
            .first()
        )
        if upstream is None:
            raise NotFound(
                f"{provider.name} lists no operator {upstream_id!r} (run sync_provider_catalog)."
            )
        if upstream.country and upstream.country != operator.country_id:
            raise ProviderInvalid(
                f"{upstream.name} is in {upstream.country}, {operator.name} in "
                f"{operator.country_id}.",
                fields=[{"field": "operator", "code": "invalid", "message": "another country"}],
            )
        upstream.operator = operator
        upstream.mapped_by = ProviderOperator.MappedBy.STAFF
        upstream.updated_at = timezone.now()
        upstream.save(update_fields=["operator", "mapped_by", "updated_at"])
    return upstream


# -- catalog sync ---------------------------------------------------------------------------


@dataclass(frozen=True)
class SyncResult:
    mapped: int
    unmapped: int
    created: int
    updated: int
    removed: int
    skipped: int = 0  # upstream products that cannot be sold (``SkippedOffer`` rows)

    def line(self) -> str:
        """The contract's one line (section 14), nothing added: the skipped offers are
        ``skipped_note``'s."""
        return (
            f"operators mapped {self.mapped}, unmapped {self.unmapped}; routes created "
            f"{self.created}, updated {self.updated}, removed {self.removed}"
        )

    def skipped_note(self) -> str:
        """What the CLI adds on stderr when upstream products could not be sold."""
        if not self.skipped:
            return ""
        return (
            f"skipped {self.skipped} upstream product(s) that cannot be sold "
            "(the back office's skipped offers say why)"
        )


def to_eur(amount: Decimal, currency: str) -> Decimal | None:
    try:
        return amount * fx_rate(from_currency=currency, to_currency="EUR").rate
    except FxRateNotFound:
        return None


# The word a new product's name gets for its kind ("Telcel data 150 MXN").
KIND_WORDS = {"data": "data", "bundle": "bundle", "pin": "PIN"}


def _new_product(*, operator: Operator, offer: UpstreamProduct) -> Product:
    """The catalog product an upstream amount sells, created when none exists, priced
    ``PROVIDER_DEFAULT_MARKUP_PERCENT`` over what it costs us (staff reprice it later). A range
    offer makes a range product (``<operator>-<type>-range-<currency>``) spanning the offer;
    its rate and fee are the pricing's (``products_reprice``). A data, bundle or PIN product
    carries the benefits and validity its offer describes (contract section 17, "Kinds"), and
    its SKU ends with their signature (``catalog.benefits.benefits_signature``), so two plans
    of one amount that give different things are two products."""
    kind = KIND_WORDS.get(offer.product_type, "")
    signature = benefits_signature(offer.benefits)
    if offer.denomination == "range":
        assert offer.min_amount is not None and offer.max_amount is not None
        sku = _free_sku(
            f"{operator.public_id}-{offer.product_type}-range-{offer.local_currency}", signature
        )
        cost_eur = to_eur(offer.cost, offer.cost_currency)
        product, _outcome = product_range_upsert(
            sku=sku,
            operator=operator,
            name=" ".join(filter(None, [operator.name, kind, offer.local_currency])),
            local_currency=offer.local_currency,
            range_min=offer.min_amount,
            range_max=offer.max_amount,
            range_step=offer.step or Decimal("0.01"),
            retail_currency="EUR" if cost_eur is not None else offer.cost_currency,
            product_type=offer.product_type,
            benefits=offer.benefits,
            validity_days=offer.validity_days,
        )
        return product
    assert offer.local_amount is not None
    cost_eur = to_eur(offer.cost, offer.cost_currency)
    markup = 1 + Decimal(str(settings.PROVIDER_DEFAULT_MARKUP_PERCENT)) / 100
    price = (cost_eur or offer.cost) * markup
    amount = offer.local_amount.normalize()
    sku = _free_sku(
        f"{operator.public_id}-{offer.product_type}-{amount}-{offer.local_currency}", signature
    )
    product, _outcome = product_upsert(
        sku=sku,
        operator=operator,
        name=" ".join(filter(None, [operator.name, kind, f"{amount:f}", offer.local_currency])),
        local_amount=offer.local_amount,
        local_currency=offer.local_currency,
        retail_price=price.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP),
        retail_currency="EUR" if cost_eur is not None else offer.cost_currency,
        product_type=offer.product_type,
        description=str(offer.raw.get("description") or "")[:300],
        benefits=offer.benefits,
        validity_days=offer.validity_days,
    )
    return product


def _free_sku(base: str, signature: str) -> str:
    """A new product's SKU: ``base`` and the signature of its benefits (none for airtime),
    slugified, with ``-2``, ``-3``... when a product whose benefits were described anew since
    holds it already."""
    sku = slugify("-".join(filter(None, [base, signature])))[:64]
    found, n = sku, 1
    while Product.objects.filter(sku=found).exists():
        n += 1
        found = f"{sku[: 64 - len(str(n)) - 1]}-{n}"
    return found


# A catalog product an offer sells: (operator, type, local amount, currency, signature of its
# benefits) for a fixed amount, (operator, type, None, currency, signature) for a range. The
# type keeps a data, bundle or PIN product apart from the airtime of the same amount, the
# signature two plans of one kind and amount that give different things (contract section
# 17, "Kinds"; ``catalog.benefits.benefits_signature``).
ProductKey = tuple[int | None, str, Decimal | None, str, str]


def _key(operator_id: int | None, offer: UpstreamProduct) -> ProductKey:
    amount = (
        None
        if offer.denomination == "range" or offer.local_amount is None
        else offer.local_amount.quantize(Decimal("0.01"))
    )
    return (
        operator_id,
        offer.product_type,
        amount,
        offer.local_currency.upper(),
        benefits_signature(offer.benefits),
    )


def _product_key(product: Product) -> ProductKey:
    amount = None if product.is_range else product.local_amount
    return (
        product.operator_id,
        product.product_type,
        amount,
        product.local_currency,
        benefits_signature(product.benefits),
    )


def _rank(offer: UpstreamProduct) -> Decimal:
    """What an offer costs, to choose a provider's cheapest for one product (a range: at its
    smallest amount), in EUR where the FX table says."""
    cost = offer.cost
    if offer.cost_per_unit is not None and offer.min_amount is not None:
        cost += offer.min_amount * offer.cost_per_unit
    return to_eur(cost, offer.cost_currency) or cost


def _unsellable(offer: UpstreamProduct) -> str:
    """Why a mapped operator's offer cannot be a route ("" when it can)."""
    if offer.denomination == "range":
        if offer.min_amount is None or offer.max_amount is None or offer.cost_per_unit is None:
            return "a range without its bounds or cost per unit"
        return ""
    if offer.local_amount is None:
        return "the provider does not say what the recipient gets (no local amount)"
    return ""


def _ranges_span(product_ids: list[int]) -> None:
    """Each range product spans its active routes: the lowest min, the highest max, the
    finest step (contract section 17)."""
    routes = Route.objects.filter(
        product_id__in=product_ids, active=True, cost_per_unit__isnull=False
    ).values_list("product_id", "min_amount", "max_amount", "step")
    spans: dict[int, tuple[Decimal, Decimal, Decimal]] = {}
    for product_id, low, high, step in routes:
        if low is None or high is None:
            continue
        step = step or Decimal("0.01")
        if product_id in spans:
            was = spans[product_id]
            low, high, step = min(low, was[0]), max(high, was[1]), min(step, was[2])
        spans[product_id] = (low, high, step)
    for product in Product.objects.filter(pk__in=spans, denomination="range").select_related(
        "operator"
    ):
        low, high, step = spans[product.pk]
        product_range_upsert(
            sku=product.sku,
            operator=product.operator,
            name=product.name,
            local_currency=product.local_currency,
            range_min=low,
            range_max=high,
            range_step=step,
            retail_currency=product.retail_currency,
            product_type=product.product_type,
            description=product.description,
        )


def _required_fields_union(product_ids: list[int]) -> None:
    """Each product needs what any of its active routes needs (contract section 17, "Extra
    fields"): a line carries the fields whichever route delivers it."""
    required: dict[int, set[str]] = {pk: set() for pk in product_ids}
    for product_id, names in Route.objects.filter(
        product_id__in=product_ids, active=True
    ).values_list("product_id", "required_fields"):
        required[product_id].update(names or [])
    product_required_fields_set(required=required)


def catalog_sync(*, provider: Provider, countries: list[str] | None = None) -> SyncResult:
    """Read the provider's whole catalog (no transaction open), then in one transaction: its
    operators (mapped by normalised name when one catalog operator of the country answers to
    it), a route per product of each mapped operator (the cheapest of its offers for that
    product; a range offer to the operator's range product), routes no longer offered
    deactivated, range products spanning their routes, each product needing the extra fields
    any of its active routes needs (``required_fields``), and what could not be sold recorded
    (``SkippedOffer``, replaced each run); then the products of its routes are repriced
    (``upstreams.pricing``)."""
    catalog = adapter_for(provider).catalog_read(countries=countries)
    offers = catalog.products
    with transaction.atomic():
        provider = Provider.objects.select_for_update().get(pk=provider.pk)
        catalog_ops = list(Operator.objects.filter(active=True).select_related("country"))
        by_name = _catalog_names(catalog_ops)
        country_names = {o.country_id: o.country.name for o in catalog_ops}
        known = {o.upstream_id: o for o in ProviderOperator.objects.filter(provider=provider)}
        for offer in offers:
            upstream = known.get(offer.operator.upstream_id)
            if upstream is None:
                upstream = known[offer.operator.upstream_id] = ProviderOperator.objects.create(
                    provider=provider,
                    upstream_id=offer.operator.upstream_id,
                    name=offer.operator.name[:150],
                    country=offer.operator.country.upper()[:2],
                )
            if upstream.operator_id is None:
                country = upstream.country
                spoken = (country_names.get(country, ""), country)
                match = by_name.get((country, normalise(upstream.name, country_names=spoken)))
                if match is not None:
                    upstream.operator = match
                    upstream.mapped_by = ProviderOperator.MappedBy.NAME
                    upstream.updated_at = timezone.now()
                    upstream.save(update_fields=["operator", "mapped_by", "updated_at"])
        cheapest: dict[int, tuple[ProviderOperator, UpstreamProduct, Decimal]] = {}
        products: dict[ProductKey, Product] = {}
        by_pk: dict[int, Product] = {}
        for product in Product.objects.filter(
            operator_id__in={o.operator_id for o in known.values() if o.operator_id}
        ).order_by("-active", "id"):
            by_pk[product.pk] = product
            products.setdefault(_product_key(product), product)
        # The product each of this provider's upstream products sold until now (by its
        # upstream operator and SKU): a plan the provider describes anew stays the product
        # it was, while its amount and kind stay the same.
        sold: dict[tuple[int, str, tuple[Any, ...]], Product] = {}
        for earlier in Route.objects.filter(provider=provider).order_by("-active", "id"):
            was = by_pk.get(earlier.product_id)
            if was is not None and earlier.upstream_operator_id is not None:
                base = _product_key(was)[:4]  # all but the signature
                sold.setdefault((earlier.upstream_operator_id, earlier.sku, base), was)
        skipped = list(catalog.skipped)
        for offer in offers:
            upstream = known[offer.operator.upstream_id]
            if upstream.operator is None:
                continue
            reason = _unsellable(offer)
            if reason:
                skipped.append(
                    SkippedProduct(
                        offer.operator,
                        offer.sku or str(offer.raw.get("fixedAmount") or ""),
                        " ".join(
                            filter(None, [offer.operator.name, str(offer.raw.get("description"))])
                        ),
                        reason,
                    )
                )
                continue
            key = _key(upstream.operator_id, offer)
            found = sold.get((upstream.pk, offer.sku[:64], key[:4])) or products.get(key)
            if found is None:
                found = products[key] = _new_product(operator=upstream.operator, offer=offer)
            product = found
            rank = _rank(offer)
            if product.pk not in cheapest or rank < cheapest[product.pk][2]:
                cheapest[product.pk] = (upstream, offer, rank)
        created = updated = 0
        routes = {r.product_id: r for r in Route.objects.filter(provider=provider)}
        now = timezone.now()
        for product_id, (upstream, offer, _rank_eur) in cheapest.items():
            values = {
                "upstream_operator": upstream,
                "sku": offer.sku[:64],
                "send_value": offer.send_value,
                "send_currency": offer.send_currency,
                "cost": offer.cost,
                "cost_currency": offer.cost_currency.upper(),
                "min_amount": offer.min_amount,
                "max_amount": offer.max_amount,
                "step": offer.step,
                "cost_per_unit": offer.cost_per_unit,
                "send_per_unit": offer.send_per_unit,
                "required_fields": list(offer.required_fields),
                "field_names": dict(offer.field_names),
                "active": True,
            }
            route = routes.get(product_id)
            if route is None:
                Route.objects.create(
                    provider=provider, product_id=product_id, updated_at=now, **values
                )
                created += 1
                continue
            changed = [f for f, v in values.items() if getattr(route, f) != v]
            if changed:
                for field in changed:
                    setattr(route, field, values[field])
                route.updated_at = now
                route.save(update_fields=[*changed, "updated_at"])
                updated += 1
        gone = [r.pk for pid, r in routes.items() if pid not in cheapest and r.active]
        removed = Route.objects.filter(pk__in=gone).update(active=False, updated_at=now)
        if removed:
            routes_changed()  # update() sends no signal
        _ranges_span([*cheapest, *routes])
        _required_fields_union([*cheapest, *routes])
        # What each product gives, as this provider's cheapest offer of it describes it.
        product_kinds_set(
            kinds={
                product_id: ProductKind(offer.benefits, offer.validity_days)
                for product_id, (_upstream, offer, _rank_eur) in cheapest.items()
                if offer.benefits or offer.validity_days is not None
            }
        )
        SkippedOffer.objects.filter(provider=provider).delete()
        SkippedOffer.objects.bulk_create(
            SkippedOffer(
                provider=provider,
                upstream_operator_id=item.operator.upstream_id[:64],
                operator_name=item.operator.name[:150],
                country=item.operator.country.upper()[:2],
                upstream_product_id=item.product_id[:64],
                name=item.name[:200],
                reason=item.reason[:300],
                seen_at=now,
            )
            for item in skipped
        )
        # Costs may have moved: the products this provider sells (or sold until now) are
        # priced again under their rules and checked against the floor (docs/pricing.md).
        products_reprice(product_ids=[*cheapest, *routes])
        provider.synced_at = now
        provider.save(update_fields=["synced_at"])
        mapped = sum(1 for o in known.values() if o.operator_id)
    return SyncResult(
        mapped=mapped,
        unmapped=len(known) - mapped,
        created=created,
        updated=updated,
        removed=removed,
        skipped=len(skipped),
    )


# -- balance --------------------------------------------------------------------------------


def provider_balance_refresh(*, provider: Provider) -> Provider:
    """Read the provider's balance (no transaction open), save it, and tell staff once when
    it falls under ``PROVIDER_BALANCE_ALERT``."""
    try:
        amount, currency = adapter_for(provider).balance()
    except ProviderError:
        logger.warning("balance of %s not read", provider.name, exc_info=True)
        return provider
    alert_under = Decimal(str(settings.PROVIDER_BALANCE_ALERT)).quantize(Decimal("0.01"))
    with transaction.atomic():
        provider = Provider.objects.select_for_update().get(pk=provider.pk)
        low = amount < alert_under
        tell = low and not provider.balance_alerted
        fields = ["balance_checked_at", "balance_alerted"]
        balance = (amount.quantize(Decimal("0.01")), currency.upper()[:3])
        if (provider.balance, provider.balance_currency) != balance:
            # Only a balance that moved renews the routes a worker keeps (upstreams/apps.py).
            provider.balance, provider.balance_currency = balance
            fields += ["balance", "balance_currency"]
        provider.balance_checked_at = timezone.now()
        provider.balance_alerted = low
        provider.save(update_fields=fields)
        if tell:
            context = {
                "provider": provider.name,
                "balance": str(provider.balance),
                "currency": provider.balance_currency,
                "threshold": str(alert_under),
            }
            for user in User.objects.filter(is_staff=True, is_active=True):
                email_queue_to_user(user=user, kind="provider_balance_low", context=context)
    return provider
