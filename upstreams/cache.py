"""The routes the processor chooses among, kept in each process (docs/providers.md, "Routing").

Every batch of recharges the processor claims reads its products' active routes with their
providers and upstream operators: the same few rows batch after batch (a sixth of a worker's
time on a batch of one, docs/performance.md). ``routes`` keeps them for at most
``CATALOG_CACHE_SECONDS`` under the providers' version (``reseller.kept``), which every
write to a provider, its operators or its routes replaces (``routes_changed``: the bulk
writes of ``upstreams.services`` call it, ``upstreams.apps`` connects it to every save and
delete the ORM reports, but a provider's save of fields routing never reads). So a provider
staff disable, a balance that moved or a sync's new route is seen by the next batch of every
worker, as if nothing were kept.

The kept routes are shared by the threads of a process, as they are: nothing writes to a
route or its provider once read (the writers read their own rows under a lock).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from reseller import kept

if TYPE_CHECKING:
    from upstreams.models import Route

VERSION_KEY = "upstreams:version"

# By product id: its active routes in priority order (an empty tuple: no provider row sells it).
routes: kept.Kept[int, tuple[Route, ...]] = kept.Kept(VERSION_KEY)


def routes_changed() -> None:
    """A new version of the providers' rows, now and again after the commit."""
    routes.changed()
