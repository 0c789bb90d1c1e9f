"""What the management commands share."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stdout

from reseller.tasks import tasks_inline


@contextmanager
def work_printed_on_stderr() -> Iterator[None]:
    """Whatever the command's work prints goes to stderr, so its stdout is its own line (the
    contract's). Under ``make run`` the console prints mail, and a command's work may send
    some as it commits (``reconcile_provider``'s staff alert, a provider's low balance): its
    tasks run in the command's own thread (``tasks_inline``), so the mail is sent, and
    printed, inside the block."""
    with redirect_stdout(sys.stderr), tasks_inline():
        yield
