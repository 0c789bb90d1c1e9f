"""Promotions: status from the clock at the window edges, which one applies, waitlisting."""

from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.core.exceptions import ValidationError
from django.db import IntegrityError
from django.test import override_settings

from catalog import selectors, services
from catalog.models import PromotionStatus
from tests.factories import OperatorFactory, ProductFactory, PromotionFactory
from tests.helpers import bearer

pytestmark = pytest.mark.django_db

PRODUCTS = "/api/v1/catalog/recharge-products"
START = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
END = datetime(2026, 12, 4, 10, 0, tzinfo=UTC)
TICK = timedelta(microseconds=1)


@pytest.fixture
def product():
    return ProductFactory()


@pytest.fixture
def promotion(product):
    return PromotionFactory(operator=product.operator, starts_at=START, ends_at=END)


@pytest.mark.parametrize(
    ("at", "status"),
    [
        (START - TICK, PromotionStatus.SCHEDULED),
        (START, PromotionStatus.ACTIVE),
        (END - TICK, PromotionStatus.ACTIVE),
        (END, PromotionStatus.ENDED),
    ],
)
def test_promotion_runs_in_the_half_open_window_start_inclusive_end_exclusive(
    promotion, at, status
):
    assert promotion.status_at(at) == status
    with time_machine.travel(at, tick=False):
        assert promotion.status == status


@pytest.mark.parametrize(
    ("at", "shown"),
    [
        (START - timedelta(seconds=1), "scheduled"),
        (START, "active"),
        (END - timedelta(seconds=1), "active"),
        (END, None),
    ],
)
def test_product_list_shows_the_promotion_status_at_the_window_edges(
    api, user, product, promotion, at, shown
):
    with time_machine.travel(at, tick=False):
        api.credentials(**bearer(user))  # a token issued at that time
        body = api.get(PRODUCTS).json()
        promoted = api.get(PRODUCTS, {"promotion": "true"}).json()
    shown_promotion = body["results"][0]["promotion"]
    if shown is None:
        assert shown_promotion is None
        assert promoted["count"] == 0
    else:
        assert shown_promotion == {
            "id": promotion.public_id,
            "name": promotion.name,
            "description": promotion.description,
            "terms": promotion.terms,
            "startsAt": "2026-12-01T10:00:00Z",
            "endsAt": "2026-12-04T10:00:00Z",
            "status": shown,
        }
        assert promoted["count"] == 1


def test_operator_wide_promotion_applies_to_every_product_of_that_operator_only(product):
    sibling = ProductFactory(operator=product.operator)
    stranger = ProductFactory()
    promo = PromotionFactory(operator=product.operator)
    assert selectors.product_promotion(product=product) == promo
    assert selectors.product_promotion(product=sibling) == promo
    assert selectors.product_promotion(product=stranger) is None


def test_product_promotion_applies_only_to_the_listed_products(product):
    sibling = ProductFactory(operator=product.operator)
    promo = PromotionFactory(operator=product.operator, products=[product])
    assert selectors.product_promotion(product=product) == promo
    assert selectors.product_promotion(product=sibling) is None


def test_active_promotion_wins_over_a_scheduled_one(product):
    now = datetime(2026, 12, 1, tzinfo=UTC)
    PromotionFactory(operator=product.operator, starts_at=now + timedelta(hours=1))
    active = PromotionFactory(operator=product.operator, starts_at=now - timedelta(days=1))
    assert selectors.product_promotion(product=product, at=now) == active


def test_promotion_naming_the_product_wins_over_an_operator_wide_one(product):
    now = datetime(2026, 12, 1, tzinfo=UTC)
    PromotionFactory(operator=product.operator, starts_at=now - timedelta(days=2))
    specific = PromotionFactory(
        operator=product.operator, products=[product], starts_at=now - timedelta(days=1)
    )
    assert selectors.product_promotion(product=product, at=now) == specific


