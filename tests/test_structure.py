"""The shape of the house (README "How the code is laid out"): which module may import which.

Read from the source with ``ast``, so function-level imports count as much as top-level ones.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
APPS = (
    "accounts",
    "catalog",
    "orders",
    "checkout",
    "wallet",
    "backoffice",
    "reseller",
    "emails",
    "requestlog",
    "webhooks",
    "recipients",
    "sandbox",
    "payments",
    "recharges",
    "site_pages",
    "upstreams",
    "reconciliation",
)


def _modules() -> dict[str, Path]:
    found = {}
    for app in APPS:
        for path in (ROOT / app).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            if "migrations" in parts or "tests" in parts:
                continue
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            found[name] = path
    return found


MODULES = _modules()


def _imports(name: str, path: Path) -> set[str]:
    """Our modules that ``name`` imports (``from pkg import mod`` counts as importing pkg.mod)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                targets.add(sub if sub in MODULES else base)
    # A module imports its package's __init__ implicitly; only explicit edges matter here.
    return {target for target in targets if target in MODULES and target != name}


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def _cycles() -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in GRAPH[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for node in sorted(GRAPH):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycle_between_our_modules():
    assert _cycles() == []


def test_no_app_imports_the_back_office():
    offenders = sorted(
        f"{name} imports {target}"
        for name, targets in GRAPH.items()
        if not name.startswith("backoffice")
        for target in targets
        if target.startswith("backoffice")
    )
    assert offenders == []


def test_every_admin_registration_lives_in_the_back_office():
    stray = [name for name in MODULES if name.endswith(".admin") and name != "backoffice.admin"]
    assert stray == []


# Django's caches of a queryset's rows and of an instance's prefetched relations: filled by
# Django when it reads, never by us. Code that needs objects it already holds passes them on.
DJANGO_PRIVATE_CACHES = {"_prefetched_objects_cache", "_result_cache", "_prefetch_done"}


def _written_attributes(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """(line, attribute) of every ``x.attr = …``, ``x.attr[k] = …`` and ``x.attr += …``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        else:
            continue
        for target in targets:
            while isinstance(target, ast.Subscript):
                target = target.value
            if isinstance(target, ast.Attribute):
                yield node.lineno, target.attr


def test_no_code_writes_into_djangos_query_caches():
    """Plain Django: rows a caller already holds travel as values (``orders.services.
    PlacedOrder``), or are read with ``prefetch_related``; nothing forges a prefetch."""
    packages = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"][
        "root_packages"
    ]
    offenders = [
        f"{path.relative_to(ROOT)}:{line} writes {attribute}"
        for package in packages
        for path in sorted((ROOT / package).rglob("*.py"))
        for line, attribute in _written_attributes(ast.parse(path.read_text(), str(path)))
        if attribute in DJANGO_PRIVATE_CACHES
    ]
    assert offenders == []


def test_one_outcome_name_per_meaning():
    """A catalog upsert's result, an idempotent request's reply and a card checkout's result
    each have a name of their own (``UpsertResult``, ``IdempotentReply``, ``CheckoutResult``);
    ``Outcome`` is left to one module (the processor's, renamed with the dispatch work)."""
    defining = [
        name
        for name, path in MODULES.items()
        for node in ast.parse(path.read_text(), str(path)).body
        if isinstance(node, ast.ClassDef) and node.name == "Outcome"
    ]
    assert len(defining) <= 1, defining


def test_the_layers_of_docs_architecture_are_the_import_contracts():
    """docs/architecture.md draws the layers of pyproject.toml's contract, every app in its
    place (the contract is the truth: lint-imports enforces it), with reseller at the bottom."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    (layered,) = [c for c in config["contracts"] if c["type"] == "layers"]
    contract = [set(layer.split(" | ")) for layer in layered["layers"]] + [{"reseller"}]
    text = (ROOT / "docs" / "architecture.md").read_text()
    diagram = text.split("## Layers", 1)[1].split("```", 2)[1]
    drawn = [  # a layer's line starts with its apps; the text after two spaces says why
        set(line.split("  ")[0].split(" | ")) for line in diagram.splitlines() if line[:1].isalpha()
    ]
    assert drawn == contract
    assert {app for layer in drawn for app in layer} == set(config["root_packages"])


IMPORT_EACH_FIRST = """
import os, sys, django
django.setup()
failed = []
for name in sys.argv[1:]:
    pid = os.fork()
    if pid == 0:  # a child that has imported nothing of ours but settings and models
        try:
            __import__(name)
        except BaseException as exc:
            print(f"{name}: {exc!r}", file=sys.stderr)
            os._exit(1)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    if status:
        failed.append(name)
print(" ".join(failed))
"""


def test_every_module_imports_first_in_a_fresh_interpreter():
    """No module depends on another having been imported before it (import order is free):
    after django.setup(), each module is imported first, alone, in a forked child."""
    result = subprocess.run(
        [sys.executable, "-c", IMPORT_EACH_FIRST, *sorted(MODULES)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "reseller.settings.test"},
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "", result.stderr


def test_no_test_module_imports_another_test_module():
    """Helpers live in tests/helpers.py, factories in tests/factories.py, fixtures in conftest."""
    offenders = []
    for path in (ROOT / "tests").rglob("*.py"):
        if path.name == "test_structure.py":
            continue  # it names the patterns it looks for
        text = path.read_text()
        for node in ast.walk(ast.parse(text, str(path))):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                names = [node.value]  # e.g. pytest.mark.urls("tests.…")
            offenders += [
                f"{path.relative_to(ROOT)}: {name}"
                for name in names
                if name.startswith(("tests.test_", "tests.conftest")) or ".tests.test_" in name
            ]
    assert offenders == []
