"""A short-lived copy of the products an order asks for, kept in each process (docs/catalog.md).

Every B2B request looks its products and their promotions up: two or three queries that
return the same rows request after request. ``products_get`` keeps those rows here, for at
most ``CATALOG_CACHE_SECONDS`` (30), under the catalog's *version* (``reseller.kept``): a
random token in the shared cache (Redis in production) that every change to a country,
operator, product or promotion replaces, in the transaction and again after its commit. A
request reads the token (one Redis GET) and uses only rows stored under that same token, so
a price change, a product switched off or a new promotion is seen by the next request of
every process, as if nothing were cached. The age limit covers what no signal reports (a
hand-written ``UPDATE`` in ``psql``).

Promotions are kept with their windows and applied for the time of each request, so a
promotion that starts or ends while its rows are kept starts or ends on time.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING

from reseller import kept

if TYPE_CHECKING:
    from catalog.models import Product

VERSION_KEY = "catalog:version"

# Each reader gets its own copy of a product (a request sets its promotion on it).
products: kept.Kept[str, Product] = kept.Kept(VERSION_KEY, copy=copy.copy)


def catalog_changed() -> None:
    """A new catalog version, now and again after the commit (``Kept.changed``)."""
    products.changed()


def enabled() -> bool:
    """Only with a shared cache (REDIS_URL): a process-local version token would let one
    process keep rows another process's change made stale."""
    return kept.enabled()
