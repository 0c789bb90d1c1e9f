"""What a person meets on the pages, second pass (issue 32, defects 6 and 7), server side: a
favicon; a batch's confirmation names its products; the request log to the second, its paths
wrapping after a slash; the team's roles in full; the wallet's chart across its page; numbers
and headings as Spanish writes them. The phone widths are in tests/browser/test_phone_width.py."""

from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.staticfiles import finders
from django.test import Client

from accounts.services import account_set_b2b
from tests.factories import OperatorFactory, ProductFactory, UserFactory, make_country
from tests.helpers import fund

pytestmark = pytest.mark.django_db

NUMBER = "+525512345678"


def client_in(user, language: str = "en") -> Client:
    client = Client()
    client.force_login(user)
    client.cookies[settings.LANGUAGE_COOKIE_NAME] = language
    return client


@pytest.fixture
def shop():
    user = UserFactory(email="owner@example.com")
    account_set_b2b(account=user.account, is_b2b=True)
    fund(user, "500.00")
    return user


@pytest.fixture
def telcel():
    mexico = make_country("MX", "Mexico", "+52", "MXN")
    operator = OperatorFactory(country=mexico, slug="telcel", name="Telcel")
    ProductFactory(
        operator=operator, retail_price=Decimal("1.00"), local_amount=Decimal("100"),
        product_type="airtime", name="Telcel 100 MXN",
        translations={"es": {"name": "Telcel 100 MXN de saldo"}},
    )  # fmt: skip
    return operator


# -- defect 6 ---------------------------------------------------------------------------------


def test_the_favicon_is_served_at_favicon_ico_and_linked_from_every_page(client):
    response = client.get("/favicon.ico")
    assert response.status_code == 301 and response["Location"].endswith(".ico")
    icon = Path(finders.find("favicon.ico"))
    assert icon.read_bytes()[:4] == b"\x00\x00\x01\x00"  # an ICO file, not a renamed PNG
    assert Path(finders.find("favicon.svg")).read_text().startswith("<svg")
    html = client.get("/").content.decode()
    assert re.search(r'<link rel="icon" href="[^"]*favicon[^"]*\.svg" type="image/svg\+xml">', html)
    assert re.search(r'<link rel="icon" href="[^"]*favicon[^"]*\.ico"', html)
    assert 'rel="apple-touch-icon"' in html
