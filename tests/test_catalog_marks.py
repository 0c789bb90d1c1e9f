"""Flags and operator marks (issue 17): SVG flags instead of emoji, which many systems draw as
two empty boxes, and generated monograms instead of plain colour swatches."""

from __future__ import annotations

import re

import pytest
from django.contrib.staticfiles import finders
from django.template import Context, Template

from catalog.demo_data import OPERATORS
from catalog.templatetags.catalog_marks import (
    DARK,
    WHITE,
    contrast_ratio,
    flag,
    monogram,
    operator_mark,
    text_colour,
)
from tests.factories import OperatorFactory, ProductFactory, make_country

REGIONAL_INDICATORS = re.compile("[\U0001f1e6-\U0001f1ff]")
FLAG_IMG = re.compile(
    r'<img class="flag" src="/static/([^"]+)" alt="" width="(\d+)" height="(\d+)">'
)


@pytest.mark.parametrize(
    ("name", "initials"),
    [
        ("Telcel", "T"),  # one word: its first letter
        ("Movistar", "M"),
        ("Vodafone Idea", "VI"),  # two words: their first letters
        ("Cable & Wireless", "CW"),
        ("T-Mobile", "TM"),  # punctuation separates words
        ("MTN", "MT"),  # a word in capitals: its first two letters
        ("MTN Nigeria", "MT"),
        ("AT&T", "AT"),
        ("BSNL", "BS"),
        ("9mobile", "9M"),  # digits and letters are two parts
        ("AirtelTigo", "AT"),  # so is a capital inside a word
        ("O2", "O2"),
        ("éxito móvil", "ÉM"),
        ("", ""),
        ("&", ""),
    ],
)
def test_monogram_is_one_or_two_initials_of_the_operator_name(name, initials):
    assert monogram(name) == initials


def test_mark_text_is_white_on_dark_colours_and_dark_on_light_ones():
    assert text_colour("#0f3c96") == WHITE  # Telcel blue
    assert text_colour("#e40000") == WHITE  # Airtel red: 4.9:1 with white
    assert text_colour("#ffcb05") == DARK  # MTN yellow
    assert text_colour("#019df4") == DARK  # Movistar light blue: 3:1 with white
    assert text_colour("#ffffff") == DARK
    assert text_colour("#000000") == WHITE


@pytest.mark.parametrize(
    "colour",
    sorted({operator.color for operator in OPERATORS} | {"#767676", "#7f7f7f", "#2f8fff"}),
)
def test_mark_text_reaches_4_5_to_1_on_every_demo_operator_and_mid_grey(colour):
    assert contrast_ratio(text_colour(colour), colour) >= 4.5


def test_mark_text_reaches_4_5_to_1_on_any_colour():
    for value in range(0, 0x1000000, 0x010203):
        colour = f"#{value:06x}"
        assert contrast_ratio(text_colour(colour), colour) >= 4.5, colour


def test_operator_mark_is_a_decorative_badge_on_the_operator_colour():
    operator = OperatorFactory.build(name="AT&T", color="#009FDB")
    assert operator_mark(operator) == (
        '<span class="operator-mark" style="background:#009fdb;color:#000000" '
        'aria-hidden="true">AT</span>'
    )


def test_operator_mark_keeps_only_letters_and_ignores_a_colour_that_is_not_one():
    operator = OperatorFactory.build(name="<script>", color="red;background:url(x)")
    html = operator_mark(operator)
    assert html.count("<") == 2 and html.endswith('aria-hidden="true">S</span>')
    assert "background:#5f6b7a;" in html and "url(" not in html


def test_flag_is_an_img_of_a_vendored_svg_with_its_size():
    html = flag("MX")
    match = FLAG_IMG.fullmatch(html)
    assert match, html
    path, width, height = match.groups()
    assert path == "vendor/flag-icons/flags/4x3/mx.svg" and finders.find(path)
    assert (width, height) == ("32", "24")
    assert FLAG_IMG.fullmatch(flag("ng", 20)).groups()[1:] == ("20", "15")


@pytest.mark.parametrize("code", ["ZZ", "", "x", "../../etc", "M<"])
def test_flag_of_an_unknown_code_renders_nothing(code):
    assert flag(code) == ""


def test_the_tags_load_in_a_template():
    operator = OperatorFactory.build(name="Telcel", color="#0f3c96")
    html = Template("{% load catalog_marks %}{% flag 'CO' %}{% operator_mark operator %}").render(
        Context({"operator": operator})
    )
    assert html.startswith('<img class="flag"') and ">T</span>" in html


@pytest.mark.django_db
@pytest.mark.parametrize(
    "url",
    [
        "/catalog/",
        "/catalog/MX/",
        "/catalog/MX/telcel/",
        "/catalog/find/?phone=%2B525512345678",
    ],
)
def test_catalog_pages_show_svg_flags_and_operator_marks_and_no_emoji_flag(client, url):
    mexico = make_country("MX", "Mexico", "+52", "MXN")
    make_country("NG", "Nigeria", "+234", "NGN")
    telcel = OperatorFactory(
        country=mexico, slug="telcel", name="Telcel", color="#0f3c96", carrier_names=["Telcel"]
    )
    ProductFactory(operator=telcel)
    response = client.get(url, follow=True)  # the finder may go on to the operator's page
    assert response.status_code == 200
    html = response.content.decode()
    assert not REGIONAL_INDICATORS.search(html), REGIONAL_INDICATORS.findall(html)
    flags = FLAG_IMG.findall(html)
    assert flags, "no flag on the page"
    for path, _width, _height in flags:
        assert finders.find(path), path
    if url != "/catalog/":
        assert 'class="operator-mark"' in html and ">T</span>" in html
        assert "swatch" not in html
