"""What we prepaid each provider, in the books (docs/books.md, "Provider float")."""

from __future__ import annotations

from decimal import Decimal

from books.selectors import provider_floats
from books.services import books_float_fund
from reseller.errors import ValidationFailed
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
