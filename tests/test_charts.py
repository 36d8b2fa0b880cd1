"""Charts of metrics ranges (bot/charts): what a query_metrics range result is drawn as, a PNG
for Slack (matplotlib, imported only when a chart is drawn) and sparklines for a terminal.

The chart's data comes from the tool's result as the executor hands it on (redacted, inert);
text from outside (labels, the query) is drawn as text, never as mathtext. End to end: a real
Prometheus, the scripted model over real HTTP, the real Bolt app against the fake Slack (one PNG
in the thread, exactly once, titled, with alt text), `opsbot ask` and `opsbot chat`'s session."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
import time
import zlib
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest

from opsbot.bot.alerts import Alert, AlertExpression, alert_expression, parse_alertmanager
from opsbot.bot.charts import MAX_CHARTS, Chart, ChartSeries, chart_of, charts_of, draw_png, sparkline, sparklines
from opsbot.bot.terminal.prompt import LinePrompter
from opsbot.bot.terminal.session import ChatSession
from opsbot.config.policy import MetricsSource, Policy
from opsbot.config.settings import SAMPLE_CONFIG, AlertSettings, Settings
from opsbot.tools.base import ErrorType, ToolResult
from opsbot.tools.catalog import ops_tools
from tests.fakes import slack_payloads as payloads
from tests.fakes.model_server import Call, ModelServer, Reply, tool_results
from tests.fakes.prometheus_server import LABEL_TOKEN, Running, needs_node_exporter
from tests.fakes.redis_server import RedisServer
from tests.fakes.slack_api import SlackApi
from tests.fakes.slack_stack import CLIENT_TIMEOUT_S, Stack, Stacks, stack_settings
from tests.fakes.terminal import clean_env

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
T0 = 1_764_700_000.0
QUERY = "rate(node_cpu_seconds_total[5s])"


def range_result(labels: list[dict[str, str]], series: list[list[float]], **data: Any) -> ToolResult:
    """A query_metrics range result as the executor hands it on: labels in data, points kept."""
    shown = {
        "kind": "range",
        "query": QUERY,
        "start": "2026-12-02T17:00:00Z",
        "end": "2026-12-02T18:00:00Z",
        "step": "15s",
        "series": [{"labels": one, "max": max(values)} for one, values in zip(labels, series, strict=True)],
        **data,
    }
    kept = [[(T0 + 15 * i, v) for i, v in enumerate(values)] for values in series]
    return ToolResult(ok=True, data=shown, kept=kept)


def png_chunks(data: bytes) -> list[tuple[bytes, bytes]]:
    """(type, body) of every chunk, each one's CRC checked: a PNG a viewer would open."""
    assert data[:8] == PNG_SIGNATURE
    chunks, at = [], 8
    while at < len(data):
        (length,) = struct.unpack(">I", data[at : at + 4])
        kind, body = data[at + 4 : at + 8], data[at + 8 : at + 8 + length]
        (crc,) = struct.unpack(">I", data[at + 8 + length : at + 12 + length])
        assert zlib.crc32(kind + body) == crc
        chunks.append((kind, body))
        at += 12 + length
    assert chunks[0][0] == b"IHDR" and chunks[-1][0] == b"IEND"
    return chunks


def png_size(data: bytes) -> tuple[int, int]:
    width, height = struct.unpack(">II", png_chunks(data)[0][1][:8])
    return width, height


def png_texts(data: bytes) -> dict[str, str]:
    """The PNG's text chunks (tEXt latin-1, iTXt UTF-8, uncompressed), keyword -> text."""
    texts = {}
    for kind, body in png_chunks(data):
        if kind == b"tEXt":
            key, _, value = body.partition(b"\0")
            texts[key.decode("latin-1")] = value.decode("latin-1")
        elif kind == b"iTXt":
            key, _, rest = body.partition(b"\0")
            rest = rest[2:]  # compression flag and method
            _, _, rest = rest.partition(b"\0")  # language tag
            _, _, value = rest.partition(b"\0")  # translated keyword
            texts[key.decode("latin-1")] = value.decode()
    return texts


