"""Which provider a recharge goes to (docs/providers.md, "Routing").

The cheapest route of the product (its cost converted to EUR with the FX table) whose provider
is enabled, healthy (its circuit lets a call through) and holds enough balance for it; equal
costs by the provider's priority, then its name. A provider that definitely refused this
recharge is left out (``exclude``), so a failover goes down the same list.

While no ``Provider`` row exists, nothing here is used: the processor sends every recharge to
``AIRTIME_PROVIDER`` as before. A product without any route goes there too.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Collection
from decimal import Decimal
from urllib.parse import urlsplit

from catalog.errors import FxRateNotFound
from catalog.selectors import fx_rate
from reseller.db import connection_release
from upstreams import health
from upstreams.models import Provider, Route

_ACTIVE_FOR = 2.0  # seconds a process trusts its answer to "is there any provider row?"
KNOCK_TIMEOUT = 0.5  # seconds a knock waits for a TCP connection to be accepted
_active: tuple[float, bool] = (0.0, False)
logger = logging.getLogger(__name__)


def routing_active() -> bool:
    """Does any provider row exist (the processor then routes)? Read again every 2 s."""
    global _active
    checked, answer = _active
    now = time.monotonic()
    if now - checked > _ACTIVE_FOR:
        answer = Provider.objects.exists()
        _active = (now, answer)
        # Asked by a worker thread before it calls a provider: the pooled connection this
        # took goes back at once, not after the call (outside a transaction; no pool: no-op).
        connection_release()
    return answer


def routing_forget() -> None:
    """Read the provider rows again at the next question (after creating one in-process)."""
    global _active
    _active = (0.0, False)


def _eur(route: Route, rates: dict[str, Decimal | None]) -> Decimal | None:
    currency = route.cost_currency
    if currency not in rates:
        try:
            rates[currency] = fx_rate(from_currency=currency, to_currency="EUR").rate
        except FxRateNotFound:
            rates[currency] = None
    rate = rates[currency]
    return None if rate is None else route.cost * rate


def routes_ranked(*, product_id: int, exclude: Collection[str] = ()) -> list[Route]:
    """The product's usable routes, cheapest first (enabled providers with the balance for
    it, ``exclude`` left out); health is asked by ``route_choose``."""
    routes = list(
        Route.objects.filter(product_id=product_id, active=True, provider__enabled=True)
        .select_related("provider", "upstream_operator")
        .order_by("provider__priority", "provider__name")
    )
    rates: dict[str, Decimal | None] = {}
    usable = []
    for route in routes:
        provider = route.provider
        if provider.name in exclude:
            continue
        if (
            provider.balance is not None
            and provider.balance_currency == route.cost_currency
            and provider.balance < route.cost
        ):
            continue  # it cannot pay for this one
        usable.append(route)

    def rank(route: Route) -> tuple[bool, Decimal]:
        eur = _eur(route, rates)
        return eur is None, eur or Decimal(0)

    # A cost with no EUR rate sorts last; Python's sort keeps the priority order of equals.
    return sorted(usable, key=rank)


def product_has_routes(*, product_id: int) -> bool:
    return Route.objects.filter(product_id=product_id, active=True).exists()


def route_choose(*, product_id: int, exclude: Collection[str] = ()) -> Route | None:
    """The first ranked route whose provider's circuit lets a call through now (a half-open
    circuit lets one probe through, and that call is this recharge's)."""
    for route in routes_ranked(product_id=product_id, exclude=exclude):
        if health.allow(route.provider.name):
            return route
    return None


def providers_knock() -> None:
    """Knock at the providers whose circuit refused connections opened (``health``'s
    "Knocking"): a TCP connection to each one's API server; one that accepts is closed at
    once, so traffic returns to it within ``health.KNOCK_EVERY`` of it coming back rather than
    after the cool-down. Called before a dispatch takes its row lock (a knock is a call to a
    third party); one cache read when no circuit is knocking.

    It also starts this process's knocker (``_knock_while_open``), which keeps knocking every
    ``KNOCK_EVERY`` for as long as a circuit is knocking, between dispatches too: a worker
    busy with a wave of answers dispatches nothing for a few hundred milliseconds, and the
    first dispatches after it, all in one knock's turn, chose the other providers while that
    one knock was on its way (the routing bench: 10 to 22 recharges sent elsewhere 0.3 s
    after the provider listened again)."""
    names = health.knock_due()
    if not names:
        return
    urls = dict(Provider.objects.filter(name__in=names).values_list("name", "base_url"))
    _knock_urls.update(urls)
    connection_release()
    _knock(names, urls)
    _knocker_start()


# The knocker: one daemon thread per process, alive while some circuit is knocking. It reads
# the cache only (the addresses come from the dispatches that knocked, never the database), so
# it holds no database connection.
_knock_urls: dict[str, str] = {}
_knocker_lock = threading.Lock()
_knocker: threading.Thread | None = None


def _knock(names: list[str], urls: dict[str, str]) -> None:
    for name in names:
        health.knocked(name, listening=_listening(urls.get(name, "")))


def _knocker_start() -> None:
    global _knocker
    with _knocker_lock:
        if _knocker is None or not _knocker.is_alive():
            _knocker = threading.Thread(
                target=_knock_while_open, name="provider-knocker", daemon=True
            )
            _knocker.start()


def _knock_while_open() -> None:
    """Knock at the knocking providers whose address this process knows, at most every
    ``KNOCK_EVERY`` across every process (``health.knock_due``), until none is knocking."""
    try:
        while health.knocking():
            time.sleep(health.KNOCK_EVERY)
            _knock([name for name in health.knock_due() if name in _knock_urls], _knock_urls)
    except Exception:  # the cache unreachable: the dispatches knock, as without the knocker
        logger.warning("provider knocker stopped", exc_info=True)


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
