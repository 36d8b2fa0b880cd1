"""The tool calls a run may make: `max_calls_per_step` per model message, `max_calls_per_run` in all.

Calls past a cap are answered `invalid_args` without running (every tool_call_id still gets its
answer), and are not remembered as run, so a call sent again meets the caps again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from ...config.settings import LoopLimits
from ...tools.base import ToolResult
from ...tools.executor import Outcome, ToolCall
from .guards import call_key
from .prompts import over_run_cap, over_step_cap


@dataclass(frozen=True)
class Refusal:
    """The calls past a cap (by `call_key`), what they are told, and which cap it was."""

    keys: frozenset[str]
    result: ToolResult
    setting: str
    cap: int

    def note(self, outcomes: list[Outcome]) -> str:
        """For people; counted per tool_call_id, as the step lists them, duplicates included."""
        refused = sum(1 for outcome in outcomes if call_key(outcome.call) in self.keys)
        return f"{refused} call(s) not run: over {self.setting} ({self.cap})"


class Admitted(NamedTuple):
    """The calls that may run, and what the rest are told (None when every call fits)."""

    calls: list[ToolCall]
    refusal: Refusal | None


@dataclass
class CallBudget:
    """The tool calls a run may still run: `max_calls_per_step` per model message, and
    `max_calls_per_run` in all. Every call handed to the executor counts, bad arguments included;
    a repeat answered by the guard and a call refused here do not."""

    limits: LoopLimits
    ran: int = 0

    @property
    def per_run(self) -> int:
        return self.limits.max_calls_per_run

    @property
    def spent(self) -> bool:
        return self.ran >= self.per_run

    def admit(self, wanted: list[ToolCall]) -> Admitted:
        """The first of `wanted` (distinct calls, in the order the model sent them) that fit both
        caps, and what the rest are told (None when every call fits)."""
        # Never below zero: a negative slice would run all but the last calls.
        per_step, room = self.limits.max_calls_per_step, max(0, self.per_run - self.ran)
        allowed = min(per_step, room)
        admitted, rest = wanted[:allowed], frozenset(call_key(call) for call in wanted[allowed:])
        self.ran += len(admitted)
        if not rest:
            return Admitted(admitted, None)
        if room < per_step:
            return Admitted(admitted, Refusal(rest, over_run_cap(self.per_run), "max_calls_per_run", self.per_run))
        return Admitted(admitted, Refusal(rest, over_step_cap(len(wanted), per_step), "max_calls_per_step", per_step))
