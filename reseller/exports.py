"""Downloads: CSV streamed in chunks, XLSX written in openpyxl's write-only mode, and the
escaping that keeps a spreadsheet from running a cell as a formula (CSV injection)."""

from __future__ import annotations

import csv
import io
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from django.http import FileResponse, StreamingHttpResponse

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"


def csv_safe(value: Any) -> Any:
    """A text cell with a leading quote when it starts like a formula; other values as is."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def csv_stream(
    header: Sequence[str], rows: Iterable[Sequence[Any]], *, every: int = 500
) -> Iterator[str]:
    """The header, then the rows, as CSV text in chunks of ``every`` rows (rows are written as
    given: the caller escapes its text columns with ``csv_safe``)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)

    def flush() -> str:
        text = buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
        return text

    writer.writerow(header)
    yield flush()
    for index, row in enumerate(rows, start=1):
        writer.writerow(row)
        if index % every == 0:
            yield flush()
    yield flush()


def csv_response(filename: str, chunks: Iterator[str]) -> StreamingHttpResponse:
    response = StreamingHttpResponse(chunks, content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def xlsx_response(
    filename: str, header: Sequence[str], rows: Iterable[Sequence[Any]], *, title: str
) -> FileResponse:
    """An XLSX file written row by row to a temporary file (openpyxl's write-only mode keeps
    memory flat however many rows), then streamed from disk. Like ``csv_stream`` it writes the
    rows as given: text cells escaped by the caller, numbers as numbers."""
    from openpyxl import Workbook

    book = Workbook(write_only=True)
    sheet = book.create_sheet(title=title[:31])
    sheet.append(list(header))
    for row in rows:
        sheet.append(list(row))
    handle = tempfile.TemporaryFile()  # noqa: SIM115 (the response closes it, which deletes it)
    book.save(handle)
    handle.seek(0)
    return FileResponse(
        handle,
        as_attachment=True,
        filename=filename,
        content_type=XLSX,
    )
