"""Upstream airtime providers, chosen by the AIRTIME_PROVIDER setting."""

from __future__ import annotations

from django.conf import settings

from recharges.providers.base import (
    AirtimeProvider,
    PermanentError,
    ProviderError,
    ProviderResult,
    TopupRequest,
    TransientError,
    UpstreamTimeout,
)
from recharges.providers.reloadly import ReloadlyProvider
from recharges.providers.simulator import SimulatorProvider

__all__ = [
    "AirtimeProvider",
    "PermanentError",
    "ProviderError",
    "ProviderResult",
    "TopupRequest",
    "TransientError",
    "UpstreamTimeout",
    "get_provider",
]


def get_provider(name: str | None = None) -> AirtimeProvider:
    name = name or settings.AIRTIME_PROVIDER
    if name == "simulator":
        return SimulatorProvider()
    if name == "reloadly":
        return ReloadlyProvider.from_settings()
    raise ValueError(f"unknown AIRTIME_PROVIDER {name!r} (simulator, reloadly)")
