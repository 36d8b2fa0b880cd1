"""Running a runbook: step after step, every change stored, so a run survives its process.

The engine walks a run's steps (config/policy/runbooks.py) with the same tools the model uses,
and stops at the end, at a failure that aborts, or where a person must decide: an approval step,
or a `risk: write` command (which the run_command tool never runs by itself: it answers
`needs_approval`). Either way the engine asks the approvals service (bot/approvals), which decides
who may decide, claims the decision once and runs the approved command; the engine is what waits
(`Waiting`): it says whether a run still waits, marks an approved command started, and goes on
from the outcome.

What keeps a run from happening twice or being lost:
- `start` creates the record atomically: a second start with the same id (the same alert
  delivered to two processes) gets the existing run back and runs nothing.
- Only the holder of a run's lease advances it, and every save is a compare-and-set on the
  record's version (bot/runbooks/store.py): a process that lost the run stops at its next save.
- A decision is claimed once by the approvals service before anything runs. An approved write
  command is marked running (and saved) before it starts; found so after a restart, it is
  `interrupted` and never run again.
- `recover` (at startup) goes on with runs a dead process left: a read step is simply run again.

The front end hears of progress through a `Reporter`, always after the change is stored, and a
reporter that raises is logged and ignored: the record, not a Slack message, is the truth.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any, Literal, Protocol

from ...config.policy import END, ApprovalStep, BranchStep, ExplainStep, Policy, Principal, Runbook, ToolStep
from ...tools.base import ErrorType, ToolResult
from ...tools.commands import ApprovalRequest
from ...tools.executor import Executor, RetryPolicy, ToolCall
from ..approvals import Approvals, Decision, HandBack, Pending, Verdict
from ..telemetry import metrics
from ..telemetry.audit import Audit, AuditRecord, LoggedAudit, who
from .records import RunRecord, StepKind, StepRecord
from .store import RunStore, RunStoreUnavailable, RunUnreadable
from .templates import TemplateError, condition_holds, fill, fill_text

log = logging.getLogger(__name__)

MAX_STEPS = 100

Explainer = Callable[[str, RunRecord], str]
"""Asks the model `question` about the run's results; returns its answer. May raise."""


