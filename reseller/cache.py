"""Django's Redis cache, keeping its client objects.

Django's ``RedisCacheClient.get_client`` builds a new ``redis.Redis`` around the same
connection pool for every cache operation, and building one (its response-callback tables)
costs more CPU than the round trip it is for: on the bench's processor, 8 % of the worker's
CPU. A client is thread-safe and holds nothing but the pool, so one per pool is kept.
``count_many`` adds counters in one round trip.

Private parts of Django relied on, checked against Django 6.1.3 with redis-py 6.4.0:
``RedisCacheClient.get_client(self, key=None, *, write=False)`` (overridden),
``_get_connection_pool_index(self, write)``, ``_get_connection_pool(self, write)``, the
``_client`` class it builds clients with (``redis.Redis(connection_pool=...)``), and
``RedisCache._class``, the client class ``RedisCache._cache`` instantiates. An upgrade that
changes any of them fails tests/test_private_overrides.py: re-read Django's
django/core/cache/backends/redis.py, then update these versions and that test's pins.
"""

from __future__ import annotations

from typing import Any

from django.core.cache.backends.redis import RedisCache as DjangoRedisCache
from django.core.cache.backends.redis import RedisCacheClient


class KeptClients(RedisCacheClient):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._clients: dict[int, Any] = {}

    def get_client(self, key=None, *, write=False):
        index = self._get_connection_pool_index(write)
        client = self._clients.get(index)
        if client is None:
            pool = self._get_connection_pool(write)
            client = self._clients.setdefault(index, self._client(connection_pool=pool))
        return client


class RedisCache(DjangoRedisCache):
    def __init__(self, server, params) -> None:
        super().__init__(server, params)
        self._class = KeptClients

    def count_many(self, keys: list[str], timeout: int) -> None:
        """Add one to each counter (created at 0, kept ``timeout`` seconds): one round trip,
        where ``add`` and ``incr`` take two per counter (the providers' health figures count
        every call)."""
        client = self._cache.get_client(write=True)
        pipeline = client.pipeline(transaction=False)
        for key in keys:
            name = self.make_and_validate_key(key)
            pipeline.incr(name)
            pipeline.expire(name, timeout)
        pipeline.execute()