# ---------------------------------------------------------------- what a chart is


def test_a_range_result_is_a_chart_titled_with_its_query_and_range_saying_what_it_shows() -> None:
    result = range_result(
        [{"instance": "api-1"}, {"instance": "api-2"}, {"instance": "api-3"}, {"instance": "api-4"}],
        [[0.1, 0.93, 0.5], [0.2, 0.4, 0.3], [0.05, 0.1, 0.07], [0.0, 0.01, 0.0]],
        common_labels={"job": "api"},
    )
    chart = chart_of("query_metrics", result)
    assert chart is not None
    assert chart.title == f"{QUERY}  ·  2026-12-02 17:00 – 2026-12-02 18:00 UTC"
    assert [s.label for s in chart.series] == ["instance=api-1", "instance=api-2", "instance=api-3", "instance=api-4"]
    assert chart.series[0].points == [(T0, 0.1), (T0 + 15, 0.93), (T0 + 30, 0.5)]
    assert chart.alt_text == (
        f"Line chart of {QUERY} from 2026-12-02T17:00:00Z to 2026-12-02T18:00:00Z (step 15s): 4 series of job=api; "
        "instance=api-1 peaked at 0.93, last 0.5; instance=api-2 peaked at 0.4, last 0.3; "
        "instance=api-3 peaked at 0.1, last 0.07; 1 more series lower."
    )


def test_no_chart_for_an_instant_result_an_error_no_series_another_tool_or_cut_data() -> None:
    ranged = range_result([{"a": "1"}], [[1.0, 2.0]])
    instant = ToolResult.success({"kind": "instant", "query": QUERY, "series": [{"labels": {}, "value": 1}]})
    failed = ToolResult.failure(ErrorType.invalid_args, "1:14: parse error")
    empty = ToolResult(ok=True, data={**ranged.data, "series": []}, kept=[])
    cut = ranged.model_copy(update={"data": "a range whose data was cut to a string"})
    assert chart_of("query_metrics", ranged) is not None
    assert [chart_of("query_metrics", r) for r in (instant, failed, empty, cut, None)] == [None] * 5
    assert chart_of("query_logs", ranged) is None and chart_of(None, ranged) is None


def test_a_run_carries_at_most_three_charts_the_last_distinct_ones_in_call_order() -> None:
    results = [range_result([{"n": str(n)}], [[float(n), 1.0]]) for n in range(5)]
    calls = [("query_metrics", r) for r in results] + [("query_metrics", results[4]), ("query_logs", results[0])]
    charts = charts_of(calls)
    assert len(charts) == MAX_CHARTS == 3
    assert [c.series[0].label for c in charts] == ["n=2", "n=3", "n=4"]


def test_sparklines_show_each_series_shape_with_its_min_max_and_last() -> None:
    assert sparkline([0, 1, 2, 3, 4, 5, 6, 7]) == "▁▂▃▄▅▆▇█"
    assert sparkline([3, 3, 3]) == "▁▁▁"
    # More points than columns: each column is its points' highest, so a one-point spike shows.
    assert sparkline([0.0] * 50 + [9.0] + [0.0] * 49, width=10) == "▁▁▁▁▁█▁▁▁▁"
    chart = chart_of("query_metrics", range_result([{"i": "a"}, {"i": "bb"}], [[1, 5, 2], [0, 0, 0]]))
    assert chart is not None
    title, first, second = sparklines(chart)
    assert title == chart.title
    assert first == "  i=a   ▁█▃  min 1  max 5  last 2"
    assert second == "  i=bb  ▁▁▁  min 0  max 0  last 0"


# ---------------------------------------------------------------- the PNG


