"""query_metrics' and find_metrics' results for people (a direct command's answer): one line per
series with its numbers, the labels every series shares said once, a cut and its totals said."""

from __future__ import annotations

from typing import Any

# A range series' numbers, in the order a person reads them.
_RANGE_NUMBERS = ("min", "avg", "max", "last", "change")


def show_query(data: dict[str, Any]) -> str:
    lines = [_heading(data)]
    if data.get("common_labels"):
        lines.append(f"all series: {labels_text(data['common_labels'])}")
    for series in data.get("series", []):
        lines.append(f"  {labels_text(series['labels']) or '(no labels)'}  {_numbers(series)}")
    if "totals" in data:
        totals = data["totals"]
        lines.append(
            f"over all {totals['series']} series: min {totals['min']}, max {totals['max']}, "
            f"sum of last {totals['sum_of_last']}"
        )
    for name, labels in data.get("existing_labels", {}).items():
        lines.append(f"  {name}: " + "; ".join(f"{label} = {', '.join(values)}" for label, values in labels.items()))
    if "value" in data and "series" not in data:  # a scalar or string result: the summary says it
        return lines[0]
    return "\n".join(lines)


def show_found(data: dict[str, Any]) -> str:
    lines = [str(data["summary"])]
    for metric in data["metrics"]:
        kind = f"({metric['type']})" if metric.get("type") else ""
        about = f"{kind} {metric.get('help') or ''}".strip()
        lines.append(f"  {metric['name']}" + (f"  {about}" if about else ""))
        for label, values in metric.get("labels", {}).items():
            lines.append(f"      {label}: {', '.join(values)}")
    return "\n".join(lines)


def labels_text(labels: dict[str, str]) -> str:
    """Labels as PromQL writes a selector's matchers: `job="api", code="502"`."""
    return ", ".join(f'{name}="{value}"' for name, value in labels.items())


def _heading(data: dict[str, Any]) -> str:
    if data.get("kind") == "range":
        return f"{data['summary']}, {data['start']} to {data['end']}, step {data['step']}"
    return str(data["summary"])


def _numbers(series: dict[str, Any]) -> str:
    if "value" in series:
        return f"{series['value']} at {series['at']}"
    if "min" not in series:
        return "no value"
    shown = ", ".join(f"{name} {series[name]}" for name in _RANGE_NUMBERS)
    return f"{shown} (highest at {series['max_at']})"
