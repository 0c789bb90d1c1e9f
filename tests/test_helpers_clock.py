"""The suite's clock helpers (tests/helpers.py), which keep tests from straddling a rate
limit's window or a day."""

from __future__ import annotations

from datetime import UTC, datetime

import time_machine

from tests.helpers import away_from_midnight, window_start


def test_near_midnight_the_clock_moves_to_noon_of_the_same_day_and_ticks_on():
    for late in (
        datetime(2026, 11, 30, 23, 55, tzinfo=UTC),
        datetime(2026, 12, 1, 0, 3, tzinfo=UTC),
    ):
        with time_machine.travel(late, tick=False), away_from_midnight():
            first = datetime.now(UTC)
            assert (first.date(), first.hour) == (late.date(), 12)
            assert any(datetime.now(UTC) > first for _ in range(100_000))  # it ticks on


def test_elsewhere_in_the_day_the_clock_is_left_alone():
    afternoon = datetime(2026, 11, 30, 15, 20, tzinfo=UTC)
    with time_machine.travel(afternoon, tick=False), away_from_midnight():
        assert datetime.now(UTC) == afternoon


def test_a_window_starts_at_its_first_second():
    before = datetime(2026, 11, 30, 10, 59, 58, tzinfo=UTC)
    with time_machine.travel(before, tick=False), window_start(3600):
        now = datetime.now(UTC).replace(microsecond=0)
        assert now == datetime(2026, 11, 30, 11, 0, 1, tzinfo=UTC)
