"""query_metrics and find_metrics: the tools, access, times and step, and the result the model
sees (summary.py's numbers per series, a cut said, an empty result saying what exists)."""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from datetime import UTC
from typing import Any, NamedTuple

from ...config.policy import MetricsSource, Policy, Principal
from ..base import ErrorType, Tool, ToolResult
from ..http import described, wait_s
from ..logs import duration_seconds, time_arg
from .args import FindMetricsArgs, QueryMetricsArgs
from .client import Client
from .discovery import FIND_REQUESTS, LABELLED, QUERY_REQUESTS, find, labels_of, missing_metric, named_metrics
from .show import show_found, show_query
from .summary import Series, instant_summary, parse_series, peak, range_summary, totals, when

TIME_HINT = (
    "give a relative age such as 15m, 2h, 1d, or an ISO-8601 time such as 2026-11-29T03:00:00Z (UTC without an offset)"
)


class Window(NamedTuple):
    """A range query's start, end and step, in seconds."""

    start: float
    end: float
    step: float


def query_metrics_tool(policy: Policy, environ: Mapping[str, str] | None = None) -> Tool[QueryMetricsArgs]:
    """query_metrics on `policy.metrics`; `environ` holds the headers' variables (tests only)."""

    def run(args: QueryMetricsArgs, principal: Principal | None) -> ToolResult:
        client = _client(policy, args.source, principal, environ)
        return client if isinstance(client, ToolResult) else query_metrics(client, args, time.time())

    return Tool(
        name="query_metrics",
        description=(
            "PromQL against a Prometheus-compatible source. Without since: an instant query (each series' value "
            "now, or at until). With since (15m, 2h, 1d or ISO-8601): a range query, each series summarised "
            "(min/avg/max/last, change, when it peaked and crossed the middle of its range). Use find_metrics "
            f"first for names you are not sure of. Sources: {described(policy.metrics)}."
        ),
        args_model=QueryMetricsArgs,
        run=run,
        timeout_s=wait_s(policy.metrics, QUERY_REQUESTS),
        summarize=lambda data: str(data["summary"]),
        show=show_query,
    )


def find_metrics_tool(policy: Policy, environ: Mapping[str, str] | None = None) -> Tool[FindMetricsArgs]:
    def run(args: FindMetricsArgs, principal: Principal | None) -> ToolResult:
        client = _client(policy, args.source, principal, environ)
        return client if isinstance(client, ToolResult) else find(client, args.words, args.limit)

    return Tool(
        name="find_metrics",
        description=(
            "Metric names of a metrics source that contain the given words, with their type, help text, labels "
            f"and a few label values. Sources: {described(policy.metrics)}."
        ),
        args_model=FindMetricsArgs,
        run=run,
        timeout_s=wait_s(policy.metrics, FIND_REQUESTS),
        summarize=lambda data: str(data["summary"]),
        show=show_found,
    )


def _client(
    policy: Policy, name: str, principal: Principal | None, environ: Mapping[str, str] | None
) -> Client | ToolResult:
    source = policy.metrics.get(name)
    if source is None:
        return ToolResult.unknown("metrics source", name, policy.metrics)
    if not source.access.allows(principal):
        return ToolResult.failure(
            ErrorType.denied,
            f"you may not query metrics source {name}",
            hint="tell the user who may query it; do not try other ways to get these metrics",
        )
    return Client(name, source, environ)


def query_metrics(client: Client, args: QueryMetricsArgs, now: float) -> ToolResult:
    until = time_arg("until", args.until, UTC, now)
    since = time_arg("since", args.since, UTC, now)
    for given in (until, since):
        if isinstance(given, ToolResult) and given.error is not None:
            # query_logs' hint speaks of a service's time zone; a metrics source has none but UTC.
            return ToolResult.failure(ErrorType.invalid_args, given.error.message, hint=TIME_HINT)
    end = now if until is None else until
    if since is None:
        data = client.get("query", [("query", args.query), ("time", f"{end:.3f}"), _timeout_param(client.source)])
        return data if isinstance(data, ToolResult) else _instant(client, args, data)
    assert isinstance(since, float) and isinstance(end, float)
    window = _window(client.source, since, end, args.step)
    if isinstance(window, ToolResult):
        return window
    data = client.get(
        "query_range",
        [
            ("query", args.query),
            ("start", f"{window.start:.3f}"),
            ("end", f"{window.end:.3f}"),
            ("step", f"{window.step:.3f}"),
            _timeout_param(client.source),
        ],
    )
    return data if isinstance(data, ToolResult) else _range(client, args, window, data)


