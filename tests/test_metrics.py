"""/metrics: what opsbot counts, scraped over real HTTP and read with prometheus_client's parser.

Every test drives real behaviour (an agent run against the scripted model server, the Slack stack,
the alert webhooks, `opsbot serve --http` itself) and compares two scrapes: opsbot's registry is
its own, so only what the test did moves, and counters from earlier tests only add a constant.
With Debian's `prometheus` installed, a real Prometheus scrapes a real `opsbot serve --http`, and
`promtool` checks the exposition and the alert rules docs/operations.md shows.
"""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

import pytest
from prometheus_client.parser import text_string_to_metric_families
from pydantic import SecretStr

from opsbot.bot.agent import Agent, StopReason
from opsbot.bot.alerts import AlertAuth, AlertHooks
from opsbot.bot.llm import ModelClient
from opsbot.bot.memory import InProcessMemory
from opsbot.bot.memory.redis import RedisMemory
from opsbot.bot.slack.app import StartupError
from opsbot.bot.slack.serving import serve_metrics
from opsbot.bot.telemetry import metrics
from opsbot.bot.web.server import WebApp
from opsbot.config.settings import SAMPLE_CONFIG, LoopLimits, Settings
from opsbot.tools.catalog import ops_tools
from tests.fakes import slack_payloads as payloads
from tests.fakes.model_server import Call, ModelServer, Reply, has_tools, script
from tests.fakes.prometheus_server import PROMETHEUS, prometheus, scrape_job
from tests.fakes.redis_server import RedisServer, free_port
from tests.fakes.serve_process import ServeProcess
from tests.fakes.slack_api import SlackApi
from tests.fakes.slack_stack import Stack, settled
from tests.fakes.waiting import until
from tests.test_approvals import APPROVER, ASKER, Clock, Shown, ask, policy_with, prepared, service
from tests.test_slack import answered, echo

FIXTURES = Path(__file__).parent / "fixtures"
RULES = FIXTURES / "prometheus" / "opsbot-rules.yaml"
PROMTOOL = shutil.which("promtool")
needs_prometheus = pytest.mark.skipif(
    PROMETHEUS is None or PROMTOOL is None,
    reason="Debian's prometheus (prometheus, promtool) is not on PATH: apt-get install prometheus",
)

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def parse(text: str) -> Samples:
    """Every sample of an exposition, by name and labels (sorted)."""
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def get(url: str) -> tuple[int, str, str]:
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.status, response.headers.get("Content-Type", ""), response.read().decode()


