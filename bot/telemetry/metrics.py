"""opsbot's Prometheus metrics: every definition, and one function per thing that happens.

One registry of opsbot's own (not prometheus_client's global default), so what a test scrapes is
opsbot's alone and nothing a library registers leaks into /metrics. Names follow Prometheus's
conventions: `opsbot_` prefix, units in the name (`_seconds`), `_total` on counters.

Labels are bounded sets only: stop reasons, call statuses, verdicts, feedback values, sources,
components, and tool names from the agent's registry (a name the model made up is counted as
`unknown`). Never user text, thread ids, run ids or request ids: each label value is a time series
kept forever.

prometheus_client is imported on the first event rather than with this module: commands that
run nothing (check-config, --help) do not pay for it, and the first run pays it once (~12 ms).
Importing this module imports nothing of opsbot, so every layer of bot/ may record here.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from wsgiref.simple_server import WSGIServer

    from prometheus_client import CollectorRegistry

UNKNOWN_TOOL = "unknown"

# Seconds. Model calls take from tens of milliseconds (a local server) to minutes (a long answer).
_MODEL_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0)
# Runs and first answers: a direct lookup takes a second, a long investigation minutes.
_RUN_BUCKETS = (0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0)
# A job waits milliseconds when a worker is free, a run's length behind another in its thread.
_WAIT_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0)
# Steps per run: loop.max_steps is at most 50.
_STEP_BUCKETS = (1, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 50)


class _Metrics:
    def __init__(self) -> None:
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

        r = self.registry = CollectorRegistry(auto_describe=True)
        self.runs = Counter("opsbot_runs", "Agent runs, by why the loop stopped.", ["stop_reason"], registry=r)
        self.run_steps = Histogram(
            "opsbot_run_steps", "Steps (model decisions) per agent run.", buckets=_STEP_BUCKETS, registry=r
        )
        self.run_seconds = Histogram(
            "opsbot_run_duration_seconds", "Wall time of an agent run.", buckets=_RUN_BUCKETS, registry=r
        )
        self.first_answer = Histogram(
            "opsbot_time_to_first_answer_seconds",
            "From a run's start to the first line of its answer shown (streamed), or to the answer when "
            "nothing was streamed; runs the model answered.",
            buckets=_RUN_BUCKETS,
            registry=r,
        )
        self.tool_calls = Counter(
            "opsbot_tool_calls", "Tool calls the model made, by tool and outcome.", ["tool", "status"], registry=r
        )
        self.model_seconds = Histogram(
            "opsbot_model_call_duration_seconds",
            "One model call (retries included), by outcome (ok, error).",
            ["outcome"],
            buckets=_MODEL_BUCKETS,
            registry=r,
        )
        # Model names come from the configuration (llm.fallbacks), so the label's values are few.
        self.model_steps = Counter(
            "opsbot_model_steps",
            "Steps a model answered, by model (a fallback while the configured one is down).",
            ["model"],
            registry=r,
        )
        self.prompt_tokens = Counter(
            "opsbot_model_prompt_tokens", "Prompt tokens the model server counted.", registry=r
        )
        self.completion_tokens = Counter(
            "opsbot_model_completion_tokens", "Completion tokens the model server counted.", registry=r
        )
        self.http_waiting = Gauge(
            "opsbot_http_requests_waiting",
            "HTTP requests (Slack events, webhooks) accepted and waiting for one of the server's threads.",
            registry=r,
        )
        self.jobs_waiting = Gauge(
            "opsbot_slack_jobs_waiting",
            "Slack jobs this process accepted that no worker here is working on and no process is known "
            "to have answered yet (queued in Redis, or parked here while Redis is unreachable).",
            registry=r,
        )
        self.job_wait = Histogram(
            "opsbot_slack_job_wait_seconds",
            "From a job's message (its Slack ts) or, for work opsbot gives itself, its queueing, until a "
            "worker takes it.",
            buckets=_WAIT_BUCKETS,
            registry=r,
        )
        self.acks = Counter(
            "opsbot_slack_acks",
            "Slack requests answered by a listener, by kind (event, command, action) and outcome (ok; "
            "redeliver: Redis could not take it and Slack is asked to send it again; parked: its last try, "
            "held here).",
            ["kind", "outcome"],
            registry=r,
        )
        self.duplicates = Counter(
            "opsbot_slack_duplicate_deliveries", "Slack deliveries dropped as already seen.", registry=r
        )
        self.posts_waiting = Gauge(
            "opsbot_slack_posts_waiting",
            "Posts of this process waiting for their channel's next slot (Slack takes about one a second "
            "per channel): the channel queues' depth.",
            registry=r,
        )
        self.post_wait = Histogram(
            "opsbot_slack_post_wait_seconds",
            "How long a post waited for its channel's slot.",
            buckets=_WAIT_BUCKETS,
            registry=r,
        )
        self.rate_limited = Counter(
            "opsbot_slack_rate_limited",
            "Slack calls answered 429 (each waited out its Retry-After and was tried again), by method.",
            ["method"],
            registry=r,
        )
        self.alerts = Counter(
            "opsbot_alerts_received",
            "Alerts received by the webhooks, by source and outcome (queued, duplicate).",
            ["source", "outcome"],
            registry=r,
        )
        self.runbook_runs = Counter("opsbot_runbook_runs_started", "Runbook runs started.", registry=r)
        self.approvals_asked = Counter(
            "opsbot_approvals_asked", "Approval requests made, by kind (command, gate).", ["kind"], registry=r
        )
        self.approvals_decided = Counter(
            "opsbot_approvals_decided", "Clicks on approval requests, by verdict.", ["verdict"], registry=r
        )
        self.feedback = Counter(
            "opsbot_feedback",
            "Feedback given on answers, by value (positive, negative): a user's first verdict on an "
            "answer and each change of mind, under the value it gives; a repeated click is not counted.",
            ["value"],
            registry=r,
        )
        self.stops = Counter(
            "opsbot_stops",
            "Stops asked in Slack (Stop, `stop`, `/ops stop`), by what they found: first (a run given "
            "up), again (one being stopped already), ended (nothing working); a delivery repeated is not counted.",
            ["found"],
            registry=r,
        )
        self.redis_errors = Counter(
            "opsbot_redis_errors",
            "Redis calls that failed, by the component that made them.",
            ["component"],
            registry=r,
        )


_lock = threading.Lock()
_made: _Metrics | None = None


def _m() -> _Metrics:
    global _made
    if _made is None:
        with _lock:
            if _made is None:
                _made = _Metrics()
    return _made


def registry() -> CollectorRegistry:
    return _m().registry


# ---------------------------------------------------------------- the agent loop and the model


def run_finished(stop_reason: str, steps: int, duration_s: float, first_answer_s: float | None) -> None:
    m = _m()
    m.runs.labels(stop_reason).inc()
    m.run_steps.observe(steps)
    m.run_seconds.observe(duration_s)
    if first_answer_s is not None:
        m.first_answer.observe(first_answer_s)


def tool_calls(calls: Iterable[tuple[str, str]], known: Callable[[str], bool]) -> None:
    """(tool, status) pairs; a tool `known` does not know is counted as `unknown`."""
    m = _m()
    for tool, status in calls:
        m.tool_calls.labels(tool if known(tool) else UNKNOWN_TOOL, status).inc()


def model_answered(model: str | None) -> None:
    """A step the model `model` answered (none: a stand-in that names no model)."""
    if model:
        _m().model_steps.labels(model).inc()


def model_call(duration_s: float, ok: bool, prompt_tokens: int = 0, completion_tokens: int = 0) -> None:
    m = _m()
    m.model_seconds.labels("ok" if ok else "error").observe(duration_s)
    if prompt_tokens:
        m.prompt_tokens.inc(prompt_tokens)
    if completion_tokens:
        m.completion_tokens.inc(completion_tokens)


# ---------------------------------------------------------------- Slack


def watch_http_waiting(count: Callable[[], float]) -> None:
    """The HTTP-waiting gauge is read from `count` at each scrape."""
    _m().http_waiting.set_function(count)


def watch_jobs_waiting(count: Callable[[], float]) -> None:
    """The jobs-waiting gauge is read from `count` at each scrape (the last one given wins)."""
    _m().jobs_waiting.set_function(count)


def job_taken(waited_s: float) -> None:
    _m().job_wait.observe(max(waited_s, 0.0))


def ack(kind: str, outcome: str = "ok") -> None:
    _m().acks.labels(kind, outcome).inc()


def duplicate_delivery() -> None:
    _m().duplicates.inc()


def post_waiting(delta: int) -> None:
    """A post starts (1) or stops (-1) waiting for its channel's slot."""
    _m().posts_waiting.inc(delta)


