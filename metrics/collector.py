"""What ``GET /metrics`` shows: the counted instruments (reseller/metrics.py), added up over
every process in multiprocess mode, and gauges read when Prometheus scrapes from where the
state lives (the database, Redis, Django's cache), so they are the same whichever process
answers and need no process to keep them up to date (docs/operations.md, "Metrics")."""

from __future__ import annotations

import glob
import logging
import os
import time
from collections.abc import Iterator
from functools import cache

import redis
from django.conf import settings
from django.db.models import Count, Min
from django.utils import timezone
from prometheus_client import REGISTRY, CollectorRegistry
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector

from emails.models import Email
from emails.services import MAX_ATTEMPTS as EMAIL_MAX_ATTEMPTS
from metrics.checks import ledger_checks_run
from recharges.models import Recharge
from recharges.state import LIVE_FINAL
from reseller.metrics import (
    HTTP_REQUEST_SECONDS,
    HTTP_REQUESTS,
    LEDGER_CHECKS,
    PROVIDER_CALL_SECONDS,
    RECHARGES,
    ledger_check_last,
)
from upstreams import health, semaphore
from upstreams.models import Provider
from webhooks.models import Delivery

logger = logging.getLogger(__name__)

S = Recharge.Status
# Kombu's Redis transport keeps a queue's messages of priority p > 0 in "<queue>\x06\x16<p>".
_PRIORITY_SUFFIXES = ("", "\x06\x163", "\x06\x166", "\x06\x169")


class FilesCollector:
    """prometheus_client's multiprocess collector over every ``*.db`` file under a directory,
    its subdirectories included: processes in other containers (the workers) write theirs
    into a subdirectory of the same volume (docker-compose.yml)."""

    def __init__(self, path: str) -> None:
        self.path = path

    def collect(self) -> Iterator[Metric]:
        files = glob.glob(os.path.join(self.path, "**", "*.db"), recursive=True)
        return iter(MultiProcessCollector.merge(files, accumulate=True))


class StateCollector:
    """The gauges of state kept elsewhere; a part that cannot be read is left out of this
    scrape (and logged) rather than failing the others."""

    def collect(self) -> Iterator[Metric]:
        for part in (_providers, _dispatch, _backlogs, _celery_queues, _ledger):
            try:
                yield from part()
            except Exception:
                logger.warning("metrics: %s not collected", part.__name__, exc_info=True)


def registry_for_scrape() -> CollectorRegistry:
    """This scrape's registry: every process's files with PROMETHEUS_MULTIPROC_DIR, else
    this process's own registry (its counters and the library's process metrics); and the
    gauges of state."""
    _series_start()
    registry = CollectorRegistry(auto_describe=False)
    directory = os.environ.get("PROMETHEUS_MULTIPROC_DIR", "")
    registry.register(FilesCollector(directory) if directory else REGISTRY)
    registry.register(StateCollector())
    return registry


def _series_start() -> None:
    """The series every dashboard and alert reads exist from the first scrape, at 0 until
    something counts: each provider's final statuses and call times, and the scrapes."""
    for name in _provider_names():
        PROVIDER_CALL_SECONDS.labels(name)
        for status in LIVE_FINAL:
            RECHARGES.labels(status, name)
    HTTP_REQUESTS.labels("/metrics", "GET", "200")
    HTTP_REQUEST_SECONDS.labels("/metrics", "GET")


def _provider_names() -> list[str]:
    """Every provider row's name, and AIRTIME_PROVIDER (products without a route go there)."""
    names = list(Provider.objects.order_by("name").values_list("name", flat=True))
    if settings.AIRTIME_PROVIDER not in names:
        names.append(settings.AIRTIME_PROVIDER)
    return names


def _providers() -> Iterator[Metric]:
    in_flight = GaugeMetricFamily(
        "reseller_provider_in_flight",
        "Calls holding one of the provider's slots now (every worker together).",
        labels=["provider"],
    )
    circuit = GaugeMetricFamily(
        "reseller_provider_circuit_open",
        "1 while the provider's circuit breaker is open (new recharges skip it), else 0.",
        labels=["provider"],
    )
    for name in _provider_names():
        in_flight.add_metric([name], semaphore.in_flight(name))
        circuit.add_metric([name], 1 if health.figures(name).state == health.OPEN else 0)
    yield in_flight
    yield circuit


