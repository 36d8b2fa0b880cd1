"""A chart as a PNG, for Slack: matplotlib's Agg canvas, imported inside `draw_png` only, so that a
direct command, `opsbot ask` and the Slack app start without it (about half a second and a font
cache) and only a drawn chart pays for it.

Labels and the title come from outside (label values, a query): every text is drawn with math
parsing and TeX off, so a `$` is a dollar sign, never mathtext; explicit legend labels, so one
starting with `_` is shown rather than hidden. Figures are made without pyplot (no global figure
list); a lock keeps matplotlib's shared state (font cache, text layout cache) to one drawer at a time.
"""

from __future__ import annotations

import io
import threading
import warnings
from datetime import UTC

from .model import Chart

# Pixels of the PNG: wide enough to read a day's shape, short enough for a thread.
WIDTH_PX = 1000
HEIGHT_PX = 500
DPI = 100
# Legend entries: more would run off the picture; the legend's title says how many are drawn.
LEGEND = 10

_drawing = threading.Lock()


def draw_png(chart: Chart) -> bytes:
    """`chart` drawn as a WIDTH_PX x HEIGHT_PX PNG."""
    import numpy
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.dates import AutoDateLocator, ConciseDateFormatter
    from matplotlib.figure import Figure

    # A label in a script DejaVu Sans lacks is drawn as boxes (the alt text has it whole): not worth
    # a warning on stderr per character and chart.
    warnings.filterwarnings("ignore", message=r"Glyph \d+ .* missing from font", category=UserWarning)
    with _drawing:
        figure = Figure(figsize=(WIDTH_PX / DPI, HEIGHT_PX / DPI), dpi=DPI, layout="constrained")
        FigureCanvasAgg(figure)
        axes = figure.add_subplot()
        lines = []
        for series in chart.series:
            # Milliseconds since the epoch as datetime64: UTC by definition, whatever the host's zone.
            times = numpy.array([round(t * 1000) for t, _ in series.points], dtype="datetime64[ms]")
            (line,) = axes.plot(times, [v for _, v in series.points], linewidth=1.2)
            lines.append(line)
        locator = AutoDateLocator(tz=UTC)  # type: ignore[no-untyped-call]  # matplotlib.dates has no stubs
        axes.xaxis.set_major_locator(locator)
        axes.xaxis.set_major_formatter(ConciseDateFormatter(locator, tz=UTC))  # type: ignore[no-untyped-call]
        axes.grid(True, alpha=0.3)
        figure.suptitle(chart.title, x=0.01, ha="left", fontsize="medium", parse_math=False, usetex=False)
        if chart.common:
            axes.set_xlabel(chart.common, fontsize="small", parse_math=False, usetex=False)
        if len(chart.series) > 1 or chart.series[0].label:
            labels = [s.label or "(no labels)" for s in chart.series]
            more = f"first {LEGEND} of {len(labels)} series" if len(labels) > LEGEND else None
            legend = figure.legend(
                lines[:LEGEND], labels[:LEGEND], loc="outside lower center", ncols=2, fontsize="small", title=more
            )
            for text in legend.get_texts():
                text.set_parse_math(False)
                text.set_usetex(False)
        out = io.BytesIO()
        # The title and alt text travel inside the file too, for whoever saves it.
        figure.savefig(out, format="png", dpi=DPI, metadata={"Title": chart.title, "Description": chart.alt_text})
        return out.getvalue()
