"""Recipient numbers: E.164 with a plus, the product's country, operator detection."""

import pytest
from rest_framework import serializers

from catalog.errors import InvalidPhoneNumber, PhoneCountryMismatch
from catalog.phone import operator_detect, phone_parse, recipient_validate
from catalog.serializers import ProductIdField, RecipientNumberField
from reseller.errors import flatten_validation_errors
from tests.factories import OperatorFactory, ProductFactory, make_country

pytestmark = pytest.mark.django_db

OPERATORS = "/api/v1/catalog/operators"

# country, name, calling code, currency, [(slug, carrier names, prefixes)]
WORLD = [
    ("NG", "Nigeria", "+234", "NGN", [("mtn", ["MTN"], []), ("airtel", ["Airtel"], [])]),
    ("IN", "India", "+91", "INR", [("airtel", ["Airtel"], []), ("jio", ["Reliance Jio"], [])]),
    ("PH", "Philippines", "+63", "PHP", [("globe", ["Globe"], []), ("smart", ["Smart"], [])]),
    (
        "CO",
        "Colombia",
        "+57",
        "COP",
        [("tigo", ["Tigo"], ["300", "301"]), ("claro", ["Claro"], ["310", "311"])],
    ),
    ("GH", "Ghana", "+233", "GHS", [("mtn", ["MTN"], []), ("telecel", ["Telecel"], [])]),
    ("KE", "Kenya", "+254", "KES", [("safaricom", ["Safaricom"], []), ("airtel", ["Airtel"], [])]),
    ("CU", "Cuba", "+53", "CUP", [("cubacel", ["etecsa"], [])]),
    ("DO", "Dominican Republic", "+1", "DOP", [("claro", ["Claro"], []), ("viva", ["Viva"], [])]),
    ("MX", "Mexico", "+52", "MXN", [("telcel", ["Telcel"], []), ("att", ["AT&T"], [])]),
]


@pytest.fixture
def world():
    operators = {}
    for code, name, calling, currency, ops in WORLD:
        country = make_country(code, name, calling, currency)
        for slug, carriers, prefixes in ops:
            operators[(code, slug)] = OperatorFactory(
                country=country,
                slug=slug,
                name=slug.upper(),
                carrier_names=carriers,
                prefixes=prefixes,
            )
    return operators


@pytest.mark.parametrize(
    ("raw", "country", "operator"),
    [
        ("+2348031234567", "NG", "mtn"),
        ("+2348021234567", "NG", "airtel"),
        ("+917012345678", "IN", "jio"),
        ("+639181234567", "PH", "smart"),
        ("+639171234567", "PH", "globe"),
        ("+573001234567", "CO", "tigo"),  # from our prefixes: phonenumbers knows no carrier
        ("+573101234567", "CO", "claro"),
        ("+233201234567", "GH", "telecel"),
        ("+254712123456", "KE", "safaricom"),
        ("+5352123456", "CU", "cubacel"),
        ("+18092201234", "DO", "claro"),
    ],
)
def test_valid_numbers_are_parsed_and_their_operator_detected(world, raw, country, operator):
    phone = phone_parse(raw)
    assert (phone.e164, phone.country) == (raw, country)
    assert operator_detect(phone=phone) == [world[(country, operator)]]


@pytest.mark.parametrize("raw", ["+525512345678", "+18299876543"])
def test_valid_number_without_operator_data_detects_no_operator(world, raw):
    assert operator_detect(phone=phone_parse(raw)) == []


def test_our_prefixes_win_over_the_carrier_name_of_the_library(world):
    moved = world[("NG", "airtel")]
    moved.prefixes = ["803"]  # staff know this range moved to Airtel
    moved.save()
    assert operator_detect(phone=phone_parse("+2348031234567")) == [moved]


def test_the_longest_matching_prefix_wins(world):
    tigo, claro = world[("CO", "tigo")], world[("CO", "claro")]
    claro.prefixes = ["3001"]
    claro.save()
    assert operator_detect(phone=phone_parse("+573001234567")) == [claro]
    assert operator_detect(phone=phone_parse("+573009234567")) == [tigo]


def test_separators_are_accepted_and_the_number_normalised_to_e164():
    phone = phone_parse("  +52 (55) 1234-5678 ")
    assert phone.e164 == "+525512345678"
    assert (phone.country, phone.calling_code, phone.national_number) == ("MX", 52, "5512345678")


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        ("525512345678", "plus sign"),
        ("00525512345678", "plus sign"),
        ("+1 800 FLOWERS", "only digits"),
        ("+52 55 12a4 5678", "only digits"),
        ("+52 123", "not a valid"),
        ("+999 1234567", "not a valid"),
        ("+2341234", "not a valid"),
        ("", "Enter a phone number"),
        ("+" + "1" * 40, "too long"),
    ],
)
def test_malformed_or_invalid_numbers_are_refused_with_invalid_phone_number(raw, fragment):
    with pytest.raises(InvalidPhoneNumber) as caught:
        phone_parse(raw)
    assert caught.value.field_code == "invalid_phone_number"
    assert fragment in caught.value.message
    assert caught.value.fields[0]["code"] == "invalid_phone_number"


