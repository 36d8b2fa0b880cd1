"""The live view, for a person at a terminal: a spinner with the seconds while the model thinks
and while each tool runs, the answer rendered as markdown while it is written, a line per step
that stays.

The live area is rich's `Live`, redrawn eight times a second and cleared when the run ends; the
finished answer is then printed once, rendered whole (a table's columns are only right when all
its rows are there). While the answer is written the area shows its last lines, so it never grows
past the screen (a taller live area cannot be redrawn in place)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.live import Live
from rich.markdown import Markdown
from rich.segment import Segment
from rich.spinner import Spinner

from ...tools.inert import inert
from ..agent import Progress, Step
from ..agent.answer_stream import AnswerPreview
from .screen import say
from .steps import PREAMBLE_STYLE, call_line, call_style, preamble_lines, started_line

REFRESH_PER_SECOND = 8
# Screen lines the live area leaves free: the step lines above it stay in view.
LIVE_MARGIN = 4


@dataclass
class Activity:
    """Something under way: a spinner, what it is, and for how long."""

    label: str
    started: float
    spinner: Spinner = field(default_factory=lambda: Spinner("dots", style="cyan"))

    def render(self, now: float, out: Console) -> Spinner:
        # The label quotes the model's arguments: made text by the console, which makes it inert.
        label = out.render_str(f"{self.label} · {now - self.started:.0f}s", style="bright_black", markup=False)
        self.spinner.update(text=label)
        return self.spinner


class LiveProgress(Progress):
    """`start()` before the run, `finish(answer)` after it; the hooks in between come from the
    loop's thread (rich's console and Live take their own locks). The live area is drawn on rich's
    refresh thread from `activities` and `text`, which the hooks replace and never change in place,
    so a redraw never sees them half-changed."""

    def __init__(self, console: Console, clock: Callable[[], float] = time.monotonic) -> None:
        self.console = console
        self.clock = clock
        self.preview = AnswerPreview()
        self.text = ""  # what the preview holds, for the refresh thread
        self.activities: dict[str, Activity] = {}
        self.live = Live(
            console=console,
            get_renderable=self._view,
            refresh_per_second=REFRESH_PER_SECOND,
            transient=True,
            redirect_stderr=False,
        )

    def start(self, label: str = "starting") -> None:
        self.activities = {"run": Activity(label, self.clock())}
        self.live.start()

    def on_model_call(self, step: int) -> None:
        self.activities = {"model": Activity(f"step {step}: the model is thinking", self.clock())}

    def on_tool_start(self, step: int, tool: str, args: Any) -> None:
        running = {key: activity for key, activity in self.activities.items() if key != "model"}
        tool_activity = Activity(started_line(step, tool, args), self.clock())
        self.activities = {**running, f"{step}:{len(running)}": tool_activity}

    def on_preamble(self, step: int, text: str) -> None:
        # What streamed was this preamble: printed above the live area, with the step's lines.
        self.preview.drop(step)
        self.text = self.preview.text
        for line in preamble_lines(text):
            say(self.console, line, PREAMBLE_STYLE)

    def on_step(self, step: Step) -> None:
        self.activities = {}
        if not step.wrote_answer:
            self.preview.drop(step.n)  # what streamed in this step was not the answer
            self.text = self.preview.text
        for call in step.calls:
            say(self.console, f"  {call_line(step.n, call)}", call_style(call))
        if step.note:
            say(self.console, f"  ! {step.note}", "yellow")

    def on_answer_text(self, step: int, text: str) -> None:
        self.preview.add(step, text)
        self.text = self.preview.text
        model = self.activities.get("model")
        if model is not None and not model.label.endswith("writing"):
            self.activities = {"model": Activity(f"step {step}: the model is writing", model.started)}

    def on_answer_reset(self, step: int) -> None:
        self.preview.drop(step)
        self.text = self.preview.text

    def finish(self, answer: str, style: str | None = None) -> None:
        """Clear the live area and print the answer, rendered."""
        self.activities = {}
        self.live.stop()
        self.console.print(_markdown(answer, style or "none"))

    def stop(self) -> None:
        """Clear the live area without an answer (the run failed or was cancelled)."""
        self.activities = {}
        self.live.stop()

    def _view(self) -> RenderableType:
        now, text, activities = self.clock(), self.text, self.activities
        parts: list[RenderableType] = []
        if text.strip():
            parts.append(_Tail(_markdown(text), len(activities) + LIVE_MARGIN))
        parts += [activity.render(now, self.console) for activity in activities.values()]
        return Group(*parts)


def _markdown(text: str, style: str = "none") -> Markdown:
    """The model's markdown, parsed from inert text (tools/inert.py): the console makes what the
    parser writes inert, but the source must be too, or the layout would count an ESC as no column
    and rich would drop a BEL unseen. A link is shown with where it leads, never as a terminal
    hyperlink (OSC 8), which shows other text than its target."""
    return Markdown(inert(text), style=style, hyperlinks=False)


class _Tail:
    """The last lines of a renderable that fit the screen with `reserve` lines to spare."""

    def __init__(self, renderable: RenderableType, reserve: int) -> None:
        self.renderable = renderable
        self.reserve = reserve

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        lines = console.render_lines(self.renderable, options, pad=False)
        room = max(options.size.height - self.reserve, 1)
        yield from _joined(lines[-room:])


def _joined(lines: Iterable[list[Segment]]) -> Iterable[Segment]:
    for line in lines:
        yield from line
        yield Segment.line()
