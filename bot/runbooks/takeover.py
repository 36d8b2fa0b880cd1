"""Runs a stopped process left unfinished, taken over by this one (`recover`, at startup and
every so often: bot/runbooks/recovery.py).

A run whose lease ran out has nobody moving it on. Taken over, a running run resumes from its
current step (a read step is simply run again), except an approved write that may have started:
that one is marked `interrupted` and never run again. A waiting run stays waiting, unless its
wait expired.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .errors import RunLost
from .moves import approved_write_in_flight, end, expire, runbook_changed
from .parts import RunParts
from .records import RunRecord, runbook_of
from .reporting import StepFinished
from .store import RunUnreadable

log = logging.getLogger(__name__)


@dataclass(kw_only=True)
class TakeOver(RunParts):
    _unreadable: set[str] = field(default_factory=set, init=False)  # runs that could not be read, told once

    def recover(self) -> list[RunRecord]:
        """Every unfinished run nobody holds, taken over; returns each as it was left."""
        store = self.commits.store
        touched: list[RunRecord] = []
        for run_id in store.unfinished():
            token = self.leases.token()
            if not self.leases.take(run_id, token):
                continue  # alive in another process
            try:
                run = store.load(run_id)
                if run is not None and not run.finished:
                    touched.append(self._take_over(run, token))
            except RunLost:
                stored = store.load(run_id)
                if stored is not None:
                    touched.append(stored)
            except RunUnreadable as exc:
                # Left as it is (it expires with the store's ttl); the other runs still recover.
                if run_id not in self._unreadable:
                    self._unreadable.add(run_id)
                    log.warning("%s; it is left alone: start it again if it is still needed", exc)
            finally:
                self.leases.release(run_id, token)
        return touched

    def _take_over(self, run: RunRecord, token: str) -> RunRecord:
        record = run.current_step
        # First of all: whatever else changed, a write that may have run is never run again.
        if run.status == "running" and record is not None and approved_write_in_flight(record):
            what = _command_of(record.output) or "its command"
            record.status = "interrupted"
            record.finished_at = self.clock()
            record.note = (
                f"{what} was approved by {record.decided_by} and may have run before opsbot stopped; "
                "it was not run again: check by hand whether it took effect"
            )
            end(run, "interrupted", f"step {record.id}: {record.note}")
            self.commits.commit(run, StepFinished(record))
            return run
        runbook = runbook_of(self.policy, run)
        if runbook is None:
            runbook_changed(run, self.clock())
            self.commits.commit(run)
            return run
        if run.status == "waiting":
            if record is not None and record.status == "waiting" and self._expired(record.expires_at):
                expire(run, record, self.clock())
                self.commits.commit(run, StepFinished(record))
            return run
        return self.steps.resume(run, runbook, token)

    def _expired(self, expires_at: datetime | None) -> bool:
        return expires_at is not None and self.clock() >= expires_at


def _command_of(output: Any) -> str | None:
    data = output.get("data") if isinstance(output, dict) else None
    if isinstance(data, dict) and isinstance(data.get("argv"), list):
        return " ".join(str(part) for part in data["argv"])
    return None
