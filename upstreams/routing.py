"""Where a recharge goes (docs/providers.md, "Routing"): a ``Target``.

With provider rows, the cheapest route of the product (its cost converted to EUR with the FX
table) whose provider is enabled, healthy (its circuit lets a call through) and holds enough
balance for it; equal costs by the provider's priority, then its name. A provider that
definitely refused this recharge is left out (``exclude``), so a failover goes down the same
list. A product that no provider row sells (and every product while no row exists) goes to
``AIRTIME_PROVIDER``: a provider built from the settings, not saved, with the ceiling
``PROVIDER_MAX_IN_FLIGHT`` (contract section 14). Either way the processor does the same
thing with the target it is given.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from decimal import Decimal
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from catalog.errors import FxRateNotFound
from catalog.models import Product
from catalog.selectors import fx_rate
from reseller.db import connection_release
from upstreams import cache, health
from upstreams.models import Provider, Route

KNOCK_TIMEOUT = 0.5  # seconds a knock waits for a TCP connection to be accepted
logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Target:
    """Where one recharge is sent: a provider (a row, or ``settings_provider()``), the route
    recorded on the recharge (None for ``AIRTIME_PROVIDER``), and what one unit costs there
    when known before the provider says (the route's cost; the simulator's share)."""

    provider: Provider
    route: Route | None
    cost: Decimal | None
    cost_currency: str

    @property
    def name(self) -> str:
        return self.provider.name


def settings_provider() -> Provider:
    """``AIRTIME_PROVIDER`` as a provider (never saved): the simulator, or the Reloadly account
    of the ``RELOADLY_*`` settings, with the ceiling ``PROVIDER_MAX_IN_FLIGHT``."""
    name = settings.AIRTIME_PROVIDER
    ceiling = settings.PROVIDER_MAX_IN_FLIGHT
    if name == Provider.Kind.SIMULATOR:
        return Provider(name=name, kind=name, max_in_flight=ceiling)
    if name == Provider.Kind.RELOADLY:
        return Provider(
            name=name,
            kind=name,
            base_url=settings.RELOADLY_BASE_URL,
            auth_url=settings.RELOADLY_AUTH_URL,
            client_id=settings.RELOADLY_CLIENT_ID,
            client_secret=settings.RELOADLY_CLIENT_SECRET,
            max_in_flight=ceiling,
        )
    raise ImproperlyConfigured(f"AIRTIME_PROVIDER is {name!r}: simulator or reloadly")


def settings_target(product: Product, amount: Decimal | None = None) -> Target:
    """The target of a product no provider row sells: ``AIRTIME_PROVIDER``. The simulator
    costs ``AIRTIME_SIMULATOR_COST_PERCENT`` of the retail price (of ``amount``'s price, for
    a range product), as its rows do; Reloadly says what it debited in its answer."""
    provider = settings_provider()
    if provider.kind != Provider.Kind.SIMULATOR or not product.priced:
        return Target(provider, None, None, "")
    share = Decimal(settings.AIRTIME_SIMULATOR_COST_PERCENT) / 100
    cost = (product.price_at(amount) * share).quantize(Decimal("0.0001"))
    return Target(provider, None, cost, product.retail_currency)


def route_target(route: Route, amount: Decimal | None = None) -> Target:
    """``route`` as a target; its cost of ``amount`` (a range route)."""
    return Target(route.provider, route, route.cost_at(amount), route.cost_currency)


class Router:
    """Chooses targets for a batch of recharges: each product's routes read once, each FX
    rate and each closed or open circuit asked once (a half-open circuit is asked per
    recharge: only one gets its probe)."""

    def __init__(self, products: Iterable[Product], *, kept: bool = False) -> None:
        """``kept``: the routes this process keeps under the providers' version
        (``upstreams.cache``; the processor's batches), the rest read and kept."""
        ids = {product.pk for product in products}
        self._routes = cache.routes.fetch(ids, _routes_read) if kept else _routes_read(ids)
        self._eur: dict[str, Decimal | None] = {}
        self._circuits: dict[str, bool | None] = {}  # True closed, False open, None half-open

    def sold_by_rows(self, product: Product) -> bool:
        """Does any provider row sell the product (an active route, usable or not)?"""
        return bool(self._routes.get(product.pk))

    def _in_eur(self, route: Route, amount: Decimal | None) -> Decimal | None:
        currency = route.cost_currency
        if currency not in self._eur:
            try:
                self._eur[currency] = fx_rate(from_currency=currency, to_currency="EUR").rate
            except FxRateNotFound:
                self._eur[currency] = None
        rate = self._eur[currency]
        return None if rate is None else route.cost_at(amount) * rate

    def ranked(
        self, product: Product, *, exclude: Collection[str] = (), amount: Decimal | None = None
    ) -> list[Route]:
        """The product's usable routes, cheapest first: enabled providers with the balance
        for it, that take ``amount`` (a range product's local amount), ``exclude`` left out;
        a cost with no EUR rate last; equals in priority order."""
        usable = []
        for route in self._routes.get(product.pk, ()):
            provider = route.provider
            if not provider.enabled or provider.name in exclude or not route.accepts(amount):
                continue
            if (
                provider.balance is not None
                and provider.balance_currency == route.cost_currency
                and provider.balance < route.cost_at(amount)
            ):
                continue  # it cannot pay for this one
            usable.append(route)

        def rank(route: Route) -> tuple[bool, Decimal]:
            eur = self._in_eur(route, amount)
            return eur is None, eur or Decimal(0)

        return sorted(usable, key=rank)  # a stable sort keeps the priority order of equals

    def _allows(self, name: str) -> bool:
        if name not in self._circuits:
            self._circuits[name] = health.circuit(name)
        closed = self._circuits[name]
        return closed if closed is not None else health.allow(name)

    def choose(
        self, product: Product, *, exclude: Collection[str] = (), amount: Decimal | None = None
    ) -> Target | None:
        """The recharge's target: the first ranked route (that takes ``amount``, a range
        product's local amount) whose provider's circuit lets a call through now (a
        half-open circuit lets one probe through, and that call is this recharge's);
        ``AIRTIME_PROVIDER`` when no provider row sells the product; None when none may be
        called now (every route down, or every provider excluded)."""
        if not self.sold_by_rows(product):
            target = settings_target(product, amount)
            return None if target.name in exclude else target
        for route in self.ranked(product, exclude=exclude, amount=amount):
            if self._allows(route.provider.name):
                return route_target(route, amount)
        return None


def _routes_read(product_ids: set[int]) -> dict[int, tuple[Route, ...]]:
    """The products' active routes with their providers and upstream operators, each
    product's in priority order (then by name); an empty tuple for a product none sells."""
    found: dict[int, list[Route]] = {pk: [] for pk in product_ids}
    rows = (
        Route.objects.filter(product_id__in=product_ids, active=True)
        .select_related("provider", "upstream_operator")
        .order_by("provider__priority", "provider__name")
    )
    for route in rows:
        found[route.product_id].append(route)
    return {pk: tuple(routes) for pk, routes in found.items()}


def route_choose(
    *, product: Product, exclude: Collection[str] = (), amount: Decimal | None = None
) -> Target | None:
    """``Router.choose`` for one recharge."""
    return Router([product]).choose(product, exclude=exclude, amount=amount)


def routes_ranked(
    *, product: Product, exclude: Collection[str] = (), amount: Decimal | None = None
) -> list[Route]:
    """``Router.ranked`` for one product (the back office, pricing)."""
    return Router([product]).ranked(product, exclude=exclude, amount=amount)


def providers_knock() -> None:
    """Knock at the providers whose circuit refused connections opened (``health``'s
    "Knocking"): a TCP connection to each one's API server; one that accepts is closed at
    once, so traffic returns to it within ``health.KNOCK_EVERY`` of it coming back rather than
    after the cool-down. The processor knocks before it chooses the targets of a batch of
    recharges, outside any transaction (a knock is a call to a third party), so the whole
    batch sees the answer; one cache read when no circuit is knocking."""
    names = health.knock_due()
    if not names:
        return
    urls = dict(Provider.objects.filter(name__in=names).values_list("name", "base_url"))
    connection_release()
    for name in names:
        health.knocked(name, listening=_listening(urls.get(name, "")))


def _listening(url: str) -> bool | None:
    """Does the server of ``url`` accept a TCP connection? True, False (refused), or None
    (no answer in ``KNOCK_TIMEOUT``, or no host to knock at)."""
    parts = urlsplit(url)
    if not parts.hostname:
        return None
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
        with socket.create_connection((parts.hostname, port), timeout=KNOCK_TIMEOUT):
            return True
    except ConnectionRefusedError:
        return False
    except (OSError, ValueError):
        return None