def post_waited(waited_s: float) -> None:
    _m().post_wait.observe(max(waited_s, 0.0))


def rate_limited(method: str) -> None:
    _m().rate_limited.labels(method).inc()


# ---------------------------------------------------------------- alerts, runbooks, approvals, feedback, Redis


def alert_received(source: str, queued: bool) -> None:
    _m().alerts.labels(source, "queued" if queued else "duplicate").inc()


def runbook_run_started() -> None:
    _m().runbook_runs.inc()


def approval_asked(kind: str) -> None:
    _m().approvals_asked.labels(kind).inc()


def approval_decided(verdict: str) -> None:
    _m().approvals_decided.labels(verdict).inc()


def feedback(value: str) -> None:
    """A verdict recorded on an answer: `positive` or `negative`."""
    _m().feedback.labels(value).inc()


def stop(found: str) -> None:
    """A stop asked in Slack: `first`, `again` or `ended` (sessions/runs.py `Stop`)."""
    _m().stops.labels(found).inc()


def redis_error(component: str) -> None:
    _m().redis_errors.labels(component).inc()


# ---------------------------------------------------------------- exposition


class Exposition(NamedTuple):
    """The registry in Prometheus's text format, and its content type."""

    body: bytes
    content_type: str


def exposition() -> Exposition:
    """The registry in Prometheus's text format, and its content type."""
    from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

    return Exposition(generate_latest(_m().registry), CONTENT_TYPE_LATEST)


def serve(port: int, host: str = "0.0.0.0") -> WSGIServer:
    """/metrics (any path, as prometheus_client serves it) on a port of its own, on a daemon
    thread: for Socket Mode, where opsbot has no HTTP server. `shutdown()` stops it."""
    from prometheus_client import start_http_server

    server, _ = start_http_server(port, host, registry=_m().registry)
    return server
