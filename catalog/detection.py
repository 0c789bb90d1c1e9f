"""Which operator a number is with: the providers' number lookup where it helps, else our
prefixes (contract section 17, "Number lookup"; docs/catalog.md, "Phone numbers").

``operator_detect`` (catalog.phone) reads our prefixes and the carrier names of the number's
range: a ported number shows its original operator, and some countries publish no ranges. The
providers know better (Reloadly's auto-detect, DT One's mobile-number lookup, Ding's
``GetAccountLookup``), but asking them is the ``upstreams`` app's job, a layer above this one
(pyproject.toml, ``[tool.importlinter]``): the catalog cannot import it. So ``upstreams``
passes its lookup down at start-up, ``UpstreamsConfig.ready()`` calling
``number_lookup_register(upstreams.lookup.number_lookup)``; without one registered (the
catalog alone), detection is the prefixes'.

A number is asked of the providers when its country ports numbers (``NUMBER_LOOKUP_COUNTRIES``)
or when our prefixes cannot tell (no operator, or several). The lookup keeps its own budget
(``NUMBER_LOOKUP_TIMEOUT_SECONDS``) and cache; whatever it does, a request gets an answer:
the provider's operator, else the prefixes'.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from django.conf import settings

from catalog.models import Operator
from catalog.phone import PhoneNumber, operator_detect

logger = logging.getLogger(__name__)

BY_PROVIDER = "provider"
BY_PREFIX = "prefix"


class NumberLookup(Protocol):
    def __call__(self, *, phone: PhoneNumber, operators: Sequence[Operator]) -> Operator | None: ...


_lookup: NumberLookup | None = None


def number_lookup_register(lookup: NumberLookup | None) -> None:
    """Set the providers' number lookup (None: prefixes only). Called by
    ``UpstreamsConfig.ready()``; a later call replaces the earlier one."""
    global _lookup
    _lookup = lookup


@dataclass(frozen=True)
class Detection:
    operators: list[Operator]  # usually one; empty when nobody can tell
    by: str | None  # BY_PROVIDER, BY_PREFIX, or None when nothing was detected


def lookup_wanted(*, phone: PhoneNumber, by_prefix: Sequence[Operator]) -> bool:
    """Ask the providers: the country ports numbers, or the prefixes do not name one operator."""
    countries = {c.strip().upper() for c in settings.NUMBER_LOOKUP_COUNTRIES}
    return phone.country in countries or len(by_prefix) != 1


def operators_detect(
    *, phone: PhoneNumber, operators: Iterable[Operator] | None = None, livemode: bool = True
) -> Detection:
    """The operator(s) of a number and who said so. ``operators`` defaults to the active
    operators of the number's country (one query); the providers are asked only where
    ``lookup_wanted``, never for longer than the lookup's budget, and never for a test key
    (``livemode`` False: test mode never reaches a provider, contract section 6)."""
    if operators is None:
        operators = Operator.objects.filter(country_id=phone.country, active=True)
    candidates = [op for op in operators if op.country_id == phone.country]
    by_prefix = operator_detect(phone=phone, operators=candidates)
    wanted = livemode and candidates and lookup_wanted(phone=phone, by_prefix=by_prefix)
    if _lookup is not None and wanted:
        try:
            found = _lookup(phone=phone, operators=candidates)
        except Exception:  # a lookup is a hint: the list is shown whatever happened
            logger.exception("number lookup failed; the prefixes answer")
            found = None
        if found is not None:
            return Detection([found], BY_PROVIDER)
    return Detection(by_prefix, BY_PREFIX if by_prefix else None)
