"""What a runbook run leaves in the store: one `RunRecord` with a `StepRecord` per runbook step.

A run is stored whole, as one JSON document, after every change: a process that stops at any
moment leaves a record another process can read and go on from (bot/runbooks/engine.py). The
`version` makes every save a compare-and-set, so a process that lost a run to another (its lease
ran out while a step hung) can never write over what the other did.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ...config.policy import Policy, Principal, Runbook

StepKind = Literal["tool", "branch", "approval", "explain"]
StepStatus = Literal[
    "pending",
    "running",
    "ok",
    "error",
    "skipped",
    "waiting",
    "approved",
    "denied",
    "expired",
    "interrupted",
    "cancelled",
]
RunStatus = Literal["running", "waiting", "succeeded", "failed", "interrupted", "cancelled"]

UNFINISHED: frozenset[str] = frozenset({"running", "waiting"})


class StepRecord(BaseModel):
    """One step of the runbook as it went. A step run again (a branch looping back, a restart)
    replaces its record: conditions and templates see a step's latest result."""

    model_config = ConfigDict(extra="forbid")

    id: str
    kind: StepKind
    status: StepStatus = "pending"
    # A tool step's ToolResult (`result.model_dump(mode="json")`), an explain step's text, a
    # branch's decision ({"case": n, "goto": id}), an approval step's gate with its text filled in.
    output: Any = None
    attempts: int = 0
    started_at: datetime | None = None
    finished_at: datetime | None = None
    # When a waiting step stops waiting: its approval request's expiry.
    expires_at: datetime | None = None
    note: str = ""
    decided_by: str | None = Field(default=None, description="user id of who approved or denied it")
    approval: str | None = Field(default=None, description="the approval request it waits for (bot/approvals)")


class RunRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    runbook: str
    # Of the runbook as it was when the run started: a run never goes on with changed steps.
    runbook_digest: str = ""
    params: dict[str, str]
    status: RunStatus = "running"
    current: int = Field(default=0, description="index of the step being run, or to be run next")
    steps: list[StepRecord]
    origin: dict[str, str] = Field(default_factory=dict, description="alert key, thread key, who asked: free-form")
    created_at: datetime
    updated_at: datetime
    requested_by: Principal | None = None
    note: str = Field(default="", description="why the run ended as it did, when that is not plain success")
    executed: int = Field(default=0, description="steps executed so far, loops and re-runs included")
    version: int = Field(default=0, description="bumped by every save; the store refuses a stale one")

    @property
    def finished(self) -> bool:
        return self.status not in UNFINISHED

    def step(self, step_id: str) -> StepRecord | None:
        return next((record for record in self.steps if record.id == step_id), None)

    @property
    def current_step(self) -> StepRecord | None:
        return self.steps[self.current] if 0 <= self.current < len(self.steps) else None


def runbook_digest(runbook: Runbook) -> str:
    """What a run keeps of its runbook as it was when it started (`RunRecord.runbook_digest`)."""
    return hashlib.sha256(runbook.model_dump_json().encode()).hexdigest()


def runbook_of(policy: Policy, run: RunRecord) -> Runbook | None:
    """The run's runbook, unless it is gone or changed since the run started (its steps, and
    so the run's step indexes, may differ)."""
    runbook = policy.runbooks.get(run.runbook)
    return runbook if runbook is not None and runbook_digest(runbook) == run.runbook_digest else None
