"""A batch uploaded as a file on the dashboard (issue 18): CSV or XLSX, one recharge line a row.

Columns (a header row, names in any case, spaces or underscores ignored):
``recipientNumber`` and ``productId``, or ``recipientNumber``, ``operator`` and ``amount``
(the operator's id ``opr_…`` or ``CC/slug``, and the airtime's face value in local currency:
a fixed product of that face value, else a range product of the operator that sends it);
``quantity`` (default 1), ``reference`` and ``localAmount`` (what the recipient gets, required
for a range product: contract section 17) are optional, and so are the extra fields a product
may need (contract section 17), a column each named as the API names them (``senderName``,
``senderPhone``, ``recipientName``, ``recipientEmail``; or ``fields.senderName`` …): a row's
cells that are not empty become its line's ``fields``. Rows become the API's batch items, so
a file is checked exactly as ``POST /api-access/b2b/batches`` checks a request, and errors are
given by line (the header is line 1) and column. A file past one of the caps of
``orders/batch_limits.py`` (checked before and while it is read) is refused whole, the cap named.
"""

from __future__ import annotations

import codecs
import csv
import io
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

from django.utils.translation import gettext as _

from catalog.models import EXTRA_FIELDS, Product
from orders import batch_limits
from orders.batch_limits import MAX_BYTES, FileRefused
from orders.serializers import BATCH_MAX_LINES, BatchIn
from reseller.errors import flatten_validation_errors

UNRESOLVED = "-"  # no product for the row's operator and amount (already said of the row)
COLUMNS = {
    "recipientnumber": "recipientNumber",
    "productid": "productId",
    "operator": "operator",
    "amount": "amount",
    "quantity": "quantity",
    "reference": "reference",
    "localamount": "localAmount",
}
# The extra fields' columns: ``senderName`` or ``fields.senderName`` (the API's path of it).
FIELD_COLUMNS = {
    prefix + name.lower(): f"fields.{name}" for name in EXTRA_FIELDS for prefix in ("", "fields.")
}
ITEM_FIELDS = {"recipientNumber": "recipientNumber", "productId": "productId",
               "quantity": "quantity", "reference": "reference",
               "localAmount": "localAmount"}  # fmt: skip


@dataclass
class FileError:
    line: int | None
    column: str
    message: str
    code: str = ""  # a file refused whole: the cap or reason (orders/batch_limits.py)


@dataclass
class ParsedFile:
    items: list[dict[str, Any]] = field(default_factory=list)
    errors: list[FileError] = field(default_factory=list)
    # What each item's fields were called in the file, to name them in errors.
    headers: dict[str, str] = field(default_factory=dict)
    validated: dict[str, Any] | None = None


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value).strip()


def _not_csv() -> FileRefused:
    return FileRefused("not_csv", _("This is not a CSV file we can read."))


def _text(data: bytes) -> str:
    """The file as text: UTF-16 with its byte order mark (Excel's "Unicode text"), else UTF-8,
    else Latin-1. Text has no NUL character: a file with one is binary (an image, a PDF...)."""
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        try:
            text = data.decode("utf-16")
        except UnicodeDecodeError as exc:
            raise _not_csv() from exc
    else:
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            text = data.decode("latin-1")
    if "\x00" in text:
        raise _not_csv()
    return text


def _lines(text: str) -> Iterator[str]:
    """The text's lines, each checked before the csv module turns it into cells."""
    for line in io.StringIO(text, newline=""):
        if len(line) > batch_limits.MAX_LINE_CHARS:
            raise FileRefused(
                "line_too_long",
                _("A line is longer than %(max)d characters.")
                % {"max": batch_limits.MAX_LINE_CHARS},
            )
        yield line


def _kept(rows: Iterable[Iterable[Any]]) -> list[list[str]]:
    """The rows that hold something, as text cells without the empty ones at their end,
    within the caps on columns, cells, a cell's length and rows."""
    kept: list[list[str]] = []
    cells = 0
    for row in rows:
        texts = [_cell(cell) for cell in row]
        while texts and not texts[-1]:
            texts.pop()
        if not texts:
            continue
        if len(texts) > batch_limits.MAX_COLUMNS:
            raise batch_limits.too_many_columns()
        if any(len(text) > batch_limits.MAX_CELL_CHARS for text in texts):
            raise batch_limits.cell_too_long()
        cells += len(texts)
        if cells > batch_limits.MAX_CELLS:
            raise batch_limits.too_many_cells()
        kept.append(texts)
        if len(kept) > batch_limits.MAX_ROWS:
            raise batch_limits.too_many_rows()
    return kept