class _Param(NamedTuple):
    name: str
    value: str


def _timeout_param(source: MetricsSource) -> _Param:
    return _Param("timeout", f"{source.timeout_s:g}s")


def _window(source: MetricsSource, start: float, end: float, step: str | None) -> Window | ToolResult:
    if end <= start:
        return ToolResult.failure(ErrorType.invalid_args, "since must be before until")
    fitting = max(1.0, math.ceil((end - start) / source.max_points))
    if step is None:
        return Window(start, end, fitting)
    seconds = duration_seconds(step)
    if seconds is None or seconds <= 0:
        return ToolResult.failure(ErrorType.invalid_args, f"step {step!r} is not a duration", hint="give 15s, 1m, 5m")
    if (end - start) / seconds > source.max_points:
        return ToolResult.failure(
            ErrorType.invalid_args,
            f"step {step} gives more than {source.max_points} points over this range",
            hint=f"use a step of at least {fitting:g}s, or leave step out",
        )
    return Window(start, end, seconds)


def _instant(client: Client, args: QueryMetricsArgs, data: dict[str, Any]) -> ToolResult:
    kind = data.get("resultType")
    if kind in ("scalar", "string"):
        t, value = data["result"]
        return ToolResult.success({"summary": f"{kind} {value} at {when(float(t))}", "value": value})
    summaries = [instant_summary(s) for s in parse_series(data["result"])]
    return _result(client, args, summaries, [], {"kind": "instant"})


def _range(client: Client, args: QueryMetricsArgs, window: Window, data: dict[str, Any]) -> ToolResult:
    series = parse_series(data["result"])
    summaries = [range_summary(s) for s in series]
    shown = {
        "kind": "range",
        # Said back so that the result names what it shows on its own: a chart of a direct
        # command's result is titled with it (the executor redacts it with the rest).
        "query": args.query,
        "start": when(window.start),
        "end": when(window.end),
        "step": f"{window.step:g}s",
    }
    return _result(client, args, summaries, series, shown)


def _result(
    client: Client, args: QueryMetricsArgs, summaries: list[dict[str, Any]], series: list[Series], head: dict[str, Any]
) -> ToolResult:
    if not summaries:
        return _empty(client, args, head)
    order = sorted(range(len(summaries)), key=lambda i: peak(summaries[i]), reverse=True)
    keep = order[: client.source.max_series]
    data: dict[str, Any] = {**head, "summary": _said(len(summaries), len(keep), head["kind"])}
    if len(keep) < len(summaries):
        data["totals"] = totals(summaries)
    shown = [summaries[i] for i in keep]
    common = _common_labels(shown)
    if common:
        data["common_labels"] = common
        shown = [{**s, "labels": {k: v for k, v in s["labels"].items() if k not in common}} for s in shown]
    data["series"] = shown
    # The points of the shown series, in the same order, for a chart; never rendered to the model.
    kept = [series[i].points for i in keep] if series else None
    return ToolResult(ok=True, data=data, kept=kept)


def _common_labels(shown: list[dict[str, Any]]) -> dict[str, str]:
    """Labels every shown series has with the same value (job, instance...), said once, not per series."""
    if len(shown) < 2:
        return {}
    first, *rest = (s["labels"] for s in shown)
    return {k: v for k, v in first.items() if all(other.get(k) == v for other in rest)}


def _said(total: int, shown: int, kind: str) -> str:
    what = f"{total} series" + (" over the range" if kind == "range" else "")
    if shown < total:
        return (
            f"{what}; showing the {shown} that reached highest, totals over all {total}; narrow with label "
            "matchers or aggregate (sum by (...)) to see the rest"
        )
    return what


def _empty(client: Client, args: QueryMetricsArgs, head: dict[str, Any]) -> ToolResult:
    """No series: a metric that does not exist is `not_found`; otherwise say what its series look like."""
    missing = missing_metric(client, args.query)
    if missing is not None:
        return missing
    exists: dict[str, Any] = {}
    for name in named_metrics(args.query)[:LABELLED]:
        labels = labels_of(client, name)
        if not isinstance(labels, ToolResult):
            exists[name] = labels
    data: dict[str, Any] = {**head, "summary": "0 series: nothing matched", "series": []}
    if exists:
        data["summary"] += "; the metrics it names exist, with these labels and values (check the matchers and range)"
        data["existing_labels"] = exists
    return ToolResult.success(data)
