"""The built-in airtime provider: no network, outcomes chosen by the recipient number.

It remembers every reference it has seen (in the cache, so every worker process shares it
when Redis is configured): sending the same reference twice returns the first result, as a
real provider does with a custom identifier.

Live-mode failures can be exercised with these endings of the recipient number (configurable
through ``AIRTIME_SIMULATOR_RULES``):

    …9990  permanent rejection (``invalid_recipient``)
    …9991  the first attempt fails with a transient error, the retry succeeds
    …9992  the answer is lost (timeout) but the top-up was made: status finds it delivered
    …9993  the answer is lost and the top-up was not made: status finds nothing

A PIN product's top-up (``TopupRequest.product_type == "pin"``) answers a simulated PIN, as
the sandbox does for test keys (contract section 17, "PINs"): 16 random digits, a serial, how
to redeem it and a date 30 days ahead. The remembered answer keeps it encrypted
(``reseller.crypto``); ``raw`` says ``"pin": "[pin]"``.

As a provider row (kind ``simulator``) it sells the whole active catalog, each product at
``AIRTIME_SIMULATOR_COST_PERCENT`` of its retail price, with its benefits and validity: a
sync maps it one to one, so the demo shows routes, costs and margins.

A range product's price is itself set from its cheapest route (``upstreams.pricing``), so a
cost taken from that price each sync would raise it each sync (92 % of the price, then the
price 10 % over that: 1.2 % more every time). A range offer therefore keeps what its amounts
were worth when the row first offered them, as its send value (``send_value`` at the smallest
amount, ``send_per_unit`` above it, in the retail currency, kept on the route), and costs
``AIRTIME_SIMULATOR_COST_PERCENT`` of that: a sync changes the cost only when the share does.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterable
from datetime import date, timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.utils import timezone

from catalog.models import Product, ceil_cent
from catalog.selectors import product_list
from reseller import crypto
from reseller.ids import random_base62
from upstreams.adapters.base import (
    PIN_REDACTED,
    PermanentError,
    Pin,
    ProviderResult,
    TopupRequest,
    TransientError,
    UpstreamCatalog,
    UpstreamOperator,
    UpstreamProduct,
    UpstreamTimeout,
    UpstreamTransaction,
)
from upstreams.models import Route

DEFAULT_RULES = {
    "9990": "reject",
    "9991": "transient_once",
    "9992": "timeout_delivered",
    "9993": "timeout_lost",
}
KEEP_SECONDS = 7 * 24 * 3600


def simulated_pin() -> Pin:
    """A simulated PIN: never a real code."""
    digits = "".join(secrets.choice("0123456789") for _ in range(16))
    return Pin(
        code=digits,
        serial="SIM" + "".join(secrets.choice("0123456789") for _ in range(9)),
        instructions="Simulated PIN: not a real code. Dial *123*<PIN># to redeem.",
        valid_until=(timezone.now() + timedelta(days=30)).date().isoformat(),
    )


def _answer(kept: dict[str, Any]) -> ProviderResult:
    """A remembered answer as a result (its PIN, kept encrypted, opened)."""
    kept = dict(kept)
    sealed = kept.pop("pin_sealed", None)
    pin = Pin(**crypto.decrypt_json(sealed)) if sealed else None
    return ProviderResult(**kept, pin=pin)


class SimulatorProvider:
    name = "simulator"
    kind = "simulator"

    def __init__(
        self,
        *,
        latency_ms: int | None = None,
        rules: dict[str, str] | None = None,
        name: str = "simulator",
    ):
        self.name = name
        self._latency_ms = latency_ms
        self._rules = rules

    @property
    def latency_ms(self) -> int:
        """Given, else ``AIRTIME_SIMULATOR_LATENCY_MS`` now (a client is kept per process)."""
        return (
            settings.AIRTIME_SIMULATOR_LATENCY_MS if self._latency_ms is None else self._latency_ms
        )

    @property
    def rules(self) -> dict[str, str]:
        if self._rules is not None:
            return self._rules
        return settings.AIRTIME_SIMULATOR_RULES or DEFAULT_RULES

    def _key(self, reference: str) -> str:
        return f"airtime-sim:{reference}"

    def _rule(self, number: str) -> str:
        for ending, rule in self.rules.items():
            if number.endswith(ending):
                return rule
        return "deliver"

    def send(self, request: TopupRequest) -> ProviderResult:
        if self.latency_ms:
            time.sleep(self.latency_ms / 1000)
        rule = self._rule(request.recipient_number)
        # A reference seen before gets its first result (for "deliver", the ``add`` below
        # finds it: one round trip instead of two).
        known = cache.get(self._key(request.reference)) if rule != "deliver" else None
        if known is not None:
            return _answer(known)
        if rule == "reject":
            raise PermanentError(
                "The recipient number cannot receive top-ups.", code="invalid_recipient"
            )
        if rule == "transient_once" and cache.add(
            self._key(request.reference) + ":tried", 1, KEEP_SECONDS
        ):
            raise TransientError("Simulated upstream outage.", code="upstream_unavailable")
        if rule == "timeout_lost":
            raise UpstreamTimeout("Simulated timeout before the provider got the request.")
        result: dict[str, Any] = {
            "status": ProviderResult.DELIVERED,
            "transaction_id": f"sim_{random_base62(16)}",
            "raw": {
                "simulated": True,
                "amount": str(request.amount),
                "currency": request.currency,
                "operator": request.operator_id,
            },
        }
        if request.product_type == "pin":
            pin = simulated_pin()
            result["raw"]["pin"] = PIN_REDACTED
            result["pin_sealed"] = crypto.encrypt_json(
                {
                    "code": pin.code,
                    "serial": pin.serial,
                    "instructions": pin.instructions,
                    "valid_until": pin.valid_until,
                }
            )
        # add, not set: a concurrent duplicate send keeps the first transaction
        if not cache.add(self._key(request.reference), result, KEEP_SECONDS):
            return _answer(cache.get(self._key(request.reference)))
        if rule == "timeout_delivered":
            raise UpstreamTimeout("Simulated timeout after the provider made the top-up.")
        return _answer(result)

    def status(self, reference: str) -> ProviderResult | None:
        known = cache.get(self._key(reference))
        return _answer(known) if known is not None else None

    def balance(self) -> tuple[Decimal, str]:
        return Decimal("1000000.00"), "EUR"

    def catalog(self, *, countries: Iterable[str] | None = None) -> list[UpstreamProduct]:
        share = Decimal(settings.AIRTIME_SIMULATOR_COST_PERCENT) / 100
        # Every product, offered or not: what it costs does not depend on whether we offer it.
        products = product_list(offered_only=False).select_related("operator")
        if countries is not None:
            products = products.filter(country_id__in=[c.upper() for c in countries])
        ranges = _range_routes(self.name)
        return [_offer(product, share, ranges) for product in products if product.priced]

    def catalog_read(self, *, countries: Iterable[str] | None = None) -> UpstreamCatalog:
        return UpstreamCatalog(products=self.catalog(countries=countries))

    def transactions(self, *, day: date) -> list[UpstreamTransaction]:
        return []  # it keeps references, not a report


PER_UNIT = Decimal("1E-10")  # Route.send_per_unit's places


def _range_routes(provider_name: str) -> dict[int, Route]:
    """This row's range routes that keep what their amounts were worth when first offered
    (``send_value`` at ``min_amount``, ``send_per_unit`` above it), by product."""
    routes = Route.objects.filter(
        provider__name=provider_name,
        send_value__isnull=False,
        send_per_unit__isnull=False,
        min_amount__isnull=False,
    )
    return {route.product_id: route for route in routes}


def _offer(product: Product, share: Decimal, ranges: dict[int, Route]) -> UpstreamProduct:
    """What the simulator sells a catalog product for: ``share`` of its price; for a range,
    ``share`` of what each amount was worth when first offered (its route's line, else its
    price now: ``A / rate + fee``)."""
    operator = UpstreamOperator(
        upstream_id=product.operator.public_id,
        name=product.operator.name,
        country=product.country_id,
    )
    if product.is_range:
        assert product.pricing_rate is not None and product.pricing_fee is not None
        assert product.range_min is not None
        low = product.range_min
        # What the smallest amount is worth, rounded up to the cent: along the route's line
        # when the range's ends moved since (so each amount is worth what it was), never
        # below the worth read back.
        route = ranges.get(product.pk)
        if route is not None and route.send_per_unit is not None:
            per_unit = route.send_per_unit
            at_low = route.send_value_at(low)
        else:
            per_unit = (1 / product.pricing_rate).quantize(PER_UNIT)
            at_low = ceil_cent(low * per_unit + product.pricing_fee)
        assert at_low is not None
        return UpstreamProduct(
            operator=operator,
            sku=product.sku,
            product_type=product.product_type,
            local_amount=None,
            local_currency=product.local_currency,
            cost=((at_low - low * per_unit) * share).quantize(Decimal("0.0001")),
            cost_currency=product.retail_currency,
            send_value=at_low,
            send_currency=product.retail_currency,
            denomination="range",
            min_amount=low,
            max_amount=product.range_max,
            step=product.range_step,
            cost_per_unit=(share * per_unit).quantize(PER_UNIT),
            send_per_unit=per_unit,
            benefits=tuple(product.benefits or ()),
            validity_days=product.validity_days,
        )
    assert product.retail_price is not None
    return UpstreamProduct(
        operator=operator,
        sku=product.sku,
        product_type=product.product_type,
        local_amount=product.local_amount,
        local_currency=product.local_currency,
        cost=(product.retail_price * share).quantize(Decimal("0.0001")),
        cost_currency=product.retail_currency,
        benefits=tuple(product.benefits or ()),
        validity_days=product.validity_days,
    )
