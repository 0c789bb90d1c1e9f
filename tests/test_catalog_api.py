"""Catalog API: countries, operators, recharge products, filters, envelope, translations."""

from decimal import Decimal

import pytest

from catalog.models import Product
from tests.factories import (
    CountryFactory,
    OperatorFactory,
    ProductFactory,
    PromotionFactory,
    make_country,
)
from tests.helpers import assert_problem

pytestmark = pytest.mark.django_db

COUNTRIES = "/api/v1/catalog/countries"
OPERATORS = "/api/v1/catalog/operators"
PRODUCTS = "/api/v1/catalog/recharge-products"


def error_fields(response) -> dict[str, str]:
    body = assert_problem(response, 400, "validation_error")
    return {error["field"]: error["code"] for error in body["errors"]}


def ids(response) -> list[str]:
    assert response.status_code == 200, response.content
    return [item["id"] for item in response.json()["results"]]


@pytest.fixture
def mexico():
    return CountryFactory()


@pytest.fixture
def nigeria():
    return make_country("NG", "Nigeria", "+234", "NGN")


@pytest.mark.parametrize("path", [COUNTRIES, OPERATORS, PRODUCTS, f"{PRODUCTS}/prd_x"])
def test_catalog_endpoints_require_authentication(api, path):
    assert_problem(api.get(path), 401, "not_authenticated")


def test_countries_list_has_the_envelope_and_the_country_shape(user_api, mexico):
    OperatorFactory(country=mexico)
    body = user_api.get(COUNTRIES).json()
    assert set(body) == {"results", "count", "page", "limit", "next", "previous"}
    assert body["count"] == 1
    assert body["results"] == [
        {"code": "MX", "name": "Mexico", "callingCode": "+52", "currency": "MXN", "flag": "🇲🇽"}
    ]


def test_countries_without_an_active_operator_or_inactive_are_not_listed(user_api, mexico):
    OperatorFactory(country=mexico, active=False)
    OperatorFactory(country=make_country("CO", "Colombia", "+57", "COP", active=False))
    assert user_api.get(COUNTRIES).json()["count"] == 0


def test_operators_filter_by_country_is_case_insensitive(user_api, mexico, nigeria):
    telcel = OperatorFactory(country=mexico, name="Telcel")
    OperatorFactory(country=nigeria, name="MTN")
    response = user_api.get(OPERATORS, {"country": "mx"})
    assert ids(response) == [telcel.public_id]
    item = response.json()["results"][0]
    assert item == {
        "id": telcel.public_id,
        "name": "Telcel",
        "country": "MX",
        "color": "#123456",
        "logoUrl": None,
        "detected": False,
        "detectedBy": None,
    }


def test_operators_unknown_country_is_400_naming_country(user_api, mexico):
    assert error_fields(user_api.get(OPERATORS, {"country": "ZZ"})) == {"country": "invalid_choice"}


def test_products_have_the_documented_shape_with_money_as_strings(user_api, mexico):
    product = ProductFactory(
        operator__country=mexico,
        operator__name="Telcel",
        name="Telcel 100 MXN",
        local_amount=Decimal("100"),
        retail_price=Decimal("5.2"),
        validity_days=30,
    )
    body = user_api.get(PRODUCTS).json()
    assert body["results"] == [
        {
            "id": product.public_id,
            "name": "Telcel 100 MXN",
            "description": "",
            "type": "airtime",
            "operator": {"id": product.operator.public_id, "name": "Telcel"},
            "country": "MX",
            "denomination": "fixed",
            "localAmount": "100.00",
            "localCurrency": "MXN",
            "price": "5.20",
            "currency": "EUR",
            "range": None,
            "pricing": None,
            "requiredFields": [],
            "validity": "P30D",
            "validityDays": 30,
            "benefits": [],
            "promotion": None,
        }
    ]


def test_products_filter_by_country(user_api, mexico, nigeria):
    mx = ProductFactory(operator__country=mexico)
    ProductFactory(operator__country=nigeria)
    assert ids(user_api.get(PRODUCTS, {"country": "MX"})) == [mx.public_id]


def test_products_filter_by_operator(user_api, mexico):
    telcel = OperatorFactory(country=mexico)
    wanted = ProductFactory(operator=telcel)
    ProductFactory(operator__country=mexico)
    assert ids(user_api.get(PRODUCTS, {"operator": telcel.public_id})) == [wanted.public_id]


def test_products_unknown_operator_or_country_is_400_naming_each(user_api, mexico):
    response = user_api.get(PRODUCTS, {"operator": "opr_nope", "country": "QQ"})
    assert error_fields(response) == {"operator": "invalid_choice", "country": "invalid_choice"}


def test_products_filter_by_type(user_api, mexico):
    ProductFactory(operator__country=mexico, product_type="airtime")
    data = ProductFactory(operator__country=mexico, product_type="data")
    assert ids(user_api.get(PRODUCTS, {"type": "data"})) == [data.public_id]
    assert error_fields(user_api.get(PRODUCTS, {"type": "sms"})) == {"type": "invalid_choice"}


