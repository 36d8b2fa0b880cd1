"""The plain view: a line per step, the answer's lines as the model writes them, nothing redrawn.

What `opsbot ask` prints, and `opsbot chat` when its output is not a terminal or with --plain: a
line once printed stays, so it can be piped, logged or read by a screen reader."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from ..agent import Progress, Step
from ..agent.answer_stream import AnswerPreview
from .screen import say
from .steps import call_line, call_style, started_line

THINKING_NOTE = "  (the lines above were the model's thinking, not its answer)"


class PlainProgress(Progress):
    """Each step as one line on `steps`; the answer's lines on `answer` as the model writes them."""

    def __init__(self, steps: Console, answer: Console, prompt: str = "", style: str | None = None) -> None:
        self.steps = steps
        self.answer = answer
        self.prompt = prompt
        self.style = style
        self.preview = AnswerPreview()
        self.mid_line = False  # the answer's last streamed line is not finished

    def on_tool_start(self, step: int, tool: str, args: Any) -> None:
        self._end_line()
        say(self.steps, f"  … {started_line(step, tool, args)}", "bright_black")

    def on_step(self, step: Step) -> None:
        if step.calls:
            self.preview.clear()
        if step.calls or step.note:
            self._end_line()  # only then: a cut answer's continuation goes on on the same line
        for call in step.calls:
            say(self.steps, f"  {call_line(step.n, call)}", call_style(call))
        if step.note:
            say(self.steps, f"  ! {step.note}", "yellow")

    def on_answer_text(self, step: int, text: str) -> None:
        if not self.preview.text:
            say(self.answer, self.prompt, self.style, end="")
        say(self.answer, text, self.style, end="")
        self.preview.add(step, text)
        self.mid_line = not text.endswith("\n")

    def on_answer_reset(self, step: int) -> None:
        if self.preview.drop(step):
            self._end_line()
            say(self.answer, THINKING_NOTE, "bright_black")

    def finish(self, answer: str, style: str | None) -> None:
        """Print what `answer` adds to what streamed of it; all of it when none of it streamed."""
        # Printed lines cannot be taken back: a continuation that lost its space is still the answer.
        rest = self.preview.rest(answer) if self.preview.text else None
        if rest is None:
            self._end_line()
            say(self.answer, f"{self.prompt}{answer}", style)
        elif rest or self.mid_line:
            say(self.answer, rest, style)
        self.mid_line = False

    def _end_line(self) -> None:
        """Finish a streamed line before anything else is printed, on either stream."""
        if self.mid_line:
            say(self.answer, "")
            self.mid_line = False
