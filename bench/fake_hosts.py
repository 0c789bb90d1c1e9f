"""The routing figure's provider fakes, each in a process of its own.

A provider's servers are hosts of their own: they do not share a Python interpreter (and its
GIL) with the benchmark's client, its callback receiver and each other. Run as threads of the
bench process, the three fakes, DT One's callbacks and the client's polling took turns on one
lock, and the outage run's middle third measured that lock (DT One and Ding carried 50-70
deliveries/s where Reloadly alone had carried 120/s; docs/performance.md, 2026-11-26).

``FakeHost`` starts one fake (``tests/fakes``) in a spawned process and drives it through a
pipe: its address and credentials, ``outage(down)``, and at the end ``deliveries()`` (the
references it delivered, and how many references it was sent more than once), read from the
fake's own records as before; ``delay(seconds)`` changes how long a top-up takes.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
from multiprocessing.connection import Connection
from typing import Any

from tests.fakes.ding import FakeDing
from tests.fakes.dtone import FakeDTOne
from tests.fakes.reloadly import FakeReloadly, default_operators, operator

KINDS = ("reloadly", "dtone", "ding")

# Telcel at any amount from 10 to 1,000 MXN (a RANGE operator, as Reloadly lists one beside the
# FIXED one of the same network): the routed figure sends half its recharges to it (issue 40).
TELCEL_RANGE = operator(
    343,
    "Telcel Mexico",
    ("MX", "Mexico"),
    "MXN",
    rate=20.5,
    discount=6.5,
    denomination="RANGE",
    supports_local=True,
    min_amount=0.49,
    max_amount=48.78,
    local_min_amount=10,
    local_max_amount=1000,
)


def _make(kind: str, balance: str) -> Any:
    if kind == "reloadly":
        return FakeReloadly(balance=balance, operators=[*default_operators(), TELCEL_RANGE])
    return {"dtone": FakeDTOne, "ding": FakeDing}[kind](balance=balance)


def _delivered(kind: str, fake: Any) -> set[str]:
    """The references ``fake`` holds as delivered, in its own protocol's words."""
    if kind == "reloadly":
        return {r for r, t in fake.topups.items() if t["status"] == "SUCCESSFUL"}
    if kind == "dtone":
        return {
            r
            for r, t in fake.transactions.items()
            if t["status"]["class"]["message"] == "COMPLETED"
        }
    return {
        r for r, t in fake.transfers.items() if t["ProcessingState"] in ("Complete", "Completed")
    }


def _serve(conn: Connection, kind: str, balance: str, delay: float) -> None:
    """The child: start the fake, answer the parent's commands until "stop"."""
    os.setpgid(0, 0)  # a process group of its own, so the bench counts its CPU by name
    fake = _make(kind, balance)
    fake.delay = delay
    fake.start()
    conn.send(
        {
            "url": fake.url,
            "api_key": getattr(fake, "api_key", ""),
            "api_secret": getattr(fake, "api_secret", ""),
        }
    )
    while True:
        command, *args = conn.recv()
        if command == "outage":
            fake.outage(*args)
            conn.send(None)
        elif command == "delay":
            fake.delay = float(args[0])
            conn.send(None)
        elif command == "deliveries":
            with fake.lock:
                done = _delivered(kind, fake)
                resent = sum(1 for n in fake.calls.values() if n > 1)
            conn.send((done, resent))
        else:
            fake.stop()
            conn.send(None)
            return


class FakeHost:
    """One provider fake in its own process, with the parts of the fake the bench uses."""

    def __init__(self, kind: str, *, balance: str, delay: float) -> None:
        if kind not in KINDS:
            raise ValueError(f"unknown fake kind {kind!r}")
        context = multiprocessing.get_context("spawn")
        self._conn, child = context.Pipe()
        self.process = context.Process(
            target=_serve, args=(child, kind, balance, delay), name=f"fake-{kind}", daemon=True
        )
        self.process.start()
        child.close()
        if not self._conn.poll(60):
            self.process.kill()
            raise RuntimeError(f"the {kind} fake did not start")
        info = self._conn.recv()
        self.url: str = info["url"]
        self.api_key: str = info["api_key"]
        self.api_secret: str = info["api_secret"]

    @property
    def pid(self) -> int:
        return int(self.process.pid or 0)

    def _call(self, *command: Any) -> Any:
        self._conn.send(command)
        return self._conn.recv()

    def outage(self, down: bool = True) -> None:
        """Refuse connections (``down``) or listen again, as the fake's own switch does."""
        self._call("outage", down)

    def delay(self, seconds: float) -> None:
        """Answer every top-up from now on after ``seconds``."""
        self._call("delay", seconds)

    def deliveries(self) -> tuple[set[str], int]:
        """(the references delivered, how many references were sent more than once)."""
        done, resent = self._call("deliveries")
        return set(done), int(resent)

    def stop(self) -> None:
        if self.process.is_alive():
            with contextlib.suppress(EOFError, OSError):
                self._call("stop")
            self.process.join(10)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(10)