def test_a_landline_is_refused_as_not_mobile():
    with pytest.raises(InvalidPhoneNumber) as caught:
        phone_parse("+44 121 234 5678")  # a Birmingham landline
    assert "not a mobile" in caught.value.message


def test_recipient_in_the_product_country_is_accepted(world):
    product = ProductFactory(operator=world[("NG", "mtn")])
    assert recipient_validate(number="+2348031234567", product=product).country == "NG"


def test_recipient_of_another_country_than_the_product_is_phone_country_mismatch(world):
    product = ProductFactory(operator=world[("MX", "telcel")])
    with pytest.raises(PhoneCountryMismatch) as caught:
        recipient_validate(number="+2348031234567", product=product)
    assert caught.value.field_code == "phone_country_mismatch"
    assert caught.value.status == 400


def test_a_recharge_to_another_operator_of_the_right_country_is_allowed(world):
    """Numbers move between operators: detection never refuses a recharge."""
    product = ProductFactory(operator=world[("NG", "airtel")])
    assert recipient_validate(number="+2348031234567", product=product)


def test_operators_with_phone_list_the_detected_operator_first(user_api, world):
    response = user_api.get(OPERATORS, {"phone": "+2348031234567"})
    results = response.json()["results"]
    assert [(r["id"], r["detected"]) for r in results] == [
        (world[("NG", "mtn")].public_id, True),
        (world[("NG", "airtel")].public_id, False),
    ]


def test_operators_with_an_unencoded_plus_in_the_query_still_work(user_api, world):
    response = user_api.get(OPERATORS + "?phone=+2348031234567")
    assert response.json()["results"][0]["detected"] is True


def test_operators_with_phone_of_unknown_operator_list_the_country_undetected(user_api, world):
    results = user_api.get(OPERATORS, {"phone": "+525512345678"}).json()["results"]
    assert {r["country"] for r in results} == {"MX"}
    assert not any(r["detected"] for r in results)


def test_operators_with_phone_of_a_country_we_do_not_serve_is_empty(user_api, world):
    assert user_api.get(OPERATORS, {"phone": "+4915112345678"}).json()["count"] == 0


@pytest.mark.parametrize("raw", ["2348031234567", "+234 803 ABC 4567", "+23480"])
def test_operators_with_an_invalid_phone_is_400_invalid_phone_number(user_api, world, raw):
    response = user_api.get(OPERATORS, {"phone": raw})
    assert response.status_code == 400
    assert response.json()["errors"][0] | {"message": ""} == {
        "field": "phone",
        "code": "invalid_phone_number",
        "message": "",
    }


def test_operators_with_phone_and_another_country_is_phone_country_mismatch(user_api, world):
    response = user_api.get(OPERATORS, {"phone": "+2348031234567", "country": "GH"})
    assert response.status_code == 400
    assert [(e["field"], e["code"]) for e in response.json()["errors"]] == [
        ("phone", "phone_country_mismatch")
    ]


class LineIn(serializers.Serializer):
    product_id = ProductIdField()
    recipient_number = RecipientNumberField()


class OrderIn(serializers.Serializer):
    items = LineIn(many=True)


def test_serializer_fields_for_orders_report_codes_at_the_wire_path(world):
    product = ProductFactory(operator=world[("NG", "mtn")])
    good = {"product_id": product.public_id, "recipient_number": "+2348031234567"}
    data = OrderIn(data={"items": [good, {"product_id": "prd_nope", "recipient_number": "12"}]})
    assert not data.is_valid()
    assert flatten_validation_errors(data.errors) == [
        {
            "field": "items[1].productId",
            "code": "unknown_product",
            "message": "No active recharge product has this id.",
        },
        {
            "field": "items[1].recipientNumber",
            "code": "invalid_phone_number",
            "message": phone_error("12"),
        },
    ]
    valid = OrderIn(data={"items": [good]})
    assert valid.is_valid(), valid.errors
    line = valid.validated_data["items"][0]
    assert line["product_id"] == product
    assert line["recipient_number"].e164 == "+2348031234567"


def phone_error(raw: str) -> str:
    try:
        phone_parse(raw)
    except InvalidPhoneNumber as exc:
        return exc.message
    raise AssertionError("valid")
