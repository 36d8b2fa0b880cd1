"""A chart in a terminal: one line per series, its shape in Unicode blocks (▁▂▃▄▅▆▇█) with its
min, max and last value, so a glance says which series spiked and where it is now."""

from __future__ import annotations

from .model import Chart

BARS = "▁▂▃▄▅▆▇█"
# Columns of a sparkline: points beyond it are taken together (their highest: a spike stays seen).
WIDTH = 40
# Series drawn one by one; the rest are counted.
SHOWN = 10


def sparkline(values: list[float], width: int = WIDTH) -> str:
    """`values` as at most `width` blocks, scaled between their own min and max (flat: all low)."""
    if not values:
        return ""
    count = min(width, len(values))
    columns = [max(values[i * len(values) // count : (i + 1) * len(values) // count]) for i in range(count)]
    low, high = min(columns), max(columns)
    if high == low:
        return BARS[0] * len(columns)
    top = len(BARS) - 1
    return "".join(BARS[round((v - low) / (high - low) * top)] for v in columns)


def sparklines(chart: Chart, width: int = WIDTH) -> list[str]:
    """The chart's title, then a line per series: label, sparkline, min, max, last."""
    label_width = min(max((len(s.label) for s in chart.series[:SHOWN]), default=0), 40)
    lines = [chart.title]
    for series in chart.series[:SHOWN]:
        values = [v for _, v in series.points]
        label = series.label[:label_width].ljust(label_width)
        numbers = f"min {min(values):.4g}  max {max(values):.4g}  last {values[-1]:.4g}"
        lines.append(f"  {label}  {sparkline(values, width)}  {numbers}".rstrip())
    if len(chart.series) > SHOWN:
        lines.append(f"  … {len(chart.series) - SHOWN} more series")
    return lines
