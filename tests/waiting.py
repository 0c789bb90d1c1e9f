"""Tests wait on conditions, not clocks (issue 39): ``wait_until`` returns as soon as what the
test needs holds (a thread started, a row written, a port answering) and fails the test, naming
what it waited for, when the deadline passes. It is the one place in tests/ that pauses between
checks (test_hand_made_waiting.py scans for any other ``time.sleep``); where the code offers
something that wakes the waiter (an Event, ``Popen.wait(timeout=)``, a blocking Redis call),
wait on that instead.

It imports neither Django nor pytest, so the provider fakes (also run as scripts) can use it."""

from __future__ import annotations

import time
from collections.abc import Callable

EVERY = 0.05  # between two checks: short against every deadline in the suite


class WaitTimeout(AssertionError):
    """The deadline passed before the condition held: the test fails (an AssertionError, so
    pytest reports it as a failed expectation, with the message)."""


def wait_until[T](
    condition: Callable[[], T],
    *,
    timeout: float,
    what: str,
    state: Callable[[], object] | None = None,
    every: float = EVERY,
) -> T:
    """Check ``condition`` until it returns something truthy, and return that; after
    ``timeout`` seconds raise WaitTimeout naming ``what`` (and ``state()``, what was seen last,
    when given). The condition is checked once more at the deadline, so a slow last check
    never loses a condition that held."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        left = deadline - time.monotonic()
        if left <= 0:
            seen = f"; last seen: {state()}" if state is not None else ""
            raise WaitTimeout(f"waited {timeout:g} s for {what}{seen}")
        time.sleep(min(every, left))