class Scrapes:
    """Two scrapes of one /metrics and what moved between them."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.before = self.scrape()
        self.after: Samples = {}

    def scrape(self) -> Samples:
        status, content_type, text = get(self.url)
        assert status == 200 and content_type.startswith("text/plain; version=")
        self.text = text
        return parse(text)

    def again(self) -> Scrapes:
        self.after = self.scrape()
        return self

    def moved(self, name: str, **labels: str) -> float:
        key = (name, tuple(sorted(labels.items())))
        return self.after.get(key, 0.0) - self.before.get(key, 0.0)

    def value(self, name: str, **labels: str) -> float:
        return self.after.get((name, tuple(sorted(labels.items()))), 0.0)


class _Quiet(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        pass


@pytest.fixture
def web() -> Iterator[str]:
    """bot/web.py's WebApp on a port of its own, over real HTTP: its base URL."""

    def slack(environ: Any, start_response: Any) -> list[bytes]:
        start_response("404 Not Found", [])
        return []

    server: WSGIServer = make_server("127.0.0.1", 0, WebApp(slack, lambda: {"ok": True}), handler_class=_Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    server.server_close()


def agent_on(server: ModelServer, memory: Any = None, **limits: Any) -> Agent:
    client = ModelClient(model="scripted", base_url=server.base_url, max_retries=0, timeout_s=5)
    settings = Settings.load(SAMPLE_CONFIG)
    return Agent(
        client,
        memory or InProcessMemory(),
        tools=ops_tools(settings.policy),
        limits=LoopLimits(**{"tool_retry_backoff_s": 0.01, **limits}),
    )


# ---------------------------------------------------------------- the agent loop and the model


def test_a_run_counts_its_stop_reason_steps_tool_calls_model_calls_and_tokens(
    web: str, model_server: Callable[..., ModelServer]
) -> None:
    server = model_server(
        script(
            Reply(calls=[Call("query_logs", {"service": "checkout", "level": "ERROR"}), Call("made_up_tool", {})]),
            Reply(content="the database is down"),
        )
    )
    question = "why is checkout throwing 502s? ticket SECRET-4242"
    scrapes = Scrapes(web + "/metrics")
    reply = agent_on(server).run(question, thread="cli:metrics-thread-77")
    assert reply.stop_reason is StopReason.answered
    s = scrapes.again()

    assert s.moved("opsbot_runs_total", stop_reason="answered") == 1
    assert s.moved("opsbot_run_steps_count") == 1 and s.moved("opsbot_run_steps_sum") == 2
    assert s.moved("opsbot_run_steps_bucket", le="1.0") == 0 and s.moved("opsbot_run_steps_bucket", le="2.0") == 1
    assert s.moved("opsbot_tool_calls_total", tool="query_logs", status="ok") == 1
    # A name the model made up is no label value: it is counted as `unknown`.
    assert s.moved("opsbot_tool_calls_total", tool="unknown", status="unknown_tool") == 1
    assert all(dict(labels).get("tool") != "made_up_tool" for _, labels in s.after)
    assert s.moved("opsbot_model_call_duration_seconds_count", outcome="ok") == 2
    assert 0 < s.moved("opsbot_model_call_duration_seconds_sum", outcome="ok") < reply.duration_s
    assert s.moved("opsbot_model_prompt_tokens_total") == reply.usage.prompt_tokens == server.prompt_tokens > 0
    assert s.moved("opsbot_model_completion_tokens_total") == reply.usage.completion_tokens > 0
    assert s.moved("opsbot_time_to_first_answer_seconds_count") == 1
    assert 0 < s.moved("opsbot_time_to_first_answer_seconds_sum") <= reply.duration_s
    assert s.moved("opsbot_run_duration_seconds_count") == 1
    # Bounded labels only: neither the question, nor the thread, nor the run id is anywhere.
    for said in ("SECRET-4242", "metrics-thread-77", reply.run_id, "checkout"):
        assert said not in s.text


def test_the_first_answer_is_timed_when_its_first_line_streams_not_when_the_run_ends(
    web: str, model_server: Callable[..., ModelServer]
) -> None:
    # Chunks 0.1 s apart: the first line is shown (streamed) chunks before the reply is done.
    server = model_server(lambda body: Reply(content="first line\nsecond line and more", chunk_delay_s=0.1))
    scrapes = Scrapes(web + "/metrics")
    reply = agent_on(server).run("status?", thread="cli:stream")
    s = scrapes.again()
    first = s.moved("opsbot_time_to_first_answer_seconds_sum")
    assert s.moved("opsbot_time_to_first_answer_seconds_count") == 1
    assert first < reply.duration_s - 0.15, (first, reply.duration_s)


def test_a_failing_model_counts_an_error_and_the_run_its_stop_reason(
    web: str, model_server: Callable[..., ModelServer]
) -> None:
    server = model_server(lambda body: Reply(status=500))
    scrapes = Scrapes(web + "/metrics")
    reply = agent_on(server).run("anyone there?")
    s = scrapes.again()
    assert reply.stop_reason is StopReason.llm_unavailable
    assert s.moved("opsbot_model_call_duration_seconds_count", outcome="error") == 1
    assert s.moved("opsbot_model_call_duration_seconds_count", outcome="ok") == 0
    assert s.moved("opsbot_runs_total", stop_reason="llm_unavailable") == 1
    assert s.moved("opsbot_time_to_first_answer_seconds_count") == 0, "nobody got an answer"


def test_redis_out_of_reach_is_counted_by_component(
    web: str, model_server: Callable[..., ModelServer], quick_redis_retries: None
) -> None:
    server = model_server(echo())
    scrapes = Scrapes(web + "/metrics")
    reply = agent_on(server, memory=RedisMemory(f"redis://127.0.0.1:{free_port()}/0")).run("hello?")
    s = scrapes.again()
    assert reply.stop_reason is StopReason.memory_unavailable
    assert s.moved("opsbot_redis_errors_total", component="memory") >= 1
    assert s.moved("opsbot_runs_total", stop_reason="memory_unavailable") == 1


# ---------------------------------------------------------------- Slack


def test_slack_acks_duplicates_job_waits_and_the_queue(web: str, sample_stack: Callable[..., Stack]) -> None:
    stack = sample_stack(echo(delay_s=0.5))
    scrapes = Scrapes(web + "/metrics")
    now = f"{time.time():.6f}"
    payloads.note_ts(now)
    mention = payloads.app_mention("<@UBOT> first question", ts=now)
    assert stack.event(mention, event_id="EvM1").status == 200
    follow_up = payloads.message("and a follow-up", thread_ts=mention["ts"])
    assert stack.event(follow_up, event_id="EvM2").status == 200
    # While the first run takes its half second, the follow-up waits behind it in its thread.
    assert until(lambda: parse(get(web + "/metrics")[2]).get(("opsbot_slack_jobs_waiting", ())) == 1, 5)
    assert stack.event(mention, event_id="EvM1", retry=1).status == 200, "Slack's retry"
    answered(stack, "C1", mention["ts"], count=2)
    s = scrapes.again()

    assert s.moved("opsbot_slack_acks_total", kind="event", outcome="ok") == 3
    assert s.moved("opsbot_slack_duplicate_deliveries_total") == 1
    assert s.moved("opsbot_slack_job_wait_seconds_count") == 2
    # From the mention's ts: each waited less than its thread's runs took (the first: a worker was free).
    assert 0 <= s.moved("opsbot_slack_job_wait_seconds_sum") < 10
    assert s.value("opsbot_slack_jobs_waiting") == 0, "nothing waits once both are answered"
    assert s.moved("opsbot_runs_total", stop_reason="answered") == 2


def test_slash_commands_and_clicks_are_counted_as_acks(web: str, sample_stack: Callable[..., Stack]) -> None:
    stack = sample_stack(echo())
    scrapes = Scrapes(web + "/metrics")
    assert stack.command("help").status == 200
    assert stack.click("opsbot_feedback", "positive:0123456789ab", message_ts="1700000000.000001").status == 200
    s = scrapes.again()
    assert s.moved("opsbot_slack_acks_total", kind="command", outcome="ok") == 1
    assert s.moved("opsbot_slack_acks_total", kind="action", outcome="ok") == 1


def test_an_event_redis_cannot_take_asks_slack_to_deliver_it_again(
    web: str, sample_stack: Callable[..., Stack], redis_server: RedisServer
) -> None:
    stack = sample_stack(echo())
    scrapes = Scrapes(web + "/metrics")

    def unreachable(*args: Any, **kwargs: Any) -> Any:
        import redis

        raise redis.ConnectionError("Redis is down (test)")

    stack.built.state._accept = unreachable  # type: ignore[assignment]  # the one script on the ack path
    assert stack.event(payloads.app_mention("<@UBOT> hello?")).status == 503
    s = scrapes.again()
    assert s.moved("opsbot_slack_acks_total", kind="event", outcome="redeliver") == 1
    assert s.moved("opsbot_redis_errors_total", component="slack_intake") == 1
    assert s.value("opsbot_slack_jobs_waiting") == 1, "parked here meanwhile"


# ---------------------------------------------------------------- approvals, alerts


def test_approvals_asked_and_decided_by_verdict(web: str, sample: Settings) -> None:
    from opsbot.bot.approvals import InProcessApprovalStore

    policy = policy_with(sample.policy)
    log: list[str] = []
    approvals, _ = service(policy, InProcessApprovalStore(), log, Clock())
    scrapes = Scrapes(web + "/metrics")
    first = ask(approvals, prepared(policy).approval_request(ASKER))
    second = ask(approvals, prepared(policy, service="payments").approval_request(ASKER), at="C1/3.3")
    approvals.decide(first.id, True, APPROVER, Shown(log), at="C1/2.2")
    approvals.decide(first.id, False, APPROVER, Shown(log), at="C1/2.2")  # decided already
    approvals.decide(second.id, False, APPROVER, Shown(log), at="C1/3.3")
    s = scrapes.again()
    assert s.moved("opsbot_approvals_asked_total", kind="command") == 2
    assert s.moved("opsbot_approvals_decided_total", verdict="approved") == 1
    assert s.moved("opsbot_approvals_decided_total", verdict="taken") == 1
    assert s.moved("opsbot_approvals_decided_total", verdict="denied") == 1


def test_alerts_received_by_source_and_outcome(web: str) -> None:
    seen: set[str] = set()

    def take(ids: list[str], alert: Any) -> bool:
        fresh = not seen.intersection(ids)
        seen.update(ids)
        return fresh

    hooks = AlertHooks(AlertAuth(alertmanager_token=SecretStr("am-token")), take)
    body = (FIXTURES / "alerts" / "alertmanager_firing.json").read_bytes()
    scrapes = Scrapes(web + "/metrics")
    statuses: list[str] = []
    for _ in range(2):
        environ = {
            "REQUEST_METHOD": "POST",
            "PATH_INFO": "/hooks/alertmanager",
            "CONTENT_TYPE": "application/json",
            "CONTENT_LENGTH": str(len(body)),
            "HTTP_AUTHORIZATION": "Bearer am-token",
            "wsgi.input": io.BytesIO(body),
        }
        hooks(environ, lambda status, headers, exc_info=None: statuses.append(status))  # type: ignore[arg-type]
    assert statuses == ["202 Accepted", "202 Accepted"]
    s = scrapes.again()
    assert s.moved("opsbot_alerts_received_total", source="alertmanager", outcome="queued") == 1
    assert s.moved("opsbot_alerts_received_total", source="alertmanager", outcome="duplicate") == 1


# ---------------------------------------------------------------- Socket Mode's port, the setting


def test_socket_mode_serves_metrics_on_a_port_of_its_own() -> None:
    port = free_port()
    server = serve_metrics(port)
    assert server is not None
    try:
        status, content_type, text = get(f"http://127.0.0.1:{port}/metrics")
        assert status == 200 and content_type.startswith("text/plain")
        assert ("opsbot_slack_duplicate_deliveries_total", ()) in parse(text)
        with pytest.raises(StartupError, match=f"port {port}.*OPSBOT_METRICS_PORT"):
            serve_metrics(port)  # taken: said at startup, not found out at the first scrape
    finally:
        server.shutdown()
        server.server_close()
    assert serve_metrics(0) is None, "0: off"


def test_the_metrics_port_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPSBOT_METRICS_PORT", raising=False)
    assert Settings().metrics_port == 9464
    monkeypatch.setenv("OPSBOT_METRICS_PORT", "0")
    assert Settings().metrics_port == 0
    monkeypatch.setenv("OPSBOT_METRICS_PORT", "70000")
    with pytest.raises(ValueError, match="metrics_port"):
        Settings()


def test_the_registry_is_opsbots_own() -> None:
    from prometheus_client import REGISTRY

    ours = metrics.registry()
    assert ours is not REGISTRY
    names = {family.name for family in ours.collect()}
    assert names and all(name.startswith("opsbot_") for name in names)
    assert not any(family.name.startswith("opsbot_") for family in REGISTRY.collect())


# ---------------------------------------------------------------- opsbot serve --http, and a real Prometheus


def _serve_env(slack: SlackApi, redis_url: str, model: ModelServer) -> dict[str, str]:
    return {
        "SLACK_BOT_TOKEN": "xoxb-test",
        "SLACK_SIGNING_SECRET": "secret",
        "SLACK_API_URL": slack.base_url,
        "REDIS_URL": redis_url,
        "OPENAI_BASE_URL": model.base_url,
        "OPSBOT_MODEL": "scripted",
        "ALERTMANAGER_TOKEN": "am-token",
        "OPSBOT_ALERTS__CHANNEL": "CALERTS",
    }


@pytest.fixture
def serve(own_redis: RedisServer, model_server: Callable[..., ModelServer]) -> Iterator[tuple[ServeProcess, SlackApi]]:
    """`opsbot serve --http` that has answered a mention and taken an alert (its runbook ran)."""
    model = model_server(
        lambda body: (
            Reply(content="all good")
            if not has_tools(body) or body["messages"][-1]["role"] == "tool"
            else Reply(calls=[Call("list_services", {})])
        )
    )
    with SlackApi(token="xoxb-test") as slack, ServeProcess(_serve_env(slack, own_redis.url, model)) as process:
        mention = payloads.app_mention("<@UBOT> how is checkout?")
        body = json.dumps(payloads.event_callback(mention))
        assert process.post("/slack/events", body, payloads.signed_headers("secret", body))[0] == 200
        alert = (FIXTURES / "alerts" / "alertmanager_disk_filling.json").read_text()
        headers = {"Content-Type": "application/json", "Authorization": "Bearer am-token"}
        assert process.post("/hooks/alertmanager", alert, headers)[0] == 202
        assert slack.wait_for(
            lambda: any(
                (m.get("metadata") or {}).get("event_type") == "opsbot_answer"
                for m in slack.messages("C1", mention["ts"])
            ),
            20,
        )
        assert settled(own_redis.url, 30)
        yield process, slack


def test_opsbot_serve_http_serves_metrics_beside_healthz(serve: tuple[ServeProcess, SlackApi]) -> None:
    process, _ = serve
    status, text = process.get("/metrics")
    assert status == 200
    samples = parse(text)

    def value(name: str, **labels: str) -> float:
        return samples.get((name, tuple(sorted(labels.items()))), 0.0)

    # A process of its own: its counters are exactly what it did.
    assert value("opsbot_slack_acks_total", kind="event", outcome="ok") == 1
    assert value("opsbot_runs_total", stop_reason="answered") == 1
    assert value("opsbot_tool_calls_total", tool="list_services", status="ok") == 1
    # The mention's two steps, and the runbook's explain step.
    assert value("opsbot_model_call_duration_seconds_count", outcome="ok") == 3
    assert value("opsbot_alerts_received_total", source="alertmanager", outcome="queued") == 1
    assert value("opsbot_runbook_runs_started_total") == 1
    assert value("opsbot_slack_job_wait_seconds_count") == 1
    assert value("opsbot_slack_jobs_waiting") == 0
    assert process.get("/healthz")[0] == 200


@needs_prometheus
def test_promtool_accepts_the_exposition_and_the_alert_rules(web: str) -> None:
    assert PROMTOOL is not None
    rules = subprocess.run([PROMTOOL, "check", "rules", str(RULES)], capture_output=True, text=True, timeout=30)
    assert rules.returncode == 0 and "SUCCESS: 3 rules found" in rules.stdout, rules.stdout + rules.stderr
    # Prometheus's own linter for names, units, _total suffixes and help texts.
    _, _, text = get(web + "/metrics")
    lint = subprocess.run([PROMTOOL, "check", "metrics"], input=text, capture_output=True, text=True, timeout=30)
    assert lint.returncode == 0, lint.stdout + lint.stderr


@needs_prometheus
def test_a_real_prometheus_scrapes_opsbot(serve: tuple[ServeProcess, SlackApi], tmp_path: Path) -> None:
    assert PROMETHEUS is not None
    process, _ = serve
    with prometheus(tmp_path, scrape_job("opsbot", f"127.0.0.1:{process.port}"), rules=RULES) as running:
        _scraped(f"{running.url}/api/v1")


def _scraped(api: str) -> None:
    """What a Prometheus scraping opsbot reads of it, and its rules loaded."""

    def api_get(path: str) -> Any:
        return json.loads(get(api + path)[2])["data"]

    def target_up() -> bool:
        return any(t["health"] == "up" for t in api_get("/targets")["activeTargets"])

    def queried(expr: str) -> list[Any]:
        result: list[Any] = api_get("/query?query=" + quote(expr))["result"]
        return result

    assert until(target_up, 30, interval=0.2, ignore=(OSError,))
    expr = 'opsbot_alerts_received_total{job="opsbot",source="alertmanager",outcome="queued"}'
    assert until(lambda: queried(expr), 10, interval=0.2)
    [series] = queried(expr)
    assert float(series["value"][1]) == 1
    [answered_runs] = queried('sum(opsbot_runs_total{stop_reason="answered"})')
    assert float(answered_runs["value"][1]) == 1
    groups = api_get("/rules")["groups"]
    assert sorted(r["name"] for g in groups for r in g["rules"]) == [
        "OpsbotModelFailing",
        "OpsbotQuestionsWait",
        "OpsbotRedisErrors",
    ]
