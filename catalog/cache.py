"""A short-lived copy of the products an order asks for, kept in each process (docs/catalog.md).

Every B2B request looks its products and their promotions up: two or three queries that
return the same rows request after request. ``products_get`` keeps those rows here, for at
most ``CATALOG_CACHE_SECONDS`` (30), under the catalog's *version*: a random token in the
shared cache (Redis in production) that every change to a country, operator, product or
promotion replaces, in the transaction and again after its commit. A request reads the
token (one Redis GET) and uses only rows stored under that same token, so a price change,
a product switched off or a new promotion is seen by the next request of every process,
as if nothing were cached. The age limit covers what no signal reports (a hand-written
``UPDATE`` in ``psql``).

Promotions are kept with their windows and applied for the time of each request, so a
promotion that starts or ends while its rows are kept starts or ends on time.
"""

from __future__ import annotations

import copy
import secrets
import threading
import time
from typing import TYPE_CHECKING

from django.conf import settings
from django.core.cache import cache
from django.db import transaction

if TYPE_CHECKING:
    from catalog.models import Product

VERSION_KEY = "catalog:version"
MAX_ENTRIES = 10_000


class ProductCache:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._version: str | None = None
        self._rows: dict[str, tuple[float, Product]] = {}

    def version(self) -> str:
        """The catalog's current version; a new one if the shared cache has none (emptied)."""
        current = cache.get(VERSION_KEY)
        if current is None:
            cache.add(VERSION_KEY, secrets.token_hex(8), timeout=None)
            current = cache.get(VERSION_KEY)
        return str(current)

    def get(self, public_ids: set[str], *, version: str) -> dict[str, Product]:
        """Copies of the products kept under ``version`` and younger than the age limit."""
        oldest = time.monotonic() - settings.CATALOG_CACHE_SECONDS
        found: dict[str, Product] = {}
        with self._lock:
            if version != self._version:
                self._version, self._rows = version, {}
                return found
            for public_id in public_ids:
                kept = self._rows.get(public_id)
                if kept is not None and kept[0] >= oldest:
                    found[public_id] = copy.copy(kept[1])
        return found

    def put(self, products: list[Product], *, version: str) -> None:
        now = time.monotonic()
        with self._lock:
            if version != self._version:
                self._version, self._rows = version, {}
            if len(self._rows) + len(products) > MAX_ENTRIES:
                self._rows = {}
            for product in products:
                self._rows[product.public_id] = (now, copy.copy(product))

    def clear(self) -> None:
        with self._lock:
            self._version, self._rows = None, {}


products = ProductCache()


def catalog_changed() -> None:
    """A new catalog version: now (a process reading the rows before the commit stores them
    under the old one) and again after the commit (one reading them between the change and
    the commit stored the old rows under the first new one). This process forgets its rows."""
    cache.set(VERSION_KEY, secrets.token_hex(8), timeout=None)
    products.clear()
    transaction.on_commit(_renew_after_commit, robust=True)


def _renew_after_commit() -> None:
    cache.set(VERSION_KEY, secrets.token_hex(8), timeout=None)
    products.clear()


def enabled() -> bool:
    """Only with a shared cache (REDIS_URL): a process-local version token would let one
    process keep rows another process's change made stale."""
    return settings.CATALOG_CACHE_SECONDS > 0 and bool(settings.REDIS_URL)