def test_the_png_is_a_real_png_of_the_expected_size_carrying_its_title_and_alt_text() -> None:
    chart = chart_of("query_metrics", range_result([{"i": "a"}, {"i": "b"}], [[1, 5, 2, 4], [0, 1, 0, 1]]))
    assert chart is not None
    drawn = draw_png(chart)
    assert png_size(drawn) == (1000, 500)
    texts = png_texts(drawn)
    assert texts["Title"] == chart.title and texts["Description"] == chart.alt_text
    assert len(drawn) > 10_000  # lines, axes and text were drawn, not an empty canvas


HOSTILE_LABELS = [
    r"$\undefinedcommand$",  # mathtext would fail to parse this: drawn as text it is just characters
    r"$\frac{1}{0}$ and $x^2$",
    "$",
    "two\nlines\tand a tab\r",
    "\u202etxet desrever",  # a bidi override
    "\x1b]52;c;cGF5bG9hZA==\x07",  # an OSC 52 clipboard write
    "_hidden",  # a legend hides labels starting with `_` unless given explicitly
    "x" * 5000,
    "日本語 ümlaut 🙂",
    r"\\ \n %s {0} <b>",
]


def test_labels_from_outside_are_drawn_as_text_one_line_short_and_inert() -> None:
    labels = [{"label": text} for text in HOSTILE_LABELS]
    result = range_result(labels, [[float(i), float(i) + 1] for i in range(len(labels))])
    query = r"sum($\undefinedcommand$)" + "\n" + "\u202e" + "y" * 300
    chart = chart_of("query_metrics", result.model_copy(update={"data": {**result.data, "query": query}}))
    assert chart is not None
    for text in [chart.title, chart.alt_text, *(s.label for s in chart.series)]:
        assert "\n" not in text and "\t" not in text and "\r" not in text
        assert "\u202e" not in text and "\x1b" not in text and "\x07" not in text
    assert all(len(s.label) <= 60 for s in chart.series) and len(chart.query) <= 100
    assert chart.series[3].label == r"label=two\nlines\tand a tab\x0d"
    assert chart.series[4].label == r"label=\u202etxet desrever"
    assert len(chart.alt_text) <= 1000
    drawn = draw_png(chart)  # with math parsing on, `$\undefinedcommand$` raises ValueError here
    assert png_size(drawn) == (1000, 500)
    assert png_texts(drawn)["Title"] == chart.title


