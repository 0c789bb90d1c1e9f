"""Reads of upstream providers: the list staff see, with each one's health."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from django.db.models import Count, QuerySet

from upstreams import health, semaphore
from upstreams.models import Provider, ProviderOperator, Route


@dataclass(frozen=True)
class ProviderView:
    """A provider as the back office and ``GET /admin/providers`` show it (no secrets)."""

    name: str
    kind: str
    enabled: bool
    priority: int
    state: str
    balance: Decimal | None
    currency: str | None
    success_rate: float | None
    latency_p50_ms: int | None
    latency_p95_ms: int | None
    in_flight: int
    calls: int
    routes: int


def provider_list() -> QuerySet[Provider]:
    return Provider.objects.order_by("priority", "name")


def provider_view(provider: Provider, *, routes: int | None = None) -> ProviderView:
    """One provider with its state, balance, 15-minute success rate and latency, and calls
    in flight now (``routes``: its active routes, counted here when not given)."""
    figures = health.figures(provider.name)
    if routes is None:
        routes = Route.objects.filter(provider=provider, active=True).count()
    return ProviderView(
        name=provider.name,
        kind=provider.kind,
        enabled=provider.enabled,
        priority=provider.priority,
        state=figures.state,
        balance=provider.balance,
        currency=provider.balance_currency or provider.currency or None,
        success_rate=figures.success_rate,
        latency_p50_ms=figures.p50_ms,
        latency_p95_ms=figures.p95_ms,
        in_flight=semaphore.in_flight(provider.name),
        calls=figures.calls,
        routes=routes,
    )


def providers_overview() -> list[ProviderView]:
    """Every provider as ``provider_view`` shows it, their routes counted in one query."""
    routes = dict(
        Route.objects.filter(active=True)
        .values("provider_id")
        .annotate(n=Count("id"))
        .values_list("provider_id", "n")
    )
    return [provider_view(p, routes=routes.get(p.pk, 0)) for p in provider_list()]


def operators_unmapped(*, provider: Provider | None = None) -> QuerySet[ProviderOperator]:
    """Operators a provider lists that no catalog operator answers to yet."""
    qs = ProviderOperator.objects.filter(operator__isnull=True).select_related("provider")
    if provider is not None:
        qs = qs.filter(provider=provider)
    return qs.order_by("provider__name", "country", "name")
