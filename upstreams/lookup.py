"""Number lookup through the providers (contract section 17, "Number lookup";
docs/catalog.md, "Phone numbers").

``number_lookup`` is what ``catalog.detection`` calls (registered by ``UpstreamsConfig.ready``:
the catalog is a layer below and cannot import this). For one number it:

1. reads, in one query, the enabled providers that can look numbers up (Reloadly, DT One,
   Ding) and have mapped operators in the number's country (``ProviderOperator``, filled by
   the catalog sync), by priority then name; none: no lookup, the prefixes answer;
2. returns the answer kept in the shared cache under the number, if any: a provider's answer
   for ``NUMBER_LOOKUP_CACHE_SECONDS``, "nobody knew" for ``NUMBER_LOOKUP_MISS_SECONDS``;
3. otherwise asks the providers one after the other, in the request's own thread, each with
   the time left of ``NUMBER_LOOKUP_TIMEOUT_SECONDS`` as its HTTP timeout (a provider with an
   open circuit is skipped), until one names an operator we map; when the budget is spent
   the prefixes answer. What it learns is kept in the cache, and so is "nobody knew or
   answered in time", so a slow provider costs the budget once, not on every request.

No thread of our own waits here (docs/processor.md counts the app's hand-made waits): the
HTTP client's timeout is the wait. It bounds each phase of a call (connect, write, read) by
the time left, so a provider that drips its answer could overrun the budget by a phase; a
Reloadly token, fetched about once an hour, is fetched within its own timeout.

No database transaction or row lock is held here: this is a read path. A provider's
failure, refusal or unreadable answer is "this provider does not know"; nothing here raises
to the caller.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import cache

from catalog.models import Operator
from catalog.phone import PhoneNumber
from upstreams import health
from upstreams.adapters import adapter_for
from upstreams.adapters.base import NumberLookupProvider
from upstreams.models import Provider, ProviderOperator

logger = logging.getLogger(__name__)

LOOKUP_KINDS = (Provider.Kind.RELOADLY, Provider.Kind.DTONE, Provider.Kind.DING)
CACHE_PREFIX = "number-lookup:v1:"
NOBODY_KNEW = "-"  # kept briefly: no provider named a mapped operator


@dataclass(frozen=True)
class _Asked:
    """One provider to ask, and what its operator ids of the country are to us."""

    provider_id: int
    name: str
    adapter: NumberLookupProvider
    mapped: dict[str, int]  # its upstream operator id -> our operator's pk


def cache_key(e164: str) -> str:
    return f"{CACHE_PREFIX}{e164}"


def number_lookup(*, phone: PhoneNumber, operators: Sequence[Operator]) -> Operator | None:
    """The operator among ``operators`` that a provider says the number is with now; None when
    no provider is set up for the country, none knew, or none answered within the budget."""
    by_pk = {op.pk: op for op in operators}
    asked = _providers(country=phone.country, operator_pks=list(by_pk))
    if not asked:
        return None
    key = cache_key(phone.e164)
    kept = cache.get(key)
    if kept is None:
        budget = float(settings.NUMBER_LOOKUP_TIMEOUT_SECONDS)
        kept = _ask(key, phone, asked, time.monotonic() + budget)
    return _operator_of(kept, asked, by_pk)


def _providers(*, country: str, operator_pks: list[int]) -> list[_Asked]:
    """The providers to ask, by priority, each with its mapped operators of the country."""
    rows = (
        ProviderOperator.objects.filter(
            country=country,
            operator_id__in=operator_pks,
            provider__enabled=True,
            provider__kind__in=LOOKUP_KINDS,
        )
        .select_related("provider")
        .order_by("provider__priority", "provider__name", "upstream_id")
    )
    found: dict[int, tuple[Provider, dict[str, int]]] = {}
    for row in rows:
        assert row.operator_id is not None
        found.setdefault(row.provider_id, (row.provider, {}))[1][row.upstream_id] = row.operator_id
    asked = []
    for provider, mapped in found.values():
        adapter = adapter_for(provider)
        if hasattr(adapter, "lookup"):
            asked.append(_Asked(provider.pk, provider.name, adapter, mapped))  # type: ignore[arg-type]
    return asked


def _answer(provider_id: int, upstream_id: str) -> str:
    return f"{provider_id}:{upstream_id}"


def _operator_of(kept: str, asked: list[_Asked], by_pk: dict[int, Operator]) -> Operator | None:
    """Our operator for a kept answer, through today's mapping (a provider since disabled or
    an operator unmapped answers nothing)."""
    if kept == NOBODY_KNEW:
        return None
    provider_id, _, upstream_id = kept.partition(":")
    for entry in asked:
        if str(entry.provider_id) == provider_id:
            pk = entry.mapped.get(upstream_id)
            return by_pk.get(pk) if pk is not None else None
    return None


def _ask(key: str, phone: PhoneNumber, asked: list[_Asked], deadline: float) -> str:
    """Ask the providers in order until one names an operator we map, before ``deadline``;
    keep the outcome in the cache (nobody knew, or nobody answered in time: briefly)."""
    for entry in asked:
        left = deadline - time.monotonic()
        if left <= 0:
            logger.info("number lookup of %s: no answer within the budget", phone.country)
            break
        if health.is_open(entry.name):
            continue
        try:
            named = entry.adapter.lookup(number=phone.e164, country=phone.country, timeout=left)
        except Exception as exc:  # a provider that cannot say does not know
            logger.info("number lookup at %s failed: %s", entry.name, exc)
            continue
        ours = {entry.mapped[op.upstream_id] for op in named if op.upstream_id in entry.mapped}
        if len(ours) == 1:
            upstream_id = next(op.upstream_id for op in named if op.upstream_id in entry.mapped)
            answer = _answer(entry.provider_id, upstream_id)
            cache.set(key, answer, settings.NUMBER_LOOKUP_CACHE_SECONDS)
            return answer
    cache.set(key, NOBODY_KNEW, settings.NUMBER_LOOKUP_MISS_SECONDS)
    return NOBODY_KNEW