class RunRefused(Exception):
    """A request the engine will not carry out (bad parameters, not an approver, nothing waiting).
    Nothing was changed; `message` is written for the person who asked."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class Reporter(Protocol):
    """What a front end is told. Each call comes after the change is stored; `run` is a copy."""

    def step_started(self, run: RunRecord, step: StepRecord) -> None: ...

    def step_finished(self, run: RunRecord, step: StepRecord) -> None: ...

    def approval_needed(self, run: RunRecord, step: StepRecord, pending: Pending) -> None: ...

    def run_finished(self, run: RunRecord) -> None: ...


class _Lost(Exception):
    """Another process (or a cancel) saved the run since this one loaded it: stop touching it."""


def default_owner() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def runbook_digest(runbook: Runbook) -> str:
    return hashlib.sha256(runbook.model_dump_json().encode()).hexdigest()


def _now() -> datetime:
    return datetime.now(UTC)


_KINDS: dict[type, StepKind] = {
    ToolStep: "tool",
    BranchStep: "branch",
    ApprovalStep: "approval",
    ExplainStep: "explain",
}
Ending = Literal["succeeded", "failed", "interrupted", "cancelled"]
_ENDED = {"succeeded": "ended", "failed": "failed", "interrupted": "was interrupted", "cancelled": "was cancelled"}


class RunbookEngine:
    def __init__(
        self,
        policy: Policy,
        executor: Executor,
        store: RunStore,
        reporter: Reporter,
        approvals: Approvals,
        explainer: Explainer | None = None,
        owner: str | None = None,
        lease_ttl_s: float = 60.0,
        max_steps: int = MAX_STEPS,
        clock: Callable[[], datetime] = _now,
        audit: Audit | None = None,
    ) -> None:
        self.policy = policy
        self.audit = audit or LoggedAudit()
        self.executor = executor
        self.store = store
        self.reporter = reporter
        self.approvals = approvals
        self.explainer = explainer
        self.owner = owner or default_owner()
        self.lease_ttl_s = lease_ttl_s
        self.max_steps = max_steps
        self.clock = clock
        self._unreadable: set[str] = set()  # runs recover() could not read, told once

    # ---------------------------------------------------------------- what front ends call

    def start(
        self,
        runbook_id: str,
        params: dict[str, str],
        origin: dict[str, str],
        run_id: str | None = None,
        requested_by: Principal | None = None,
    ) -> RunRecord:
        """Run `runbook_id` until it ends or waits for a person. An existing `run_id` is returned
        as it is, and nothing runs again."""
        runbook = self.policy.runbooks.get(runbook_id)
        if runbook is None:
            known = ", ".join(sorted(self.policy.runbooks)) or "none"
            raise RunRefused(f"there is no runbook {runbook_id!r} (runbooks: {known})")
        try:
            checked = runbook.check_params(params)
        except ValueError as exc:
            raise RunRefused(f"runbook {runbook_id}: {exc}") from exc
        now = self.clock()
        run = RunRecord(
            id=run_id or uuid.uuid4().hex,
            runbook=runbook.id,
            runbook_digest=runbook_digest(runbook),
            params=checked,
            steps=[StepRecord(id=step.id, kind=_KINDS[type(step)]) for step in runbook.steps],
            origin=dict(origin),
            created_at=now,
            updated_at=now,
            requested_by=requested_by,
        )
        if not self.store.create(run):
            existing = self.store.load(run.id)
            if existing is None:
                raise RunRefused(f"run {run.id} was started and is already gone (expired); start it again")
            return existing
        metrics.runbook_run_started()
        token = self._token()
        if not self.store.lease(run.id, token, self.lease_ttl_s):
            # Only recover() in another process can have taken it this early; it runs the run.
            return self.store.load(run.id) or run
        try:
            return self._go_on(run, runbook, token)
        finally:
            self._release(run.id, token)

    def _loaded(self, run_id: str) -> RunRecord:
        run = self.store.load(run_id)
        if run is None:
            raise RunRefused(f"there is no run {run_id} (runs are kept for a week)")
        return run

    def cancel(self, run_id: str, reason: str) -> RunRecord | None:
        """Stop a waiting or running run (a pending approval is dropped); None if there is no such
        run, the record as it is if it had ended. A process running it stops at its next save."""
        for _ in range(5):
            run = self.store.load(run_id)
            if run is None:
                return None
            if run.finished:
                return run
            record = run.current_step
            if record is not None and _approved_write_in_flight(record):
                raise RunRefused(
                    f"step {record.id} is running an approved command right now; it cannot be stopped halfway"
                )
            if record is not None and record.status in ("running", "waiting"):
                record.status = "cancelled"
                record.finished_at = self.clock()
                record.note = f"cancelled: {reason}"
            self._end(run, "cancelled", f"cancelled: {reason}")
            try:
                self._commit(run)
            except _Lost:
                continue  # it moved on meanwhile: look again
            return run
        raise RunRefused(f"run {run_id} keeps changing; try cancelling again")

    def recover(self) -> list[RunRecord]:
        """At startup: go on with the unfinished runs nobody holds. Waiting runs stay waiting (an
        expired wait fails) and are returned so the front end can show them again; running runs
        continue from their current step, except an approved write that may have started, which
        is marked `interrupted`. Returns every run it touched, as it left them."""
        touched: list[RunRecord] = []
        for run_id in self.store.unfinished():
            token = self._token()
            if not self.store.lease(run_id, token, self.lease_ttl_s):
                continue  # alive in another process
            try:
                run = self.store.load(run_id)
                if run is not None and not run.finished:
                    touched.append(self._resume(run, token))
            except _Lost:
                stored = self.store.load(run_id)
                if stored is not None:
                    touched.append(stored)
            except RunUnreadable as exc:
                # Left as it is (it expires with the store's ttl); the other runs still recover.
                if run_id not in self._unreadable:
                    self._unreadable.add(run_id)
                    log.warning("%s; it is left alone: start it again if it is still needed", exc)
            finally:
                self._release(run_id, token)
        return touched

    # ---------------------------------------------------------------- waiting for people (bot/approvals)

    def waits(self, pending: Pending) -> str | None:
        """None while the run waits for `pending`, else why it does not (a person is told)."""
        assert pending.run is not None
        run = self.store.load(pending.run)
        if run is None:
            return f"there is no run {pending.run} (runs are kept for a week)"
        return self._not_waiting_for(run, pending)

    def starting(self, pending: Pending, by: Principal) -> str | None:
        """An approved command of the run is about to run: the step is saved as running, by whom,
        first, and the lease held for as long as the command may take, until `resume`."""
        assert pending.run is not None and pending.command is not None
        token = self._decision_token(pending)
        if not self._lease_soon(pending.run, token):
            return f"run {pending.run} is busy right now; try again in a moment"
        try:
            why_not = self._mark_started(self._loaded(pending.run), pending, by.user)
        except RunRefused as exc:
            why_not = exc.message
        except BaseException:
            self._release(pending.run, token)
            raise
        if why_not is not None:
            self._release(pending.run, token)
        return why_not

    def _mark_started(self, run: RunRecord, pending: Pending, by: str) -> str | None:
        assert pending.command is not None
        why_not = self._not_waiting_for(run, pending)
        if why_not is not None:
            return why_not
        if self._runbook_of(run) is None:
            self._runbook_gone(run)
            return f"runbook {run.runbook} was changed or removed since this run started"
        record = run.current_step
        assert record is not None
        record.status = "running"
        record.decided_by = by
        record.note = f"approved by {by}; running {pending.command.command}"
        run.status = "running"
        try:
            self._save(run)
        except _Lost:
            return f"run {run.id} changed just now (cancelled?); nothing was run"
        self._tell("step_started", run, record)
        # Held for as long as the command may take: a process starting meanwhile must not mark a
        # write that is still running as interrupted, even if this process stalls between renewals.
        spec = self.policy.commands.get(pending.command.command)
        self._keep_lease(run.id, self._decision_token(pending), self.lease_ttl_s + (spec.timeout_s if spec else 0))
        return None

    def resume(self, pending: Pending, decision: Decision) -> None:
        """Go on from a settled decision: an approved command's result, an approved gate, a denial
        or an expiry."""
        assert pending.run is not None
        token = self._decision_token(pending)
        started = decision.verdict is Verdict.approved and pending.command is not None
        if not started and not self._lease_soon(pending.run, token):
            log.error(
                "run %s stayed busy; the %s of request %s is not applied",
                pending.run,
                decision.verdict.value,
                pending.id,
            )
            return
        try:
            self._apply(self._loaded(pending.run), pending, decision, token)
        except RunRefused as exc:
            log.warning("the %s of request %s is not applied: %s", decision.verdict, pending.id, exc.message)
        except _Lost:
            log.warning("run %s changed while a decision on it was applied; stopped there", pending.run)
        finally:
            self._release(pending.run, token)

    def _apply(self, run: RunRecord, pending: Pending, decision: Decision, token: str) -> None:
        record = run.current_step
        if decision.result is not None:
            if record is None or record.status != "running" or record.decided_by != decision.by:
                # Only when this process's lease ran out while the command ran and another marked
                # the step interrupted: what the command did is kept here at least.
                log.error("run %s was taken over while its command ran; result: %s", run.id, decision.result.render())
                return
            runbook = self._runbook_of(run)
            if runbook is None:
                self._runbook_gone(run)
                return
            step = runbook.steps[run.current]
            assert isinstance(step, ToolStep)
            record.attempts = 1  # the call that asked for approval ran nothing
            record.note = f"approved by {decision.by}"
            self._tool_done(run, runbook, step, run.current, record, decision.result)
            self._go_on(run, runbook, token)
            return
        if self._not_waiting_for(run, pending) is not None:
            return  # cancelled or expired meanwhile: nothing waits for this decision
        assert record is not None
        runbook = self._runbook_of(run)
        if runbook is None:
            self._runbook_gone(run)
        elif decision.verdict is Verdict.expired:
            self._expire(run, record)
        elif decision.verdict is Verdict.denied:
            self._deny(run, record, decision.by or "someone")
        else:
            record.status = "approved"
            record.decided_by = decision.by
            record.finished_at = self.clock()
            record.note = f"approved by {decision.by}"
            run.status = "running"
            run.current += 1
            self._commit(run, ("step_finished", record))
            self._go_on(run, runbook, token)

    def _not_waiting_for(self, run: RunRecord, pending: Pending) -> str | None:
        record = run.current_step
        if run.status != "waiting" or record is None or record.status != "waiting":
            return self._not_waiting(run)
        if record.approval != pending.id:
            return f"that question of run {run.id} was answered already; it now waits at step {record.id}"
        return None

    def _decision_token(self, pending: Pending) -> str:
        # One lease from `starting` to `resume` of one decision, however the service calls them.
        return f"{self.owner}:{pending.id}"

    def _deny(self, run: RunRecord, record: StepRecord, by: str) -> None:
        record.status = "denied"
        record.decided_by = by
        record.finished_at = self.clock()
        record.note = f"denied by {by}"
        self._end(run, "failed", f"step {record.id} was denied by {by}")
        self._commit(run, ("step_finished", record))

    def _expired(self, record: StepRecord) -> bool:
        return record.expires_at is not None and self.clock() >= record.expires_at

    def _expire(self, run: RunRecord, record: StepRecord) -> RunRecord:
        assert record.expires_at is not None
        record.status = "expired"
        record.finished_at = self.clock()
        record.note = f"nobody decided before {record.expires_at.isoformat(timespec='seconds')}"
        self._end(run, "failed", f"step {record.id} waited for a decision until it expired")
        self._commit(run, ("step_finished", record))
        return run

    # ---------------------------------------------------------------- running steps

    def _go_on(self, run: RunRecord, runbook: Runbook, token: str) -> RunRecord:
        try:
            return self._advance(run, runbook, token)
        except _Lost:
            log.warning("run %s was taken over or cancelled by someone else; this process stops it here", run.id)
            return self.store.load(run.id) or run

    def _advance(self, run: RunRecord, runbook: Runbook, token: str) -> RunRecord:
        while run.status == "running":
            if run.current >= len(runbook.steps):
                self._end(run, "succeeded", "")
                self._commit(run)
                break
            if run.executed >= self.max_steps:
                self._end(run, "failed", f"stopped after {self.max_steps} steps: a branch probably loops")
                self._commit(run)
                break
            self._keep_lease(run.id, token)
            step = runbook.steps[run.current]
            run.executed += 1
            with self._lease_kept(run.id, token):
                if isinstance(step, ToolStep):
                    self._tool(run, runbook, step)
                elif isinstance(step, BranchStep):
                    self._branch(run, runbook, step)
                elif isinstance(step, ApprovalStep):
                    self._gate(run, step)
                else:
                    self._explain(run, step)
        return run

    def _begin(self, run: RunRecord, kind: StepKind, status: Literal["running", "waiting", "ok"]) -> StepRecord:
        index = run.current
        before = run.steps[index]
        record = StepRecord(id=before.id, kind=kind, status=status, started_at=self.clock())
        if before.status == "running":
            record.note = "run again: the process running it stopped"
        run.steps[index] = record
        return record

    def _tool(self, run: RunRecord, runbook: Runbook, step: ToolStep) -> None:
        index = run.current
        record = self._begin(run, "tool", "running")
        self._save(run)
        self._tell("step_started", run, record)
        try:
            args = fill(step.args, run.params, _outputs(run))
        except TemplateError as exc:
            result = ToolResult.failure(
                ErrorType.invalid_args, str(exc), hint="the runbook's template names something this run does not have"
            )
        else:
            retry = RetryPolicy(step.timeout_s, step.retries, self.executor.retry.backoff_s, ceiling_s=step.timeout_s)
            call = ToolCall(f"{run.id}:{step.id}", step.tool, json.dumps(args))
            outcome = Executor(self.executor.registry, retry, max_parallel=1).run_one(call, run.requested_by)
            result = outcome.result
            record.attempts = outcome.attempts
            self.audit.record(
                AuditRecord.made(
                    "tool_call",
                    who=who(run.requested_by),
                    thread=run.origin.get("thread"),
                    run=run.id,
                    tool=step.tool,
                    args=args,
                    status=result.status,
                )
            )
        request = _approval_request(result)
        if request is not None:
            why = f"runbook {run.runbook}, step {step.id}"
            pending = self.approvals.ask_command(request, run.origin, HandBack.runbook, why, run=run.id)
            record.output = result.model_dump(mode="json")
            record.status = "waiting"
            record.expires_at = pending.expires_at
            record.approval = pending.id
            record.note = f"{request.command} changes things: waiting for a person to approve it"
            run.status = "waiting"
            self._commit(run, ("approval_needed", record, pending))
            return
        self._tool_done(run, runbook, step, index, record, result)

    def _tool_done(
        self, run: RunRecord, runbook: Runbook, step: ToolStep, index: int, record: StepRecord, result: ToolResult
    ) -> None:
        record.output = result.model_dump(mode="json")
        record.finished_at = self.clock()
        if result.error is None:
            record.status = "ok"
            self._goto(run, runbook, index, None)
        else:
            record.status = "error"
            said = f"{result.error.type.value}: {result.error.message}"
            record.note = f"{record.note}; {said}" if record.note else said
            if step.on_failure == "abort":
                self._end(run, "failed", f"step {step.id} failed ({said})")
            else:
                self._goto(run, runbook, index, None if step.on_failure == "continue" else step.on_failure)
        self._commit(run, ("step_finished", record))

    def _branch(self, run: RunRecord, runbook: Runbook, step: BranchStep) -> None:
        index = run.current
        record = self._begin(run, "branch", "ok")
        by_id = {r.id: r for r in run.steps}
        chosen = next(
            (n for n, case in enumerate(step.branch) if all(condition_holds(c, by_id) for c in case.when)), None
        )
        target = step.branch[chosen].goto if chosen is not None else step.otherwise
        following = runbook.steps[index + 1].id if index + 1 < len(runbook.steps) else END
        shown = target or following
        record.output = {"case": chosen, "goto": shown}
        holds = f"case {chosen + 1} holds" if chosen is not None else "no case holds"
        record.note = f"{holds}: go to {shown}"
        record.finished_at = self.clock()
        self._goto(run, runbook, index, target)
        self._commit(run, ("step_finished", record))

    def _gate(self, run: RunRecord, step: ApprovalStep) -> None:
        gate = step.approval.model_copy(update={"text": fill_text(step.approval.text, run.params)})
        why = f"runbook {run.runbook}, step {step.id}"
        pending = self.approvals.ask_gate(gate, run.requested_by, run.origin, run.id, why)
        record = self._begin(run, "approval", "waiting")
        record.expires_at = pending.expires_at
        record.approval = pending.id
        record.output = gate.model_dump(mode="json")
        record.note = "waiting for a person to approve"
        run.status = "waiting"
        self._commit(run, ("approval_needed", record, pending))

    def _explain(self, run: RunRecord, step: ExplainStep) -> None:
        if self.explainer is None:
            record = self._begin(run, "explain", "ok")
            record.status = "skipped"
            record.note = "no model is configured, so nothing explains the results"
            record.finished_at = record.started_at
            run.current += 1
            self._commit(run, ("step_finished", record))
            return
        record = self._begin(run, "explain", "running")
        self._save(run)
        self._tell("step_started", run, record)
        try:
            record.output = self.explainer(step.explain, run.model_copy(deep=True))
            record.status = "ok"
        except Exception as exc:  # noqa: BLE001 - a model failure must not lose the results gathered so far
            log.warning("explain step %s of run %s failed: %s", step.id, run.id, exc)
            record.status = "error"
            record.note = f"the model could not explain the results: {exc}"
        record.finished_at = self.clock()
        run.current += 1
        self._commit(run, ("step_finished", record))

    def _goto(self, run: RunRecord, runbook: Runbook, index: int, target: str | None) -> None:
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

    def _end(self, run: RunRecord, status: Ending, note: str) -> None:
        run.status = status
        run.note = note
        for record in run.steps:
            if record.status == "pending":
                record.status = "skipped"
                record.note = f"not run: the run {_ENDED[status]} first"

    # ---------------------------------------------------------------- recovering

    def _resume(self, run: RunRecord, token: str) -> RunRecord:
        record = run.current_step
        # First of all: whatever else changed, a write that may have run is never run again.
        if run.status == "running" and record is not None and _approved_write_in_flight(record):
            what = _command_of(record.output) or "its command"
            record.status = "interrupted"
            record.finished_at = self.clock()
            record.note = (
                f"{what} was approved by {record.decided_by} and may have run before opsbot stopped; "
                "it was not run again: check by hand whether it took effect"
            )
            self._end(run, "interrupted", f"step {record.id}: {record.note}")
            self._commit(run, ("step_finished", record))
            return run
        runbook = self._runbook_of(run)
        if runbook is None:
            return self._runbook_gone(run)
        if run.status == "waiting":
            if record is not None and record.status == "waiting" and self._expired(record):
                return self._expire(run, record)
            return run
        return self._go_on(run, runbook, token)

    def _runbook_of(self, run: RunRecord) -> Runbook | None:
        """The run's runbook, unless it is gone or changed since the run started (its steps, and
        so the run's step indexes, may differ)."""
        runbook = self.policy.runbooks.get(run.runbook)
        return runbook if runbook is not None and runbook_digest(runbook) == run.runbook_digest else None

    def _runbook_gone(self, run: RunRecord) -> RunRecord:
        record = run.current_step
        if record is not None and record.status in ("running", "waiting"):
            record.status = "interrupted"
            record.finished_at = self.clock()
        self._end(run, "failed", f"runbook {run.runbook} was changed or removed since this run started; start it again")
        self._commit(run)
        return run

    # ---------------------------------------------------------------- storing and telling

    def _save(self, run: RunRecord) -> None:
        run.version += 1
        run.updated_at = self.clock()
        if not self.store.save(run):
            raise _Lost(run.id)

    def _commit(self, run: RunRecord, *events: tuple[Any, ...]) -> None:
        """Save, then tell: each event, and the end of the run if it ended."""
        self._save(run)
        for name, *args in events:
            self._tell(name, run, *args)
        if run.finished:
            self._tell("run_finished", run)

    def _tell(self, name: str, run: RunRecord, *args: Any) -> None:
        # Copies: the engine goes on changing its own record after the reporter has returned.
        copies = [a.model_copy(deep=True) if isinstance(a, StepRecord) else a for a in args]
        try:
            getattr(self.reporter, name)(run.model_copy(deep=True), *copies)
        except Exception:  # noqa: BLE001 - a front end failing to show a step must not stop the run
            log.exception("reporter %s failed for run %s", name, run.id)

    def _lease_soon(self, run_id: str, token: str, wait_s: float = 5.0) -> bool:
        """The lease, waiting a moment for it: a person may click the moment a question is shown,
        while the run that asked it is still finishing its save and letting go."""
        deadline = time.monotonic() + wait_s
        while not self.store.lease(run_id, token, self.lease_ttl_s):
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)
        return True

    @contextmanager
    def _lease_kept(self, run_id: str, token: str) -> Iterator[None]:
        """Renew the lease while a step runs: a slow command or model must not look like a dead
        process to another one's recover(), which would run the step again beside it."""
        done = threading.Event()

        def renew() -> None:
            while not done.wait(self.lease_ttl_s / 3):
                try:
                    if not self.store.renew(run_id, token, self.lease_ttl_s):
                        return  # lost (cancelled or taken over): the step's save will say so
                except RunStoreUnavailable as exc:
                    log.warning("could not renew the lease of run %s: %s", run_id, exc)

        keeper = threading.Thread(target=renew, name=f"lease-{run_id}", daemon=True)
        keeper.start()
        try:
            yield
        finally:
            done.set()
            keeper.join()

    def _token(self) -> str:
        # One token per operation: two threads of this process never share a lease.
        return f"{self.owner}:{uuid.uuid4().hex[:8]}"

    def _keep_lease(self, run_id: str, token: str, ttl_s: float | None = None) -> None:
        ttl = ttl_s if ttl_s is not None else self.lease_ttl_s
        if not self.store.renew(run_id, token, ttl) and not self.store.lease(run_id, token, ttl):
            raise _Lost(run_id)

    def _release(self, run_id: str, token: str) -> None:
        try:
            self.store.release(run_id, token)
        except RunStoreUnavailable as exc:
            log.warning("could not release the lease of run %s (it expires by itself): %s", run_id, exc)

    def _not_waiting(self, run: RunRecord) -> str:
        decided = next((r for r in reversed(run.steps) if r.decided_by is not None), None)
        if decided is not None and run.status != "waiting":
            return f"run {run.id} is not waiting for a decision: step {decided.id} was {decided.note or decided.status}"
        return f"run {run.id} is not waiting for a decision (it is {run.status})"


def _outputs(run: RunRecord) -> dict[str, Any]:
    """What templates may read: the output of each step that succeeded."""
    return {record.id: record.output for record in run.steps if record.status == "ok"}


def _approval_request(result: ToolResult) -> ApprovalRequest | None:
    if result.error is None or result.error.type is not ErrorType.needs_approval:
        return None
    try:
        return ApprovalRequest.model_validate(result.data)
    except ValueError:
        return None


def _approved_write_in_flight(record: StepRecord) -> bool:
    """A tool step someone approved and that was running: its command may have started."""
    return record.kind == "tool" and record.status == "running" and record.decided_by is not None


def _command_of(output: Any) -> str | None:
    data = output.get("data") if isinstance(output, dict) else None
    if isinstance(data, dict) and isinstance(data.get("argv"), list):
        return " ".join(str(part) for part in data["argv"])
    return None
