"""A small closed-loop HTTP load generator: N threads, one keep-alive connection each.

Bounded by design: every run stops after ``duration`` seconds or ``max_requests`` requests,
whichever comes first, and only talks to the address it is given (bench/run.py: 127.0.0.1).
"""

from __future__ import annotations

import http.client
import statistics
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

# (method, path, headers, body) for the request number ``n`` of client ``client``.
RequestFactory = Callable[[int, int], tuple[str, str, dict[str, str], bytes | None]]


@dataclass
class Result:
    clients: int
    seconds: float
    latencies_ms: list[float] = field(default_factory=list)
    statuses: Counter = field(default_factory=Counter)
    expected: int = 200

    @property
    def ok(self) -> int:
        return self.statuses.get(self.expected, 0)

    @property
    def errors(self) -> int:
        return sum(self.statuses.values()) - self.ok

    @property
    def rps(self) -> float:
        return self.ok / self.seconds if self.seconds else 0.0

    def percentile(self, q: int) -> float:
        if len(self.latencies_ms) < 2:
            return self.latencies_ms[0] if self.latencies_ms else 0.0
        return statistics.quantiles(self.latencies_ms, n=100, method="inclusive")[q - 1]

    def summary(self) -> dict:
        return {
            "clients": self.clients,
            "requests": sum(self.statuses.values()),
            "ok": self.ok,
            "errors": self.errors,
            "statuses": {str(k): v for k, v in sorted(self.statuses.items())},
            "seconds": round(self.seconds, 2),
            "rps": round(self.rps, 1),
            "p50_ms": round(self.percentile(50), 2),
            "p99_ms": round(self.percentile(99), 2),
        }


def run(
    *,
    host: str,
    port: int,
    clients: int,
    make_request: RequestFactory,
    duration: float,
    warmup: float,
    max_requests: int,
    expected: int = 200,
) -> Result:
    """Closed loop: each client sends its next request when the previous answer is read.
    Requests that start during ``warmup`` are sent but not counted."""
    started = time.perf_counter()
    measure_from = started + warmup
    stop_at = measure_from + duration
    result = Result(clients=clients, seconds=0.0, expected=expected)
    lock = threading.Lock()
    budget = [max_requests]
    measured_end = [measure_from]

    def client(index: int) -> None:
        conn = http.client.HTTPConnection(host, port, timeout=60)
        latencies: list[float] = []
        statuses: Counter = Counter()
        n = 0
        try:
            while True:
                begin = time.perf_counter()
                if begin >= stop_at:
                    break
                counted = begin >= measure_from
                if counted:
                    with lock:
                        if budget[0] <= 0:
                            break
                        budget[0] -= 1
                method, path, headers, body = make_request(index, n)
                n += 1
                try:
                    conn.request(method, path, body=body, headers=headers)
                    response = conn.getresponse()
                    response.read()
                    status = response.status
                except (OSError, http.client.HTTPException):
                    conn.close()
                    status = 599
                end = time.perf_counter()
                if counted:
                    statuses[status] += 1
                    if status == expected:
                        latencies.append((end - begin) * 1000)
                    with lock:
                        measured_end[0] = max(measured_end[0], end)
        finally:
            conn.close()
            with lock:
                result.latencies_ms.extend(latencies)
                result.statuses.update(statuses)

    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=warmup + duration + 120)
    result.seconds = max(1e-9, measured_end[0] - measure_from)
    return result
