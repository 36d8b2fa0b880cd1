"""What a chart shows, decided once from a query_metrics range result: its title, its series
(each labelled by its redacted labels) and the alt text that says in words what it shows.

Built from the result as the executor handed it on: the query, labels and times in
`data` are redacted and inert already; the points come from `ToolResult.kept` (numbers only).
A label is made one line and short here, because a legend is no place for a line break or a
paragraph; it stays text (png.py draws it with math parsing off)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ...tools.base import ToolResult
from ...tools.inert import inert

# Charts one answer carries at most: a thread is for reading, a few pictures help, a wall does not.
MAX_CHARTS = 3
# Characters of a legend label, a query in a title, and a chart's alt text (Slack takes 1,000).
LABEL_CHARS = 60
QUERY_CHARS = 100
ALT_CHARS = 1000
# Series named one by one in the alt text; the rest are counted.
ALT_SERIES = 3

CHARTED_TOOL = "query_metrics"


class ChartSeries(BaseModel):
    model_config = ConfigDict(frozen=True)

    label: str = Field(description="the series' own labels, redacted, one line")
    points: list[tuple[float, float]] = Field(description="(unix time, value), in time order")


class Chart(BaseModel):
    """A line chart of one range query: what every front end draws (a PNG, sparklines)."""

    model_config = ConfigDict(frozen=True)

    query: str = Field(description="the PromQL, redacted, one line, cut to QUERY_CHARS")
    start: str = Field(description="the range's start, ISO-8601 UTC")
    end: str = Field(description="the range's end, ISO-8601 UTC")
    step: str = ""
    common: str = Field(default="", description="labels every series shares, said once")
    series: list[ChartSeries]

    @property
    def title(self) -> str:
        return f"{self.query}  ·  {_short(self.start)} – {_short(self.end)} UTC"

    @property
    def alt_text(self) -> str:
        """What the picture shows, for whoever cannot see it: the query, the range, each of the
        highest series with its peak and last value, the rest counted."""
        ranked = sorted(self.series, key=lambda s: max(v for _, v in s.points), reverse=True)
        named = [
            f"{s.label or 'the series'} peaked at {_num(max(v for _, v in s.points))}, last {_num(s.points[-1][1])}"
            for s in ranked[:ALT_SERIES]
        ]
        more = len(ranked) - len(named)
        said = (
            f"Line chart of {self.query} from {self.start} to {self.end}"
            + (f" (step {self.step})" if self.step else "")
            + f": {len(self.series)} series"
            + (f" of {self.common}" if self.common else "")
            + "; "
            + "; ".join(named)
            + (f"; {more} more series lower" if more else "")
            + "."
        )
        return said if len(said) <= ALT_CHARS else said[: ALT_CHARS - 1] + "…"


def chart_of(tool: str | None, result: ToolResult | None) -> Chart | None:
    """The chart of a query_metrics range result (a run's call, a direct command's output); None
    for anything else (another tool, an instant query, an error, no series, a result whose data was
    cut or whose points are missing)."""
    if result is None or tool != CHARTED_TOOL:
        return None
    data, kept = result.data, result.kept
    if not result.ok or not isinstance(data, dict) or data.get("kind") != "range":
        return None
    shown = data.get("series")
    if not isinstance(shown, list) or not isinstance(kept, list) or len(kept) != len(shown) or not shown:
        return None
    series = [
        ChartSeries(label=label_text(s.get("labels") if isinstance(s, dict) else None), points=list(points))
        for s, points in zip(shown, kept, strict=True)
        if points
    ]
    if not series:
        return None
    return Chart(
        query=one_line(str(data.get("query", "")), QUERY_CHARS),
        start=str(data.get("start", "")),
        end=str(data.get("end", "")),
        step=str(data.get("step", "")),
        common=label_text(data.get("common_labels")),
        series=series,
    )


def charts_of(calls: Iterable[tuple[str, ToolResult]]) -> list[Chart]:
    """The charts of a run's calls (tool name, result), the last MAX_CHARTS distinct ones in the
    order they were made: a model's later queries are the ones it narrowed down to."""
    charts: list[Chart] = []
    for tool, result in calls:
        chart = chart_of(tool, result)
        if chart is not None and chart not in charts:
            charts.append(chart)
    return charts[-MAX_CHARTS:]


def label_text(labels: Any) -> str:
    """`{a="1", b="2"}` as `a=1, b=2`, one line, at most LABEL_CHARS."""
    if not isinstance(labels, dict):
        return ""
    return one_line(", ".join(f"{k}={v}" for k, v in labels.items()), LABEL_CHARS)


def one_line(text: str, limit: int) -> str:
    """`text` inert (a CR is `\\x0d`), its line breaks and tabs spelled out too (a label is one
    line), cut to `limit`."""
    flat = inert(text).replace("\n", "\\n").replace("\t", "\\t")
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _short(moment: str) -> str:
    """`2026-12-02T18:00:00Z` as `2026-12-02 18:00`: a title has little room."""
    return moment.replace("T", " ")[:16] if "T" in moment else moment


def _num(value: float) -> str:
    return f"{value:.4g}"
