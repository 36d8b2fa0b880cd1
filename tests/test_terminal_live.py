"""The live area of `opsbot chat` (bot/terminal/live.py), rendered by rich as a terminal would
show it: a spinner line per activity with its seconds (a clock the test moves), one line per
tool when several run at once, and a long answer shown by its last lines so the area never
outgrows the screen."""

from __future__ import annotations

import io

from rich.console import Console

from opsbot.bot.agent import CallRecord, Step, StepDecision
from opsbot.bot.terminal.live import LIVE_MARGIN, LiveProgress
from opsbot.tools.base import CallStatus


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def screen(live: LiveProgress, height: int = 40) -> str:
    out = Console(file=io.StringIO(), width=100, height=height, force_terminal=True, color_system=None)
    out.print(live._view())
    text = out.file.getvalue()  # type: ignore[attr-defined]
    return str(text)


def test_the_seconds_count_while_the_model_thinks_and_while_tools_run() -> None:
    clock = Clock()
    live = LiveProgress(Console(file=io.StringIO()), clock=clock)
    live.on_model_call(1)
    clock.now += 4
    assert "step 1: the model is thinking · 4s" in screen(live)

    live.on_tool_start(1, "query_logs", {"service": "checkout"})
    live.on_tool_start(1, "run_command", {"command": "uptime"})
    clock.now += 2
    shown = screen(live)
    assert 'step 1: query_logs (service="checkout") · 2s' in shown
    assert 'step 1: run_command (command="uptime") · 2s' in shown  # one line per tool running
    assert "thinking" not in shown

    record = CallRecord(id="1", tool="query_logs", args={}, status=CallStatus.ok)
    live.on_step(Step(n=1, decision=StepDecision.tool_calls, calls=[record]))
    assert screen(live).strip() == ""  # nothing under way

    live.on_model_call(2)
    live.on_answer_text(2, "The cause")
    assert "step 2: the model is writing · 0s" in screen(live) and "The cause" in screen(live)


def test_a_long_answer_shows_its_last_lines_within_the_screen() -> None:
    live = LiveProgress(Console(file=io.StringIO()), clock=Clock())
    live.on_model_call(1)
    live.on_answer_text(1, "".join(f"line {n}\n\n" for n in range(60)))
    shown = screen(live, height=20)
    rows = shown.rstrip("\n").split("\n")
    assert len(rows) <= 20
    assert "line 59" in shown and "line 0\n" not in shown
    assert len(rows) == 20 - LIVE_MARGIN - 1 + 1  # the answer's tail, then the spinner line
