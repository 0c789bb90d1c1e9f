"""One writer per table (docs/architecture.md): each model's rows are created, updated and
deleted only by the app that defines it; other apps call that app's services.

Read from the source with ``ast``: a manager or queryset write (``create``, ``update``,
``bulk_create``, ``bulk_update``, ``get_or_create``, ``update_or_create``, ``delete``) on a
model named in a chain that starts with ``<Model>.objects`` (or ``_default_manager``), and a
``.save()``/``.delete()`` on an instance built in the same expression (``Model(...).save()``),
outside the model's own app, fails the test. Tests, migrations and the benchmark's seeding are
not the product's code and are not scanned.
"""

from __future__ import annotations

import ast
from pathlib import Path

from django.apps import apps

ROOT = Path(__file__).resolve().parent.parent
WRITES = {
    "create",
    "update",
    "bulk_create",
    "bulk_update",
    "get_or_create",
    "update_or_create",
    "delete",
}
# Django's and third parties' models are written by their own code (sessions, users' groups):
# only our apps' models are checked.
OURS = {
    config.label: Path(config.path).resolve()
    for config in apps.get_app_configs()
    if Path(config.path).resolve().is_relative_to(ROOT)
    and not Path(config.path).resolve().is_relative_to(ROOT / ".venv")
}


def _owners() -> dict[str, str]:
    owners: dict[str, str] = {}
    for label in OURS:
        for model in apps.get_app_config(label).get_models():
            owners[model.__name__] = label
    return owners


def _model_of_chain(node: ast.AST) -> str | None:
    """The model a manager chain starts from: ``Model.objects.filter(...).update`` → Model."""
    while True:
        if isinstance(node, ast.Call):
            node = node.func
        elif isinstance(node, ast.Attribute):
            if node.attr in ("objects", "_default_manager") and isinstance(node.value, ast.Name):
                return node.value.id
            node = node.value
        else:
            return None


def _writes(path: Path) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        if node.func.attr in WRITES:
            model = _model_of_chain(node.func.value)
            if model is not None:
                found.append((node.lineno, model))
        if node.func.attr in ("save", "delete") and isinstance(node.func.value, ast.Call):
            built = node.func.value.func
            if isinstance(built, ast.Name):
                found.append((node.lineno, built.id))
    return found


def test_every_model_is_written_only_by_the_app_that_defines_it():
    owners = _owners()
    strays = []
    for label, folder in OURS.items():
        for path in folder.rglob("*.py"):
            if "migrations" in path.parts or "tests" in path.parts:
                continue
            for line, model in _writes(path):
                owner = owners.get(model)
                if owner is not None and owner != label:
                    strays.append(f"{path.relative_to(ROOT)}:{line} writes {model} of {owner}")
    assert strays == [], "\n".join(strays)


def test_the_scan_sees_a_write_of_another_apps_model(tmp_path):
    """The scan itself: a queryset update and a bulk_create in a chain are found."""
    source = tmp_path / "stray.py"
    source.write_text(
        "Wallet.objects.filter(pk=1).update(balance=0)\n"
        "LedgerEntry.objects.bulk_create([])\n"
        "Recharge(status='queued').save()\n"
        "Wallet.objects.filter(pk=1).first()\n"
    )
    assert _writes(source) == [(1, "Wallet"), (2, "LedgerEntry"), (3, "Recharge")]
