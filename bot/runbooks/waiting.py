"""A run that waits for a person: the engine's side of bot/approvals' `Waiting`.

The approvals service decides who may decide and claims a decision once; here the run says
whether it still waits (`waits`), saves an approved command's step as running before the command
runs (`starting`), and resumes from the outcome (`resume`). One lease, taken by `starting` and
let go by `resume`, covers a decision from the click to the command's result.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from ...config.policy import Principal, ToolStep
from ..approvals import Decision, Pending, Verdict
from .errors import RunLost, RunRefused
from .moves import deny, expire, runbook_changed
from .parts import RunParts
from .records import RunRecord, runbook_of
from .reporting import StepFinished, StepStarted

log = logging.getLogger(__name__)


@dataclass(kw_only=True)
class Decisions(RunParts):
    def waits(self, pending: Pending) -> str | None:
        """None while the run waits for `pending`, else why it does not (a person is told)."""
        assert pending.run is not None
        run = self.commits.store.load(pending.run)
        if run is None:
            return f"there is no run {pending.run} (runs are kept for a week)"
        return _not_waiting_for(run, pending)

    def starting(self, pending: Pending, by: Principal) -> str | None:
        """An approved command of the run is about to run: the step is saved as running, by whom,
        first, and the lease held for as long as the command may take, until `resume`."""
        assert pending.run is not None and pending.command is not None
        token = self.leases.token_for(pending)
        if not self.leases.take_soon(pending.run, token):
            return f"run {pending.run} is busy right now; try again in a moment"
        try:
            why_not = self._mark_started(self._loaded(pending.run), pending, by.user)
        except RunRefused as exc:
            why_not = exc.message
        except BaseException:
            self.leases.release(pending.run, token)
            raise
        if why_not is not None:
            self.leases.release(pending.run, token)
        return why_not

    def resume(self, pending: Pending, decision: Decision) -> None:
        """Resume the run from a settled decision: an approved command's result, an approved gate,
        a denial or an expiry."""
        assert pending.run is not None
        token = self.leases.token_for(pending)
        started = decision.verdict is Verdict.approved and pending.command is not None
        if not started and not self.leases.take_soon(pending.run, token):
            log.error(
                "run %s stayed busy; the %s of request %s is not applied",
                pending.run,
                decision.verdict.value,
                pending.id,
            )
            return
        try:
            self._record_decision(self._loaded(pending.run), pending, decision, token)
        except RunRefused as exc:
            log.warning("the %s of request %s is not applied: %s", decision.verdict, pending.id, exc.message)
        except RunLost:
            log.warning("run %s changed while a decision on it was applied; stopped there", pending.run)
        finally:
            self.leases.release(pending.run, token)

    def _loaded(self, run_id: str) -> RunRecord:
        run = self.commits.store.load(run_id)
        if run is None:
            raise RunRefused(f"there is no run {run_id} (runs are kept for a week)")
        return run

    def _mark_started(self, run: RunRecord, pending: Pending, by: str) -> str | None:
        assert pending.command is not None
        why_not = _not_waiting_for(run, pending)
        if why_not is not None:
            return why_not
        if runbook_of(self.policy, run) is None:
            runbook_changed(run, self.clock())
            self.commits.commit(run)
            return f"runbook {run.runbook} was changed or removed since this run started"
        record = run.current_step
        assert record is not None
        record.status = "running"
        record.decided_by = by
        record.note = f"approved by {by}; running {pending.command.command}"
        run.status = "running"
        try:
            self.commits.commit(run, StepStarted(record))
        except RunLost:
            return f"run {run.id} changed just now (cancelled?); nothing was run"
        # Held for as long as the command may take: a process starting meanwhile must not mark a
        # write that is still running as interrupted, even if this process stalls between renewals.
        spec = self.policy.commands.get(pending.command.command)
        self.leases.keep(run.id, self.leases.token_for(pending), self.leases.ttl_s + (spec.timeout_s if spec else 0))
        return None

    def _record_decision(self, run: RunRecord, pending: Pending, decision: Decision, token: str) -> None:
        """The decision written into the step that waited for it; an approval resumes the run."""
        record = run.current_step
        if decision.result is not None:
            if record is None or record.status != "running" or record.decided_by != decision.by:
                # Only when this process's lease ran out while the command ran and another marked
                # the step interrupted: what the command did is kept here at least.
                log.error("run %s was taken over while its command ran; result: %s", run.id, decision.result.render())
                return
            runbook = runbook_of(self.policy, run)
            if runbook is None:
                runbook_changed(run, self.clock())
                self.commits.commit(run)
                return
            step = runbook.steps[run.current]
            assert isinstance(step, ToolStep)
            record.attempts = 1  # the call that asked for approval ran nothing
            record.note = f"approved by {decision.by}"
            self.steps.tool_done(run, runbook, step, record, decision.result)
            self.steps.resume(run, runbook, token)
            return
        if _not_waiting_for(run, pending) is not None:
            return  # cancelled or expired meanwhile: nothing waits for this decision
        assert record is not None
        runbook = runbook_of(self.policy, run)
        if runbook is None:
            runbook_changed(run, self.clock())
            self.commits.commit(run)
        elif decision.verdict is Verdict.expired:
            expire(run, record, self.clock())
            self.commits.commit(run, StepFinished(record))
        elif decision.verdict is Verdict.denied:
            deny(run, record, decision.by or "someone", self.clock())
            self.commits.commit(run, StepFinished(record))
        else:
            record.status = "approved"
            record.decided_by = decision.by
            record.finished_at = self.clock()
            record.note = f"approved by {decision.by}"
            run.status = "running"
            run.current += 1
            self.commits.commit(run, StepFinished(record))
            self.steps.resume(run, runbook, token)


def _not_waiting_for(run: RunRecord, pending: Pending) -> str | None:
    """None while `run` waits at `pending`, else why it does not."""
    record = run.current_step
    if run.status != "waiting" or record is None or record.status != "waiting":
        decided = next((r for r in reversed(run.steps) if r.decided_by is not None), None)
        if decided is not None and run.status != "waiting":
            return f"run {run.id} is not waiting for a decision: step {decided.id} was {decided.note or decided.status}"
        return f"run {run.id} is not waiting for a decision (it is {run.status})"
    if record.approval != pending.id:
        return f"that question of run {run.id} was answered already; it now waits at step {record.id}"
    return None
