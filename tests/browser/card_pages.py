"""What the browser tests of card payments share: logging in (in a language), a cart of the
Telcel product on its way to the checkout, and typing a card into localstripe's form key by
key, as a person does."""

from __future__ import annotations

import re

from tests.card_support import VISA
from tests.factories import PASSWORD

NUMBER = "+525512345678"
CARD = "#card-element input[placeholder={}]"


def log_in(page, site, user, language="en"):
    if language != "en":
        page.context.add_cookies([{"name": "django_language", "value": language, "url": site.url}])
    page.goto(f"{site.url}/accounts/login/")
    page.fill("input[name=username]", user.email)
    page.fill("input[name=password]", PASSWORD)
    page.click("main button[type=submit]")
    page.wait_for_url(re.compile(r"/accounts/profile/|/$"))


def to_checkout(page, site, catalog, quantity=3):
    page.goto(f"{site.url}/catalog/MX/telcel/")
    page.fill("input[name=recipient_number]", NUMBER)
    page.fill(".add-to-cart input[name=quantity]", str(quantity))
    page.click(".add-to-cart button[type=submit]")
    page.wait_for_url(re.compile(r"/cart/$"))
    page.goto(f"{site.url}/checkout/")


def type_card(page, number=VISA, month="12", year="34", cvc="123"):
    """As a person types it, key by key (localstripe's form moves on by itself)."""
    for name, value in (("number", number), ("exp_month", month), ("exp_year", year)):
        page.click(CARD.format(name))
        page.keyboard.type(value)
    page.fill(CARD.format("cvc"), cvc)
    page.fill(CARD.format("postal_code"), "42424")
