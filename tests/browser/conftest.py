"""Playwright with Debian's Chromium against ``live_server`` and a real localstripe.

Never downloads a browser: it uses /usr/bin/chromium (``CHROMIUM`` overrides). A screenshot
of every test's last page goes to test-artifacts/ (also on failure).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.card_support import (
    stripe_settings,
)

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium_path() -> str | None:
    for candidate in (os.environ.get("CHROMIUM"), "/usr/bin/chromium", "chromium"):
        if candidate and (Path(candidate).exists() or shutil.which(candidate)):
            return candidate if Path(candidate).exists() else shutil.which(candidate)
    return None


@pytest.fixture(scope="module")
def browser():
    """Chromium for one module. Playwright's sync API keeps an event loop on the test thread
    while it runs; the ORM calls of these tests stay synchronous and safe, so Django's async
    guard is lifted for the module only (and the loop is gone before other tests run)."""
    sync_api = pytest.importorskip("playwright.sync_api")
    executable = chromium_path()
    if executable is None:
        pytest.fail("Chromium is missing: scripts/setup.sh installs it (apt-get install chromium)")
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_api.sync_playwright() as playwright:
            launched = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
            yield launched
            launched.close()
    finally:
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


@pytest.fixture
def site(live_server, settings, localstripe):
    """The live server, wired to localstripe like ``make run`` does."""
    stripe_settings(settings, localstripe)
    settings.TASKS_IN_PROCESS_THREADED = False
    return live_server


@pytest.fixture
def page(browser, request):
    context = browser.new_context(locale="en-US", viewport={"width": 412, "height": 915})
    context.set_default_timeout(10_000)
    tab = context.new_page()
    yield tab
    ARTIFACTS.mkdir(exist_ok=True)
    try:
        tab.screenshot(path=str(ARTIFACTS / f"{request.node.name}.png"), full_page=True)
    finally:
        context.close()
