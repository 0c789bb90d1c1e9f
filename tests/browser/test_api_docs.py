"""The interactive API documentation renders in a real browser under our CSP (issue 17, #1)."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_api_docs_page_shows_the_operations_list_in_a_browser(site, page):
    blocked: list[str] = []
    page.on(
        "console", lambda msg: blocked.append(msg.text) if "Content Security" in msg.text else None
    )
    page.goto(f"{site.url}/api/v1/docs/")
    page.wait_for_selector(".opblock-summary", timeout=20_000)  # one row per operation
    assert page.locator(".opblock-summary").count() > 20
    assert "/api/v1/api-access/b2b/recharges" in page.content()
    assert blocked == []
