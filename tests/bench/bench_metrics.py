"""What query_metrics saves the model (`python tests/bench/bench_metrics.py`): the tokens of its
summary against the raw JSON of the same range query, for 24 hours of 20 series.

A script, not a test. It writes 24 hours of a counter with 20 series (`http_requests_total` of
api-00 ... api-19, scraped every 15 s, each with its own daily curve, and one instance with a
spike of errors in the last hour) as OpenMetrics, imports it into a new TSDB with Debian's
`promtool tsdb create-blocks-from openmetrics`, and starts Debian's `prometheus` on it. Then
`rate(http_requests_total[5m])` over the last 24 h, with the default step (the range divided into
the source's `max_points`, 300), is asked twice: straight from Prometheus' HTTP API (what a tool
passing the response through would give the model) and through opsbot's executor (what
query_metrics gives it: the rendered, redacted result). Tokens are opsbot's own estimate
(bot/agent/tokens.py: 4 characters a token, no tokenizer download), the same for both sides.
Then the chart Slack gets of that result is drawn (bot/charts: matplotlib, Agg): the first draw
in the process (matplotlib's import included) and the median of DRAWS more, in milliseconds.
"""

from __future__ import annotations

import json
import math
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from opsbot.bot.agent.tokens import estimate_tokens  # noqa: E402
from opsbot.bot.charts import chart_of, draw_png  # noqa: E402
from opsbot.config.policy import MetricsSource, Policy  # noqa: E402
from opsbot.tools.base import Registry  # noqa: E402
from opsbot.tools.catalog import ops_tools  # noqa: E402
from opsbot.tools.executor import Executor, RetryPolicy, ToolCall  # noqa: E402
from tests.fakes.prometheus_server import prometheus  # noqa: E402

SERIES = 20
HOURS = 24
SCRAPE_S = 15
DRAWS = 5
QUERY = "rate(http_requests_total[5m])"


def openmetrics(end: float) -> str:
    """24 h of a counter per instance: a daily curve, a spike on api-07 in the last hour."""
    lines = ["# TYPE http_requests counter", "# HELP http_requests Requests served."]
    start = end - HOURS * 3600
    for i in range(SERIES):
        total = 0.0
        labels = f'job="api",instance="api-{i:02}:8080",method="GET",code="200"'
        t = start
        while t <= end:
            rate = 50 + 10 * i + 30 * math.sin((t - start) / 86400 * 2 * math.pi + i)
            if i == 7 and t > end - 3600:
                rate *= 4
            total += rate * SCRAPE_S
            lines.append(f"http_requests_total{{{labels}}} {total:.1f} {t:.0f}")
            t += SCRAPE_S
    return "\n".join(lines) + "\n# EOF\n"


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        # Whole minutes, ending two hours back: promtool writes 2 h blocks, the head stays empty.
        end = math.floor(time.time() / 60) * 60 - 2 * 3600
        (tmp / "data.om").write_text(openmetrics(end))
        subprocess.run(
            ["promtool", "tsdb", "create-blocks-from", "openmetrics", str(tmp / "data.om"), str(tmp / "data")],
            check=True,
            capture_output=True,
        )
        with prometheus(tmp) as running:
            source = MetricsSource(url=running.url)
            step = math.ceil(HOURS * 3600 / source.max_points)
            params = {"query": QUERY, "start": end - HOURS * 3600, "end": end, "step": step}
            raw = httpx.get(f"{running.url}/api/v1/query_range", params=params, timeout=60).text
            executor = Executor(Registry(ops_tools(Policy(metrics={"prom": source}))), RetryPolicy(timeout_s=60))
            arguments = {
                "source": "prom",
                "query": QUERY,
                "since": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(end - HOURS * 3600)),
                "until": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(end)),
            }
            result = executor.run_one(ToolCall("bench", "query_metrics", json.dumps(arguments)), None).result
    assert result.ok, result.error
    summary = result.render()
    series = json.loads(raw)["data"]["result"]
    points = sum(len(s["values"]) for s in series)
    print(f"query_metrics: {QUERY} over {HOURS} h, step {step} s: {len(series)} series, {points:,} points")
    print(f"{'':<28}{'characters':>12}{'tokens (est.)':>15}")
    for name, text in (("raw JSON (Prometheus' API)", raw), ("query_metrics' summary", summary)):
        print(f"{name:<28}{len(text):>12,}{estimate_tokens(text):>15,}")
    print(f"the summary is {estimate_tokens(summary) / estimate_tokens(raw):.1%} of the raw JSON's tokens")
    chart = chart_of("query_metrics", result)
    assert chart is not None
    started = time.perf_counter()
    png = draw_png(chart)
    first = (time.perf_counter() - started) * 1000
    times = []
    for _ in range(DRAWS):
        started = time.perf_counter()
        draw_png(chart)
        times.append((time.perf_counter() - started) * 1000)
    print(
        f"chart of {len(chart.series)} series: first draw {first:.0f} ms (matplotlib's import included), "
        f"then median {statistics.median(times):.0f} ms of {DRAWS}; PNG {len(png):,} bytes"
    )
    if "-v" in sys.argv:
        print(summary)


if __name__ == "__main__":
    main()
