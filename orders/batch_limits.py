"""The caps a batch file meets before it is parsed (issue 33): whatever its shape, a file
uploaded on the dashboard is refused with a ``FileRefused`` that names the cap it passed, in
bounded time and memory, never with a 500 or a swollen web process.

A CSV is text of at most ``MAX_BYTES``: its lines, columns, cells and rows are counted as it is
read (``batch_files._rows_csv``). An XLSX is a zip of XML parts, and a small zip can hold a lot:
one row of a million cells, or millions of shared strings that openpyxl loads whole even in its
read-only mode. So ``xlsx_inspect`` reads the zip's directory (how many parts, how large once
inflated) and then streams every part through expat with no document type (no entities), counting
elements, cells per row, column positions and shared strings, and stops at the first cap passed.
Only a file within every cap reaches openpyxl, which is then asked for no more columns than the
widest row holds (a sheet's ``dimension`` can claim any size).
"""

from __future__ import annotations

import io
import struct
import zipfile
import zlib
from dataclasses import dataclass
from typing import IO
from xml.parsers import expat

from django.utils.translation import gettext as _

from orders.serializers import BATCH_MAX_LINES

MAX_BYTES = 5 * 1024 * 1024  # the upload itself
MAX_ROWS = BATCH_MAX_LINES + 1  # the header and a batch's lines (empty rows not counted)
MAX_COLUMNS = 50  # a batch has six columns; room for what a spreadsheet carries beside them
MAX_CELLS = 200_000  # 10,000 lines of 20 cells
MAX_LINE_CHARS = 16_000  # a CSV line: 50 columns of 320 characters
MAX_CELL_CHARS = 1_000  # a cell (a reference is at most 100 characters)
# XLSX: the zip and its XML parts.
MAX_PARTS = 200  # a workbook has a dozen parts
MAX_UNCOMPRESSED = 50 * 1024 * 1024  # every part inflated: a full batch sheet is ~10 MB
MAX_SHARED_STRINGS = MAX_CELLS  # more distinct strings than cells is no batch
MAX_ELEMENTS = 2_000_000  # XML elements of every part: a full batch sheet has ~700,000
MAX_SHEET_ROWS = 2 * MAX_ROWS  # the last row holding a cell: room for empty rows between
CHUNK = 64 * 1024


