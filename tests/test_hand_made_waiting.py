"""The application waits on what wakes it (docs/processor.md, "Waiting, counted"): Celery's
countdowns, blocking Redis calls, events and conditions. The sleeps, threads, timers and
thread pools it starts itself are four, each named in that table; a fifth fails here until it
is either replaced by something that wakes or given its line there."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
APP_PACKAGES = [
    path.parent for path in ROOT.glob("*/__init__.py") if path.parent.name not in {"tests", "bench"}
]
KEPT = {
    ("upstreams/adapters/simulator.py", "time.sleep"),  # the simulated provider's latency
    ("reseller/tasks.py", "ThreadPoolExecutor"),  # make run's tasks, without a broker
    ("reseller/tasks.py", "threading.Thread"),  # make run's clock, without a broker
    ("requestlog/buffer.py", "threading.Thread"),  # the request log's writer
}
WAITS = {"time.sleep", "threading.Thread", "threading.Timer", "ThreadPoolExecutor", "sleep"}


def _name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_name(node.value)}.{node.attr}"
    return ""


def hand_made_waits() -> set[tuple[str, str]]:
    found = set()
    for package in APP_PACKAGES:
        for path in package.rglob("*.py"):
            if "migrations" in path.parts:
                continue
            tree = ast.parse(path.read_text(), filename=str(path))
            for node in ast.walk(tree):
                if isinstance(node, ast.Call) and _name(node.func) in WAITS:
                    found.add((str(path.relative_to(ROOT)), _name(node.func)))
    return found


def test_the_app_starts_only_the_four_waits_docs_processor_md_lists():
    assert hand_made_waits() == KEPT


def test_docs_list_each_kept_wait():
    table = (ROOT / "docs" / "processor.md").read_text()
    for path, _what in KEPT:
        assert f"`{path}`" in table, path
