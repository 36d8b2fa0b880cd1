"""What `opsbot eval` measures and writes (`--json`): stable, versioned (RESULTS_VERSION), in
scenario order; a field is added under a new version, never renamed or reused."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from ..agent import Evidence
from .suite import Kind

# 2: incident recall (Transcript.recalled, ScenarioRun.recalled and recall_as_expected);
# 3: claims checked against the tool results (verified, unsupported, contradicted)
RESULTS_VERSION = 3
Loop = Literal["opsbot", "bare"]
Recall = Literal["given", "abstained", "nothing"]


class CallSeen(BaseModel):
    tool: str
    args: Any
    status: str


class Transcript(BaseModel):
    """One loop's run of one scenario, all its turns (a long thread's history included)."""

    answer: str
    stop_reason: str
    model_calls: int = 0
    calls: list[CallSeen] = Field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    wall_s: float = 0.0
    recalled: Recall | None = None
    evidence: Evidence | None = Field(default=None, description="the last answer checked against the tool results")


class ScenarioRun(BaseModel):
    scenario: str
    kind: Kind
    loop: Loop
    run: int = Field(description="1 to --runs")
    completed: bool = Field(description="every expected fact in the answer, no forbidden claim, no forbidden call")
    model_calls: int
    tool_calls: int
    invalid_calls: int = Field(description="calls of an unknown tool or with arguments that do not fit")
    prompt_tokens: int
    completion_tokens: int
    wall_s: float
    stop_reason: str
    dead_loop: bool = Field(description="stopped by a guard or the step cap, not by answering")
    faults_injected: int
    recovered: bool | None = Field(description="with injected faults: completed anyway; None without faults")
    injection_obeyed: bool | None = Field(description="prompt injection: a forbidden call or claim; None otherwise")
    grounded: bool | None = Field(description="the facts were in tool results; None when only phrasing is expected")
    recalled: Recall | None = Field(
        default=None, description="past threads: what recall did (opsbot's loop); None without past threads"
    )
    recall_as_expected: bool | None = Field(
        default=None, description="recall gave a past thread where it helps, abstained where it must; None otherwise"
    )
    missing_facts: list[str]
    claims_made: list[str]
    forbidden_calls_made: list[str]
    answer: str
    verified_claims: int = Field(default=0, description="citations and facts of the answer found in tool results")
    unsupported_claims: int = Field(default=0, description="facts and quotes of the answer no tool result holds")
    contradicted_claims: int = Field(default=0, description="values a tool result gives otherwise for the same key")
    flagged: list[str] = Field(default_factory=list, description="each unsupported or contradicted claim, and why")


class Figure(BaseModel):
    """One figure over --runs runs: the mean, and the lowest and highest of the runs."""

    mean: float | None
    low: float | None
    high: float | None


class Summary(BaseModel):
    """One loop over the whole suite."""

    completed: Figure = Field(description="share of scenarios completed")
    model_calls: Figure = Field(description="per scenario")
    tool_calls: Figure = Field(description="per scenario")
    invalid_calls: Figure = Field(description="per scenario")
    prompt_tokens: Figure = Field(description="per scenario")
    completion_tokens: Figure = Field(description="per scenario")
    wall_p50_s: Figure
    wall_p95_s: Figure
    dead_loops: Figure = Field(description="share of scenarios stopped by a guard or the step cap")
    recovered: Figure = Field(description="share of fault scenarios completed")
    injection_obeyed: Figure = Field(description="share of prompt-injection scenarios where it was obeyed")
    grounded: Figure = Field(description="share of fact scenarios whose facts came from tool results")
    recall_as_expected: Figure = Field(
        default=Figure(mean=None, low=None, high=None),
        description="share of past-thread scenarios where recall helped or abstained as expected",
    )
    verified_claims: Figure = Field(description="per answer")
    unsupported_claims: Figure = Field(description="per answer")
    contradicted_claims: Figure = Field(description="per answer")
    flagged_answers: Figure = Field(description="share of answers with an unsupported or contradicted claim")
    stop_reasons: dict[str, int]


class EvalReport(BaseModel):
    version: int = RESULTS_VERSION
    opsbot: str
    model: str
    endpoint: str
    suite: str
    runs: int
    scenarios: list[str]
    summary: dict[Loop, Summary]
    results: list[ScenarioRun]
