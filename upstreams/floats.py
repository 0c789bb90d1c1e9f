"""What we prepaid each provider, in the books (docs/books.md, "Provider float"), and how it
stands beside the balance the provider reports."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from books.selectors import provider_floats
from books.services import books_float_fund
from reseller.errors import ValidationFailed
from reseller.money import quantize
from upstreams.models import Provider
from upstreams.services import provider_get


def provider_float_fund(
    *, name: str, amount: Decimal, currency: str = "", memo: str = ""
) -> tuple[str, Decimal]:
    """Book money sent to provider ``name`` (in its account's currency unless ``currency``);
    returns the journal and the provider's float in that currency afterwards."""
    provider = provider_get(name=name)
    currency = (currency or provider.balance_currency or provider.currency).upper()
    if not currency:
        raise ValidationFailed("Say the currency (--currency): the provider's is not known yet.")
    if amount == 0:
        raise ValidationFailed("The amount must not be zero.")
    journal = books_float_fund(provider=provider.name, amount=amount, currency=currency, memo=memo)
    return journal, provider_floats().get(provider.name, {}).get(currency, Decimal(0))


@dataclass(frozen=True)
class ProviderMoney:
    """One provider's money in one currency, two figures side by side.

    ``float``: our books (prepaid with ``fund_provider``, less the cost of its deliveries,
    plus costs returned by reversals). ``balance``: what the provider's API said its account
    holds, read at ``checked_at`` (None when not read, or held in another currency).
    """

    provider: str
    currency: str
    float: Decimal
    balance: Decimal | None
    checked_at: datetime | None

    @property
    def difference(self) -> Decimal | None:
        """Balance less float: what the provider holds that the books do not show yet."""
        return None if self.balance is None else self.balance - self.float


def provider_money(
    provider: Provider, floats: dict[str, Decimal] | None = None
) -> list[ProviderMoney]:
    """The rows of one provider: its balance's currency first, then any other currency its
    float has (``floats``: its floats by currency, read here when not given)."""
    left = dict(provider_floats().get(provider.name, {}) if floats is None else floats)
    rows = []
    currency = provider.balance_currency or provider.currency
    if currency and (provider.balance is not None or currency in left):
        rows.append(
            ProviderMoney(
                provider=provider.name,
                currency=currency,
                float=quantize(left.pop(currency, Decimal(0))),
                balance=provider.balance,
                checked_at=provider.balance_checked_at,
            )
        )
    rows.extend(
        ProviderMoney(provider.name, other, quantize(amount), None, None)
        for other, amount in sorted(left.items())
    )
    return rows


def providers_money() -> list[ProviderMoney]:
    """Every provider's rows (``provider_money``), in the providers' order; floats booked
    under a name that has no provider row come last, without a balance."""
    floats = provider_floats()
    rows = []
    providers = list(Provider.objects.order_by("priority", "name"))
    for provider in providers:
        rows.extend(provider_money(provider, floats.get(provider.name, {})))
    known = {provider.name for provider in providers}
    for name in sorted(set(floats) - known):
        rows.extend(
            ProviderMoney(name, currency, quantize(amount), None, None)
            for currency, amount in sorted(floats[name].items())
        )
    return rows
