"""Site pages: countries → operators → products, promotion badges, the phone-number finder."""

from datetime import timedelta

import pytest
from django.utils import timezone

from tests.factories import OperatorFactory, ProductFactory, PromotionFactory, make_country

pytestmark = pytest.mark.django_db


@pytest.fixture
def telcel():
    mexico = make_country("MX", "Mexico", "+52", "MXN", translations={"es": {"name": "México"}})
    return OperatorFactory(country=mexico, slug="telcel", name="Telcel", carrier_names=["Telcel"])


@pytest.fixture
def mtn():
    nigeria = make_country("NG", "Nigeria", "+234", "NGN")
    return OperatorFactory(country=nigeria, slug="mtn", name="MTN", carrier_names=["MTN"])


def page(client, url, **headers):
    response = client.get(url, **headers)
    assert response.status_code == 200, response.status_code
    return response.content.decode()


def test_home_page_links_to_the_catalog_and_the_finder(client):
    html = page(client, "/")
    assert 'href="/catalog/"' in html
    assert 'action="/catalog/find/"' in html


def test_catalog_index_lists_countries_and_a_phone_box_without_login(client, telcel, mtn):
    html = page(client, "/catalog/")
    assert 'href="/catalog/MX/"' in html and 'href="/catalog/NG/"' in html
    assert 'name="phone"' in html and 'action="/catalog/find/"' in html


def test_country_page_lists_its_operators_with_product_counts(client, telcel, mtn):
    ProductFactory(operator=telcel)
    ProductFactory(operator=telcel)
    html = page(client, "/catalog/MX/")
    assert 'href="/catalog/MX/telcel/"' in html
    assert "2 top-ups" in html
    assert "/catalog/NG/mtn/" not in html


def test_operator_page_shows_products_with_promotion_badges_and_details(client, telcel):
    now = timezone.now()
    active = ProductFactory(operator=telcel, name="Telcel 100 MXN")
    soon = ProductFactory(operator=telcel, name="Telcel 200 MXN")
    plain = ProductFactory(operator=telcel, name="Telcel 300 MXN")
    PromotionFactory(operator=telcel, products=[active], name="Double now", terms="Fine print")
    PromotionFactory(
        operator=telcel, products=[soon], name="Triple soon", starts_at=now + timedelta(hours=5)
    )
    html = page(client, "/catalog/MX/telcel/")
    for product in (active, soon, plain):
        assert product.name in html and product.public_id in html
    assert "Double now" in html and "Fine print" in html and "Triple soon" in html
    assert html.count('class="badge">Promotion') == 2  # the promotion card and the product
    assert html.count('class="badge warn">Starting soon') == 2


def test_pages_show_catalog_texts_in_the_request_language(client, telcel):
    ProductFactory(operator=telcel, name="Data", translations={"es": {"name": "Datos"}})
    assert "México" in page(client, "/catalog/", HTTP_ACCEPT_LANGUAGE="es")
    assert "Datos" in page(client, "/catalog/MX/telcel/", HTTP_ACCEPT_LANGUAGE="es")
    assert "Datos" not in page(client, "/catalog/MX/telcel/", HTTP_ACCEPT_LANGUAGE="en")


def test_finder_shows_the_detected_operator_first(client, mtn):
    other = OperatorFactory(country=mtn.country, slug="glo", name="Glo")
    html = page(client, "/catalog/find/?phone=%2B2348031234567&choose=1")
    assert "+2348031234567" in html
    assert html.index("/catalog/NG/mtn/") < html.index(f"/catalog/NG/{other.slug}/")
    assert "Detected operator" in html


def test_finder_without_operator_data_lets_the_user_choose(client, telcel):
    html = page(client, "/catalog/find/?phone=%2B525512345678")
    assert "We cannot tell the operator" in html
    assert "/catalog/MX/telcel/" in html


def test_finder_explains_an_invalid_number(client, telcel):
    html = page(client, "/catalog/find/?phone=5512345678")
    assert 'class="error"' in html and "plus sign" in html


def test_finder_for_a_country_we_do_not_serve_says_so(client, telcel):
    assert "We do not sell top-ups for this country yet" in page(
        client, "/catalog/find/?phone=%2B4915112345678"
    )


def test_lowercase_country_code_redirects_and_unknown_pages_are_404(client, telcel):
    assert client.get("/catalog/mx/").url == "/catalog/MX/"
    assert client.get("/catalog/ZZ/").status_code == 404
    assert client.get("/catalog/MX/nobody/").status_code == 404
    assert client.get("/catalog/mx/telcel/").status_code == 404


def test_operator_page_query_count_does_not_grow_with_products(
    client, telcel, django_assert_max_num_queries
):
    products = [ProductFactory(operator=telcel) for _ in range(3)]
    PromotionFactory(operator=telcel, products=products[:1])
    with django_assert_max_num_queries(6):
        page(client, "/catalog/MX/telcel/")
    more = [ProductFactory(operator=telcel) for _ in range(30)]
    PromotionFactory(operator=telcel, products=more)
    with django_assert_max_num_queries(6):
        page(client, "/catalog/MX/telcel/")