def test_matplotlib_is_imported_only_when_a_chart_is_drawn() -> None:
    """`opsbot ask services` (a direct command), and importing the CLI and the Slack app, never
    load matplotlib; drawing a chart does (the check can fail)."""
    script = f"""
import sys
from click.testing import CliRunner
import opsbot.bot.slack.app, opsbot.bot.slack.serving, opsbot.bot.terminal.session
from opsbot.bot.cli import main
done = CliRunner().invoke(main, ["--config", {str(SAMPLE_CONFIG)!r}, "ask", "services"])
assert done.exit_code == 0, done.output
before = "matplotlib" in sys.modules
from opsbot.bot.charts import Chart, ChartSeries, draw_png
draw_png(Chart(query="up", start="s", end="e", series=[ChartSeries(label="", points=[(0.0, 1.0), (60.0, 2.0)])]))
print(before, "matplotlib" in sys.modules)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "True"]


# ---------------------------------------------------------------- with a real Prometheus


def metrics_policy(url: str) -> Policy:
    return Policy(metrics={"prom": MetricsSource(url=url, description="the test Prometheus")})


def queries_a_range_then_answers(body: dict[str, Any]) -> Reply:
    results = tool_results(body)
    if not results:
        return Reply(calls=[Call("query_metrics", {"source": "prom", "query": QUERY, "since": "20s"})])
    return Reply(content=f"busiest: {results[0]['data']['series'][0]['max']}")


@pytest.fixture
def metrics_stack(
    redis_server: RedisServer, model_server: Callable[..., ModelServer], sample: Settings, node_prometheus: Running
) -> Iterator[Callable[[Any], Stack]]:
    """The Slack app in process on the sample policy plus the real Prometheus, and a scripted model."""
    stacks = Stacks()
    policy = sample.policy.model_copy(update={"metrics": metrics_policy(node_prometheus.url).metrics})

    def make(model: Any) -> Stack:
        redis_server.flush()
        slack = SlackApi()
        server = model_server(model)
        return stacks.start(slack, stack_settings(slack, redis_server.url, policy, server), server)

    yield make
    stacks.close()


@needs_node_exporter
def test_a_run_that_queried_a_range_replies_with_its_chart(node_prometheus: Running, make_agent, model_server) -> None:
    agent = make_agent(model_server(queries_a_range_then_answers), tools=ops_tools(metrics_policy(node_prometheus.url)))
    reply = agent.run("is the node busy?", thread="t-chart")
    assert reply.text.startswith("busiest: ")
    [chart] = reply.charts
    assert chart.query == QUERY and chart.series and len(chart.series[0].points) > 1
    assert LABEL_TOKEN not in chart.model_dump_json()  # labels come redacted, as the model read them
    assert f"Line chart of {QUERY} from " in chart.alt_text


@needs_node_exporter
def test_a_mention_answered_from_a_range_gets_its_chart_in_the_thread_once(metrics_stack) -> None:
    stack = metrics_stack(queries_a_range_then_answers)
    # The response to the upload's last call is lost: the file was shared all the same, and is
    # found by its name rather than shared again.
    stack.slack.late("files.completeUploadExternal", respond_after_s=CLIENT_TIMEOUT_S + 0.5)
    mention = payloads.app_mention("<@UBOT> is the node busy?")
    stack.event(mention)
    assert stack.slack.wait_for(lambda: len(stack.answers("C1", mention["ts"])) == 1, 30)
    assert stack.idle()
    [answer] = stack.answers("C1", mention["ts"])
    assert "busiest: " in json.dumps(answer)
    [file] = stack.slack.files("C1")
    assert file["thread_ts"] == mention["ts"]
    assert file["name"].startswith("opsbot-chart-") and file["name"].endswith("-1.png")
    assert file["title"].startswith(f"{QUERY}  ·  ") and file["title"].endswith(" UTC")
    assert file["alt_txt"].startswith(f"Line chart of {QUERY} from ")
    assert png_size(file["content"]) == (1000, 500)
    # Shared before the answer is completed with the marker that says the job is answered (here
    # the stream's stop): a job taken over after a crash finds it by name, or shares it then.
    methods = [call.method for call in stack.slack.calls()]
    assert methods.index("files.completeUploadExternal") < methods.index("chat.stopStream")


@needs_node_exporter
def test_the_metrics_command_shares_its_chart_in_the_thread_or_for_ops_in_the_askers_dm(metrics_stack) -> None:
    stack = metrics_stack(lambda body: Reply(content="no model needed"))
    mention = payloads.app_mention(f"<@UBOT> metrics prom {QUERY} since=20s")
    stack.event(mention)
    assert stack.slack.wait_for(lambda: len(stack.answers("C1", mention["ts"])) == 1, 30)
    [file] = stack.slack.files("C1")
    assert file["thread_ts"] == mention["ts"] and file["title"].startswith(QUERY)
    assert png_size(file["content"]) == (1000, 500)
    assert stack.model is not None and stack.model.requests == []

    # /ops answers privately, and a private reply carries no file: the chart goes to the asker's DM.
    stack.command(f"metrics prom {QUERY} since=20s", key="ops")
    assert stack.slack.wait_for(lambda: stack.slack.responses("ops"), 30)
    assert stack.idle()
    [answer] = stack.slack.responses("ops")
    assert "series over the range" in json.dumps(answer) and "in your direct messages with opsbot" in json.dumps(answer)
    [dm_file] = stack.slack.files("DU1")  # the asker, U1
    assert dm_file["title"].startswith(QUERY) and png_size(dm_file["content"]) == (1000, 500)

    # An app installed before it asked for im:write: the reply says how to get the chart instead.
    stack.slack.no_im_write = True
    stack.command(f"metrics prom {QUERY} since=20s", key="no-dm")
    assert stack.slack.wait_for(lambda: stack.slack.responses("no-dm"), 30)
    assert stack.idle()
    [answer] = stack.slack.responses("no-dm")
    assert "cannot carry a chart" in json.dumps(answer) and "@opsbot metrics" in json.dumps(answer)
    assert len(stack.slack.files()) == 2


@needs_node_exporter
def test_opsbot_ask_prints_sparklines_after_the_answer_and_stdout_stays_the_answer(
    node_prometheus: Running, model_server, tmp_path: Path
) -> None:
    config = tmp_path / "opsbot.yaml"
    config.write_text(f"model: test-model\npolicy:\n  metrics:\n    prom:\n      url: {node_prometheus.url}\n")
    server = model_server(queries_a_range_then_answers)
    done = subprocess.run(
        [sys.executable, "-m", "opsbot.bot", "--config", str(config), "ask", "is the node busy?"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env=clean_env(OPENAI_BASE_URL=server.base_url),
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("busiest: ") and len(done.stdout.splitlines()) == 1
    lines = done.stderr.splitlines()
    title = next(i for i, line in enumerate(lines) if line.startswith(f"{QUERY}  ·  "))
    # A line per series, 10 at most (8 modes of each CPU: the rest are counted).
    series = [line for line in lines[title + 1 :] if not line.startswith("  … ")]
    rest = lines[title + 1 + len(series) :]
    assert len(rest) <= 1 and all(line.startswith("  … ") and line.endswith(" more series") for line in rest)
    assert 1 <= len(series) <= 10 and all(
        any(bar in line for bar in "▁▂▃▄▅▆▇█") and " last " in line for line in series
    )


@needs_node_exporter
def test_a_chat_shows_the_metrics_commands_range_as_sparklines_after_its_output(
    node_prometheus: Running, make_agent, model_server, capsys: pytest.CaptureFixture[str]
) -> None:
    policy = metrics_policy(node_prometheus.url)
    agent = make_agent(model_server(lambda body: Reply(content="unused")), tools=ops_tools(policy))
    session = ChatSession(agent, policy, thread="t-chat", prompter=LinePrompter(), live=False)
    session.answer(f"metrics prom {QUERY} since=20s")
    lines = capsys.readouterr().out.splitlines()
    [title_at] = [i for i, line in enumerate(lines) if line.startswith(f"{QUERY}  ·  ")]
    assert "series over the range" in "\n".join(lines[:title_at])  # the command's output, then its chart
    assert any(bar in lines[title_at + 1] for bar in "▁▂▃▄▅▆▇█") and " last " in lines[title_at + 1]


def test_chart_models_cross_the_boundary_as_data() -> None:
    """A reply's charts are plain data (`opsbot ask --json` prints them; a program can draw them)."""
    chart = Chart(query="up", start="a", end="b", series=[ChartSeries(label="x", points=[(1.0, 2.0)])])
    assert Chart.model_validate_json(chart.model_dump_json()) == chart


