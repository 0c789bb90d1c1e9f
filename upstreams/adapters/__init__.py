"""The upstream airtime providers' clients, one module per provider (docs/providers.md).

``adapter_for(provider)`` is the one way to get a client: of a ``Provider`` row, or of
``AIRTIME_PROVIDER`` (``upstreams.routing.settings_provider()``, a provider not saved).
"""

from __future__ import annotations

import threading
from typing import Any

from django.conf import settings

from upstreams.adapters.base import (
    AirtimeProvider,
    CatalogProvider,
    PermanentError,
    Pin,
    ProviderConfig,
    ProviderError,
    ProviderResult,
    SkippedProduct,
    TopupRequest,
    TransientError,
    UpstreamCatalog,
    UpstreamOperator,
    UpstreamProduct,
    UpstreamTimeout,
    UpstreamTransaction,
    connection_refused,
    provider_unnamed,
)
from upstreams.adapters.ding import DingProvider
from upstreams.adapters.dtone import DTOneProvider
from upstreams.adapters.reloadly import ReloadlyProvider
from upstreams.adapters.simulator import SimulatorProvider

__all__ = [
    "AirtimeProvider",
    "CatalogProvider",
    "PermanentError",
    "Pin",
    "ProviderConfig",
    "ProviderError",
    "ProviderResult",
    "SkippedProduct",
    "TopupRequest",
    "TransientError",
    "UpstreamCatalog",
    "UpstreamOperator",
    "UpstreamProduct",
    "UpstreamTimeout",
    "UpstreamTransaction",
    "adapter_for",
    "connection_refused",
    "provider_unnamed",
]


def _build(kind: str, config: ProviderConfig, name: str) -> CatalogProvider:
    if kind == "simulator":
        return SimulatorProvider(name=name)
    if kind == "reloadly":
        return ReloadlyProvider.from_config(config, name=name)
    if kind == "dtone":
        return DTOneProvider(config, name=name)
    if kind == "ding":
        return DingProvider(config, name=name)
    raise ValueError(f"unknown provider kind {kind!r}")


_built: dict[tuple[Any, ...], CatalogProvider] = {}
_built_lock = threading.Lock()


def adapter_for(provider: Any) -> CatalogProvider:
    """The client of a provider, kept per process while the row is unchanged (its HTTP
    connections and tokens are reused). A provider not saved (``AIRTIME_PROVIDER``) is kept
    by what it is made of: its settings."""
    if provider.pk is None:
        key: tuple[Any, ...] = (
            provider.name,
            provider.kind,
            provider.base_url,
            provider.auth_url,
            provider.client_id,
            provider.client_secret,
        )
    else:
        key = (provider.pk, provider.updated_at)
    key += (settings.PROVIDER_TIMEOUT_SECONDS, settings.RELOADLY_TIMEOUT_SECONDS)
    with _built_lock:
        adapter = _built.get(key)
        if adapter is None:
            config = ProviderConfig(
                base_url=provider.base_url,
                auth_url=provider.auth_url,
                client_id=provider.client_id,
                client_secret=provider.client_secret,
                api_key=provider.api_key,
                api_secret=provider.api_secret,
                currency=provider.currency,
                timeout=(
                    settings.RELOADLY_TIMEOUT_SECONDS  # the RELOADLY_* account of the settings
                    if provider.pk is None and provider.kind == "reloadly"
                    else settings.PROVIDER_TIMEOUT_SECONDS
                ),
            )
            adapter = _built[key] = _build(provider.kind, config, provider.name)
        return adapter
