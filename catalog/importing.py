"""Catalog import: products from a CSV or JSON file, one row at a time, each all-or-nothing.

The file format is documented in docs/catalog.md. Rows are keyed by ``sku``: a new SKU is
created, a known one updated, an identical one skipped. A bad row is reported with its
line number and skipped; the rows before and after it are still imported.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import DatabaseError, transaction
from rest_framework import serializers

from catalog import services
from catalog.models import Country, Operator, ProductType
from catalog.services import UpsertResult

TRANSLATED = ("name", "description")
LANGUAGES = ("es", "fr")
COLUMNS = [
    "sku",
    "country",
    "operator",
    "name",
    "type",
    "local_amount",
    "local_currency",
    "price",
    "currency",
    "validity_days",
    "description",
    "active",
    *(f"{f}_{lang}" for f in TRANSLATED for lang in LANGUAGES),
]
REQUIRED = ["sku", "country", "operator", "name", "local_amount", "local_currency", "price"]


class ImportFileError(Exception):
    """The file as a whole cannot be read (format, header); nothing was imported."""


class ImportRow(serializers.Serializer):
    sku = serializers.CharField(max_length=64)
    country = serializers.RegexField(r"^[A-Za-z]{2}$", max_length=2)
    operator = serializers.CharField(max_length=100)
    name = serializers.CharField(max_length=150)
    type = serializers.ChoiceField(choices=ProductType.values, default=ProductType.AIRTIME)
    local_amount = serializers.DecimalField(
        max_digits=12, decimal_places=2, min_value=Decimal("0.01")
    )
    local_currency = serializers.RegexField(r"^[A-Za-z]{3}$")
    price = serializers.DecimalField(max_digits=12, decimal_places=2, min_value=Decimal("0.01"))
    currency = serializers.RegexField(r"^[A-Za-z]{3}$", default="EUR")
    validity_days = serializers.IntegerField(min_value=1, max_value=3650, default=None)
    description = serializers.CharField(max_length=300, default="")
    active = serializers.BooleanField(default=True)
    name_es = serializers.CharField(max_length=150, default="")
    name_fr = serializers.CharField(max_length=150, default="")
    description_es = serializers.CharField(max_length=300, default="")
    description_fr = serializers.CharField(max_length=300, default="")

    def to_internal_value(self, data):
        unknown = sorted(set(data) - set(self.fields))
        if unknown:
            raise serializers.ValidationError(
                {name: ["Unknown column."] for name in unknown}, code="unknown_field"
            )
        return super().to_internal_value(data)


@dataclass
class RowError:
    line: int
    message: str


@dataclass
class ImportReport:
    created: int = 0
    updated: int = 0
    skipped: int = 0
    errors: list[RowError] = field(default_factory=list)

    @property
    def total(self) -> int:
        return self.created + self.updated + self.skipped + len(self.errors)


# --- reading files -------------------------------------------------------------------------


def read_catalog_file(
    path: str | Path, *, file_format: str | None = None
) -> list[tuple[int, dict]]:
    """The rows of a file as ``(line, values)``; raises ``ImportFileError``."""
    path = Path(path)
    file_format = (file_format or path.suffix.lstrip(".")).lower()
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise ImportFileError(f"cannot read {path.name}: {exc}") from exc
    if file_format == "csv":
        return read_csv(text)
    if file_format == "json":
        return read_json(text)
    raise ImportFileError("unknown format: name the file .csv or .json, or pass --format")


def read_csv(text: str) -> list[tuple[int, dict]]:
    reader = csv.DictReader(io.StringIO(text))
    header = [name.strip() for name in reader.fieldnames or []]
    if not header:
        raise ImportFileError("the CSV file is empty")
    unknown = [name for name in header if name not in COLUMNS]
    missing = [name for name in REQUIRED if name not in header]
    if unknown or missing:
        problems = []
        if unknown:
            problems.append(f"unknown columns: {', '.join(unknown)}")
        if missing:
            problems.append(f"missing columns: {', '.join(missing)}")
        raise ImportFileError(f"line 1: {'; '.join(problems)} (columns: {', '.join(COLUMNS)})")
    reader.fieldnames = header
    rows = []
    previous_end = reader.line_num
    for record in reader:
        start, previous_end = previous_end + 1, reader.line_num
        values: dict[str, Any] = {}
        for key, value in record.items():
            if key is None:
                values["__extra__"] = value
            elif value is not None and value.strip() != "":
                values[key] = value.strip()
        rows.append((start, values))
    return rows


def read_json(text: str) -> list[tuple[int, dict]]:
    """A JSON array of objects; each row's line is where its object starts."""
    decoder = json.JSONDecoder(parse_float=Decimal)
    position, line, counted = 0, 1, 0

    def skip(index: int) -> int:
        while index < len(text) and text[index] in " \t\r\n":
            index += 1
        return index

    def line_at(index: int) -> int:
        nonlocal line, counted
        line += text.count("\n", counted, index)
        counted = index
        return line

    position = skip(position)
    if position >= len(text) or text[position] != "[":
        raise ImportFileError("a JSON catalog is an array of product objects")
    position = skip(position + 1)
    rows: list[tuple[int, dict]] = []
    if position < len(text) and text[position] == "]":
        return rows
    while True:
        start_line = line_at(position)
        try:
            value, position = decoder.raw_decode(text, position)
        except json.JSONDecodeError as exc:
            raise ImportFileError(f"line {exc.lineno}: invalid JSON: {exc.msg}") from exc
        rows.append((start_line, value))
        position = skip(position)
        if position < len(text) and text[position] == ",":
            position = skip(position + 1)
            continue
        if position < len(text) and text[position] == "]":
            return rows
        raise ImportFileError(f"line {line_at(min(position, len(text)))}: expected , or ]")


