"""Tests of a migration: the database taken back to just before it, rows written as they were
then, migrated forward, then back to the latest state for the next tests."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor


def migrated(targets: list[tuple[str, str | None]]) -> MigrationExecutor:
    """The database migrated to ``targets`` (forward or back) by a fresh executor (its loader
    reads the graph and what is applied now as it is made); returned for its loader's project
    states."""
    executor = MigrationExecutor(connection)
    executor.migrate(targets)
    return executor


@pytest.fixture(name="latest_after")
def latest_after_fixture():
    """After the test, every migration applied again (the next tests expect the latest
    schema)."""
    yield
    latest = MigrationExecutor(connection)
    latest.migrate(latest.loader.graph.leaf_nodes())
