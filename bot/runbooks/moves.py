"""A run's record moved on: a step begun, a jump to another step, a decision written down, the
run ended. Only the record changes here; nothing is saved or told (bot/runbooks/commits.py)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from ...config.policy import END, Runbook
from .records import RunRecord, StepKind, StepRecord

Ending = Literal["succeeded", "failed", "interrupted", "cancelled"]
_ENDED = {"succeeded": "ended", "failed": "failed", "interrupted": "was interrupted", "cancelled": "was cancelled"}


def begin(run: RunRecord, kind: StepKind, status: Literal["running", "waiting", "ok"], now: datetime) -> StepRecord:
    """The current step's new record, in place of the one before it (a step run again starts over)."""
    index = run.current
    before = run.steps[index]
    record = StepRecord(id=before.id, kind=kind, status=status, started_at=now)
    if before.status == "running":
        record.note = "run again: the process running it stopped"
    run.steps[index] = record
    return record


def goto(run: RunRecord, runbook: Runbook, index: int, target: str | None) -> None:
    """Move to `target` (a step id, `end`, or None for the next step); steps jumped over that
    never ran are `skipped`, so a condition on them sees that."""
    if target is None:
        destination = index + 1
    elif target == END:
        destination = len(runbook.steps)
    else:
        destination = runbook.index(target)
    for record in run.steps[index + 1 : destination]:
        if record.status == "pending":
            record.status = "skipped"
            record.note = f"jumped over: {run.steps[index].id} went to {target}"
    run.current = destination


def end(run: RunRecord, status: Ending, note: str) -> None:
    run.status = status
    run.note = note
    for record in run.steps:
        if record.status == "pending":
            record.status = "skipped"
            record.note = f"not run: the run {_ENDED[status]} first"


def deny(run: RunRecord, record: StepRecord, by: str, now: datetime) -> None:
    record.status = "denied"
    record.decided_by = by
    record.finished_at = now
    record.note = f"denied by {by}"
    end(run, "failed", f"step {record.id} was denied by {by}")


def expire(run: RunRecord, record: StepRecord, now: datetime) -> None:
    assert record.expires_at is not None
    record.status = "expired"
    record.finished_at = now
    record.note = f"nobody decided before {record.expires_at.isoformat(timespec='seconds')}"
    end(run, "failed", f"step {record.id} waited for a decision until it expired")


def runbook_changed(run: RunRecord, now: datetime) -> None:
    """The run ends: its runbook is gone or changed since it started (its step indexes may differ)."""
    record = run.current_step
    if record is not None and record.status in ("running", "waiting"):
        record.status = "interrupted"
        record.finished_at = now
    end(run, "failed", f"runbook {run.runbook} was changed or removed since this run started; start it again")


def approved_write_in_flight(record: StepRecord) -> bool:
    """A tool step someone approved and that was running: its command may have started."""
    return record.kind == "tool" and record.status == "running" and record.decided_by is not None