def _dispatch() -> Iterator[Metric]:
    """Recharges waiting to be sent, from the database (the truth whatever the broker holds):
    lane ``live`` and ``test`` (queued), ``waitlist`` (live, waiting for a product to come
    back). Every lane is shown, at 0 when empty."""
    depth = GaugeMetricFamily(
        "reseller_dispatch_queue_depth",
        "Recharges waiting to be sent to a provider, by lane (live, test, waitlist).",
        labels=["lane"],
    )
    counts = {"live": 0, "test": 0, "waitlist": 0}
    rows = (
        Recharge.objects.filter(status__in=[S.QUEUED, S.WAITLISTED])
        .values_list("status", "livemode")
        .annotate(n=Count("id"))
        .order_by()
    )
    for status, livemode, n in rows:
        lane = "waitlist" if status == S.WAITLISTED else ("live" if livemode else "test")
        counts[lane] += n
    for lane, n in counts.items():
        depth.add_metric([lane], n)
    yield depth
    oldest = Recharge.objects.filter(status=S.QUEUED).aggregate(at=Min("queued_at"))["at"]
    yield GaugeMetricFamily(
        "reseller_dispatch_oldest_queued_seconds",
        "Age of the oldest queued recharge (0 when none waits).",
        value=max(0.0, (timezone.now() - oldest).total_seconds()) if oldest else 0.0,
    )


def _backlogs() -> Iterator[Metric]:
    yield GaugeMetricFamily(
        "reseller_webhook_deliveries_pending",
        "Webhook deliveries not delivered yet and not given up.",
        value=Delivery.objects.filter(state=Delivery.State.PENDING).count(),
    )
    yield GaugeMetricFamily(
        "reseller_email_outbox_pending",
        "Emails not sent yet that will still be tried.",
        value=Email.objects.filter(sent_at__isnull=True, attempts__lt=EMAIL_MAX_ATTEMPTS).count(),
    )


@cache
def _broker() -> redis.Redis:
    return redis.Redis.from_url(
        settings.CELERY_BROKER_URL, socket_timeout=2, socket_connect_timeout=2
    )


def _celery_queues() -> Iterator[Metric]:
    """Messages waiting in the broker's queues, with a Redis broker only."""
    if not settings.CELERY_BROKER_URL.startswith(("redis://", "rediss://")):
        return
    queues = [settings.CELERY_TASK_DEFAULT_QUEUE, settings.WEBHOOK_QUEUE]
    pipe = _broker().pipeline(transaction=False)
    for queue in queues:
        for suffix in _PRIORITY_SUFFIXES:
            pipe.llen(queue + suffix)
    lengths = pipe.execute()
    family = GaugeMetricFamily(
        "reseller_celery_queue_length",
        "Tasks waiting in the broker, by Celery queue.",
        labels=["queue"],
    )
    step = len(_PRIORITY_SUFFIXES)
    for index, queue in enumerate(queues):
        family.add_metric([queue], sum(lengths[index * step : (index + 1) * step]))
    yield family


def _ledger() -> Iterator[Metric]:
    """The last check's result of each kind; never checked (a fresh cache): checked now."""
    last = {check: ledger_check_last(check) for check in LEDGER_CHECKS}
    if any(result is None for result in last.values()):
        ledger_checks_run()
        last = {check: ledger_check_last(check) for check in LEDGER_CHECKS}
    # The contract names the gauge without labels: that series is both checks at once (1
    # when the last of each found nothing wrong); each check also has its own, labelled.
    ok = Metric(
        "reseller_ledger_check_ok",
        "1 if the last checks found the books right, 0 if not; unlabelled: both; check: "
        "ledger (wallets against their entries), books (the journals of the business).",
        "gauge",
    )
    age = GaugeMetricFamily(
        "reseller_ledger_check_age_seconds",
        "Time since the last check of each kind.",
        labels=["check"],
    )
    now = time.time()
    results = [result for result in last.values() if result is not None]
    if len(results) == len(last):  # both checks known: the bare series says both
        ok.add_sample(ok.name, {}, 1 if all(result["ok"] for result in results) else 0)
    for check, result in last.items():
        if result is None:
            continue
        ok.add_sample(ok.name, {"check": check}, 1 if result["ok"] else 0)
        age.add_metric([check], max(0.0, now - float(result["at"])))
    yield ok
    yield age