def test_products_price_range_is_inclusive(user_api, mexico):
    prices = ["1.00", "4.99", "5.00", "10.00", "10.01"]
    made = {p: ProductFactory(operator__country=mexico, retail_price=Decimal(p)) for p in prices}
    response = user_api.get(PRODUCTS, {"minPrice": "4.99", "maxPrice": "10"})
    assert set(ids(response)) == {made[p].public_id for p in ("4.99", "5.00", "10.00")}


def test_products_min_price_above_max_price_is_400_on_max_price(user_api):
    response = user_api.get(PRODUCTS, {"minPrice": "10", "maxPrice": "5"})
    assert error_fields(response) == {"maxPrice": "invalid_range"}


@pytest.mark.parametrize("value", ["abc", "-1", "1.234", "NaN", "Infinity", "1e400"])
def test_products_malformed_price_is_400_naming_the_parameter(user_api, value):
    assert list(error_fields(user_api.get(PRODUCTS, {"minPrice": value}))) == ["minPrice"]


def test_products_promotion_filter_true_and_false(user_api, mexico):
    promoted = ProductFactory(operator__country=mexico)
    PromotionFactory(operator=promoted.operator, products=[promoted])
    other_of_operator = ProductFactory(operator=promoted.operator)
    operator_wide = ProductFactory(operator__country=mexico)
    PromotionFactory(operator=operator_wide.operator)
    plain = ProductFactory(operator__country=mexico)
    with_promotion = set(ids(user_api.get(PRODUCTS, {"promotion": "true"})))
    assert with_promotion == {promoted.public_id, operator_wide.public_id}
    without = set(ids(user_api.get(PRODUCTS, {"promotion": "false"})))
    assert without == {other_of_operator.public_id, plain.public_id}


@pytest.mark.parametrize("value", ["yes", "1", "TRUE", "maybe"])
def test_products_promotion_filter_accepts_only_true_or_false(user_api, value):
    assert error_fields(user_api.get(PRODUCTS, {"promotion": value})) == {
        "promotion": "invalid_choice"
    }


def test_products_search_matches_product_operator_and_country_names(user_api, mexico, nigeria):
    a = ProductFactory(operator__country=mexico, operator__name="Telcel", name="Big bundle")
    b = ProductFactory(operator__country=nigeria, operator__name="Glo", name="Glo 100")
    assert ids(user_api.get(PRODUCTS, {"q": "telcel"})) == [a.public_id]
    assert ids(user_api.get(PRODUCTS, {"q": "BUNDLE"})) == [a.public_id]
    assert ids(user_api.get(PRODUCTS, {"q": "nigeria"})) == [b.public_id]
    assert ids(user_api.get(PRODUCTS, {"q": "nothing-like-this"})) == []


def test_products_search_matches_names_in_the_request_language(user_api, mexico):
    product = ProductFactory(
        operator__country=mexico, name="Data 2 GB", translations={"es": {"name": "Datos 2 GB"}}
    )
    assert ids(user_api.get(PRODUCTS, {"q": "datos"}, HTTP_ACCEPT_LANGUAGE="es")) == [
        product.public_id
    ]
    assert ids(user_api.get(PRODUCTS, {"q": "méxico"}, HTTP_ACCEPT_LANGUAGE="es")) == [
        product.public_id
    ]


def test_products_search_text_longer_than_100_is_400(user_api):
    assert error_fields(user_api.get(PRODUCTS, {"q": "x" * 101})) == {"q": "max_length"}


def test_products_limit_and_page_walk_the_list_with_links(user_api, mexico):
    operator = OperatorFactory(country=mexico)
    made = [
        ProductFactory(operator=operator, local_amount=Decimal(amount)) for amount in range(1, 6)
    ]
    first = user_api.get(PRODUCTS, {"limit": 2}).json()
    assert (first["count"], first["page"], first["limit"]) == (5, 1, 2)
    assert first["previous"] is None
    assert "page=2" in first["next"] and "limit=2" in first["next"]
    second = user_api.get(first["next"]).json()
    third = user_api.get(second["next"]).json()
    assert third["next"] is None
    seen = [item["id"] for page in (first, second, third) for item in page["results"]]
    assert seen == [p.public_id for p in made]  # catalog order: by face value


def test_products_default_limit_is_20_and_max_is_100(user_api, mexico):
    operator = OperatorFactory(country=mexico)
    Product.objects.bulk_create(
        [ProductFactory.build(operator=operator, country=mexico) for _ in range(25)]
    )
    assert len(user_api.get(PRODUCTS).json()["results"]) == 20
    assert len(user_api.get(PRODUCTS, {"limit": 100}).json()["results"]) == 25
    assert error_fields(user_api.get(PRODUCTS, {"limit": 101})) == {"limit": "max_value"}


@pytest.mark.parametrize("params", [{"page": 0}, {"page": "x"}, {"limit": 0}, {"limit": "ten"}])
def test_products_bad_page_or_limit_is_400(user_api, params):
    assert list(error_fields(user_api.get(PRODUCTS, params))) == list(params)


def test_a_page_past_the_end_is_empty_with_the_count(user_api, mexico):
    ProductFactory(operator__country=mexico)
    body = user_api.get(PRODUCTS, {"page": 9}).json()
    assert (body["results"], body["count"]) == ([], 1)


