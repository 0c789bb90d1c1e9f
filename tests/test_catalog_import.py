"""import_catalog: CSV and JSON, created/updated/skipped, bad rows by line, all-or-nothing rows."""

import json
from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from catalog.ids import product_public_id
from catalog.importing import catalog_import, read_json
from catalog.models import Product
from tests.factories import OperatorFactory, make_country

pytestmark = pytest.mark.django_db

HEADER = (
    "sku,country,operator,name,type,local_amount,local_currency,price,currency,validity_days,"
    "name_es\n"
)


@pytest.fixture
def telcel():
    return OperatorFactory(
        country=make_country("MX", "Mexico", "+52", "MXN"), slug="telcel", name="Telcel"
    )


def run(path, *args):
    out, err = StringIO(), StringIO()
    try:
        call_command("import_catalog", str(path), *args, stdout=out, stderr=err)
    except CommandError as exc:
        return out.getvalue(), err.getvalue(), exc
    return out.getvalue(), err.getvalue(), None


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_csv_import_creates_good_rows_and_reports_bad_rows_by_line(tmp_path, telcel):
    path = write(
        tmp_path,
        "catalog.csv",
        HEADER
        + "MX-1,MX,telcel,Telcel 100,airtime,100,MXN,5.20,EUR,,Telcel 100 pesos\n"  # line 2
        + "MX-2,MX,telcel,Telcel 200,airtime,200,MXN,not-a-price,EUR,,\n"  # line 3
        + "MX-3,ZZ,telcel,Nowhere,airtime,10,MXN,1,EUR,,\n"  # line 4
        + 'MX-4,MX,Telcel,"Data\nbundle",data,50,MXN,2.60,EUR,7,\n'  # lines 5-6
        + "MX-5,MX,nobody,Ghost,airtime,10,MXN,1,EUR,,\n"  # line 7
        + "MX-6,MX,telcel,Too precise,airtime,10,MXN,1.234,EUR,,\n",  # line 8
    )
    out, err, failed = run(path)
    assert failed is not None and "4 rows" in str(failed)
    assert "6 rows: 2 created, 0 updated, 0 skipped (unchanged), 4 errors" in out
    assert "line 3: price:" in out
    assert "line 4: country: Unknown country ZZ." in out
    assert "line 7: operator:" in out
    assert "line 8: price:" in out
    assert "imported 6/6 rows (100%)" in err  # progress
    assert set(Product.objects.values_list("sku", flat=True)) == {"MX-1", "MX-4"}
    product = Product.objects.get(sku="MX-1")
    assert product.public_id == product_public_id("MX-1")
    assert (product.retail_price, product.local_amount) == (Decimal("5.20"), Decimal("100.00"))
    assert product.translations == {"es": {"name": "Telcel 100 pesos"}}
    data = Product.objects.get(sku="MX-4")
    assert (data.product_type, data.validity_days, data.name) == ("data", 7, "Data\nbundle")


def test_importing_the_same_file_again_skips_every_row(tmp_path, telcel):
    path = write(
        tmp_path,
        "catalog.csv",
        HEADER + "MX-1,MX,telcel,Telcel 100,airtime,100,MXN,5.20,EUR,,\n",
    )
    assert run(path)[2] is None
    before = list(Product.objects.values())
    out, _err, failed = run(path)
    assert failed is None
    assert "0 created, 0 updated, 1 skipped" in out
    assert list(Product.objects.values()) == before


def test_a_changed_row_updates_the_product_and_keeps_its_id(tmp_path, telcel):
    write(tmp_path, "a.csv", HEADER + "MX-1,MX,telcel,Telcel 100,airtime,100,MXN,5.20,EUR,,\n")
    run(tmp_path / "a.csv")
    product = Product.objects.get(sku="MX-1")
    write(tmp_path, "b.csv", HEADER + "MX-1,MX,telcel,Telcel 100,airtime,100,MXN,4.99,EUR,,\n")
    out, _err, _failed = run(tmp_path / "b.csv")
    assert "0 created, 1 updated" in out
    product.refresh_from_db()
    assert product.retail_price == Decimal("4.99")
    assert product.public_id == product_public_id("MX-1")


