#!/usr/bin/env python
"""Where the time of one B2B recharge goes: pyinstrument over N in-process requests.

Run by bench/run.py in the bench environment (production settings, PostgreSQL, Redis broker):
the requests go through the whole Django stack (middleware, DRF, authentication, throttle,
idempotency, the order service, the broker publish) but not through gunicorn's socket.
Writes the call tree and a table of self time by function and by layer.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import uuid
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reseller.settings.production")

import django  # noqa: E402

django.setup()

from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from pyinstrument import Profiler  # noqa: E402

LAYERS = [
    ("psycopg", "PostgreSQL driver (psycopg, waiting on the server)"),
    ("django/db", "Django ORM (query building, model instances)"),
    ("kombu", "broker publish (kombu/celery/redis)"),
    ("celery", "broker publish (kombu/celery/redis)"),
    ("redis", "Redis (rate limit, cache)"),
    ("rest_framework", "DRF (views, serializers, rendering)"),
    ("djangorestframework_camel_case", "camelCase rendering and parsing"),
    ("phonenumbers", "phone number parsing"),
    ("django", "Django (middleware, request, other)"),
    ("/accounts/", "our code: accounts"),
    ("/orders/", "our code: orders"),
    ("/wallet/", "our code: wallet"),
    ("/catalog/", "our code: catalog"),
    ("/reseller/", "our code: reseller"),
]


def layer(path: str) -> str:
    for needle, name in LAYERS:
        if needle in path:
            return name
    return "other (stdlib, json, hashing, …)"


def self_times(frame, by_function, by_layer) -> None:
    children = frame.children
    own = frame.time - sum(child.time for child in children)
    named = frame.parent if frame.function == "[self]" and frame.parent else frame
    key = f"{named.function} ({named.file_path_short}:{named.line_no})"
    by_function[key] += own
    by_layer[layer(named.file_path or named.file_path_short or "")] += own
    for child in children:
        self_times(child, by_function, by_layer)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--key", required=True)
    parser.add_argument("--product", required=True)
    parser.add_argument("--recipient", required=True)
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--output", type=Path, required=True)
    args = parser.parse_args()

    client = Client(HTTP_HOST="127.0.0.1")
    body = json.dumps(
        {
            "items": [
                {"productId": args.product, "recipientNumber": args.recipient, "quantity": 1}
            ],
            "baseCurrency": "EUR",
        }
    )

    def call() -> None:
        response = client.post(
            "/api/v1/api-access/b2b/recharges",
            body,
            content_type="application/json",
            headers={"x-api-key": args.key, "Idempotency-Key": uuid.uuid4().hex},
        )
        assert response.status_code == 201, response.content

    for _ in range(20):  # warm connections and caches
        call()
    queries: list[str] = []

    def count(execute, sql, params, many, context):
        queries.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(count):
        call()
    profiler = Profiler(interval=0.0005)
    profiler.start()
    for _ in range(args.requests):
        call()
    profiler.stop()
    session = profiler.last_session
    root = session.root_frame()
    by_function: dict[str, float] = defaultdict(float)
    by_layer: dict[str, float] = defaultdict(float)
    self_times(root, by_function, by_layer)
    total = sum(by_layer.values()) or 1.0
    per_request_ms = session.duration / args.requests * 1000
    lines = [
        f"B2B recharge, {args.requests} requests in process: {per_request_ms:.2f} ms each "
        "(pyinstrument wall time, sampling every 0.5 ms)",
        f"SQL statements per B2B request: {len(queries)}",
        *(f"    {sql[:150]}" for sql in queries),
        "",
        "Self time by layer:",
    ]
    for name, seconds in sorted(by_layer.items(), key=lambda kv: -kv[1]):
        lines.append(f"  {seconds / total * 100:5.1f}%  {name}")
    lines += ["", "Top 25 functions by self time:"]
    for name, seconds in sorted(by_function.items(), key=lambda kv: -kv[1])[:25]:
        lines.append(f"  {seconds / total * 100:5.1f}%  {name}")
    lines += ["", "Call tree:", profiler.output_text(unicode=False, color=False, short_mode=True)]
    lines += profile_processor(count=min(100, args.requests))
    args.output.parent.mkdir(parents=True, exist_ok=True)
    # Paths relative to the repository: the report says nothing about the machine it ran on.
    args.output.write_text(("\n".join(lines) + "\n").replace(f"{ROOT}/", ""))
    print("\n".join(line for line in lines if "ms each" in line or "statements per" in line))
    return 0


def profile_processor(*, count: int) -> list[str]:
    """The worker's share: ``recharge_process`` (the task's body) on queued recharges, in
    process, with the simulator at 0 ms."""
    from recharges.models import Recharge
    from recharges.processor import recharge_process

    ids = list(
        Recharge.objects.filter(status="queued")
        .order_by("pk")
        .values_list("pk", flat=True)[: count + 1]
    )
    if len(ids) < 2:
        return ["", "processor: no queued recharges to profile"]
    queries: list[str] = []

    def counting(execute, sql, params, many, context):
        queries.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(counting):
        recharge_process(recharge_id=ids[0])
    profiler = Profiler(interval=0.0005)
    profiler.start()
    for pk in ids[1:]:
        recharge_process(recharge_id=pk)
    profiler.stop()
    session = profiler.last_session
    by_function: dict[str, float] = defaultdict(float)
    by_layer: dict[str, float] = defaultdict(float)
    self_times(session.root_frame(), by_function, by_layer)
    total = sum(by_layer.values()) or 1.0
    lines = [
        "",
        "=" * 78,
        f"Processor: recharge_process on {len(ids) - 1} queued recharges in process: "
        f"{session.duration / (len(ids) - 1) * 1000:.2f} ms each",
        f"SQL statements per recharge: {len(queries)}",
        *(f"    {sql[:150]}" for sql in queries),
        "",
        "Self time by layer:",
    ]
    for name, seconds in sorted(by_layer.items(), key=lambda kv: -kv[1]):
        lines.append(f"  {seconds / total * 100:5.1f}%  {name}")
    lines += ["", "Top 15 functions by self time:"]
    for name, seconds in sorted(by_function.items(), key=lambda kv: -kv[1])[:15]:
        lines.append(f"  {seconds / total * 100:5.1f}%  {name}")
    lines += ["", "Call tree:", profiler.output_text(unicode=False, color=False, short_mode=True)]
    return lines


if __name__ == "__main__":
    sys.exit(main())