# ---------------------------------------------------------------- an alert's thread

ALERT_EXPR = "rate(node_cpu_seconds_total[5s]) > 0"


def alert_notification(generator_url: str, fingerprints: list[str], **labels: str) -> list[Alert]:
    """One Alertmanager notification of a group, parsed as the webhook parses it."""
    group = {"alertname": "NodeBusy", **labels}
    body = {
        "version": "4",
        "groupKey": '{}:{alertname="NodeBusy"}',
        "status": "firing",
        "receiver": "opsbot",
        "groupLabels": {"alertname": "NodeBusy"},
        "alerts": [
            {
                "status": "firing",
                "labels": {**group, "cpu": fingerprint},
                "annotations": {"summary": "the node is busy"},
                "startsAt": "2026-12-02T09:21:37.804Z",
                "generatorURL": generator_url,
                "fingerprint": fingerprint,
            }
            for fingerprint in fingerprints
        ],
    }
    return parse_alertmanager(json.dumps(body).encode())


def graph_url(base: str, expr: str) -> str:
    return f"{base}/graph?{urlencode({'g0.expr': expr, 'g0.tab': '1'})}"


def test_an_alert_names_its_source_by_its_generator_url_or_a_label() -> None:
    sources = {
        "main": MetricsSource(url="http://prometheus.example.com:9090"),
        "edge": MetricsSource(url="https://edge.example.com/prom"),
    }

    def named(url: str, **labels: str) -> AlertExpression | None:
        [alert] = alert_notification(url, ["a"], **labels)
        return alert_expression(alert, sources)

    assert named(graph_url("http://PROMETHEUS.example.com:9090", "up == 0")) == AlertExpression("main", "up == 0")
    assert named(graph_url("https://edge.example.com:443", "x > 1")) == AlertExpression("edge", "x > 1")
    assert named(graph_url("http://other.example.com:9090", "up == 0")) is None  # no source of ours
    assert named(graph_url("http://prometheus.example.com:9091", "up == 0")) is None  # another port
    assert named(graph_url("http://other:9090", "up == 0"), opsbot_metrics_source="edge") == ("edge", "up == 0")
    assert named(graph_url("http://other:9090", "up == 0"), opsbot_metrics_source="nope") is None
    assert named("http://prometheus.example.com:9090/graph") is None  # no expression
    assert named("http://prometheus.example.com:notaport/graph?g0.expr=up") is None