class FileRefused(ValueError):
    """A file that cannot be read as a batch; ``code`` names the cap or the reason."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def too_many_rows() -> FileRefused:
    return FileRefused(
        "too_many_rows", _("A batch has at most %(max)d rows.") % {"max": BATCH_MAX_LINES}
    )


def too_many_columns() -> FileRefused:
    return FileRefused(
        "too_many_columns", _("A row has more than %(max)d columns.") % {"max": MAX_COLUMNS}
    )


def too_many_cells() -> FileRefused:
    return FileRefused(
        "too_many_cells", _("The file has more than %(max)d cells.") % {"max": MAX_CELLS}
    )


def cell_too_long() -> FileRefused:
    return FileRefused(
        "cell_too_long",
        _("A cell holds more than %(max)d characters.") % {"max": MAX_CELL_CHARS},
    )


def not_xlsx() -> FileRefused:
    return FileRefused("not_xlsx", _("This is not an XLSX file we can read."))


@dataclass
class Sheet:
    """What the inspection saw, to ask openpyxl for no more: the widest row (openpyxl pads
    every row to the ``dimension`` the sheet claims) and the last row holding a cell (openpyxl
    yields an empty row for every number skipped before a row's ``r``)."""

    columns: int = 0
    rows: int = 0


def _column_of(reference: str) -> int:
    """``"AB12"`` → 28 (the column of a cell reference; 0 when it names none)."""
    number = 0
    for char in reference:
        if "A" <= char <= "Z":
            number = number * 26 + ord(char) - 64
            if number > MAX_COLUMNS:
                break  # past the cap already: no need to read the rest of a long reference
        elif "a" <= char <= "z":
            number = number * 26 + ord(char) - 96
            if number > MAX_COLUMNS:
                break
        else:
            break
    return number


def _zip_entries(data: bytes) -> int:
    """The number of parts the zip's end record announces, read before zipfile builds its
    directory in memory (a 5 MB zip can list 100,000 empty parts)."""
    end = data.rfind(b"PK\x05\x06", max(0, len(data) - 65_557))
    if end < 0 or end + 22 > len(data):
        raise not_xlsx()
    (entries,) = struct.unpack_from("<H", data, end + 10)
    return entries


class _Counter:
    """Counts what one streamed XML part holds, raising at the first cap passed."""

    def __init__(self, sheet: Sheet, totals: dict[str, int]) -> None:
        self.sheet = sheet
        self.totals = totals
        self.row_cells = 0
        self.column = 0
        self.row = 0
        self.parser = expat.ParserCreate(namespace_separator="}")
        self.parser.StartElementHandler = self.start
        # Office never writes a document type: refusing one refuses every entity with it.
        self.parser.StartDoctypeDeclHandler = self.doctype
        self.parser.EntityDeclHandler = self.doctype

    def doctype(self, *args) -> None:
        raise not_xlsx()

    def start(self, name: str, attributes: dict[str, str]) -> None:
        totals = self.totals
        totals["elements"] += 1
        if totals["elements"] > MAX_ELEMENTS:
            raise FileRefused("too_many_elements", _("The file is too complex to read as a batch."))
        local = name.rpartition("}")[2]
        if local == "c":
            totals["cells"] += 1
            if totals["cells"] > MAX_CELLS:
                raise too_many_cells()
            self.row_cells += 1
            reference = attributes.get("r")
            self.column = _column_of(reference) if reference else self.column + 1
            if self.row_cells > MAX_COLUMNS or self.column > MAX_COLUMNS:
                raise too_many_columns()
            self.sheet.columns = max(self.sheet.columns, self.column)
            if self.row > MAX_SHEET_ROWS:
                raise too_many_rows()
            self.sheet.rows = max(self.sheet.rows, self.row)
        elif local == "row":
            self.row_cells = self.column = 0
            number = attributes.get("r", "")
            self.row = (
                int(number)
                if number.isascii() and number.isdigit() and len(number) < 10
                else self.row + 1
            )
        elif local == "si":
            totals["strings"] += 1
            if totals["strings"] > MAX_SHARED_STRINGS:
                raise FileRefused(
                    "too_many_shared_strings",
                    _("The file has more than %(max)d distinct texts.")
                    % {"max": MAX_SHARED_STRINGS},
                )

    def feed(self, stream: IO[bytes]) -> None:
        """Parse the part chunk by chunk. A part that is not XML (an image) stops at its first
        bytes; openpyxl refuses it too, so only what parses is counted."""
        try:
            while chunk := stream.read(CHUNK):
                self.parser.Parse(chunk, False)
            self.parser.Parse(b"", True)
        except expat.ExpatError:
            return


def xlsx_inspect(data: bytes) -> Sheet:
    """Check an XLSX file against every cap before openpyxl opens it."""
    if _zip_entries(data) > MAX_PARTS:
        raise FileRefused(
            "too_many_parts", _("The file has more than %(max)d parts.") % {"max": MAX_PARTS}
        )
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, ValueError, EOFError) as exc:
        raise not_xlsx() from exc
    with archive:
        infos = archive.infolist()
        if len(infos) > MAX_PARTS:
            raise FileRefused(
                "too_many_parts", _("The file has more than %(max)d parts.") % {"max": MAX_PARTS}
            )
        # zipfile stops inflating a part at its declared size (and checks its CRC), so the
        # declared sizes bound what any reader of this archive gets out of it.
        if sum(info.file_size for info in infos) > MAX_UNCOMPRESSED:
            raise FileRefused(
                "too_large_uncompressed",
                _("Unpacked, the file is larger than %(max)d MB.")
                % {"max": MAX_UNCOMPRESSED // (1024 * 1024)},
            )
        sheet = Sheet()
        totals = {"elements": 0, "cells": 0, "strings": 0}
        for info in infos:
            if info.is_dir():
                continue
            try:
                with archive.open(info) as stream:
                    _Counter(sheet, totals).feed(stream)
            except FileRefused:
                raise
            except (zipfile.BadZipFile, zlib.error, NotImplementedError, RuntimeError, ValueError,
                    EOFError) as exc:  # fmt: skip
                raise not_xlsx() from exc  # corrupt, encrypted or an unknown compression
    return sheet
