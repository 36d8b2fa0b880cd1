"""What a front end is told of a run, and how: each event after the change is stored, on copies,
and a reporter that raises is logged and ignored (the record, not a Slack message, is the truth).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Protocol

from ..approvals import Pending
from .records import RunRecord, StepRecord

log = logging.getLogger(__name__)


class Reporter(Protocol):
    """What a front end is told. Each call comes after the change is stored; `run` is a copy."""

    def step_started(self, run: RunRecord, step: StepRecord) -> None: ...

    def step_finished(self, run: RunRecord, step: StepRecord) -> None: ...

    def approval_needed(self, run: RunRecord, step: StepRecord, pending: Pending) -> None: ...

    def run_finished(self, run: RunRecord) -> None: ...


@dataclass(frozen=True)
class StepStarted:
    step: StepRecord


@dataclass(frozen=True)
class StepFinished:
    step: StepRecord


@dataclass(frozen=True)
class ApprovalNeeded:
    step: StepRecord
    pending: Pending


@dataclass(frozen=True)
class RunFinished:
    pass


Event = StepStarted | StepFinished | ApprovalNeeded | RunFinished


def tell(reporter: Reporter, run: RunRecord, event: Event) -> None:
    # Copies: the engine goes on changing its own records after the reporter has returned.
    shown = run.model_copy(deep=True)
    try:
        match event:
            case StepStarted(step):
                reporter.step_started(shown, step.model_copy(deep=True))
            case StepFinished(step):
                reporter.step_finished(shown, step.model_copy(deep=True))
            case ApprovalNeeded(step, pending):
                reporter.approval_needed(shown, step.model_copy(deep=True), pending)
            case RunFinished():
                reporter.run_finished(shown)
    except Exception:  # noqa: BLE001 - a front end failing to show a step must not stop the run
        log.exception("reporter failed to show %s of run %s", type(event).__name__, run.id)
