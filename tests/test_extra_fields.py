"""Extra fields (contract section 17): what a line must carry besides the number, checked
before anything is charged: one missing is ``missing_field``, one malformed or unknown
``invalid_field``; the clean values are what reaches the provider."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from catalog.fields import FIELD_NAMES, fields_check, required_fields_clean
from tests.factories import ProductFactory


def codes(required, given) -> dict[str, str]:
    _clean, errors = fields_check(required=required, given=given)
    return {error.field: error.code for error in errors}


def test_a_line_with_every_required_field_is_clean():
    clean, errors = fields_check(
        required=["senderPhone", "recipientEmail"],
        given={"senderPhone": "+1 415 555 0123", "recipientEmail": " ana@example.cu "},
    )
    assert errors == []
    assert clean == {"senderPhone": "+14155550123", "recipientEmail": "ana@example.cu"}


def test_a_sender_may_call_from_a_landline():
    clean, errors = fields_check(required=["senderPhone"], given={"senderPhone": "+34 912 345 678"})
    assert (clean, errors) == ({"senderPhone": "+34912345678"}, [])


@pytest.mark.parametrize("given", [None, {}, {"senderPhone": ""}, {"senderPhone": "   "}])
def test_a_missing_required_field_is_named(given):
    assert codes(["senderPhone"], given) == {"senderPhone": "missing_field"}


@pytest.mark.parametrize(
    ("given", "field"),
    [
        ({"senderPhone": "4155550123"}, "senderPhone"),  # no plus
        ({"senderPhone": "+1 800 FLOWERS"}, "senderPhone"),
        ({"senderPhone": 4155550123}, "senderPhone"),  # not a string
        ({"recipientEmail": "ana@"}, "recipientEmail"),
        ({"recipientEmail": "a" * 250 + "@x.cu"}, "recipientEmail"),
        ({"senderName": "x" * 101}, "senderName"),
        ({"recipientName": "Ana\x00"}, "recipientName"),
        ({"senderAddress": "1 Main St"}, "senderAddress"),  # not a field we know
    ],
)
def test_a_malformed_or_unknown_field_is_named(given, field):
    assert codes([], given) == {field: "invalid_field"}


def test_fields_that_are_not_an_object_are_refused():
    assert codes([], ["senderPhone"]) == {"fields": "invalid_field"}


def test_optional_fields_given_are_kept_clean():
    clean, errors = fields_check(required=[], given={"senderName": "  Ana   María  "})
    assert (clean, errors) == ({"senderName": "Ana María"}, [])


def test_every_error_is_reported_at_once():
    found = codes(["senderName", "senderPhone"], {"senderPhone": "bad", "nick": "x"})
    assert found == {
        "senderName": "missing_field",
        "senderPhone": "invalid_field",
        "nick": "invalid_field",
    }


def test_required_fields_are_stored_known_and_in_order():
    assert required_fields_clean(["recipientEmail", "senderPhone", "bogus", "senderPhone"]) == [
        "senderPhone",
        "recipientEmail",
    ]
    assert required_fields_clean("senderPhone") == []
    assert set(FIELD_NAMES) == {"senderName", "senderPhone", "recipientEmail", "recipientName"}


@pytest.mark.django_db
def test_a_product_lists_only_fields_we_know():
    product = ProductFactory(required_fields=["senderPhone", "favouriteColour"])
    with pytest.raises(ValidationError) as raised:
        product.full_clean()
    assert "required_fields" in raised.value.message_dict