# --- importing -----------------------------------------------------------------------------


class _Lookups:
    """Countries and operators by code, id, slug or name, loaded once."""

    def __init__(self) -> None:
        self.countries = {c.code: c for c in Country.objects.all()}
        self.operators: dict[str, dict[str, Operator]] = {}
        for op in Operator.objects.all():
            keys = self.operators.setdefault(op.country_id, {})
            for key in (op.public_id, op.slug, op.name):
                keys.setdefault(key.casefold(), op)

    def operator(self, country: str, ref: str) -> Operator:
        if country not in self.countries:
            raise DjangoValidationError({"country": f"Unknown country {country}."})
        operator = self.operators.get(country, {}).get(ref.strip().casefold())
        if operator is None:
            raise DjangoValidationError(
                {"operator": f"No operator {ref!r} in {country} (use its id, slug or name)."}
            )
        return operator


def _messages(error: DjangoValidationError | serializers.ValidationError) -> str:
    """One line naming the columns as they are in the file."""
    if isinstance(error, serializers.ValidationError):
        detail = error.detail
        if isinstance(detail, dict):
            return "; ".join(
                f"{name}: {' '.join(str(m) for m in messages)}"
                if name != "non_field_errors"
                else " ".join(str(m) for m in messages)
                for name, messages in detail.items()
            )
        return " ".join(str(m) for m in detail)
    if hasattr(error, "message_dict"):
        return "; ".join(
            f"{name}: {' '.join(messages)}" if name != "__all__" else " ".join(messages)
            for name, messages in error.message_dict.items()
        )
    return " ".join(error.messages)


def _import_row(values: Any, lookups: _Lookups) -> UpsertResult:
    if not isinstance(values, dict):
        raise DjangoValidationError("A row is an object of column: value.")
    if "__extra__" in values:
        raise DjangoValidationError("More values than columns.")
    row = ImportRow(data=values)
    row.is_valid(raise_exception=True)
    data = row.validated_data
    country = data["country"].upper()
    operator = lookups.operator(country, data["operator"])
    translations = {
        lang: {f: data[f"{f}_{lang}"] for f in TRANSLATED if data[f"{f}_{lang}"]}
        for lang in LANGUAGES
    }
    _product, outcome = services.product_upsert(
        sku=data["sku"],
        operator=operator,
        name=data["name"],
        description=data["description"],
        product_type=data["type"],
        local_amount=data["local_amount"],
        local_currency=data["local_currency"],
        retail_price=data["price"],
        retail_currency=data["currency"],
        validity_days=data["validity_days"],
        active=data["active"],
        translations=translations,
    )
    return outcome


def catalog_import(
    *,
    rows: Iterable[tuple[int, Any]],
    dry_run: bool = False,
    progress: Callable[[int], None] | None = None,
) -> ImportReport:
    """Import rows; each row is its own transaction, so a bad one writes nothing.

    With ``dry_run`` everything runs and is then rolled back: the report says what would
    happen.
    """
    report = ImportReport()
    lookups = _Lookups()
    with transaction.atomic() if dry_run else contextlib.nullcontext():
        for done, (line, values) in enumerate(rows, start=1):
            try:
                with transaction.atomic():
                    outcome = _import_row(values, lookups)
            except (DjangoValidationError, serializers.ValidationError) as exc:
                report.errors.append(RowError(line, _messages(exc)))
            except DatabaseError as exc:
                report.errors.append(RowError(line, f"database refused the row: {exc}"))
            else:
                if outcome == UpsertResult.CREATED:
                    report.created += 1
                elif outcome == UpsertResult.UPDATED:
                    report.updated += 1
                else:
                    report.skipped += 1
            if progress:
                progress(done)
        if dry_run:
            transaction.set_rollback(True)
    return report