def _rows_csv(data: bytes) -> list[list[str]]:
    text = _text(data)
    try:
        dialect = csv.Sniffer().sniff(text[:4096], delimiters=",;\t")
    except csv.Error:
        dialect = csv.excel
    try:
        return _kept(csv.reader(_lines(text), dialect))
    except csv.Error as exc:
        if "field larger than field limit" in str(exc):  # a quote left open over many lines
            raise batch_limits.cell_too_long() from exc
        raise _not_csv() from exc


def _rows_xlsx(data: bytes) -> list[list[str]]:
    """Inspected first (orders/batch_limits.py), so openpyxl only opens a file within caps."""
    from openpyxl import load_workbook

    sheet = batch_limits.xlsx_inspect(data)
    try:
        book = load_workbook(io.BytesIO(data), read_only=True, data_only=True)
        try:
            rows = book.worksheets[0].iter_rows(
                values_only=True, max_row=max(sheet.rows, 1), max_col=max(sheet.columns, 1)
            )
            return _kept(rows)
        finally:
            book.close()
    except FileRefused:
        raise
    except Exception as exc:  # a broken or foreign file: say so, never a 500
        raise batch_limits.not_xlsx() from exc


def read_rows(*, name: str, data: bytes) -> list[list[str]]:
    """The file's rows that hold something, as text cells; ``FileRefused`` (a ``ValueError``)
    naming what cannot be read or which cap the file passes."""
    if len(data) > MAX_BYTES:
        raise FileRefused("too_large", _("The file is larger than 5 MB."))
    if name.lower().endswith(".xlsx"):
        return _rows_xlsx(data)
    if name.lower().endswith((".csv", ".txt")):
        return _rows_csv(data)
    raise FileRefused("unsupported_type", _("Upload a .csv or .xlsx file."))


@dataclass
class _Faces:
    """Airtime products of the named operators: fixed ones by (operator as written, face
    value), range ones by operator."""

    fixed: dict[tuple[str, str], Product] = field(default_factory=dict)
    ranges: dict[str, list[Product]] = field(default_factory=dict)

    def find(self, operator: str, face: Decimal) -> tuple[Product | None, bool]:
        """The product sending ``face`` for ``operator`` and whether it is a range one."""
        fixed = self.fixed.get((operator, f"{face.normalize():f}"))
        if fixed is not None:
            return fixed, False
        ranged = next((p for p in self.ranges.get(operator, []) if p.accepts(face)), None)
        return ranged, ranged is not None


def _products_by_face(operators: set[str]) -> _Faces:
    wanted = _Faces()
    if not operators:
        return wanted
    products = Product.objects.filter(active=True, product_type="airtime").select_related(
        "operator"
    )
    for product in products.filter(operator__active=True):
        operator = product.operator
        for name in (operator.public_id, f"{operator.country_id}/{operator.slug}"):
            if name in operators or name.lower() in operators:
                if product.is_range:
                    wanted.ranges.setdefault(name.lower(), []).append(product)
                elif product.local_amount is not None:
                    key = (name.lower(), f"{product.local_amount.normalize():f}")
                    wanted.fixed.setdefault(key, product)
    return wanted


