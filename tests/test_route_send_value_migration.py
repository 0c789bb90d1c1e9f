"""The migration of a Ding range route synced before ``send_value`` meant what ``min_amount``
sends (upstreams 0011): after it, no amount of the route sends more than its top sent before
(Ding's Maximum at most: more is refused with ParameterOutOfRange), and its bottom sends at
least what it did."""

from __future__ import annotations

from decimal import Decimal

import pytest

from tests.factories import RangeProductFactory
from tests.migration_support import migrated
from upstreams.models import ProviderOperator, Route
from upstreams.services import provider_create

BEFORE = [("upstreams", "0010_field_labels")]
AFTER = [("upstreams", "0011_route_send_value_at_min_amount")]


@pytest.mark.django_db(transaction=True)
def test_a_route_synced_before_never_sends_more_than_its_top_did(latest_after):
    migrated(BEFORE)
    product = RangeProductFactory(range_min=Decimal("20.06"), range_step=Decimal("0.01"))
    provider = provider_create(
        name="ding-old", kind="ding", base_url="https://api.dingconnect.example", api_key="k"
    )
    upstream = ProviderOperator.objects.create(
        provider=provider, upstream_id="TLMX", name="Telcel", country="MX"
    )
    # As the sync before wrote it: the line's value at 0 (0.08) and its ends drawn in.
    route = Route.objects.create(
        provider=provider,
        upstream_operator=upstream,
        product=product,
        sku="MX_TL_TopUp_Range",
        send_value=Decimal("0.08"),
        send_currency="USD",
        cost=Decimal("0.0760"),
        cost_currency="USD",
        min_amount=Decimal("20.06"),
        max_amount=Decimal("500.00"),
        step=Decimal("0.01"),
        cost_per_unit=Decimal("0.0530416667"),
        send_per_unit=Decimal("0.0558333333"),
    )
    migrated(AFTER)

    route.refresh_from_db()
    assert route.send_value == Decimal("1.21")  # 0.08 + 20.06 x 0.0558333333, rounded up
    assert route.min_amount == Decimal("20.06")
    assert route.max_amount == Decimal("499.88")  # 500.00 would now send 28.01
    assert route.send_value_at(route.min_amount) >= Decimal("1.20")
    assert route.send_value_at(route.max_amount) <= Decimal("28.00")
    assert route.send_value_at(Decimal("500.00")) == Decimal("28.01")  # why it came down
