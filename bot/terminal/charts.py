"""Charts in a terminal: a run's or a direct command's metrics ranges as sparklines, a line per
series (bot/charts sparkline.py), printed after the answer and dimmed like the steps."""

from __future__ import annotations

from rich.console import Console

from ..charts import Chart, sparklines
from .screen import say


def show_charts(out: Console, charts: list[Chart]) -> None:
    for chart in charts:
        title, *lines = sparklines(chart)
        say(out, title, "bold")
        for line in lines:
            say(out, line, "bright_black")
