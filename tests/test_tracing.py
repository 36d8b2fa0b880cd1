"""Traces: a span per run, per model call and per tool call, all carrying the run's id; the step log
names the trace. Off unless OTEL_EXPORTER_OTLP_ENDPOINT is set, and then nothing of opentelemetry
is even imported. Spans are read from the SDK's in-memory exporter, and, for the real OTLP/HTTP
path, from a tiny collector that receives /v1/traces.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from opsbot.bot.agent import StopReason
from opsbot.bot.approvals import Approvals, InProcessApprovalStore
from opsbot.bot.runbooks import InProcessRunStore, RunbookEngine
from opsbot.bot.telemetry import tracing
from opsbot.bot.telemetry.audit import AuditRecord
from opsbot.config.settings import SAMPLE_CONFIG, Settings
from opsbot.tools.base import Registry
from opsbot.tools.catalog import ops_tools
from opsbot.tools.executor import Executor, RetryPolicy
from tests.fakes.model_server import Call, ModelServer, Reply, script
from tests.fakes.serve_process import ROOT, base_env
from tests.fakes.waiting import until
from tests.test_metrics import agent_on
from tests.test_runbook_engine import Kept, Recorder, probe_book, with_runbooks


@pytest.fixture(autouse=True)
def tracing_off(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test starts with tracing undecided and no endpoint; whatever it installs goes after."""
    monkeypatch.delenv(tracing.ENDPOINT_ENV, raising=False)
    tracing.reset()
    yield
    tracing.reset()


def two_calls_then_an_answer(model_server: Callable[..., ModelServer]) -> ModelServer:
    return model_server(
        script(
            Reply(calls=[Call("list_services", {}), Call("query_logs", {"service": "checkout", "level": "ERROR"})]),
            Reply(content="checkout is fine"),
        )
    )


def step_log(caplog: pytest.LogCaptureFixture) -> list[dict[str, Any]]:
    return [json.loads(r.getMessage()) for r in caplog.records if r.name == "opsbot.steps"]


def test_a_run_is_one_trace_of_its_model_and_tool_calls_with_the_run_id_on_each(
    model_server: Callable[..., ModelServer], caplog: pytest.LogCaptureFixture
) -> None:
    exporter = InMemorySpanExporter()
    tracing.install(exporter)
    agent = agent_on(two_calls_then_an_answer(model_server))
    with caplog.at_level(logging.INFO, logger="opsbot.steps"):
        reply = agent.run("how is checkout?", thread="cli:traced")
    assert reply.stop_reason is StopReason.answered and reply.run_id

    spans = exporter.get_finished_spans()
    assert sorted(s.name for s in spans) == [
        "opsbot.model_call",
        "opsbot.model_call",
        "opsbot.run",
        "opsbot.tool_call",
        "opsbot.tool_call",
    ]
    [run] = [s for s in spans if s.name == "opsbot.run"]
    assert run.context is not None and run.attributes is not None
    for span in spans:
        assert span.attributes is not None and span.context is not None
        assert span.attributes["opsbot.run_id"] == reply.run_id
        assert span.context.trace_id == run.context.trace_id
        if span is not run:
            # The two tool calls ran on the executor's pool threads, and still know their parent.
            assert span.parent is not None and span.parent.span_id == run.context.span_id
    assert run.attributes["opsbot.stop_reason"] == "answered" and run.attributes["opsbot.steps"] == 2
    assert run.attributes["opsbot.thread"] == "cli:traced"
    assert run.attributes["opsbot.prompt_tokens"] == reply.usage.prompt_tokens
    tools = {
        s.attributes["opsbot.tool"]: s.attributes["opsbot.status"]
        for s in spans
        if s.name == "opsbot.tool_call" and s.attributes
    }
    assert tools == {"list_services": "ok", "query_logs": "ok"}
    calls = [s for s in spans if s.name == "opsbot.model_call"]
    assert [s.attributes and s.attributes["gen_ai.request.model"] for s in calls] == ["scripted", "scripted"]
    inputs = [s.attributes["gen_ai.usage.input_tokens"] for s in calls if s.attributes]
    assert sum(int(str(n)) for n in inputs) == reply.usage.prompt_tokens

    # The step log leads to the trace: every record of the run names it.
    records = step_log(caplog)
    assert [r["event"] for r in records] == ["run_start", "step", "step", "run_end"]
    assert {r["trace_id"] for r in records} == {format(run.context.trace_id, "032x")}
    assert {r["run"] for r in records} == {reply.run_id}


