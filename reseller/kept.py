"""Rows a process keeps for a short while under a *version* every process shares.

The catalog's products (``catalog.cache``) and the providers' routes (``upstreams.cache``)
are read for every order and every batch of recharges, and return the same rows time after
time. A ``Kept`` store holds such rows in the process, for at most ``CATALOG_CACHE_SECONDS``,
under a version: a random token in the shared cache (Redis in production) that every change
to the rows replaces (``changed``), in the writer's transaction and again after its commit.
A reader reads the token (one Redis GET) and uses only rows stored under that same token, so
a change is seen by the next read of every process, as if nothing were kept. The age limit
covers what no signal reports (a hand-written ``UPDATE`` in ``psql``).

Kept only with a shared cache (``enabled``): a version in one process's memory would let a
process keep rows another process's change made stale.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable, Iterable, Mapping

from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.db.models import Model
from django.db.models.signals import post_delete, post_save

MAX_ENTRIES = 10_000


def _same[V](value: V) -> V:
    return value


class Kept[K, V]:
    """Rows by key under the version at ``version_key``; ``copy`` makes what a reader gets
    from what is kept (and what is kept from what a writer gives), so a reader that changes
    its row changes nobody else's (the identity for immutable rows)."""

    def __init__(self, version_key: str, *, copy: Callable[[V], V] = _same) -> None:
        self.version_key = version_key
        self._copy = copy
        self._lock = threading.Lock()
        self._version: str | None = None
        self._rows: dict[K, tuple[float, V]] = {}

    def version(self) -> str:
        """The current version; a new one if the shared cache has none (emptied)."""
        current = cache.get(self.version_key)
        if current is None:
            cache.add(self.version_key, secrets.token_hex(8), timeout=None)
            current = cache.get(self.version_key)
        return str(current)

    def get(self, keys: Iterable[K], *, version: str) -> dict[K, V]:
        """Copies of the rows kept under ``version`` and younger than the age limit."""
        oldest = time.monotonic() - settings.CATALOG_CACHE_SECONDS
        found: dict[K, V] = {}
        with self._lock:
            if version != self._version:
                self._version, self._rows = version, {}
                return found
            for key in keys:
                kept = self._rows.get(key)
                if kept is not None and kept[0] >= oldest:
                    found[key] = self._copy(kept[1])
        return found

    def put(self, rows: Mapping[K, V], *, version: str) -> None:
        now = time.monotonic()
        with self._lock:
            if version != self._version:
                self._version, self._rows = version, {}
            if len(self._rows) + len(rows) > MAX_ENTRIES:
                self._rows = {}
            for key, row in rows.items():
                self._rows[key] = (now, self._copy(row))

    def fetch(self, keys: set[K], read: Callable[[set[K]], dict[K, V]]) -> dict[K, V]:
        """The rows of ``keys``: those kept under the current version, the others ``read``
        (one call for all of them) and kept; every one ``read`` when nothing is kept
        (``enabled``)."""
        if not enabled():
            return read(keys)
        version = self.version()
        found = self.get(keys, version=version)
        if missing := keys - found.keys():
            loaded = read(missing)
            self.put(loaded, version=version)
            found.update(loaded)
        return found

    def clear(self) -> None:
        with self._lock:
            self._version, self._rows = None, {}

    def changed(self) -> None:
        """A new version: now (a process reading the rows before the commit stores them under
        the old one) and again after the commit (one reading them between the change and the
        commit stored the old rows under the first new one). This process forgets its rows."""
        self._renew()
        transaction.on_commit(self._renew, robust=True)

    def follow(
        self, *models: type[Model], quiet: Mapping[type[Model], frozenset[str]] | None = None
    ) -> None:
        """Renew the version on every save and delete the ORM reports of ``models`` (at
        start-up, from an app's ``ready``), but a save of only ``quiet`` fields of its model
        (fields the kept rows do not depend on). A bulk ``update()`` sends nothing: its
        writer calls ``changed`` itself."""
        quiet = quiet or {}

        def renew(sender, update_fields=None, **_kwargs) -> None:
            fields = quiet.get(sender)
            if fields is not None and update_fields is not None and update_fields <= fields:
                return
            self.changed()

        for model in models:
            uid = f"{self.version_key}:{model._meta.label}"
            post_save.connect(renew, sender=model, weak=False, dispatch_uid=f"{uid}:save")
            post_delete.connect(renew, sender=model, weak=False, dispatch_uid=f"{uid}:delete")

    def _renew(self) -> None:
        cache.set(self.version_key, secrets.token_hex(8), timeout=None)
        self.clear()


def enabled() -> bool:
    """Rows are kept only with a shared cache (REDIS_URL) and a positive age limit."""
    return settings.CATALOG_CACHE_SECONDS > 0 and bool(settings.REDIS_URL)
