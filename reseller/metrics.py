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

**Counting never fails a request or a task.** Every instrument is wrapped (``Instrument``):
an error while counting (the folder gone, a full disk, a wrong label) is logged once per
instrument and swallowed. When a process starts (``ResellerConfig.ready``: gunicorn's workers,
Celery's, ``manage.py``), ``metrics_folder_prepare`` creates a missing folder, or refuses one
it cannot write into: it says so, naming ``PROMETHEUS_MULTIPROC_DIR``, and that process counts
nothing rather than failing every request.
"""

from __future__ import annotations

import logging
import os
import tempfile
import threading
import time
from typing import Any

from django.core.cache import cache
from django.http import HttpRequest, HttpResponse
from prometheus_client import Counter, Gauge, Histogram, disable_created_metrics
from prometheus_client.context_managers import Timer
from prometheus_client.metrics import MetricWrapperBase

logger = logging.getLogger(__name__)

# No ``*_created`` series beside each counter and histogram: a second series per label set
# that dashboards do not read (and that multiprocess mode does not have).
disable_created_metrics()

FOLDER_SETTING = "PROMETHEUS_MULTIPROC_DIR"
# False once this process has refused its folder (metrics_folder_prepare): nothing is counted.
_counting = True


class InstrumentSeries:
    """One series of an instrument (its label values chosen): ``inc``, ``observe``, ``set``,
    ``time`` as prometheus_client's, except that none of them ever raises."""

    __slots__ = ("_instrument", "_series")

    def __init__(self, instrument: Instrument, series: Any) -> None:
        self._instrument = instrument
        self._series = series  # None: a series that could not be made counts nothing

    def inc(self, amount: float = 1) -> None:
        if self._series is not None:
            try:
                self._series.inc(amount)
            except Exception:
                self._instrument.failed()

    def dec(self, amount: float = 1) -> None:
        if self._series is not None:
            try:
                self._series.dec(amount)
            except Exception:
                self._instrument.failed()

    def observe(self, amount: float) -> None:
        if self._series is not None:
            try:
                self._series.observe(amount)
            except Exception:
                self._instrument.failed()

    def set(self, value: float) -> None:
        if self._series is not None:
            try:
                self._series.set(value)
            except Exception:
                self._instrument.failed()

    def time(self) -> Timer:
        """Times a block (``with``) or a function (decorator): a histogram observes the
        seconds, a gauge is set to them; recording them never raises."""
        return Timer(self, "set" if isinstance(self._instrument.metric, Gauge) else "observe")


class Instrument:
    """A counter, histogram or gauge whose use never fails the request or task that counts:
    an error is logged once (per instrument and process) and swallowed, and the call counts
    nothing. Call sites read as prometheus_client's: ``RECHARGES.labels(status, provider).inc()``.

    Every instrument has labels: an unlabelled one opens its multiprocess file when it is
    defined, at import, before ``metrics_folder_prepare`` has looked at the folder."""

    def __init__(self, metric: MetricWrapperBase) -> None:
        if not metric._labelnames:
            raise ValueError(f"{metric._name}: an instrument needs labels")
        self.metric = metric
        self._logged = False
        self._lock = threading.Lock()

    def labels(self, *values: str) -> InstrumentSeries:
        if not _counting:
            return InstrumentSeries(self, None)
        try:
            return InstrumentSeries(self, self.metric.labels(*values))
        except Exception:
            self.failed()
            return InstrumentSeries(self, None)

    def failed(self) -> None:
        """Log the error being handled, the first time only: an instrument that fails on every
        request would otherwise write a traceback per request."""
        with self._lock:
            if self._logged:
                return
            self._logged = True
        logger.exception(
            "metrics: counting %s failed; the request or task goes on uncounted, and further "
            "errors of this instrument in this process are not logged",
            self.metric._name,
        )


def metrics_folder_problem(path: str) -> str | None:
    """Why this process cannot keep its metrics in ``path`` (None: it can). A missing folder
    is created first; a folder is usable when a file can be created in it (not a guess from
    its mode bits: root passes those, a read-only mount does not)."""
    try:
        os.makedirs(path, exist_ok=True)
        with tempfile.TemporaryFile(dir=path, prefix=".write-check-"):
            pass
    except OSError as error:
        return error.strerror or str(error)
    return None


def metrics_folder_prepare() -> None:
    """When a process starts (``ResellerConfig.ready``): with ``PROMETHEUS_MULTIPROC_DIR`` set,
    make sure the folder exists and can be written, before anything counts. A folder that
    cannot be made or written, or an empty value (set, so prometheus_client counts into files,
    but naming no folder), is refused: logged as an error naming the setting, and this
    process counts nothing (its requests and tasks are served as usual)."""
    global _counting
    if FOLDER_SETTING not in os.environ:
        return  # each process counts alone
    path = os.environ[FOLDER_SETTING]
    existed = os.path.isdir(path)
    if not path:
        refused: str | None = (
            "it is empty, and prometheus_client would write its files into the working "
            "directory; name a folder, or unset it for each process to count alone"
        )
    else:
        problem = metrics_folder_problem(path)
        refused = problem and f"{problem}; give the folder to the user the processes run as"
    if refused:
        _counting = False
        logger.error(
            "%s=%s refused: %s. This process counts no metrics until it is restarted (its "
            "requests and tasks are served as usual).",
            FOLDER_SETTING,
            path,
            refused,
        )
    elif not existed:
        logger.warning("%s=%s did not exist: created it", FOLDER_SETTING, path)


# Requests: a route is the URL pattern that answered (``api/v1/recharges/<str:public_id>``),
# never the path itself, so one series per route however many ids there are.
HTTP_REQUESTS = Instrument(
    Counter(
        "reseller_http_requests",
        "HTTP requests answered, by route pattern, method and status.",
        ["route", "method", "status"],
    )
)
HTTP_REQUEST_SECONDS = Instrument(
    Histogram(
        "reseller_http_request_seconds",
        "Time to answer an HTTP request, by route pattern and method.",
        ["route", "method"],
        buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0),
    )
)
# Recharges that reached a final status (delivered, failed, reversed; the sandbox's success,
# rejected, timeout), by the provider that had them ("" when none did).
RECHARGES = Instrument(
    Counter(
        "reseller_recharges",
        "Recharges that reached a final status, by status and provider.",
        ["status", "provider"],
    )
)
# Every call to a provider (a send or a look-up), timed whatever its answer.
PROVIDER_CALL_SECONDS = Instrument(
    Histogram(
        "reseller_provider_call_seconds",
        "Time of one call to an airtime provider (a send or a status look-up).",
        ["provider"],
        buckets=(0.05, 0.1, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0, 30.0, 60.0),
    )
)
PROVIDER_CALLS = Instrument(
    Counter(
        "reseller_provider_calls",
        "Calls to airtime providers, by provider, action (send, status) and outcome "
        "(delivered, pending, refused, reversed, unreachable, unclear).",
        ["provider", "action", "outcome"],
    )
)
WEBHOOK_DELIVERY_SECONDS = Instrument(
    Histogram(
        "reseller_webhook_delivery_seconds",
        "Time of one webhook delivery attempt to a reseller's endpoint, by outcome (ok: a 2xx).",
        ["outcome"],
        buckets=(0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0),
    )
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
