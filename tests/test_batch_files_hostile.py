"""Hostile batch files (issue 33): each is built here, small on disk, and posted through the
dashboard's upload. Every one is a 400 naming the cap it passed (``FileError.code``, from
orders/batch_limits.py), found before the file is parsed, and nothing is charged; before these
caps some answered 500 and the XLSX ones held a web worker for seconds and a gigabyte."""

from __future__ import annotations

import io
import struct
import zipfile
import zlib
from collections.abc import Iterable
from decimal import Decimal

import openpyxl
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from accounts.services import account_set_b2b
from orders import batch_limits
from orders.models import Order
from tests.factories import OperatorFactory, ProductFactory, UserFactory, make_country, make_key
from tests.helpers import assert_problem, client_for, fund
from wallet.models import Wallet

pytestmark = pytest.mark.django_db

NUMBER = "+525512345678"
HEADER = "recipientNumber,operator,amount"
ROW = f"{NUMBER},MX/telcel,100"


@pytest.fixture
def shop(client):
    user = UserFactory()
    account_set_b2b(account=user.account, is_b2b=True)
    fund(user, "100.00")
    client.force_login(user)
    return user


@pytest.fixture
def telcel():
    mexico = make_country("MX", "Mexico", "+52", "MXN")
    operator = OperatorFactory(country=mexico, slug="telcel", name="Telcel")
    ProductFactory(
        operator=operator, retail_price=Decimal("1.00"), local_amount=Decimal("100"),
        product_type="airtime",
    )  # fmt: skip
    return operator


def refused(client, shop, name: str, data: bytes, code: str, words: str) -> None:
    response = client.post("/batches/upload/", {"file": SimpleUploadedFile(name, data)})
    assert response.status_code == 400
    (error,) = response.context["errors"]
    assert (error.code, error.line) == (code, None), error
    assert words in response.content.decode()
    assert not Order.objects.exists()
    assert Wallet.objects.get(account=shop.account, kind="live").balance == Decimal("100.00")


