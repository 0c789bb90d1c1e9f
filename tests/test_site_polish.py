"""What a person meets on the pages, second pass (issue 32, defects 6 and 7), server side: a
favicon; a batch's confirmation names its products; the request log to the second, its paths
wrapping after a slash; the team's roles in full; the wallet's chart across its page; numbers
and headings as Spanish writes them. The phone widths are in tests/browser/test_phone_width.py."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from decimal import Decimal
from html.parser import HTMLParser
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.staticfiles import finders
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.utils import translation

from accounts.forms import ROLE_CHOICES
from accounts.services import account_set_b2b
from catalog.demo import demo_products
from catalog.demo_data import OPERATORS
from requestlog.models import ApiRequest
from tests.factories import OperatorFactory, ProductFactory, UserFactory, make_country, make_key
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


def test_a_batch_confirmation_names_its_products_not_their_ids(shop, telcel):
    rows = "recipientNumber,operator,amount,quantity,reference\n" + "\n".join(
        f"+52551234567{n},MX/telcel,100,1,payroll-{n}" for n in range(3)
    )
    upload = SimpleUploadedFile("payroll.csv", rows.encode(), content_type="text/csv")
    response = client_in(shop, "es").post("/batches/upload/", {"file": upload})
    assert response.status_code == 200
    html = response.content.decode()
    assert html.count('data-testid="batch-product">Telcel 100 MXN de saldo<') == 3
    assert "prd_" not in html


def test_a_running_batchs_progress_is_a_number_the_browser_reads_in_every_language(shop, telcel):
    """Spanish writes a half as 0,5: a <progress value="0,5"> would show an empty bar."""
    rows = "recipientNumber,operator,amount\n" + "\n".join(
        f"+52551234567{n},MX/telcel,100" for n in range(2)
    )
    client = client_in(shop, "es")
    upload = SimpleUploadedFile("two.csv", rows.encode(), content_type="text/csv")
    token = client.post("/batches/upload/", {"file": upload}).context["token"]
    page = client.post("/batches/confirm/", {"token": token}, follow=True)
    html = page.content.decode()
    value = re.search(r'<progress id="batch-progress"[^>]* value="([^"]*)"', html).group(1)
    assert "," not in value and 0 <= float(value) <= 1


def test_the_request_log_shows_seconds_and_wraps_paths_only_after_a_slash(shop):
    key, _plaintext = make_key(shop, mode="live", name="Shop")
    entry = ApiRequest.objects.create(
        account=shop.account, api_key=key, livemode=True, method="POST",
        path="/api/v1/orders/ord_01JDX4V7Q8ZK3M2N5P6R/recharges", status=201, latency_ms=5,
        request_id="req_seconds",
    )  # fmt: skip
    ApiRequest.objects.filter(pk=entry.pk).update(
        created_at=datetime.now(UTC).replace(hour=9, minute=41, second=7, microsecond=0)
    )
    listing = f"/accounts/keys/{key.public_id}/requests/"
    detail = f"{listing}{entry.public_id}/"
    for language, moment in (("en", "9:41:07 a.m."), ("es", "09:41:07"), ("fr", "09:41:07")):
        client = client_in(shop, language)
        for url in (listing, detail):
            html = client.get(url).content.decode()
            assert moment in html, (language, url)
            assert (
                '<code class="path">POST /<wbr>api/<wbr>v1/<wbr>orders/<wbr>'
                "ord_01JDX4V7Q8ZK3M2N5P6R/<wbr>recharges</code>" in html
            ), url
            assert "wrap-anywhere" not in html


def test_the_team_invitation_shows_each_role_in_full(shop):
    html = client_in(shop, "es").get("/accounts/team/").content.decode()
    invite = html[html.index('action="/accounts/team/invite/"') :]
    assert '<select name="role"' not in invite
    radios = re.findall(r'<input type="radio" name="role" value="(\w+)"', invite)
    assert radios == ["owner", "developer", "finance"]
    with translation.override("es"):
        assert all(str(label) in invite for _value, label in ROLE_CHOICES)


def test_the_wallets_monthly_chart_takes_the_width_of_its_page(shop):
    html = client_in(shop).get("/wallet/").content.decode()
    svg = html[html.index("<svg") : html.index("</svg>")]
    assert 'width="100%"' in svg and "viewBox" not in svg  # no drawing scaled into a corner
    lefts = [float(x) for x in re.findall(r'<rect class="chart-credit" x="([\d.]+)%"', svg)]
    assert lefts and all(0 < x < 100 for x in lefts)
    css = Path(finders.find("css/site.css")).read_text()
    rule = re.search(r"\.month-chart \{[^}]*\}", css).group(0)
    assert "max-width" not in rule


# -- defect 7 ---------------------------------------------------------------------------------


def test_the_demo_data_products_write_their_allowance_as_each_language_does():
    telcel = next(o for o in OPERATORS if o.slug == "telcel" and o.country == "MX")
    data = {p["sku"]: p for p in demo_products(telcel) if p["product_type"] == "data"}
    product = data["DEMO-MX-TELCEL-DATA-50"]
    assert product["description"].startswith("1.5 GB of mobile data")
    es, fr = product["translations"]["es"], product["translations"]["fr"]
    assert es["description"].startswith("1,5 GB de datos") and "1,5 GB" in es["name"]
    assert fr["description"].startswith("1,5 Go de données") and "1,5 Go" in fr["name"]
    airtel = next(o for o in OPERATORS if o.slug == "airtel" and o.country == "IN")
    daily = next(p for p in demo_products(airtel) if "/day" in p["description"])
    assert "1,5 GB/día" in daily["translations"]["es"]["description"]
    nigeria = next(o for o in OPERATORS if o.country == "NG")
    thousand = next(p for p in demo_products(nigeria) if p["local_amount"] == 1000)
    assert thousand["description"].startswith("1,000 NGN")
    assert not thousand["translations"]["es"]["description"].startswith("1,000")  # a one


def test_the_wallets_amounts_are_written_as_the_language_does(shop):
    spanish = client_in(shop, "es").get("/wallet/").content.decode()
    assert re.search(r'id="card-amount"[^>]* value="20,00"', spanish)
    assert re.search(r'id="bank-amount"[^>]* placeholder="100,00"', spanish)
    assert 'data-decimal-separator=","' in spanish
    english = client_in(shop).get("/wallet/").content.decode()
    assert re.search(r'id="card-amount"[^>]* value="20.00"', english)
    assert 'type="number"' not in spanish  # a number field would show the browser's format


def test_a_spanish_threshold_is_read_and_told_with_a_decimal_comma(shop):
    client = client_in(shop, "es")
    response = client.post("/wallet/threshold/", {"threshold": "50,50"}, follow=True)
    assert "50,50 EUR" in response.content.decode()
    response = client.post("/wallet/threshold/", {"threshold": "-1"}, follow=True)
    assert "100,00." in response.content.decode()  # "such as 100,00."


class _Headings(HTMLParser):
    """The texts a page shows as titles: headings, legends, table heads, navigation links."""

    TAGS = {"h1", "h2", "h3", "h4", "legend", "th", "summary"}

    def __init__(self) -> None:
        super().__init__()
        self.open: list[list[str]] = []
        self.in_nav = 0
        self.texts: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag == "nav":
            self.in_nav += 1
        if tag in self.TAGS or (tag == "a" and self.in_nav):
            self.open.append([])

    def handle_endtag(self, tag):
        if tag == "nav":
            self.in_nav -= 1
        if (tag in self.TAGS or (tag == "a" and self.in_nav)) and self.open:
            text = " ".join("".join(self.open.pop()).split())
            if text:
                self.texts.append(text)

    def handle_data(self, data):
        for parts in self.open:
            parts.append(data)


def test_spanish_headings_and_navigation_start_with_a_capital(shop, telcel):
    key, _plaintext = make_key(shop, mode="live", name="Tienda")
    client = client_in(shop, "es")
    lowercase = []
    for url in (
        "/",
        "/catalog/",
        "/catalog/MX/",
        "/catalog/MX/telcel/",
        "/accounts/profile/",
        "/accounts/password/",
        "/accounts/keys/",
        "/accounts/keys/new/",
        f"/accounts/keys/{key.public_id}/",
        f"/accounts/keys/{key.public_id}/requests/",
        "/accounts/webhooks/",
        "/accounts/team/",
        "/batches/",
        "/wallet/",
        "/wallet/statement/",
        "/cart/",
        "/payments/",
        "/recipients/",
    ):
        response = client.get(url)
        assert response.status_code == 200, url
        assert '<html lang="es">' in response.content.decode(), url
        parser = _Headings()
        parser.feed(response.content.decode())
        lowercase += [(url, text) for text in parser.texts if text[0].islower()]
    assert lowercase == []
