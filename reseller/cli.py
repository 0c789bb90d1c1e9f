"""What the management commands share."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stdout


@contextmanager
def work_printed_on_stderr() -> Iterator[None]:
    """Whatever the command's work prints goes to stderr, so its stdout is its own line (the
    contract's). Under ``make run`` the console prints mail, and a command's work may send
    some as it commits: ``reconcile_provider``'s staff alert, a provider's low balance."""
    with redirect_stdout(sys.stderr):
        yield