def test_a_runbook_tool_call_is_a_span_and_an_audit_record_as_a_loop_call_is(
    model_server: Callable[..., ModelServer],
) -> None:
    exporter = InMemorySpanExporter()
    tracing.install(exporter)
    by_loop, by_runbook = Kept(), Kept()
    agent = agent_on(two_calls_then_an_answer(model_server))
    agent.audit = by_loop
    reply = agent.run("how is checkout?", thread="cli:traced")

    policy = with_runbooks(
        Settings.load(SAMPLE_CONFIG).policy,
        probe_book(
            "look",
            {"id": "services", "tool": "list_services", "args": {}},
            {"id": "errors", "tool": "query_logs", "args": {"service": "checkout", "level": "ERROR"}},
        ),
    )
    engine = RunbookEngine(
        policy,
        Executor(Registry(ops_tools(policy)), RetryPolicy(backoff_s=0.01)),
        store=InProcessRunStore(),
        reporter=Recorder(),
        approvals=Approvals(policy, InProcessApprovalStore()),
        audit=by_runbook,
    )
    run = engine.start("look", {}, {"thread": "cli:traced"})
    assert run.status == "succeeded"

    def shape(records: list[AuditRecord]) -> list[dict[str, Any]]:
        return [r.model_dump(exclude={"at", "run"}, exclude_none=True) for r in records]

    calls = [r for r in by_loop.records if r.kind == "tool_call"]
    assert shape(by_runbook.records) == shape(calls)
    assert [r.kind for r in by_loop.records] == ["tool_call", "tool_call", "run_finished"], "the loop's run ends too"
    assert [r.tool for r in by_runbook.records] == ["list_services", "query_logs"]
    assert {r.run for r in by_loop.records} == {reply.run_id} and {r.run for r in by_runbook.records} == {run.id}

    spans = [s for s in exporter.get_finished_spans() if s.attributes and s.attributes.get("opsbot.run_id") == run.id]
    [parent] = [s for s in spans if s.name == "opsbot.runbook_run"]
    calls = [s for s in spans if s.name == "opsbot.tool_call"]
    assert parent.context is not None and parent.attributes and parent.attributes["opsbot.runbook"] == "look"
    assert [(s.attributes or {}).get("opsbot.tool") for s in calls] == ["list_services", "query_logs"]
    for span in calls:
        assert span.parent is not None and span.parent.span_id == parent.context.span_id
        assert span.attributes and span.attributes["opsbot.status"] == "ok" and span.attributes["opsbot.attempts"] == 1


def test_a_failed_model_call_is_a_span_with_an_error_status(model_server: Callable[..., ModelServer]) -> None:
    from opentelemetry.trace import StatusCode

    exporter = InMemorySpanExporter()
    tracing.install(exporter)
    reply = agent_on(model_server(lambda body: Reply(status=500))).run("anyone?")
    assert reply.stop_reason is StopReason.llm_unavailable
    [call] = [s for s in exporter.get_finished_spans() if s.name == "opsbot.model_call"]
    assert call.status.status_code is StatusCode.ERROR and call.attributes is not None
    assert call.attributes["opsbot.status"] == 500


def test_without_the_endpoint_nothing_is_traced_and_the_step_log_is_unchanged(
    model_server: Callable[..., ModelServer], caplog: pytest.LogCaptureFixture
) -> None:
    agent = agent_on(two_calls_then_an_answer(model_server))
    with caplog.at_level(logging.INFO, logger="opsbot.steps"):
        reply = agent.run("how is checkout?")
    assert not tracing.enabled() and tracing.trace_id() is None
    assert reply.run_id and all("trace_id" not in r for r in step_log(caplog))


