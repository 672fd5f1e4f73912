"""A run's OpenTelemetry signals (``gitevals.interop.otel``) through the OpenTelemetry SDK:
its tracer makes the spans, its logger the ``gen_ai.evaluation.result`` events (log
records in the span's context, as the GenAI conventions define events), and its OTLP/HTTP
exporters send them to a collector.

The SDK is the ``otel`` extra; importing this module without it raises ImportError,
which the command turns into one line naming the extra.

Spans and records are first collected in memory, then handed to the exporters in
batches whose results are checked: the SDK's batch processor would send them from a
background thread and only log a failure, and a command must say whether the collector
took the run. The ids are the pure module's (derived from the run id), handed to the SDK
by an id generator, so re-sending a run sends the same spans and a file export and a
collector hold the same ids.
"""

from __future__ import annotations

import logging
import socket
import urllib.parse
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TypeVar

import requests
from opentelemetry import trace
from opentelemetry._logs import SeverityNumber
from opentelemetry.context import Context
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk._logs import LoggerProvider, ReadableLogRecord
from opentelemetry.sdk._logs.export import (
    LogRecordExporter,
    LogRecordExportResult,
    SimpleLogRecordProcessor,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.id_generator import IdGenerator
from opentelemetry.sdk.trace.sampling import ALWAYS_ON

from gitevals.errors import UsageError
from gitevals.interop.otel import CLIENT, ERROR, EVALUATION, Signals, Span

#: Spans or log records in one OTLP request (the SDK batch processor's default size).
BATCH = 512
#: Seconds to open a connection to the collector before anything is built.
CONNECT_TIMEOUT = 5.0

T = TypeVar("T")


class _GivenIds(IdGenerator):
    """Hands the SDK the ids set just before each span starts."""

    def __init__(self) -> None:
        self.trace_id = 0
        self.span_id = 0

    def generate_span_id(self) -> int:
        return self.span_id

    def generate_trace_id(self) -> int:
        return self.trace_id


class _Kept(LogRecordExporter):
    """Keeps the log records the processor hands it (the SDK's in-memory exporter,
    typed)."""

    def __init__(self) -> None:
        self.kept: list[ReadableLogRecord] = []

    def export(self, batch: Sequence[ReadableLogRecord]) -> LogRecordExportResult:
        self.kept += batch
        return LogRecordExportResult.SUCCESS

    def shutdown(self) -> None:
        pass

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


def record(sig: Signals) -> tuple[list[ReadableSpan], list[ReadableLogRecord]]:
    """The SDK's spans and evaluation log records of ``sig``, collected in memory."""
    resource = Resource.create(dict(sig.resource))
    ids = _GivenIds()
    tracer_provider = TracerProvider(sampler=ALWAYS_ON, resource=resource, id_generator=ids,
                                     shutdown_on_exit=False)
    spans = InMemorySpanExporter()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    logger_provider = LoggerProvider(resource=resource, shutdown_on_exit=False)
    records = _Kept()
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(records))
    live = _start(tracer_provider.get_tracer("gitevals", sig.version), ids, sig.spans)
    logger = logger_provider.get_logger("gitevals", sig.version)
    for event in sig.events:
        logger.emit(timestamp=event.time, observed_timestamp=event.time,
                    context=trace.set_span_in_context(live[event.span_id][0]),
                    severity_number=SeverityNumber.INFO, event_name=EVALUATION,
                    attributes=event.attributes)
    for span, end in live.values():
        span.end(end_time=end)
    made = (list(spans.get_finished_spans()), records.kept)
    if (len(made[0]), len(made[1])) != (len(sig.spans), len(sig.events)):
        raise UsageError(f"the OpenTelemetry SDK made {len(made[0])} of {len(sig.spans)} "
                         f"spans and {len(made[1])} of {len(sig.events)} events: is "
                         "OTEL_SDK_DISABLED set? unset it")
    return made


