"""An agent of a reseller network shops on the site (contract section 18: "The catalog, quotes,
carts and orders of an agent show its own price"), in Chromium, in English at 1280 px and in
Spanish at 390 px: the operator's page shows it its own price (its parent's list marks the
catalog up 7 %) on a fixed product's card and a range product's "from", the amount it types
is priced the same way, and the cart charges exactly that. Each page is kept in
test-artifacts/ (agent-prices-*.png)."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest

from accounts.models import Account
from network.price_lists import RuleSpec, price_list_assign, price_list_create
from tests.browser.card_pages import log_in
from tests.browser.conftest import ARTIFACTS
from tests.browser.test_buy_now_logged_out import no_sideways_scroll
from tests.factories import (
    OperatorFactory,
    ProductFactory,
    RangeProductFactory,
    UserFactory,
    make_country,
)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PHONE = "%2B525512345678"

# Retail: 4.99 EUR, and A / 20 + 0.50 EUR (10 MXN: 1.00; 150 MXN: 8.00). The agent: + 7 %,
# rounded up to the cent: 5.34, 1.07 and 8.56; the cart: 5.34 + 8.56 = 13.90.
WORDS = {
    "en": {
        "fixed": "5.34 EUR",
        "from": "from 1.07 EUR",
        "typed": "You pay 8.56 EUR",
        "total": "13.90 EUR",
    },
    "es": {
        "fixed": "5,34 EUR",
        "from": "desde 1,07 EUR",
        "typed": "Pagas 8,56 EUR",
        "total": "13,90 EUR",
    },
}


@pytest.fixture
def telcel(db):
    mexico = make_country("MX", "Mexico", "+52", "MXN", translations={"es": {"name": "México"}})
    operator = OperatorFactory(country=mexico, name="Telcel", slug="telcel", prefixes=["55"])
    fixed = ProductFactory(
        operator=operator,
        name="Telcel 100 MXN",
        retail_price=Decimal("4.99"),
        local_amount=Decimal("100"),
        local_currency="MXN",
    )
    ranged = RangeProductFactory(  # 10 to 1,000 MXN by 1; A / 20 + 0.50 EUR
        operator=operator,
        name="Telcel any amount",
        range_max=Decimal("1000.00"),
        range_step=Decimal("1.00"),
    )
    return fixed, ranged


def an_agent(language: str):
    """The owner of an agent at level 2, priced by its parent's list (MX + 7 %)."""
    top = Account.objects.create(name=f"Distribuidora {language}")
    agent = Account.objects.create(
        name=f"Tienda {language}", parent=top, depth=2, wallet_currency=top.wallet_currency
    )
    markup = price_list_create(
        owner=top, name="Agents", rules=[RuleSpec(markup_percent=Decimal(7), country="MX")]
    )
    price_list_assign(account=agent, price_list=markup)
    return UserFactory(
        email=f"agent-{language}@example.com", account=agent, role="owner", language=language
    )


def shot(page, name: str, width: int) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    no_sideways_scroll(page)
    page.screenshot(path=str(ARTIFACTS / f"agent-prices-{name}-{width}.png"), full_page=True)


@pytest.mark.parametrize(("language", "width", "height"), [("en", 1280, 800), ("es", 390, 844)])
def test_an_agent_sees_its_own_price_on_the_operators_page_and_in_the_cart(
    browser, site, telcel, language, width, height
):
    fixed, ranged = telcel
    words = WORDS[language]
    agent = an_agent(language)
    context = browser.new_context(locale=language, viewport={"width": width, "height": height})
    context.set_default_timeout(15_000)
    page = context.new_page()
    try:
        log_in(page, site, agent, language)
        page.goto(f"{site.url}/catalog/MX/telcel/?phone={PHONE}")
        fixed_card = f"li.product[id='{fixed.public_id}']"
        range_card = f"li.product[id='{ranged.public_id}']"
        assert page.inner_text(f"{fixed_card} .price").strip() == words["fixed"]
        assert page.inner_text(f"{range_card} .price").strip() == words["from"]

        page.locator(f"{range_card} input[name=local_amount]").press_sequentially("150", delay=40)
        page.wait_for_function(
            "([card, text]) => document.querySelector(card + ' .amount-price').textContent"
            " === text",
            arg=[range_card, words["typed"]],
        )
        shot(page, f"operator-{language}", width)

        page.click(f"{range_card} form.add-to-cart button[type=submit]:not([name])")
        page.wait_for_url(re.compile(r"/cart/$"))
        page.goto(f"{site.url}/catalog/MX/telcel/?phone={PHONE}")
        page.click(f"{fixed_card} form.add-to-cart button[type=submit]:not([name])")
        page.wait_for_url(re.compile(r"/cart/$"))
        lines = page.inner_text("main")
        assert words["fixed"].split()[0] in lines and words["typed"].split()[-2] in lines
        assert page.inner_text("[data-testid=quote-total]").strip() == words["total"]
        assert page.evaluate("document.documentElement.lang") == language
        shot(page, f"cart-{language}", width)
    finally:
        context.close()