def parse(*, name: str, data: bytes, currency: str) -> ParsedFile:
    """Read a file into batch items and check them all; errors by line and column."""
    parsed = ParsedFile()
    try:
        rows = read_rows(name=name, data=data)
    except FileRefused as exc:
        parsed.errors.append(FileError(None, "", str(exc), code=exc.code))
        return parsed
    if not rows:
        parsed.errors.append(FileError(None, "", _("The file is empty.")))
        return parsed
    header, body = rows[0], rows[1:]
    columns: dict[int, str] = {}
    for index, title in enumerate(header):
        plain = title.replace(" ", "").replace("_", "").lower()
        known = COLUMNS.get(plain) or FIELD_COLUMNS.get(plain)
        if known:
            columns[index] = known
            parsed.headers[known] = title
    present = set(columns.values())
    by_operator = {"operator", "amount"} <= present
    if "recipientNumber" not in present or not ("productId" in present or by_operator):
        parsed.errors.append(
            FileError(
                1,
                "",
                _(
                    "The first row names the columns: recipientNumber and productId, or "
                    "recipientNumber, operator and amount (quantity and reference optional)."
                ),
            )
        )
        return parsed
    if not body:
        parsed.errors.append(FileError(None, "", _("The file has no rows after its header.")))
        return parsed
    if len(body) > BATCH_MAX_LINES:
        parsed.errors.append(
            FileError(None, "", _("A batch has at most %(max)d rows.") % {"max": BATCH_MAX_LINES})
        )
        return parsed
    named = [{columns[i]: cell for i, cell in enumerate(row) if i in columns} for row in body]
    faces = _products_by_face(
        {row.get("operator", "").lower() for row in named} if by_operator else set()
    )
    for number, row in enumerate(named, start=2):
        item: dict[str, Any] = {
            "recipientNumber": row.get("recipientNumber", ""),
            "quantity": row.get("quantity") or "1",
        }
        if row.get("reference"):
            item["reference"] = row["reference"]
        if row.get("localAmount"):
            item["localAmount"] = row["localAmount"].replace(",", ".")
        given = {
            column.removeprefix("fields."): value.strip()
            for column, value in row.items()
            if column.startswith("fields.") and value.strip()
        }
        if given:
            item["fields"] = given
        if row.get("productId"):
            item["productId"] = row["productId"]
        elif by_operator:
            try:
                face = Decimal(row.get("amount", "").replace(",", "."))
                if not face.is_finite():
                    raise InvalidOperation
            except InvalidOperation:
                parsed.errors.append(
                    FileError(number, parsed.headers["amount"], _("Enter the amount as a number."))
                )
                item["productId"] = UNRESOLVED
            else:
                product, ranged = faces.find(row.get("operator", "").lower(), face)
                if ranged and "localAmount" not in item:
                    item["localAmount"] = f"{face.normalize():f}"
                if product is None:
                    parsed.errors.append(
                        FileError(
                            number,
                            parsed.headers["operator"],
                            _("This operator has no airtime of that amount."),
                        )
                    )
                item["productId"] = product.public_id if product else UNRESOLVED
        else:
            item["productId"] = UNRESOLVED
        quantity = str(item["quantity"])
        item["quantity"] = int(quantity) if quantity.isdigit() and len(quantity) < 6 else quantity
        parsed.items.append(item)
    serializer = check(items=parsed.items, currency=currency)
    if serializer.is_valid():
        if not parsed.errors:
            parsed.validated = serializer.validated_data
        return parsed
    said = {(error.line, error.column) for error in parsed.errors}
    for error in flatten_validation_errors(serializer.errors):
        line, column = _where(error["field"], parsed.headers)
        if (line, column) in said:
            continue  # one problem a cell: its operator or amount was already explained
        said.add((line, column))
        parsed.errors.append(FileError(line, column, error["message"]))
    parsed.errors.sort(key=lambda e: (e.line or 0, e.column))
    return parsed


def check(*, items: list[dict[str, Any]], currency: str) -> BatchIn:
    """The file's items through the API's batch serializer (``is_valid()`` not yet called)."""
    return BatchIn(data={"items": _snake(items), "base_currency": currency})


def _snake(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The serializer's own field names (the API's parser does this for JSON)."""
    names = {
        "recipientNumber": "recipient_number",
        "productId": "product_id",
        "localAmount": "local_amount",
    }
    return [{names.get(k, k): v for k, v in item.items()} for item in items]


def _where(field_path: str, headers: dict[str, str]) -> tuple[int | None, str]:
    """``items[3].recipientNumber`` → (line 5, the file's name for that column)."""
    if not field_path.startswith("items["):
        return None, ""
    index, _bracket, rest = field_path[len("items[") :].partition("]")
    column = rest.lstrip(".")
    camel = {
        "recipient_number": "recipientNumber",
        "product_id": "productId",
        "local_amount": "localAmount",
    }.get(column, column)
    if camel == "productId" and "productId" not in headers:
        camel = "operator"
    return int(index) + 2, headers.get(camel, camel)
