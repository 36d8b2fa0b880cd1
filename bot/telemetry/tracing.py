"""Optional OpenTelemetry traces: a span per agent run, per model call and per tool call, and one
per stretch of a runbook run (its steps from a start, a decision or a takeover to a wait or the end).

Off unless OTEL_EXPORTER_OTLP_ENDPOINT is set (the standard variable; the OTLP/HTTP exporter reads
it and the other OTEL_EXPORTER_OTLP_* ones itself). Off, nothing of opentelemetry is imported:
it costs startup time every command would pay, and `span` is a no-op context manager.

Spans carry `opsbot.run_id`, the id of the run they belong to (`Reply.run_id`, the step log's
`run`, or a runbook run's id: the audit records' `run` either way); the step log carries the
trace id while tracing is on. opsbot keeps a tracer provider of its own rather than setting
OpenTelemetry's global one, so a test can install an in-memory exporter and take it away again.
"""

from __future__ import annotations

import contextvars
import logging
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter
    from opentelemetry.trace import Span, Tracer

log = logging.getLogger("opsbot.tracing")

ENDPOINT_ENV = "OTEL_EXPORTER_OTLP_ENDPOINT"
SERVICE_NAME = "opsbot"
# Attribute values the model or a person wrote (a tool name) are cut to this.
MAX_ATTRIBUTE_CHARS = 200

_run_id: contextvars.ContextVar[str | None] = contextvars.ContextVar("opsbot_run_id", default=None)
_lock = threading.Lock()
_provider: TracerProvider | None = None
_tracer: Tracer | None = None
_decided = False  # whether the environment was looked at


class Handle:
    """What a `span` block may add to its span; does nothing while tracing is off."""

    def __init__(self, span: Span | None = None) -> None:
        self.span = span

    def set(self, named: dict[str, Any] | None = None, **ours: Any) -> None:
        """`named` as they are (a semantic convention's names); `ours` as `opsbot.<name>`."""
        if self.span is not None:
            self.span.set_attributes(_attributes(named, ours))

    def failed(self, description: str) -> None:
        if self.span is not None:
            from opentelemetry.trace import Status, StatusCode

            self.span.set_status(Status(StatusCode.ERROR, description[:MAX_ATTRIBUTE_CHARS]))


_OFF = Handle()


def enabled() -> bool:
    return _get_tracer() is not None


@contextmanager
def span(name: str, run_id: str | None = None, named: dict[str, Any] | None = None, **ours: Any) -> Iterator[Handle]:
    """A span named `name`, a child of the current one, with attributes `named` as they are and
    `ours` as `opsbot.<name>`. `run_id` starts a run: `opsbot.run_id` goes on this span and on
    every span opened inside it (on this thread, or on one given this context)."""
    token = _run_id.set(run_id) if run_id is not None else None
    try:
        tracer = _get_tracer()
        if tracer is None:
            yield _OFF
            return
        current = _run_id.get()
        if current is not None:
            ours["run_id"] = current
        with tracer.start_as_current_span(name, attributes=_attributes(named, ours)) as started:
            yield Handle(started)
    finally:
        if token is not None:
            _run_id.reset(token)


def trace_id() -> str | None:
    """The current trace's id, in hex as tracing backends show it; None when tracing is off."""
    if _tracer is None:
        return None
    from opentelemetry import trace

    context = trace.get_current_span().get_span_context()
    return format(context.trace_id, "032x") if context.is_valid else None


def install(exporter: SpanExporter | None, batch: bool = False) -> None:
    """Trace to `exporter` from now on (tests: an in-memory exporter); None turns tracing off.
    Whatever was installed before is flushed and shut down."""
    global _provider, _tracer, _decided
    with _lock:
        _shutdown()
        _decided = True
        if exporter is not None:
            _provider, _tracer = _make(exporter, batch)


def reset() -> None:
    """Shut tracing down and look at the environment again on the next span."""
    global _decided
    with _lock:
        _shutdown()
        _decided = False


def flush(timeout_s: float = 5.0) -> bool:
    provider = _provider
    return provider.force_flush(int(timeout_s * 1000)) if provider is not None else True


def _get_tracer() -> Tracer | None:
    global _provider, _tracer, _decided
    if _decided:
        return _tracer
    with _lock:
        if not _decided:
            if os.environ.get(ENDPOINT_ENV):
                try:
                    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
                except ImportError as exc:
                    # Traces are an aid: without the extra, opsbot serves on and says what to install.
                    log.warning("%s is set, but traces need opsbot[otel] (%s): no traces", ENDPOINT_ENV, exc)
                else:
                    # Batched, on the SDK's thread: a slow collector never slows a run down.
                    _provider, _tracer = _make(OTLPSpanExporter(), batch=True)
            _decided = True
    return _tracer


class _Installed(NamedTuple):
    """A tracer provider exporting spans, and opsbot's tracer from it."""

    provider: TracerProvider
    tracer: Tracer


def _make(exporter: SpanExporter, batch: bool) -> _Installed:
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

    # Resource.create reads OTEL_RESOURCE_ATTRIBUTES; the name given here wins over it, so
    # OTEL_SERVICE_NAME is read here.
    name = os.environ.get("OTEL_SERVICE_NAME") or SERVICE_NAME
    provider = TracerProvider(resource=Resource.create({"service.name": name}))
    provider.add_span_processor(BatchSpanProcessor(exporter) if batch else SimpleSpanProcessor(exporter))
    return _Installed(provider, provider.get_tracer("opsbot"))


def _shutdown() -> None:
    global _provider, _tracer
    if _provider is not None:
        _provider.shutdown()
    _provider, _tracer = None, None


def _attributes(named: dict[str, Any] | None, ours: dict[str, Any]) -> dict[str, str | int | float | bool]:
    out: dict[str, str | int | float | bool] = {}
    for key, value in [*(named or {}).items(), *((f"opsbot.{k}", v) for k, v in ours.items())]:
        if value is None:
            continue
        out[key] = value if isinstance(value, bool | int | float) else str(value)[:MAX_ATTRIBUTE_CHARS]
    return out
