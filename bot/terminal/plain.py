"""The plain view: a line per step, the answer's lines once the loop says they are the answer,
nothing redrawn.

What `opsbot ask` prints, and `opsbot chat` when its output is not a terminal or with --plain: a
line once printed stays, so it can be piped, logged or read by a screen reader. So what the model
writes is held until its step is recorded: a reply that calls tools was the step's preamble, shown
with the step's lines; only a reply the loop took as the answer is printed as the answer (stdout
stays the answer alone); thinking is never printed."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from ..agent import Progress, Step
from ..agent.answer_stream import AnswerPreview
from .screen import say
from .steps import PREAMBLE_STYLE, call_line, call_style, preamble_lines, started_line


class PlainProgress(Progress):
    """Each step as lines on `steps`; the answer on `answer`, a model reply at a time."""

    def __init__(self, steps: Console, answer: Console, prompt: str = "", style: str | None = None) -> None:
        self.steps = steps
        self.answer = answer
        self.prompt = prompt
        self.style = style
        self.held = AnswerPreview()  # what the model is writing, until its step says what it was
        self.preview = AnswerPreview()  # what was printed of the answer
        self.mid_line = False  # the answer's last printed line is not finished

    def on_preamble(self, step: int, text: str) -> None:
        self.held.drop(step)
        self._end_line()
        for line in preamble_lines(text):
            say(self.steps, line, PREAMBLE_STYLE)

    def on_tool_start(self, step: int, tool: str, args: Any) -> None:
        self._end_line()
        say(self.steps, f"  … {started_line(step, tool, args)}", "bright_black")

    def on_step(self, step: Step) -> None:
        written = self.held.drop(step.n)
        if step.wrote_answer and written:
            self._print(step.n, written)
        if step.calls or step.note:
            self._end_line()  # only then: a cut answer's continuation goes on on the same line
        for call in step.calls:
            say(self.steps, f"  {call_line(step.n, call)}", call_style(call))
        if step.note:
            say(self.steps, f"  ! {step.note}", "yellow")

    def on_answer_text(self, step: int, text: str) -> None:
        self.held.add(step, text)

    def on_answer_reset(self, step: int) -> None:
        self.held.drop(step)  # it was thinking: never printed

    def finish(self, answer: str, style: str | None) -> None:
        """Print what `answer` adds to what was printed of it; all of it when none of it was."""
        # Printed lines cannot be taken back: a continuation that lost its space is still the answer.
        rest = self.preview.rest(answer) if self.preview.text else None
        if rest is None:
            self._end_line()
            say(self.answer, f"{self.prompt}{answer}", style)
        elif rest or self.mid_line:
            say(self.answer, rest, style)
        self.mid_line = False

    def _print(self, step: int, text: str) -> None:
        if not self.preview.text:
            say(self.answer, self.prompt, self.style, end="")
        say(self.answer, text, self.style, end="")
        self.preview.add(step, text)
        self.mid_line = not text.endswith("\n")

    def _end_line(self) -> None:
        """Finish a printed answer line before anything else is printed, on either stream."""
        if self.mid_line:
            say(self.answer, "")
            self.mid_line = False
