"""What the model reads of a query's series: a few numbers and times per series instead of its
points, and totals over every series when only the first `max_series` are shown.

Per series of a range: its labels, min/avg/max/last, the change from first to last, when it was
highest, and when it crossed the middle of its own range (the moments it went from low to high or
back: a spike, a drop, a step). Numbers keep four significant digits; times are ISO-8601 UTC.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any, NamedTuple

# Crossings of the middle of the range listed per series; more are counted.
CROSSINGS_SHOWN = 3
# A series whose spread is below this share of its size is flat: its crossings are noise.
FLAT_SHARE = 0.05


class Series(NamedTuple):
    """One series as Prometheus gave it: its labels and its finite points (time, value)."""

    labels: dict[str, str]
    points: list[tuple[float, float]]


def parse_series(result: list[dict[str, Any]]) -> list[Series]:
    """A matrix (`values`) or vector (`value`) result as Series; NaN and ±Inf points left out."""
    series = []
    for item in result:
        raw = item.get("values") or ([item["value"]] if "value" in item else [])
        points = [(float(t), float(v)) for t, v in raw if math.isfinite(float(v))]
        series.append(Series(labels=dict(item.get("metric", {})), points=points))
    return series


def when(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def num(value: float) -> float | int:
    """`value` to four significant digits, an integer when it is one (fewer tokens, same meaning)."""
    rounded = float(f"{value:.4g}")
    return int(rounded) if rounded.is_integer() and abs(rounded) < 1e15 else rounded


def range_summary(series: Series) -> dict[str, Any]:
    values = [v for _, v in series.points]
    if not values:
        return {"labels": series.labels, "points": 0}
    low, high = min(values), max(values)
    first, last = series.points[0], series.points[-1]
    summary: dict[str, Any] = {
        "labels": series.labels,
        "min": num(low),
        "avg": num(sum(values) / len(values)),
        "max": num(high),
        "last": num(last[1]),
        "change": num(last[1] - first[1]),
        "max_at": when(next(t for t, v in series.points if v == high)),
        "points": len(values),
    }
    crossings = _crossings(series.points, low, high)
    if crossings:
        summary["crossed_middle"] = crossings[:CROSSINGS_SHOWN]
        if len(crossings) > CROSSINGS_SHOWN:
            summary["crossings_more"] = len(crossings) - CROSSINGS_SHOWN
    return summary


def instant_summary(series: Series) -> dict[str, Any]:
    if not series.points:
        return {"labels": series.labels}
    t, v = series.points[-1]
    return {"labels": series.labels, "value": num(v), "at": when(t)}


def _crossings(points: list[tuple[float, float]], low: float, high: float) -> list[str]:
    """Each crossing of the middle of the range: "rose above 12.5 at <time>" or "fell below ..."."""
    if high - low <= FLAT_SHARE * max(abs(high), abs(low)):
        return []
    middle = (low + high) / 2
    above = points[0][1] > middle
    found = []
    for t, v in points[1:]:
        if (v > middle) != above:
            above = not above
            found.append(f"{'rose above' if above else 'fell below'} {num(middle)} at {when(t)}")
    return found


def peak(summary: dict[str, Any]) -> float:
    """What a cut keeps first: the series that reached highest (or is highest now)."""
    value = summary.get("max", summary.get("value"))
    return float(value) if value is not None else -math.inf


def totals(summaries: list[dict[str, Any]]) -> dict[str, Any]:
    """Over every series, shown or cut: how many, the lowest and highest value, the sum of the last."""
    lasts = [s.get("last", s.get("value")) for s in summaries]
    lows = [s.get("min", s.get("value")) for s in summaries]
    highs = [s.get("max", s.get("value")) for s in summaries]
    known = [float(v) for v in lasts if v is not None]
    return {
        "series": len(summaries),
        "min": num(min(float(v) for v in lows if v is not None)) if known else None,
        "max": num(max(float(v) for v in highs if v is not None)) if known else None,
        "sum_of_last": num(sum(known)) if known else None,
    }
