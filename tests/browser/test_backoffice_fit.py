"""Issue 43, item 8, as staff see it in Chromium at 1280 px: the recharges and providers lists
fit beside the navigation (and the recharges' filters) with no column off to the right, in
English and Spanish."""

from __future__ import annotations

from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import call_command

from tests.browser.staff_support import shot, sign_in
from tests.factories import ProductFactory, UserFactory
from tests.helpers import REJECTS, fund, place, process
from upstreams.models import Provider
from upstreams.services import provider_balance_refresh

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# The list's table against the box it scrolls in: wider means columns hidden to the right.
TABLE_FITS = """() => {
  const box = document.querySelector('#changelist .results');
  const table = document.querySelector('#result_list');
  return [table.getBoundingClientRect().right, box.getBoundingClientRect().right,
          box.scrollWidth, box.clientWidth];
}"""
# What each list must show in its rows, by language.
LISTS = {
    "/admin/recharges/recharge/": {
        "en": ["+525512345678", "5.00 EUR", "Delivered", "via simulator", "invalid_recipient"],
        "es": ["+525512345678", "5,00 EUR", "Entregada", "vía simulator", "invalid_recipient"],
    },
    "/admin/upstreams/provider/": {
        "en": ["sim-a", "1000000.00 EUR"],
        "es": ["sim-a", "1000000,00 EUR"],
    },
}


@pytest.mark.parametrize("language", ["en", "es"])
def test_the_recharges_and_providers_lists_fit_1280_px_beside_the_navigation(
    browser, site, language
):
    shop = UserFactory(account__name="Distribuidora de Recargas del Norte S.A.")
    fund(shop, "100.00")
    product = ProductFactory(retail_price=Decimal("5.00"))
    process(place(shop, product, quantity=3))
    process(place(shop, product, number=REJECTS))
    call_command("create_provider", "--name", "sim-a", "--kind", "simulator", stdout=StringIO())
    provider_balance_refresh(provider=Provider.objects.get(name="sim-a"))
    context, page = sign_in(browser, site, width=1280, language=language)
    try:
        for path, shown in LISTS.items():
            page.goto(f"{site.url}{path}")
            shot(page, f"backoffice-fit-{path.strip('/').replace('/', '-')}-{language}-1280")
            assert page.locator("#nav-sidebar").is_visible()  # the navigation stays
            table_right, box_right, scroll, width = page.evaluate(TABLE_FITS)
            assert table_right <= box_right + 1 and scroll <= width, (path, scroll, width)
            headers = page.locator("#result_list thead th")
            for index in range(headers.count()):
                box = headers.nth(index).bounding_box()
                assert box is not None and box["x"] + box["width"] <= 1280, (path, index)
            rows = page.locator("#result_list tbody").inner_text().replace("\u200b", "")
            rows = rows.replace("_\n", "_")  # a code wrapped after its underscore
            for text in shown[language]:
                assert text in rows, (path, text)
    finally:
        context.close()


# Every table of the page against the page's width: nothing to scroll sideways to.
TABLES_FIT = """() => [...document.querySelectorAll('#content-main table')].map(table => {
  const box = table.parentElement;
  return [box.scrollWidth, box.clientWidth, table.getBoundingClientRect().right];
})"""


@pytest.mark.parametrize("language", ["en", "es"])
def test_the_margin_pages_tables_fit_a_390_px_phone(browser, site, language):
    """Seen on the issue 43 screenshots: at 390 px the margin table lost its margin columns and
    the floats table the provider's balance off to the right. Each row is now a box."""
    shop = UserFactory()
    fund(shop, "100.00")
    call_command("create_provider", "--name", "sim-a", "--kind", "simulator", stdout=StringIO())
    provider_balance_refresh(provider=Provider.objects.get(name="sim-a"))
    process(place(shop, ProductFactory(retail_price=Decimal("5.00")), quantity=2))
    context, page = sign_in(browser, site, width=390, language=language)
    try:
        page.goto(f"{site.url}/admin/margin/")
        shot(page, f"backoffice-margin-{language}-390")
        tables = page.evaluate(TABLES_FIT)
        assert len(tables) == 2
        for scroll, width, right in tables:
            assert scroll <= width and right <= 390, tables
        # Each figure is said after its heading's words (the cell's label, shown before it).
        label = "Saldo en el proveedor" if language == "es" else "Balance at the provider"
        cell = page.locator(f'[data-testid=float-row] td[data-label="{label}"]').first
        assert "1000000" in cell.inner_text()
        shown = cell.evaluate("cell => getComputedStyle(cell, '::before').content")
        assert shown == f'"{label}: "', shown
    finally:
        context.close()


# The lines a command's text takes (the distinct tops of its text's boxes), whether it
# overflows its box (and so scrolls), and the page's width against the window's.
COMMAND_LINES = """() => {
  const code = document.querySelector('[data-testid=fund-command]');
  const range = document.createRange();
  range.selectNodeContents(code);
  const tops = new Set([...range.getClientRects()].map(r => Math.round(r.top)));
  return [code.textContent, tops.size, getComputedStyle(code).overflowX,
          document.documentElement.scrollWidth, window.innerWidth];
}"""


@pytest.mark.parametrize(
    ("language", "command"),
    [("en", "python manage.py fund_provider --provider NAME --amount AMOUNT --currency CUR"),
     ("es", "python manage.py fund_provider --provider NOMBRE --amount IMPORTE --currency MONEDA")],
)  # fmt: skip
@pytest.mark.parametrize("width", [1280, 390])
def test_the_margin_pages_command_is_never_broken_inside(browser, site, language, command, width):
    """Seen on the issue 43 screenshots: the fund_provider command wrapped in the middle of an
    option. It is on a line of its own, whole, and scrolls sideways on a phone rather than
    push the page wider than the screen."""
    context, page = sign_in(browser, site, width=width, language=language)
    try:
        page.goto(f"{site.url}/admin/margin/")
        shot(page, f"backoffice-margin-command-{language}-{width}")
        text, lines, overflow, page_width, window = page.evaluate(COMMAND_LINES)
        assert text == command and lines == 1, (text, lines)
        assert overflow == "auto" and page_width <= window, (overflow, page_width, window)
    finally:
        context.close()
