"""query_metrics and find_metrics (tools/metrics/) against a real Prometheus scraping a real
node_exporter and itself (Debian's prometheus and prometheus-node-exporter; skipped without them),
through the executor, as the model sees the results (redacted, rendered)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from opsbot.bot.commands import Listing, NotACommand, decide
from opsbot.config.policy import Access, MetricsSource, Policy, Principal
from opsbot.tools.base import Registry, ToolResult
from opsbot.tools.catalog import ops_tools
from opsbot.tools.executor import Executor, RetryPolicy, ToolCall
from tests.fakes.model_server import Call, ModelServer, Reply, tool_results
from tests.fakes.prometheus_server import LABEL_TOKEN, Running, needs_node_exporter
from tests.fakes.redis_server import RedisServer, free_port
from tests.fakes.slack_api import SlackApi
from tests.fakes.slack_stack import Stacks, stack_settings

pytestmark = needs_node_exporter
FAST = RetryPolicy(timeout_s=30, retries=0, backoff_s=0.01)
TOKEN = LABEL_TOKEN  # the node target's label holding a token's shape
ONCALL = Principal(platform="cli", user="alice", groups=frozenset({"oncall"}))
STRANGER = Principal(platform="cli", user="mallory")


@pytest.fixture(scope="module")
def prometheus(node_prometheus: Running) -> Running:
    """The real Prometheus of a real node_exporter (tests/conftest.py), by the name these tests use."""
    return node_prometheus


def executor(url: str, **source: Any) -> Executor:
    policy = Policy(metrics={"prom": MetricsSource(url=url, **source)})
    return Executor(Registry(ops_tools(policy)), FAST)


def call(ex: Executor, tool: str, principal: Principal | None = None, **args: Any) -> ToolResult:
    request = ToolCall(id=f"call-{uuid.uuid4().hex[:6]}", name=tool, arguments=json.dumps({"source": "prom", **args}))
    return ex.run_one(request, principal).result


def test_a_range_query_gives_a_summary_per_series_and_keeps_the_points(prometheus: Running) -> None:
    result = call(executor(prometheus.url), "query_metrics", query="rate(node_cpu_seconds_total[5s])", since="30s")
    assert result.ok, result
    data = result.data
    assert data["kind"] == "range" and data["series"]
    cpu = data["series"][0]
    # Labels every series shares are said once; each series keeps what tells it apart.
    assert data["common_labels"]["job"] == "node" and "job" not in cpu["labels"]
    assert cpu["labels"]["mode"] and cpu["labels"]["cpu"]
    assert {"min", "avg", "max", "last", "change", "max_at", "points"} <= set(cpu)
    assert cpu["min"] <= cpu["avg"] <= cpu["max"]
    # The model reads the summary, never the points; the points stay with the result for charts.
    rendered = result.render()
    assert '"values"' not in rendered and "kept" not in rendered
    assert result.kept is not None and len(result.kept) == len(data["series"])
    assert len(result.kept[0]) == cpu["points"] > 1


def test_a_range_summary_says_when_the_series_crossed_the_middle_of_its_range(prometheus: Running) -> None:
    ex = executor(prometheus.url)
    # A saw tooth: rises from 0 to 9 over ten seconds, then drops; three teeth in 30 seconds.
    saw = call(ex, "query_metrics", query="vector(time() % 10)", since="30s", step="1s")
    assert saw.ok, saw
    [tooth] = saw.data["series"]
    assert tooth["min"] < 1 and tooth["max"] > 9 and tooth["points"] == 31
    assert len(tooth["crossed_middle"]) == 3 and tooth["crossings_more"] >= 2
    assert {c.split(" ")[0] for c in tooth["crossed_middle"]} == {"rose", "fell"}
    assert all(c.endswith("Z") for c in tooth["crossed_middle"])
    flat = call(ex, "query_metrics", query="vector(1)", since="30s", step="1s")
    [line] = flat.data["series"]
    assert line["change"] == 0 and line["min"] == line["max"] == 1 and "crossed_middle" not in line


def test_an_instant_query_gives_each_series_value(prometheus: Running) -> None:
    result = call(executor(prometheus.url), "query_metrics", query='up{job="prometheus"}')
    assert result.ok, result
    assert result.data["kind"] == "instant"
    [series] = result.data["series"]
    assert series["value"] == 1 and series["labels"]["job"] == "prometheus"
    assert result.data["summary"] == "1 series"


def test_more_series_than_max_series_are_cut_and_the_cut_said(prometheus: Running) -> None:
    result = call(executor(prometheus.url, max_series=2), "query_metrics", query="node_cpu_seconds_total", since="20s")
    assert result.ok, result
    data = result.data
    assert len(data["series"]) == 2
    assert data["totals"]["series"] > 2
    assert f"showing the 2 that reached highest, totals over all {data['totals']['series']}" in data["summary"]


def test_a_syntax_error_says_where(prometheus: Running) -> None:
    result = call(executor(prometheus.url), "query_metrics", query="sum(rate(node_cpu_seconds_total[1m])")
    assert result.error is not None
    assert result.error.type == "invalid_args"
    assert result.error.message.startswith("PromQL error at 1:"), result.error.message
    assert "line:column" in result.error.hint


def test_an_unknown_metric_is_not_found_with_the_nearest_names(prometheus: Running) -> None:
    result = call(executor(prometheus.url), "query_metrics", query="rate(node_cpu_second_total[1m])", since="10s")
    assert result.error is not None and result.error.type == "not_found"
    assert "'node_cpu_second_total' does not exist" in result.error.message
    assert "node_cpu_seconds_total" in result.error.hint


def test_an_empty_result_of_an_existing_metric_says_what_exists(prometheus: Running) -> None:
    result = call(executor(prometheus.url), "query_metrics", query='up{job="nonesuch"}')
    assert result.ok, result
    assert result.data["series"] == []
    assert "the metrics it names exist" in result.data["summary"]
    assert "node" in result.data["existing_labels"]["up"]["job"]


def test_find_metrics_finds_names_by_words_with_help_and_labels(prometheus: Running) -> None:
    result = call(executor(prometheus.url), "find_metrics", words="cpu seconds")
    assert result.ok, result
    names = [m["name"] for m in result.data["metrics"]]
    assert names[0] == "node_cpu_seconds_total"
    cpu = result.data["metrics"][names.index("node_cpu_seconds_total")]
    assert cpu["type"] == "counter" and "CPU" in cpu["help"]
    assert "idle" in cpu["labels"]["mode"]


def test_find_metrics_puts_whole_words_first(prometheus: Running) -> None:
    result = call(executor(prometheus.url), "find_metrics", words="load")
    assert result.ok, result
    assert [m["name"] for m in result.data["metrics"]][:3] == ["node_load1", "node_load5", "node_load15"]


def test_a_label_holding_a_secret_is_redacted(prometheus: Running) -> None:
    result = call(executor(prometheus.url), "query_metrics", query='up{job="node"}')
    assert result.ok, result
    rendered = result.render()
    assert TOKEN not in rendered
    assert "REDACTED" in result.data["series"][0]["labels"]["api_token"]


def test_an_unreachable_source_is_unavailable_and_retryable() -> None:
    result = call(executor(f"http://127.0.0.1:{free_port()}"), "query_metrics", query="up")
    assert result.error is not None and result.error.type == "unavailable" and result.error.retryable
    assert "cannot reach metrics source prom" in result.error.message


def test_a_source_that_does_not_answer_in_time_is_a_retryable_timeout() -> None:
    # Listening but never answering: the connection is made, the answer never comes.
    with socket.create_server(("127.0.0.1", 0)) as silent:
        port = silent.getsockname()[1]
        result = call(executor(f"http://127.0.0.1:{port}", timeout_s=0.3), "query_metrics", query="up")
    assert result.error is not None and result.error.type == "timeout" and result.error.retryable
    assert "did not answer within 0.3s" in result.error.message


def test_access_is_per_source(prometheus: Running) -> None:
    ex = executor(prometheus.url, access=Access(groups=frozenset({"oncall"})))
    denied = call(ex, "query_metrics", STRANGER, query="up")
    assert denied.error is not None and denied.error.type == "denied"
    assert "you may not query metrics source prom" in denied.error.message
    assert call(ex, "query_metrics", ONCALL, query="up").ok


def test_a_header_comes_from_its_environment_variable(prometheus: Running, monkeypatch: pytest.MonkeyPatch) -> None:
    ex = executor(prometheus.url, headers={"Authorization": "OPSBOT_TEST_PROM_AUTH"})
    monkeypatch.delenv("OPSBOT_TEST_PROM_AUTH", raising=False)
    missing = call(ex, "query_metrics", query="up")
    assert missing.error is not None and missing.error.type == "unavailable"
    assert "needs the environment variable OPSBOT_TEST_PROM_AUTH" in missing.error.message
    monkeypatch.setenv("OPSBOT_TEST_PROM_AUTH", "Bearer whatever")
    assert call(ex, "query_metrics", query="up").ok


def test_a_step_too_fine_for_max_points_is_refused_with_the_smallest(prometheus: Running) -> None:
    result = call(executor(prometheus.url, max_points=10), "query_metrics", query="up", since="1h", step="1s")
    assert result.error is not None and result.error.type == "invalid_args"
    assert "use a step of at least 360s" in result.error.hint


def test_a_time_it_cannot_read_is_refused_with_the_forms_it_reads(prometheus: Running) -> None:
    result = call(executor(prometheus.url), "query_metrics", query="up", since="yesterday-ish")
    assert result.error is not None and result.error.type == "invalid_args"
    assert result.error.message == "since 'yesterday-ish' is not a time I understand"
    assert "15m, 2h, 1d" in result.error.hint and "UTC" in result.error.hint


def test_the_tools_are_offered_only_with_a_metrics_source() -> None:
    assert "query_metrics" not in {t.name for t in ops_tools(Policy())}
    names = {t.name for t in ops_tools(Policy(metrics={"prom": MetricsSource(url="http://prom:9090")}))}
    assert {"query_metrics", "find_metrics"} <= names


def test_opsbot_ask_offers_the_tools_and_the_model_reads_summaries(
    prometheus: Running, model_server: Callable[[Any], ModelServer], tmp_path: Path
) -> None:
    config = tmp_path / "opsbot.yaml"
    config.write_text(
        "model: test-model\n"
        "policy:\n"
        "  metrics:\n"
        "    prom:\n"
        "      description: the test Prometheus\n"
        f"      url: {prometheus.url}\n"
        "      headers: {Authorization: PROM_AUTH}\n"
    )

    def busy(body: dict[str, Any]) -> Reply:
        results = tool_results(body)
        if not results:
            query = {"source": "prom", "query": "rate(node_cpu_seconds_total[5s])", "since": "20s"}
            return Reply(calls=[Call("query_metrics", query)])
        return Reply(content=f"busiest: {results[0]['data']['series'][0]['max']}")

    server = model_server(busy)
    done = subprocess.run(
        [sys.executable, "-m", "opsbot.bot", "--config", str(config), "ask", "is the node busy?"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "OPENAI_BASE_URL": server.base_url, "PROM_AUTH": "Bearer x"},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("busiest: ")
    offered = {tool["function"]["name"] for tool in server.requests[0]["tools"]}
    assert {"query_metrics", "find_metrics"} <= offered
    [seen] = [m["content"] for m in server.requests[-1]["messages"] if m["role"] == "tool"]
    assert '"crossed_middle"' in seen or '"max_at"' in seen
    assert '"values"' not in seen and TOKEN not in seen


def test_check_config_counts_metrics_sources_and_warns_of_an_unset_header_variable(tmp_path: Path) -> None:
    config = tmp_path / "opsbot.yaml"
    config.write_text(
        "policy:\n  metrics:\n    prom:\n      url: http://prometheus:9090\n      headers: {Authorization: PROM_AUTH}\n"
    )
    argv = [sys.executable, "-m", "opsbot.bot", "check-config", str(config)]
    env = {"PATH": "/usr/bin:/bin"}
    unset = subprocess.run(argv, capture_output=True, text=True, timeout=60, cwd=tmp_path, env=env)
    assert unset.returncode == 0, unset.stderr
    assert "1 metrics source(s)" in unset.stdout
    assert f"{config}:5" in unset.stderr and "environment variable PROM_AUTH is not set here" in unset.stderr
    set_ = subprocess.run(argv, capture_output=True, text=True, timeout=60, cwd=tmp_path, env={**env, "PROM_AUTH": "x"})
    assert set_.returncode == 0 and "PROM_AUTH" not in set_.stderr, set_.stderr


# The direct command `metrics` (bot/commands.py): no model, the tool's result as people read it.

SOURCES = Policy(
    metrics={
        "prom": MetricsSource(url="http://prom:9090", description="the test Prometheus"),
        "thanos": MetricsSource(url="http://thanos:9090"),
    }
)


def parsed_call(text: str) -> dict[str, Any]:
    parsed = decide(SOURCES, text, can_ask=True)
    assert isinstance(parsed, ToolCall), parsed
    return {"tool": parsed.name, **json.loads(parsed.arguments)}


def test_metrics_alone_lists_the_sources_without_a_model_or_a_call() -> None:
    listed = decide(SOURCES, "metrics", can_ask=True)
    assert isinstance(listed, Listing)
    assert listed.text() == "metrics sources:\n  prom: the test Prometheus\n  thanos"
    assert decide(Policy(), "metrics", can_ask=True) == Listing(
        heading="No metrics sources are configured (policy.metrics).", entries={}
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # The query is kept as typed: quotes, braces and spaces are PromQL's, not shell words.
        (
            'metrics prom sum by (code) (rate(http_requests_total{code=~"5..", path="/a b"}[5m]))',
            'sum by (code) (rate(http_requests_total{code=~"5..", path="/a b"}[5m]))',
        ),
        ("metrics prom up", "up"),
        ("metrics prom up since=6h step=1m", "up"),
        # A word that only looks like an option inside the query stays in it.
        ('metrics prom up{step="1m"}', 'up{step="1m"}'),
        ("metrics prom up since=1h since=2h", "up since=1h"),
    ],
)
def test_metrics_keeps_the_query_as_typed_and_takes_options_from_the_end(text: str, expected: str) -> None:
    call_ = parsed_call(text)
    assert call_["tool"] == "query_metrics" and call_["source"] == "prom" and call_["query"] == expected


def test_metrics_ranges_over_the_last_hour_unless_told() -> None:
    assert parsed_call("metrics prom up")["since"] == "1h"
    told = parsed_call("metrics prom up since=6h until=2026-11-29T03:00:00Z step=5m")
    assert (told["since"], told["until"], told["step"]) == ("6h", "2026-11-29T03:00:00Z", "5m")


def test_metrics_find_looks_up_names() -> None:
    assert parsed_call("metrics thanos find http requests") == {
        "tool": "find_metrics",
        "source": "thanos",
        "words": "http requests",
    }


@pytest.mark.parametrize("text", ["metrics nope up", "metrics prom", "metrics prom since=1h"])
def test_a_metrics_command_it_cannot_run_says_why_and_never_goes_to_the_model_silently(text: str) -> None:
    without_model = decide(SOURCES, text, can_ask=False)
    assert isinstance(without_model, NotACommand) and "Usage: metrics <source> <promql>" in without_model.why
    if text == "metrics nope up":
        assert "There is no metrics source 'nope'" in without_model.why and "prom, thanos" in without_model.why


def test_opsbot_ask_metrics_answers_from_prometheus_without_a_model(prometheus: Running, tmp_path: Path) -> None:
    config = tmp_path / "opsbot.yaml"
    config.write_text(f"policy:\n  metrics:\n    prom:\n      url: {prometheus.url}\n")
    argv = [sys.executable, "-m", "opsbot.bot", "--config", str(config), "ask"]
    env = {"PATH": "/usr/bin:/bin"}

    def ask(text: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*argv, text], capture_output=True, text=True, timeout=60, cwd=tmp_path, env=env)

    ranged = ask('metrics prom sum by (mode) (rate(node_cpu_seconds_total{mode="idle"}[5s])) since=30s step=2s')
    assert ranged.returncode == 0, ranged.stderr
    lines = ranged.stdout.splitlines()
    assert lines[0].startswith("1 series over the range, ") and lines[0].endswith(", step 2s")
    assert 'mode="idle"' in ranged.stdout and "min " in ranged.stdout and "(highest at 20" in ranged.stdout
    assert TOKEN not in ranged.stdout  # a label holding a secret is redacted here too
    found = ask("metrics prom find load")
    assert found.returncode == 0, found.stderr
    assert found.stdout.splitlines()[1].startswith("  node_load1  (gauge) ")
    wrong = ask("metrics prom node_cpu_secnds_total")
    assert wrong.returncode != 0
    assert "not found: metric 'node_cpu_secnds_total' does not exist in prom" in wrong.stdout + wrong.stderr
    assert "node_cpu_seconds_total" in wrong.stdout + wrong.stderr


def test_ops_metrics_in_slack_lists_sources_and_answers_a_query_without_a_model(
    prometheus: Running, redis_server: RedisServer
) -> None:
    redis_server.flush()
    stacks = Stacks()
    slack = SlackApi()
    policy = Policy(metrics={"prom": MetricsSource(url=prometheus.url, description="the test Prometheus")})
    stack = stacks.start(slack, stack_settings(slack, redis_server.url, policy, None), None)
    try:
        stack.command("metrics", key="sources")
        stack.command('metrics prom sum by (mode) (rate(node_cpu_seconds_total{mode="idle"}[5s])) since=30s', key="q")
        stack.command("metrics nope up", key="bad")
        for key in ("sources", "q", "bad"):
            assert slack.wait_for(lambda key=key: slack.responses(key), 20), key
        assert "prom: the test Prometheus" in slack.responses("sources")[0]["text"]
        [answer] = slack.responses("q")
        assert "1 series over the range" in answer["text"] and "mode=" in answer["text"]
        bad = slack.responses("bad")[0]["text"]
        assert "There is no metrics source 'nope'" in bad and "Traceback" not in bad
    finally:
        stacks.close()
