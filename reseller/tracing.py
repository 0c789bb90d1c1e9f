"""OpenTelemetry tracing, off unless OTEL_EXPORTER_OTLP_ENDPOINT is set (docs/operations.md,
"Traces"). On, a request to the API, the Celery tasks it causes (their messages carry the
trace context), their SQL and the HTTP calls to providers and webhook receivers (urllib3)
are spans of one trace, exported over OTLP/HTTP (protobuf) to
``$OTEL_EXPORTER_OTLP_ENDPOINT/v1/traces``.

Off, nothing of OpenTelemetry is even imported: no cost. The exporter reads the standard
OTEL_* variables itself (OTEL_EXPORTER_OTLP_HEADERS, OTEL_SERVICE_NAME,
OTEL_TRACES_SAMPLER...).
"""

from __future__ import annotations

import logging
import os
import threading

logger = logging.getLogger(__name__)

_started: set[int] = set()  # process ids: a forked child starts its own
_lock = threading.Lock()


def tracing_enabled() -> bool:
    return bool(os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip())


def tracing_start(role: str) -> bool:
    """Instrument this process (``role``: web or worker, the default service name's suffix)
    once; False when tracing is off. Call it before Django builds its middleware chain."""
    if not tracing_enabled():
        return False
    with _lock:
        if os.getpid() in _started:
            return True
        _started.add(os.getpid())
        _instrument(role)
    return True


def _instrument(role: str) -> None:
    # Imported here, not at the top: with tracing off, none of it is loaded.
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.instrumentation.celery import CeleryInstrumentor
    from opentelemetry.instrumentation.django import DjangoInstrumentor
    from opentelemetry.instrumentation.psycopg import PsycopgInstrumentor
    from opentelemetry.instrumentation.urllib3 import URLLib3Instrumentor
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    name = os.environ.get("OTEL_SERVICE_NAME") or f"reseller-{role}"
    provider = TracerProvider(resource=Resource.create({SERVICE_NAME: name}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    DjangoInstrumentor().instrument()
    CeleryInstrumentor().instrument()
    PsycopgInstrumentor().instrument(enable_commenter=False)
    URLLib3Instrumentor().instrument()
    logger.info("tracing: spans of %s go to %s", name, os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"])


def tracing_flush(timeout_millis: int = 5000) -> None:
    """Send the spans still buffered (a process about to exit, a test)."""
    if not _started:
        return
    from opentelemetry import trace

    flush = getattr(trace.get_tracer_provider(), "force_flush", None)
    if flush is not None:
        flush(timeout_millis)