def _start(tracer: trace.Tracer, ids: _GivenIds,
           spans: Sequence[Span]) -> dict[str, tuple[trace.Span, int]]:
    """Start each span under its parent with its own ids; each with its end time."""
    live: dict[str, tuple[trace.Span, int]] = {}
    for s in spans:
        ids.trace_id, ids.span_id = int(s.trace_id, 16), int(s.span_id, 16)
        parent = Context() if s.parent_id is None else trace.set_span_in_context(
            live[s.parent_id][0])
        kind = trace.SpanKind.CLIENT if s.kind == CLIENT else trace.SpanKind.INTERNAL
        span = tracer.start_span(s.name, parent, kind, s.attributes, start_time=s.start)
        if s.status is not None:
            code, message = s.status
            span.set_status(trace.Status(trace.StatusCode.ERROR, message) if code == ERROR
                            else trace.Status(trace.StatusCode.OK))
        live[s.span_id] = (span, s.end)
    return live


def send(sig: Signals, spans_to: SpanExporter, events_to: LogRecordExporter) -> str | None:
    """Export ``sig``'s spans, then its events, in batches; the signal a batch of which
    failed ("spans" or "events"), or None when every batch was taken."""
    spans, records = record(sig)
    for chunk in _batches(spans):
        if spans_to.export(chunk) is not SpanExportResult.SUCCESS:
            return "spans"
    for batch in _batches(records):
        if events_to.export(batch) is not LogRecordExportResult.SUCCESS:
            return "events"
    return None


def _batches(items: Sequence[T]) -> Iterator[Sequence[T]]:
    for at in range(0, len(items), BATCH):
        yield items[at:at + BATCH]


@dataclass
class _Answers:
    """The collector's last HTTP answer, kept by a requests hook for the error line."""

    status: int | None = None
    body: str = ""

    def hook(self, response: requests.Response, *args: object, **kwargs: object) -> None:
        self.status, self.body = response.status_code, response.text[:300].strip()


def send_otlp(sig: Signals, endpoint: str, timeout: float) -> None:
    """Send ``sig`` to the OTLP/HTTP collector at ``endpoint`` (its base URL: the
    signals go to ``/v1/traces`` and ``/v1/logs`` under it); anything but a collector
    that takes both is one line. Headers and TLS come from the SDK's standard
    ``OTEL_EXPORTER_OTLP_*`` variables."""
    base = endpoint_base(endpoint)
    _check_reachable(base)
    answers = _Answers()
    session = requests.Session()
    session.hooks["response"].append(answers.hook)
    spans_to = OTLPSpanExporter(endpoint=f"{base}/v1/traces", timeout=timeout, session=session)
    events_to = OTLPLogExporter(endpoint=f"{base}/v1/logs", timeout=timeout, session=session)
    try:
        with _quiet_sdk():
            failed = send(sig, spans_to, events_to)
    finally:
        session.close()  # what the exporters' shutdown would do
    if failed is None:
        return
    if answers.status is not None and not 200 <= answers.status < 300:
        said = f": {answers.body}" if answers.body else ""
        raise UsageError(f"the collector at {base} refused the {failed}: HTTP "
                         f"{answers.status}{said}")
    raise UsageError(f"the collector at {base} took no {failed} within {timeout:g} s: "
                     "check that it is an OTLP/HTTP collector, or fix --endpoint")


def endpoint_base(endpoint: str) -> str:
    """The collector's base URL: ``--endpoint`` as given, a trailing ``/`` or a
    signal's path (``/v1/traces``, ``/v1/logs``) taken off."""
    base = endpoint.rstrip("/")
    for path in ("/v1/traces", "/v1/logs"):
        base = base.removesuffix(path)
    return base


def _check_reachable(base: str) -> None:
    """Fail in one line, at once, when nothing listens: the exporter would retry a
    refused connection with backoff for the whole timeout before giving up."""
    url = urllib.parse.urlsplit(base)
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        with socket.create_connection((url.hostname or "", port), timeout=CONNECT_TIMEOUT):
            return
    except OSError as exc:
        raise UsageError(f"cannot reach the collector at {base} "
                         f"({exc.strerror or exc}): start it or fix --endpoint") from None


@contextmanager
def _quiet_sdk() -> Iterator[None]:
    """Keep the SDK's own log lines (a failed export, a retry) off stderr: the command
    says in one line what went wrong."""
    sdk = logging.getLogger("opentelemetry")
    was = sdk.propagate, sdk.level
    handler = logging.NullHandler()
    sdk.addHandler(handler)
    sdk.propagate = False
    sdk.setLevel(logging.CRITICAL + 1)
    try:
        yield
    finally:
        sdk.removeHandler(handler)
        sdk.propagate = was[0]
        sdk.setLevel(was[1])