def test_without_the_endpoint_opentelemetry_is_never_imported(model_server: Callable[..., ModelServer]) -> None:
    server = two_calls_then_an_answer(model_server)
    # Not through the test modules: they import redis, and redis-py 8 imports opentelemetry's
    # metrics SDK itself whenever it is installed (redis/observability/providers.py).
    code = f"""
import sys
import opsbot.bot.cli
from opsbot.bot.llm import ModelClient
from opsbot.bot.agent import Agent
from opsbot.bot.memory import InProcessMemory
from opsbot.config.settings import SAMPLE_CONFIG, Settings
from opsbot.tools.catalog import ops_tools

client = ModelClient(model="scripted", base_url={server.base_url!r}, max_retries=0)
agent = Agent(client, InProcessMemory(), tools=ops_tools(Settings.load(SAMPLE_CONFIG).policy))
reply = agent.run("how is checkout?")
assert reply.stop_reason.value == "answered" and len(reply.steps) == 2, reply
assert "opsbot.bot.telemetry.tracing" in sys.modules and "redis" not in sys.modules
print(sorted(m for m in sys.modules if m.startswith("opentelemetry")))
"""
    env = {k: v for k, v in base_env().items() if not k.startswith("OTEL_")}
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


class _Collector(BaseHTTPRequestHandler):
    """An OTLP/HTTP receiver: keeps each POST's path, content type and body."""

    received: list[tuple[str, str, bytes]]

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        type(self).received.append((self.path, self.headers.get("Content-Type", ""), body))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        pass


def test_with_the_endpoint_spans_are_posted_as_otlp_protobuf(
    model_server: Callable[..., ModelServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    handler: type[_Collector] = type("Collector", (_Collector,), {"received": []})  # its own list
    collector = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=collector.serve_forever, daemon=True).start()
    try:
        monkeypatch.setenv(tracing.ENDPOINT_ENV, f"http://127.0.0.1:{collector.server_port}")
        reply = agent_on(two_calls_then_an_answer(model_server)).run("how is checkout?")
        assert tracing.enabled()
        assert tracing.flush()
        assert until(lambda: handler.received, 5)
    finally:
        collector.shutdown()
        collector.server_close()
    assert {(path, content_type) for path, content_type, _ in handler.received} == {
        ("/v1/traces", "application/x-protobuf")
    }
    spans = [
        span
        for _, _, body in handler.received
        for resource in ExportTraceServiceRequest.FromString(body).resource_spans
        for scope in resource.scope_spans
        for span in scope.spans
    ]
    assert sorted(s.name for s in spans).count("opsbot.tool_call") == 2
    assert {s.name for s in spans} == {"opsbot.run", "opsbot.model_call", "opsbot.tool_call"}
    for span in spans:
        attributes = {a.key: a.value.string_value for a in span.attributes}
        assert attributes["opsbot.run_id"] == reply.run_id
    [resource] = {
        a.value.string_value
        for _, _, body in handler.received
        for r in ExportTraceServiceRequest.FromString(body).resource_spans
        for a in r.resource.attributes
        if a.key == "service.name"
    }
    assert resource == "opsbot"


def test_the_endpoint_without_the_otel_extra_says_what_to_install_and_traces_nothing(
    model_server: Callable[..., ModelServer], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv(tracing.ENDPOINT_ENV, "http://127.0.0.1:9")
    # As if opentelemetry-exporter-otlp-proto-http were not installed: importing it fails.
    monkeypatch.setitem(sys.modules, "opentelemetry.exporter.otlp.proto.http.trace_exporter", None)
    with caplog.at_level(logging.WARNING, logger="opsbot.tracing"):
        reply = agent_on(two_calls_then_an_answer(model_server)).run("how is checkout?")
    assert reply.stop_reason is StopReason.answered and not tracing.enabled()
    assert "opsbot[otel]" in caplog.text