@pytest.fixture
def alert_stack(redis_server: RedisServer, sample: Settings, node_prometheus: Running) -> Iterator[Stack]:
    """The Slack app (no model) with alerts into CALERTS, on the sample policy plus the real Prometheus."""
    stacks = Stacks()
    redis_server.flush()
    policy = sample.policy.model_copy(update={"metrics": metrics_policy(node_prometheus.url).metrics})
    slack = SlackApi()
    alerts = AlertSettings(channel="CALERTS", first_look=False)
    yield stacks.start(slack, stack_settings(slack, redis_server.url, policy, None, alerts=alerts), None)
    stacks.close()


@needs_node_exporter
def test_an_alert_naming_its_source_gets_a_chart_of_its_expression_over_the_last_hour_once(
    alert_stack: Stack, node_prometheus: Running
) -> None:
    stack = alert_stack
    alerts = alert_notification(graph_url(node_prometheus.url, ALERT_EXPR), ["cpu0", "cpu1"])
    strangers = alert_notification(graph_url("http://elsewhere.example.com:9090", "up"), ["x"], alertname="Other")
    for alert in [*alerts, *strangers, *alerts]:  # a group of two, one of another source, the group re-sent
        stack.built.alerts.queue.take([f"test:{time.monotonic_ns()}"], alert)
    assert stack.slack.wait_for(lambda: len(stack.slack.files("CALERTS")) == 1, 30)
    assert stack.idle(30)
    [file] = stack.slack.files("CALERTS")
    [root] = [m for m in stack.slack.messages("CALERTS") if m["ts"] == file["thread_ts"]]
    assert "NodeBusy" in json.dumps(root)
    assert file["title"].startswith(f"{ALERT_EXPR}  ·  ")
    assert file["alt_txt"].startswith(f"Line chart of {ALERT_EXPR} from ")
    start, end = file["alt_txt"].split(" from ")[1].split(" (step")[0].split(" to ")
    span = datetime.fromisoformat(end) - datetime.fromisoformat(start)
    assert span == timedelta(hours=1)
    assert png_size(file["content"]) == (1000, 500)
