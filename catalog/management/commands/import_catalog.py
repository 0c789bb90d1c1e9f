from django.core.management.base import BaseCommand, CommandError

from catalog.importing import COLUMNS, ImportFileError, catalog_import, read_catalog_file


class Progress:
    """A one-line progress bar on a terminal; a line every 10% otherwise."""

    WIDTH = 30

    def __init__(self, total: int, stream) -> None:
        self.total, self.stream = max(total, 1), stream  # a command's OutputWrapper
        self.tty = stream.isatty()
        self.last_decile = -1

    def __call__(self, done: int) -> None:
        fraction = done / self.total
        if self.tty:
            filled = int(fraction * self.WIDTH)
            bar = "#" * filled + "." * (self.WIDTH - filled)
            ending = "\n" if done >= self.total else ""
            self.stream.write(f"\r[{bar}] {done}/{self.total} {fraction:4.0%}", ending=ending)
            self.stream.flush()
            return
        decile = int(fraction * 10)
        if decile != self.last_decile and (decile > self.last_decile or done == self.total):
            self.last_decile = decile
            self.stream.write(f"imported {done}/{self.total} rows ({fraction:.0%})")


class Command(BaseCommand):
    help = (
        "Load recharge products from a CSV or JSON file (format: docs/catalog.md). Rows are "
        "keyed by sku: created, updated or skipped when identical. A bad row is reported "
        "with its line and skipped; each row is all-or-nothing. Exits 1 if any row failed. "
        f"Columns: {', '.join(COLUMNS)}."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", help="Path to a .csv or .json file.")
        parser.add_argument("--format", choices=["csv", "json"], help="Override the suffix.")
        parser.add_argument(
            "--dry-run", action="store_true", help="Check and report, then roll everything back."
        )

    def handle(self, *args, **options):
        try:
            rows = read_catalog_file(options["file"], file_format=options["format"])
        except ImportFileError as exc:
            raise CommandError(str(exc)) from exc
        report = catalog_import(
            rows=rows, dry_run=options["dry_run"], progress=Progress(len(rows), self.stderr)
        )
        prefix = "dry run, nothing saved: " if options["dry_run"] else ""
        self.stdout.write(
            f"{prefix}{len(rows)} rows: {report.created} created, {report.updated} updated, "
            f"{report.skipped} skipped (unchanged), {len(report.errors)} errors"
        )
        for error in report.errors:
            self.stdout.write(f"  line {error.line}: {error.message}")
        if report.errors:
            raise CommandError(f"{len(report.errors)} rows were not imported (see above)")
