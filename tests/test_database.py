"""How the service talks to PostgreSQL (reseller/settings/base.py, docs/performance.md)."""

import pytest
from django.db import connection

from accounts.models import Account

pytestmark = pytest.mark.django_db


def test_a_statement_run_again_on_a_connection_is_parsed_and_planned_once_by_the_server():
    """Server-side binding lets psycopg prepare a statement after a few uses: the request
    paths' statements are then planned once per connection, not at every request."""
    for _ in range(8):
        list(Account.objects.filter(pk=0))
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        prepared = [row[0] for row in cursor.fetchall()]
    assert any('FROM "accounts_account"' in statement for statement in prepared), prepared