def test_the_earliest_scheduled_promotion_is_the_one_shown(product):
    now = datetime(2026, 12, 1, tzinfo=UTC)
    PromotionFactory(operator=product.operator, starts_at=now + timedelta(days=2))
    soonest = PromotionFactory(operator=product.operator, starts_at=now + timedelta(days=1))
    assert selectors.product_promotion(product=product, at=now) == soonest


def test_product_promotion_recomputes_for_a_time_before_it_was_loaded(product, promotion):
    loaded = selectors.product_get(product_id=product.public_id, at=END + timedelta(days=1))
    assert loaded.promotion is None
    assert selectors.product_promotion(product=loaded, at=START) == promotion


@pytest.mark.parametrize(
    ("starts_in", "waitlisted"),
    [
        (timedelta(hours=72), True),  # the horizon is inclusive
        (timedelta(hours=72, seconds=1), False),
        (timedelta(minutes=1), True),
        (timedelta(0), False),  # started: active, dispatch now
        (-timedelta(hours=1), False),
    ],
)
def test_recharges_wait_for_a_scheduled_promotion_starting_within_the_horizon(
    product, starts_in, waitlisted
):
    now = datetime(2026, 12, 1, tzinfo=UTC)
    promo = PromotionFactory(operator=product.operator, starts_at=now + starts_in)
    found = selectors.product_waitlist_promotion(product=product, at=now)
    assert found == (promo if waitlisted else None)
    assert selectors.promotion_is_waitlisting(promotion=promo, at=now) is waitlisted


def test_no_waitlist_without_a_promotion(product):
    assert selectors.product_waitlist_promotion(product=product) is None
    assert selectors.promotion_is_waitlisting(promotion=None) is False


def test_an_active_promotion_means_dispatch_now_even_with_another_scheduled(product):
    now = datetime(2026, 12, 1, tzinfo=UTC)
    PromotionFactory(operator=product.operator, starts_at=now - timedelta(hours=1))
    PromotionFactory(operator=product.operator, starts_at=now + timedelta(hours=2))
    assert selectors.product_waitlist_promotion(product=product, at=now) is None


@override_settings(WAITLIST_HORIZON_HOURS=1)
def test_the_waitlist_horizon_follows_the_setting(product):
    now = datetime(2026, 12, 1, tzinfo=UTC)
    PromotionFactory(operator=product.operator, starts_at=now + timedelta(hours=2))
    assert selectors.product_waitlist_promotion(product=product, at=now) is None
    assert selectors.product_waitlist_promotion(product=product, at=now, horizon_hours=3)


def test_a_promotion_cannot_list_products_of_another_operator(product):
    stranger = ProductFactory()
    with pytest.raises(ValidationError):
        services.promotion_upsert(
            code="bad",
            operator=product.operator,
            products=[stranger],
            name="x",
            description="x",
            starts_at=START,
            ends_at=END,
        )


def test_a_promotion_window_cannot_be_empty_or_reversed(product):
    with pytest.raises(ValidationError):
        services.promotion_upsert(
            code="empty",
            operator=product.operator,
            name="x",
            description="x",
            starts_at=END,
            ends_at=START,
        )
    with pytest.raises(IntegrityError):
        PromotionFactory(operator=product.operator, starts_at=START, ends_at=START)


def test_promotion_upsert_changes_nothing_when_run_again(product):
    operator = OperatorFactory()
    first = ProductFactory(operator=operator)
    kwargs = {
        "code": "same",
        "operator": operator,
        "products": [first],
        "name": "Same",
        "description": "Same",
        "starts_at": START,
        "ends_at": END,
        "translations": {"es": {"name": "Igual"}},
    }
    assert services.promotion_upsert(**kwargs)[1] == services.UpsertResult.CREATED
    assert services.promotion_upsert(**kwargs)[1] == services.UpsertResult.UNCHANGED
    kwargs["products"] = []
    assert services.promotion_upsert(**kwargs)[1] == services.UpsertResult.UPDATED
