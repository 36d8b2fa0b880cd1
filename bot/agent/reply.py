"""What a run gives back: the answer, why the loop stopped, every step, the tokens spent."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, Field

from ...tools.base import CallStatus
from ...tools.commands import ApprovalRequest
from ..charts import Chart
from ..faults import Fault
from ..incidents import Recalled
from ..llm import Usage
from .evidence import Evidence


class StopReason(StrEnum):
    answered = "answered"
    max_steps = "max_steps"
    max_calls = "max_calls"
    repeated_call = "repeated_call"
    loop_detected = "loop_detected"
    needs_approval = "needs_approval"
    time_budget = "time_budget"
    no_answer = "no_answer"
    llm_unavailable = "llm_unavailable"
    memory_unavailable = "memory_unavailable"
    busy = "busy"
    no_model = "no_model"
    cancelled = "cancelled"  # the person who asked gave the question up (Ctrl-C in the terminal)


class StepDecision(StrEnum):
    """What the model did with a step, as the step log's `decision` says it."""

    tool_calls = "tool_calls"
    tool_calls_ignored = "tool_calls_ignored"  # calls on a step without tools: not run
    answer = "answer"
    answer_cut = "answer_cut"  # stopped at the output limit; asked to go on
    empty = "empty"


class CallRecord(BaseModel):
    id: str
    tool: str
    args: Any = Field(description="parsed arguments, or the raw text when they were not valid JSON")
    status: CallStatus
    error: str | None = None
    attempts: int = 0
    duration_ms: float = 0.0
    summary: str = Field(default="", description='what it found in a few words, "exit 0, 3 lines" (tools.base.brief)')

    @property
    def outcome(self) -> str:
        """What every front end shows after a call's arrow: "ok: exit 0, 3 lines", "denied: …"."""
        return f"{self.status}: {self.summary}" if self.summary else str(self.status)


class Step(BaseModel):
    """One model decision and what came of it."""

    n: int
    decision: StepDecision
    calls: list[CallRecord] = Field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    model_ms: float = 0.0
    first_token_ms: float | None = Field(default=None, description="when the reply was streamed")
    note: str | None = Field(default=None, description="what the loop said of the step (a nudge, tools withdrawn)")
    model: str | None = Field(
        default=None,
        description="the model that answered this step: a fallback's name while the configured one is down",
    )
    preamble: str | None = Field(
        default=None,
        description="what the model wrote beside the step's tool calls (redacted): part of the step, shown "
        "with it, never part of the answer",
    )

    @property
    def wrote_answer(self) -> bool:
        """Whether what the model wrote in this step is (part of) the answer, rather than a preamble."""
        return self.decision in (StepDecision.answer, StepDecision.answer_cut)


class Reply(BaseModel):
    thread: str
    run_id: str = Field(default="", description="the run's id: the step log's `run`, traces' opsbot.run_id")
    text: str
    stop_reason: StopReason
    steps: list[Step] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    duration_s: float = 0.0
    approvals: list[ApprovalRequest] = Field(
        default_factory=list, description="write commands the model asked for, waiting for a person"
    )
    checked: bool = Field(
        default=True,
        description="False when the model answered without any tool result in this turn though tools were "
        "offered: nothing it says was checked against the systems (front ends say so)",
    )
    model: str | None = Field(
        default=None,
        description="the model that wrote the reply's last step (llm.fallbacks: perhaps not the configured one)",
    )
    ended: str | None = Field(
        default=None,
        description="how the model's reply ended when that is news (a content filter, a refusal, a finish "
        "reason opsbot does not know): also said in the text",
    )
    fault: Fault | None = Field(
        default=None,
        description="the model or Redis failed (llm_unavailable, no_model, memory_unavailable): the text says it "
        "in full, for the terminal; a Slack channel is told plainly (bot/agent/prompts.py plain_fault_text)",
    )
    charts: list[Chart] = Field(
        default_factory=list,
        description="the run's metrics ranges to look at rather than read (bot/charts charts_of: at most "
        "MAX_CHARTS): front ends draw them with the answer",
    )
    recalled: Recalled | None = Field(
        default=None,
        description="past incidents like the question, or why none is recalled (memory.incidents): front ends "
        "show them with their links",
    )
    evidence: Evidence | None = Field(
        default=None,
        description="the answer checked against the thread's tool results (bot/agent/evidence): verified "
        "citations and facts, unsupported and contradicted statements, what was not looked at; None when the "
        "model wrote no answer or no tool was offered",
    )


class Progress:
    """What front ends override to show a run as it happens. Every hook defaults to nothing."""

    def on_model_call(self, step: int) -> None:
        """The model is being asked (step numbers start at 1)."""

    def on_tool_start(self, step: int, tool: str, args: Any) -> None:
        """A tool is about to run."""

    def on_step(self, step: Step) -> None:
        """A step is finished."""

    def on_preamble(self, step: int, text: str) -> None:
        """What the model wrote beside this step's tool calls (redacted), before they run: part of
        the step (its `preamble`), never the answer. What `on_answer_text` gave in this step was it."""

    def on_answer_text(self, step: int, text: str) -> None:
        """More of what the model writes, as it writes it: whole lines, redacted. A preview: it is
        the answer only if the step's record says so (`Step.wrote_answer`); the Reply's text is the
        answer."""

    def on_answer_reset(self, step: int) -> None:
        """What `on_answer_text` gave in this step was not the answer after all (thinking)."""