@pytest.mark.parametrize("path", [COUNTRIES, OPERATORS, PRODUCTS])
def test_unknown_query_parameter_is_400_naming_it(user_api, path):
    assert error_fields(user_api.get(path, {"contry": "MX"})) == {"contry": "unknown_parameter"}


def test_inactive_products_operators_and_countries_are_hidden(user_api, mexico):
    ProductFactory(operator__country=mexico, active=False)
    ProductFactory(operator__country=mexico, operator__active=False)
    ProductFactory(operator__country=make_country("CO", "Colombia", "+57", "COP", active=False))
    shown = ProductFactory(operator__country=mexico)
    assert ids(user_api.get(PRODUCTS)) == [shown.public_id]


def test_product_detail_by_id_and_404_for_unknown_or_withdrawn(user_api, mexico):
    product = ProductFactory(operator__country=mexico)
    withdrawn = ProductFactory(operator__country=mexico, active=False)
    response = user_api.get(f"{PRODUCTS}/{product.public_id}")
    assert response.status_code == 200
    assert response.json()["id"] == product.public_id
    assert_problem(user_api.get(f"{PRODUCTS}/prd_unknown"), 404, "not_found")
    assert_problem(user_api.get(f"{PRODUCTS}/{withdrawn.public_id}"), 404, "not_found")


def test_texts_follow_accept_language_with_english_fallback(user_api, mexico):
    operator = OperatorFactory(country=mexico, name="Telcel")
    product = ProductFactory(
        operator=operator,
        name="Data 1 GB",
        translations={"es": {"name": "Datos 1 GB"}, "fr": {"name": "Données 1 Go"}},
    )
    PromotionFactory(
        operator=operator,
        name="Double",
        description="Twice the data",
        terms="",
        translations={"es": {"name": "Doble", "description": "El doble de datos"}},
    )
    for language, name, promo_name, description, country in [
        ("es", "Datos 1 GB", "Doble", "El doble de datos", "México"),
        ("fr", "Données 1 Go", "Double", "Twice the data", "Mexique"),
        ("de", "Data 1 GB", "Double", "Twice the data", "Mexico"),
    ]:
        response = user_api.get(f"{PRODUCTS}/{product.public_id}", HTTP_ACCEPT_LANGUAGE=language)
        body = response.json()
        assert body["name"] == name
        assert body["promotion"]["name"] == promo_name
        assert body["promotion"]["description"] == description
        assert response["Content-Language"] == ("en" if language == "de" else language)
        countries = user_api.get(COUNTRIES, HTTP_ACCEPT_LANGUAGE=language).json()
        assert countries["results"][0]["name"] == country


def test_product_list_query_count_does_not_grow_with_results(
    user_api, mexico, django_assert_max_num_queries
):
    def add_products(count: int) -> None:
        operator = OperatorFactory(country=mexico)
        products = [ProductFactory(operator=operator) for _ in range(count)]
        PromotionFactory(operator=operator)  # operator-wide
        PromotionFactory(operator=operator, products=products[:2])

    add_products(2)
    # user, the caller's prices (its chain and price lists: one query, docs/network.md), the
    # country of the filter, count, page, promotions, promotion products
    with django_assert_max_num_queries(7):
        small = user_api.get(PRODUCTS, {"limit": 100, "country": "MX"})
    assert len(small.json()["results"]) == 2
    for _ in range(5):
        add_products(12)
    with django_assert_max_num_queries(7):
        large = user_api.get(PRODUCTS, {"limit": 100, "country": "MX"})
    results = large.json()["results"]
    assert len(results) == 62
    assert all(item["promotion"] for item in results)


def test_operator_and_country_lists_query_count_does_not_grow(
    user_api, mexico, django_assert_max_num_queries
):
    for _ in range(30):
        OperatorFactory(country=mexico)
    with django_assert_max_num_queries(4):
        assert len(user_api.get(OPERATORS, {"limit": 100}).json()["results"]) == 30
    # With a phone of a country that ports numbers, one more: the providers that can look it
    # up (docs/catalog.md, "Phone numbers"); none here, so the prefixes answer.
    with django_assert_max_num_queries(5):
        assert len(user_api.get(OPERATORS, {"phone": "+525512345678"}).json()["results"]) == 20
    with django_assert_max_num_queries(3):
        assert user_api.get(COUNTRIES).json()["count"] == 1


def test_schema_documents_the_catalog_endpoints_and_filters(api):
    schema = api.get("/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    products = schema["paths"]["/api/v1/catalog/recharge-products"]["get"]
    names = {p["name"] for p in products["parameters"]}
    expected = {"country", "operator", "type", "promotion", "minPrice", "maxPrice", "q"}
    assert expected | {"page", "limit"} <= names
    assert {"200", "400", "401"} <= set(products["responses"])
    operators = schema["paths"]["/api/v1/catalog/operators"]["get"]
    assert {"country", "phone"} <= {p["name"] for p in operators["parameters"]}
    assert "/api/v1/catalog/countries" in schema["paths"]
