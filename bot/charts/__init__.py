"""Charts of metrics ranges, for people: what a chart shows (model.py: Chart, built from a
query_metrics range result by `chart_of`; a run's by `charts_of`), drawn as a PNG for Slack
(png.py: matplotlib, imported only when a chart is drawn) or as sparklines for a terminal
(sparkline.py).

tools/metrics knows nothing of drawing: it keeps a range's points beside its result
(`ToolResult.kept`). The loop puts a run's charts on its `Reply`; front ends draw them."""

from .model import MAX_CHARTS, Chart, ChartSeries, chart_of, charts_of
from .png import draw_png
from .sparkline import sparkline, sparklines

__all__ = ["MAX_CHARTS", "Chart", "ChartSeries", "chart_of", "charts_of", "draw_png", "sparkline", "sparklines"]