def png(width: int = 64, height: int = 64) -> bytes:
    """A real PNG image (noise-free gradient), as a phone's screenshot would be."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        crc = zlib.crc32(kind + body)
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc)

    raw = b"".join(b"\x00" + bytes((x * 4 + y) % 256 for x in range(width)) for y in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


# -- CSV --------------------------------------------------------------------------------------


def test_a_csv_with_one_4_mb_line_is_refused_by_its_line_length(client, shop, telcel):
    one_field = (HEADER + "\n" + "x" * 4_000_000 + "\n").encode()
    refused(client, shop, "big.csv", one_field, "line_too_long", "A line is longer than")
    many_fields = (HEADER + "\n" + "1," * 2_000_000 + "\n").encode()
    refused(client, shop, "wide.csv", many_fields, "line_too_long", "A line is longer than")


def test_a_png_renamed_csv_is_not_a_csv_file(client, shop, telcel):
    refused(client, shop, "photo.csv", png(), "not_csv", "This is not a CSV file we can read.")


def test_a_csv_row_past_the_columns_cap_is_refused(client, shop, telcel):
    wide = HEADER + ",x" * batch_limits.MAX_COLUMNS
    refused(client, shop, "cols.csv", (wide + "\n" + ROW).encode(), "too_many_columns", "columns")


def test_a_csv_cell_past_its_length_is_refused_even_in_an_open_quote(client, shop, telcel):
    long_cell = f"{HEADER},reference\n{ROW},{'r' * (batch_limits.MAX_CELL_CHARS + 1)}\n"
    refused(client, shop, "cell.csv", long_cell.encode(), "cell_too_long", "characters")
    # A quote left open runs over every line after it: one field of 300 KB in short lines.
    open_quote = f'{HEADER}\n"{NUMBER}\n' + "short line\n" * 30_000
    refused(client, shop, "quote.csv", open_quote.encode(), "cell_too_long", "characters")


def test_a_csv_past_the_rows_cap_stops_there(client, shop, telcel):
    rows = [HEADER] + [ROW] * (batch_limits.MAX_ROWS)
    refused(client, shop, "rows.csv", "\n".join(rows).encode(), "too_many_rows", "at most")


# -- XLSX -------------------------------------------------------------------------------------


def workbook() -> bytes:
    book = openpyxl.Workbook()
    book.active.append(["recipientNumber", "operator", "amount"])
    book.active.append([NUMBER, "MX/telcel", 100])
    data = io.BytesIO()
    book.save(data)
    return data.getvalue()


def xlsx_with(parts: dict[str, bytes | Iterable[bytes]], *, base: bytes | None = None) -> bytes:
    """A real workbook with some parts replaced or added; a part given as chunks is streamed
    into the zip (a large part never sits whole in the test's memory)."""
    out = io.BytesIO()
    with (
        zipfile.ZipFile(io.BytesIO(base or workbook())) as source,
        zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target,
    ):
        for info in source.infolist():
            if info.filename not in parts:
                body = source.read(info)
                if info.filename == "[Content_Types].xml" and STRINGS in parts:
                    body = body.replace(b"</Types>", STRINGS_TYPE + b"</Types>")
                target.writestr(info, body)
        for name, body in parts.items():
            with target.open(name, "w", force_zip64=True) as stream:
                for chunk in [body] if isinstance(body, bytes) else body:
                    stream.write(chunk)
    return out.getvalue()


SHEET = "xl/worksheets/sheet1.xml"
MAIN = b'xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"'
STRINGS = "xl/sharedStrings.xml"  # openpyxl reads it when the manifest names it
STRINGS_TYPE = (
    b'<Override PartName="/xl/sharedStrings.xml" ContentType="application/'
    b'vnd.openxmlformats-officedocument.spreadsheetml.sharedStrings+xml"/>'
)


def sheet(rows: bytes, dimension: bytes | None = b"A1:C2") -> bytes:
    claim = b'<dimension ref="' + dimension + b'"/>' if dimension else b""
    return (
        b'<?xml version="1.0" encoding="UTF-8"?><worksheet ' + MAIN + b">" + claim
        + b"<sheetData>" + rows + b"</sheetData></worksheet>"
    )  # fmt: skip


HEAD_ROW = (
    b'<row r="1"><c r="A1" t="inlineStr"><is><t>recipientNumber</t></is></c>'
    b'<c r="B1" t="inlineStr"><is><t>operator</t></is></c>'
    b'<c r="C1" t="inlineStr"><is><t>amount</t></is></c></row>'
)


def test_an_xlsx_row_of_a_million_cells_is_refused_by_the_columns_cap(client, shop, telcel):
    cells = b'<row r="2">' + b"<c><v>1</v></c>" * 1_000_000 + b"</row>"
    data = xlsx_with({SHEET: sheet(HEAD_ROW + cells, dimension=None)})
    assert len(data) < 200_000
    refused(client, shop, "wide.xlsx", data, "too_many_columns", "columns")


def test_an_xlsx_cell_far_to_the_right_is_refused_by_the_columns_cap(client, shop, telcel):
    far = b'<row r="2"><c r="XFD2"><v>1</v></c></row>'
    data = xlsx_with({SHEET: sheet(HEAD_ROW + far)})
    refused(client, shop, "far.xlsx", data, "too_many_columns", "columns")


def test_an_xlsx_of_8_million_shared_strings_is_refused_by_its_unpacked_size(client, shop, telcel):
    strings = [b"<sst " + MAIN + b' count="8000000" uniqueCount="8000000">']
    strings += [b"<si><t>a</t></si>" * 100_000] * 80 + [b"</sst>"]
    data = xlsx_with({STRINGS: strings})
    assert len(data) < 1_000_000
    refused(client, shop, "strings.xlsx", data, "too_large_uncompressed", "Unpacked")


def test_an_xlsx_past_the_shared_strings_cap_is_refused_before_openpyxl(client, shop, telcel):
    count = batch_limits.MAX_SHARED_STRINGS + 1
    strings = b"<sst " + MAIN + b">" + b"<si><t>a</t></si>" * count + b"</sst>"
    data = xlsx_with({STRINGS: strings})
    refused(client, shop, "strings.xlsx", data, "too_many_shared_strings", "distinct texts")


def test_an_xlsx_past_the_cells_cap_is_refused(client, shop, telcel):
    row = b"<row>" + b"<c><v>1</v></c>" * 25 + b"</row>"
    data = xlsx_with({SHEET: sheet(HEAD_ROW + row * 8_001)})
    refused(client, shop, "cells.xlsx", data, "too_many_cells", "cells")


def test_an_xlsx_row_numbered_far_down_is_refused_by_the_rows_cap(client, shop, telcel):
    far = b'<row r="999999999"><c><v>1</v></c></row>'
    data = xlsx_with({SHEET: sheet(HEAD_ROW + far)})
    refused(client, shop, "far.xlsx", data, "too_many_rows", "at most")


def test_an_xlsx_of_a_thousand_parts_is_refused_before_its_directory_is_read(client, shop, telcel):
    data = xlsx_with({f"xl/media/empty{n}.bin": b"" for n in range(1_000)})
    refused(client, shop, "parts.xlsx", data, "too_many_parts", "parts")


def test_an_xlsx_part_of_millions_of_elements_is_refused(client, shop, telcel):
    styles = [b"<styleSheet " + MAIN + b">"] + [b"<a/>" * 500_000] * 5 + [b"</styleSheet>"]
    data = xlsx_with({"xl/styles.xml": styles})
    refused(client, shop, "styles.xlsx", data, "too_many_elements", "too complex")


def test_an_xlsx_with_a_document_type_is_not_read(client, shop, telcel):
    laughs = (
        b'<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
        b'<!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">]>'
        b"<worksheet " + MAIN + b'><sheetData><row><c t="inlineStr"><is><t>&lol2;</t></is>'
        b"</c></row></sheetData></worksheet>"
    )
    data = xlsx_with({SHEET: laughs})
    refused(client, shop, "laughs.xlsx", data, "not_xlsx", "not an XLSX file")


def test_a_sheet_claiming_every_column_of_excel_still_reads_its_three(client, shop, telcel):
    rows = HEAD_ROW + (
        b'<row r="2"><c r="A2" t="inlineStr"><is><t>' + NUMBER.encode() + b"</t></is></c>"
        b'<c r="B2" t="inlineStr"><is><t>MX/telcel</t></is></c><c r="C2"><v>100</v></c></row>'
    )
    data = xlsx_with({SHEET: sheet(rows, b"A1:XFD1048576")})
    upload = SimpleUploadedFile("claims.xlsx", data)
    confirm = client.post("/batches/upload/", {"file": upload})
    assert confirm.status_code == 200, confirm.context.get("errors")
    assert confirm.context["lines"] == 1 and confirm.context["total"] == Decimal("1.00")


def test_the_api_takes_no_files_a_hostile_one_is_415_unread(shop, telcel):
    _key, plaintext = make_key(shop, mode="live")
    response = client_for(plaintext).post(
        "/api/v1/api-access/b2b/batches",
        {"file": SimpleUploadedFile("photo.csv", png())},
        format="multipart",
        HTTP_IDEMPOTENCY_KEY="file-1",
    )
    assert_problem(response, 415, "unsupported_media_type")
    assert not Order.objects.exists()
