"""FX rates: stored pairs, inverses, crosses through EUR, rounding, unknown currencies."""

from datetime import UTC, datetime
from decimal import Decimal

import pytest
import time_machine

from catalog import services
from catalog.errors import FxRateNotFound
from catalog.selectors import fx_convert, fx_rate

pytestmark = pytest.mark.django_db

SET_AT = datetime(2026, 11, 1, tzinfo=UTC)


@pytest.fixture
def rates():
    with time_machine.travel(SET_AT, tick=False):
        services.fx_rate_set(base_currency="EUR", quote_currency="USD", rate=Decimal("1.08"))
        services.fx_rate_set(base_currency="EUR", quote_currency="GBP", rate=Decimal("0.85"))


def test_a_stored_pair_is_used_as_is_with_the_time_it_was_set(rates):
    quote = fx_rate(from_currency="eur", to_currency="usd")
    assert (quote.rate, quote.set_at) == (Decimal("1.08000000"), SET_AT)


def test_the_reverse_of_a_stored_pair_is_its_inverse(rates):
    assert fx_rate(from_currency="USD", to_currency="EUR").rate == Decimal("0.92592593")


def test_two_non_euro_currencies_convert_through_eur(rates):
    assert fx_rate(from_currency="USD", to_currency="GBP").rate == Decimal("0.78703704")


def test_the_same_currency_is_one_to_one(rates):
    assert fx_rate(from_currency="EUR", to_currency="EUR").rate == Decimal("1")


def test_a_currency_without_a_rate_is_unsupported_currency(rates):
    with pytest.raises(FxRateNotFound) as caught:
        fx_rate(from_currency="EUR", to_currency="JPY")
    assert (caught.value.status, caught.value.code) == (400, "unsupported_currency")


def test_conversion_rounds_to_cents_half_up(rates):
    amount, quote = fx_convert(amount=Decimal("10.125"), from_currency="EUR", to_currency="EUR")
    assert amount == Decimal("10.13")
    amount, quote = fx_convert(amount=Decimal("12.50"), from_currency="EUR", to_currency="USD")
    assert (amount, quote.rate) == (Decimal("13.50"), Decimal("1.08000000"))


def test_setting_the_same_rate_again_keeps_its_time(rates):
    _fx, outcome = services.fx_rate_set(
        base_currency="EUR", quote_currency="USD", rate=Decimal("1.0800")
    )
    assert outcome == services.UpsertResult.UNCHANGED
    assert fx_rate(from_currency="EUR", to_currency="USD").set_at == SET_AT
    _fx, outcome = services.fx_rate_set(
        base_currency="EUR", quote_currency="USD", rate=Decimal("1.09")
    )
    assert outcome == services.UpsertResult.UPDATED
    assert fx_rate(from_currency="EUR", to_currency="USD").set_at > SET_AT