def test_json_import_reports_errors_at_the_line_where_the_object_starts(tmp_path, telcel):
    rows = [
        {"sku": "J-1", "country": "MX", "operator": telcel.public_id, "name": "One",
         "local_amount": 100, "local_currency": "MXN", "price": 5.2},
        {"sku": "J-2", "country": "MX", "operator": "telcel", "name": "Two",
         "local_amount": "x", "local_currency": "MXN", "price": "1.00"},
        {"sku": "J-3", "country": "MX", "operator": "telcel", "name": "Three",
         "local_amount": "50", "local_currency": "MXN", "price": "2.60", "colour": "red"},
    ]  # fmt: skip
    path = write(tmp_path, "catalog.json", json.dumps(rows, indent=2))
    out, _err, failed = run(path)
    assert failed is not None
    text = path.read_text()
    second_line = text[: text.index('"J-2"')].count("\n")  # the "{" is one line above the sku
    third_line = text[: text.index('"J-3"')].count("\n")
    assert f"line {second_line}: local_amount:" in out
    assert f"line {third_line}: colour: Unknown column." in out
    assert Product.objects.get(sku="J-1").retail_price == Decimal("5.20")  # no float on the way


def test_read_json_gives_each_object_its_starting_line():
    rows = read_json('[\n  {"a": 1},\n\n  {"b": 2.5}, {"c": 3}\n]')
    assert rows == [(2, {"a": 1}), (4, {"b": Decimal("2.5")}), (4, {"c": 3})]


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("bad.csv", "sku,country,prce\n", "unknown columns: prce"),
        ("bad.csv", "sku,country\n", "missing columns: operator"),
        ("bad.json", '{"sku": "x"}', "array of product objects"),
        ("bad.json", '[{"sku": "x"},\n{oops}]', "line 2: invalid JSON"),
        ("bad.txt", "whatever", "unknown format"),
    ],
)
def test_an_unreadable_file_is_refused_before_anything_is_imported(
    tmp_path, telcel, name, text, message
):
    _out, _err, failed = run(write(tmp_path, name, text))
    assert failed is not None and message in str(failed)
    assert not Product.objects.exists()


def test_a_row_that_the_database_refuses_writes_nothing_and_the_rest_goes_on(telcel):
    good = {
        "sku": "OK-1",
        "country": "MX",
        "operator": "telcel",
        "name": "Fine",
        "local_amount": "10",
        "local_currency": "MXN",
        "price": "1.00",
    }
    too_long_translation = {**good, "sku": "BAD-1", "name_es": "x" * 151}
    report = catalog_import(
        rows=[(2, too_long_translation), (3, good), (4, ["not", "an", "object"])]
    )  # fmt: skip
    assert (report.created, len(report.errors)) == (1, 2)
    assert [e.line for e in report.errors] == [2, 4]
    assert list(Product.objects.values_list("sku", flat=True)) == ["OK-1"]


def test_dry_run_reports_but_saves_nothing(tmp_path, telcel):
    path = write(tmp_path, "a.csv", HEADER + "MX-1,MX,telcel,Telcel 100,airtime,100,MXN,5,EUR,,\n")
    out, _err, failed = run(path, "--dry-run")
    assert failed is None
    assert "dry run, nothing saved: 1 rows: 1 created" in out
    assert not Product.objects.exists()


def test_operator_is_found_by_id_slug_or_name_case_insensitively(telcel):
    base = {
        "country": "mx",
        "name": "x",
        "local_amount": "10",
        "local_currency": "mxn",
        "price": "1",
    }
    rows = [
        (2, {**base, "sku": "A", "operator": telcel.public_id}),
        (3, {**base, "sku": "B", "operator": "TELCEL"}),
        (4, {**base, "sku": "C", "operator": "Telcel"}),
    ]  # fmt: skip
    report = catalog_import(rows=rows)
    assert (report.created, report.errors) == (3, [])
    assert set(Product.objects.values_list("local_currency", flat=True)) == {"MXN"}
