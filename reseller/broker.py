"""Kombu's Redis transport, keeping its Redis client (CELERY_BROKER_TRANSPORT with Redis).

Kombu's Redis channel builds a new ``redis.Redis`` around the same connection pool for every
publish and every acknowledgement, and building one (its table of response callbacks, a few
hundred dictionary inserts) cost a fifth of a publish's CPU: the B2B request publishes one
message per recharge, the worker acknowledges every task. A client holds nothing but its
pool and is safe to share between threads, so the channel keeps one per pool.

Private parts of kombu relied on, checked against kombu 5.7.0 with redis-py 6.4.0:
``kombu.transport.redis.Channel._create_client(self, asynchronous=False)`` (overridden; it
builds ``self.Client(connection_pool=self.pool, ...)``), the ``Channel.pool`` property, and
``Transport.Channel``. An upgrade that changes any of them fails
tests/test_private_overrides.py: re-read kombu/transport/redis.py, then update these versions
and that test's pins.
"""

from __future__ import annotations

from typing import Any

from kombu.transport import redis as kombu_redis


class Channel(kombu_redis.Channel):
    _kept_client: Any = None

    def _create_client(self, asynchronous: bool = False) -> Any:
        if asynchronous:  # the consumer's own (kombu keeps that one already)
            return super()._create_client(asynchronous=True)
        client = self._kept_client
        if client is None or client.connection_pool is not self.pool:
            client = self._kept_client = super()._create_client()
        return client


class Transport(kombu_redis.Transport):
    Channel = Channel
