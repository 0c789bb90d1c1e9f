"""reseller/cache.py and reseller/broker.py subclass private methods of Django's Redis cache and
kombu's Redis transport (docs/performance.md). They were checked against Django 6.1.3, kombu
5.7.0 and redis-py 6.4.0; an upgrade that renames, re-signs or rewrites what they rely on must
fail here, loudly, rather than in production.

When a test here fails after an upgrade: read the new code of the method it names, change
reseller/cache.py or reseller/broker.py if needed, and update the pins (here and in their
docstrings).
"""

from __future__ import annotations

import hashlib
import inspect
import uuid

import pytest
import redis
from django.conf import settings
from django.core.cache import cache, caches
from django.core.cache.backends.redis import RedisCache as DjangoRedisCache
from django.core.cache.backends.redis import RedisCacheClient
from kombu import Connection
from kombu.transport import redis as kombu_redis

from reseller import broker
from reseller.cache import KeptClients, RedisCache
from tests.broker_support import BROKER

# The methods our subclasses replace or call, with the signature they were checked with.
SIGNATURES = [
    (RedisCacheClient, "get_client", "(self, key=None, *, write=False)"),
    (RedisCacheClient, "_get_connection_pool_index", "(self, write)"),
    (RedisCacheClient, "_get_connection_pool", "(self, write)"),
    (DjangoRedisCache, "__init__", "(self, server, params)"),
    (kombu_redis.Channel, "_create_client", "(self, asynchronous=False)"),
]
# The source of the two methods overridden: a change upstream (a new argument to the client,
# a client that holds state) is something the override would silently drop or break.
SOURCES = {
    (RedisCacheClient, "get_client"): (
        "ba56fb39ace75b84f1c6abfdecb0e76ae2e507c9ad0014f2175b1b1e51b11e0f"
    ),
    (kombu_redis.Channel, "_create_client"): (
        "dae92bc4075dafb9b1a1ebd3f72cc7ed3e1bfe3ec1f840a1b1ccdfc6a67deb4d"
    ),
}


@pytest.mark.parametrize(("owner", "name", "signature"), SIGNATURES)
def test_each_private_method_relied_on_exists_with_its_checked_signature(owner, name, signature):
    method = getattr(owner, name, None)
    assert callable(method), f"{owner.__module__}.{owner.__qualname__}.{name} is gone"
    assert str(inspect.signature(method)) == signature, (
        f"{owner.__qualname__}.{name} changed its signature: re-check the override"
    )


@pytest.mark.parametrize(("owner", "name"), list(SOURCES))
def test_each_overridden_method_is_the_code_it_was_checked_against(owner, name):
    source = inspect.getsource(getattr(owner, name))
    assert hashlib.sha256(source.encode()).hexdigest() == SOURCES[owner, name], (
        f"{owner.__module__}.{owner.__qualname__}.{name} changed upstream:\n{source}"
    )


def test_the_redis_client_is_built_around_a_pool_and_holds_it():
    assert "connection_pool" in inspect.signature(redis.Redis.__init__).parameters
    pool = redis.ConnectionPool.from_url(BROKER)
    assert redis.Redis(connection_pool=pool).connection_pool is pool
    pool.disconnect()


def test_djangos_cache_builds_its_client_from_the_attributes_the_subclass_sets():
    plain = DjangoRedisCache(settings.REDIS_URL, {})
    assert plain._class is RedisCacheClient  # RedisCache.__init__ sets it; _cache reads it
    assert plain._cache._client is redis.Redis  # RedisCacheClient.__init__ sets it
    ours = RedisCache(settings.REDIS_URL, {})
    assert isinstance(ours._cache, KeptClients)


def test_the_projects_cache_keeps_one_client_per_pool_and_works():
    default = caches["default"]
    assert isinstance(default, RedisCache)  # the test settings use Redis, as production does
    backend = default._cache
    assert isinstance(backend, KeptClients)
    client = backend.get_client(write=True)
    assert backend.get_client(write=True) is client
    assert backend.get_client() is client  # one server: reads share the writer's pool
    assert client.connection_pool is backend._get_connection_pool(True)
    key = f"private-overrides-{uuid.uuid4().hex}"
    cache.set(key, {"kept": 1}, 30)
    assert cache.get(key) == {"kept": 1}
    cache.delete(key)
    assert cache.get(key) is None


def test_the_broker_channel_keeps_one_client_and_still_moves_messages(queue):
    with Connection(BROKER, transport=broker.Transport) as connection:
        channel = connection.default_channel
        assert isinstance(channel, broker.Channel)
        client = channel._create_client()
        assert channel._create_client() is client
        assert client.connection_pool is channel.pool
        assert channel._create_client(asynchronous=True) is not client  # the consumer's own
        with connection.SimpleQueue(queue) as simple:
            simple.put({"kept": 1})
            message = simple.get(timeout=5)
            message.ack()
            assert message.payload == {"kept": 1}
