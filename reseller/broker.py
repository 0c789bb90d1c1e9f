"""Kombu's Redis transport, keeping its Redis client (CELERY_BROKER_TRANSPORT with Redis).

Kombu's Redis channel builds a new ``redis.Redis`` around the same connection pool for every
publish and every acknowledgement, and building one (its table of response callbacks, a few
hundred dictionary inserts) cost a fifth of a publish's CPU: the B2B request publishes one
message per recharge, the worker acknowledges every task. A client holds nothing but its
pool and is safe to share between threads, so the channel keeps one per pool.
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
