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


# The tests wait on conditions, not clocks (issue 39): tests/waiting.py's wait_until is the one
# place in tests/ that pauses between checks. The provider fakes' sleeps stay: they simulate
# the provider (its latency, its back-off), which is what the fake is for.
TESTS = ROOT / "tests"
SLEEPS = {"time.sleep", "sleep", "asyncio.sleep"}
SLEEPS_KEPT = {
    ("tests/waiting.py", "wait_until"),  # the pause between two checks of a condition
    ("tests/fakes/reloadly.py", "_topup_answer"),  # Reloadly's latency, simulated
    ("tests/fakes/dtone.py", "_create"),  # DT One's latency, simulated
    ("tests/fakes/dtone.py", "_post_callback"),  # DT One's callback retry back-off, simulated
    ("tests/fakes/ding.py", "do_POST"),  # Ding's latency, simulated
    # A number lookup's latency, simulated (issue 41: the budget's fallback to the prefixes).
    ("tests/fakes/reloadly.py", "_auto_detect"),
    ("tests/fakes/dtone.py", "_lookup_number"),
    ("tests/fakes/ding.py", "_account_lookup"),
}


def sleeps_in_tests() -> set[tuple[str, str]]:
    """Each (file, enclosing function) of tests/ that calls a sleep."""
    found = set()

    def visit(node: ast.AST, path: str, function: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Call) and _name(child.func) in SLEEPS:
                found.add((path, function))
            inner = (
                child.name if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef) else None
            )
            visit(child, path, inner or function)

    for path in TESTS.rglob("*.py"):
        visit(ast.parse(path.read_text(), filename=str(path)), str(path.relative_to(ROOT)), "")
    return found


def test_tests_wait_on_conditions_and_only_the_fakes_sleep_to_simulate_a_provider():
    assert sleeps_in_tests() == SLEEPS_KEPT
