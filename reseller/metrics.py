"""The metrics' instruments, defined once (docs/operations.md, "Metrics").

Counters and histograms that code increments where things happen: the request middleware
below, the recharge state machine (``recharges.state``), the provider call
(``recharges.processor``). The gauges of things that live in the database or in Redis (queue
depth, calls in flight, circuits, backlogs) are read when Prometheus scrapes, by the
``metrics`` app's collector; this module imports no app.

**Several processes.** gunicorn's workers and Celery's each count on their own. With
``PROMETHEUS_MULTIPROC_DIR`` set in the environment *before the process starts*,
prometheus_client writes every value to a memory-mapped file of that directory (one per
process), and ``GET /metrics`` adds up the files: counters are totals across every process,
including the ones that have exited since. The directory must be empty when the deployment
starts (docker-compose.yml wipes it); gunicorn.conf.py's ``child_exit`` tells the library a
worker is gone. Without it (``make run``, the tests) the values live in this process, which is
the only one that serves requests and runs tasks.
"""

from __future__ import annotations

import time
from typing import Any

from django.core.cache import cache
from django.http import HttpRequest, HttpResponse
from prometheus_client import Counter, Histogram, disable_created_metrics

# No ``*_created`` series beside each counter and histogram: a second series per label set
# that dashboards do not read (and that multiprocess mode does not have).
disable_created_metrics()

# Requests: a route is the URL pattern that answered (``api/v1/recharges/<str:public_id>``),
# never the path itself, so one series per route however many ids there are.
HTTP_REQUESTS = Counter(
    "reseller_http_requests",
    "HTTP requests answered, by route pattern, method and status.",
    ["route", "method", "status"],
)
HTTP_REQUEST_SECONDS = Histogram(
    "reseller_http_request_seconds",
    "Time to answer an HTTP request, by route pattern and method.",
    ["route", "method"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0),
)
# Recharges that reached a final status (delivered, failed, reversed; the sandbox's success,
# rejected, timeout), by the provider that had them ("" when none did).
RECHARGES = Counter(
    "reseller_recharges",
    "Recharges that reached a final status, by status and provider.",
    ["status", "provider"],
)
# Every call to a provider (a send or a look-up), timed whatever its answer.
PROVIDER_CALL_SECONDS = Histogram(
    "reseller_provider_call_seconds",
    "Time of one call to an airtime provider (a send or a status look-up).",
    ["provider"],
    buckets=(0.05, 0.1, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0, 30.0, 60.0),
)
PROVIDER_CALLS = Counter(
    "reseller_provider_calls",
    "Calls to airtime providers, by provider, action (send, status) and outcome "
    "(delivered, pending, refused, reversed, unreachable, unclear).",
    ["provider", "action", "outcome"],
)
WEBHOOK_DELIVERY_SECONDS = Histogram(
    "reseller_webhook_delivery_seconds",
    "Time of one webhook delivery attempt to a reseller's endpoint, by outcome (ok: a 2xx).",
    ["outcome"],
    buckets=(0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0),
)

# The last ledger and books checks (check_ledger, check_books, the hourly task), kept in
# Django's cache (Redis in production: every process reads the same) for the collector.
LEDGER_CHECK_KEY = "metrics:ledger-check:{}"
LEDGER_CHECKS = ("ledger", "books")


def ledger_check_recorded(check: str, *, ok: bool) -> None:
    """Keep the result of a check (``ledger``: wallets against their entries; ``books``: the
    journals of the business) for ``reseller_ledger_check_ok``; kept until the next one."""
    cache.set(LEDGER_CHECK_KEY.format(check), {"ok": ok, "at": time.time()}, timeout=None)


def ledger_check_last(check: str) -> dict[str, Any] | None:
    """The last result of a check: ``{"ok": bool, "at": unix time}``, or None if never run."""
    return cache.get(LEDGER_CHECK_KEY.format(check))


def route_of(request: HttpRequest) -> str:
    """The URL pattern that answered the request, or a fixed word when none did."""
    match = getattr(request, "resolver_match", None)
    if match is None:
        return "<unmatched>"  # a 404 of no route, or an answer before URL resolution
    return "/" + match.route if match.route else (match.view_name or "<unnamed>")


class MetricsMiddleware:
    """Counts and times every request by its route pattern, method and status."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        started = time.perf_counter()
        response = self.get_response(request)
        seconds = time.perf_counter() - started
        route = route_of(request)
        method = request.method if request.method in _METHODS else "OTHER"
        HTTP_REQUESTS.labels(route, method, str(response.status_code)).inc()
        HTTP_REQUEST_SECONDS.labels(route, method).observe(seconds)
        return response


# A made-up method is one series, not one per spelling a scanner tries.
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
