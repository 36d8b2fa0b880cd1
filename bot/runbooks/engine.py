"""Running a runbook: step after step, every change stored, so a run survives its process.

The engine walks a run's steps (config/policy/runbooks.py) with the same tools the model uses,
and stops at the end, at a failure that aborts, or where a person must decide: an approval step,
or a `risk: write` command (which the run_command tool never runs by itself: it answers
`needs_approval`, and only `decide` runs it, through tools/commands.py `run_approved`).

What keeps a run from happening twice or being lost:
- `start` creates the record atomically: a second start with the same id (the same alert
  delivered to two processes) gets the existing run back and runs nothing.
- Only the holder of a run's lease advances it, and every save is a compare-and-set on the
  record's version (bot/runbooks/store.py): a process that lost the run stops at its next save.
- A decision is claimed by saving it before anything runs: of two clicks, or two processes, one
  claim succeeds and the other is refused. An approved write command is marked running before it
  starts; found so after a restart, it is `interrupted` and never run again.
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
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, Protocol

from bot.runbooks.records import RunRecord, StepKind, StepRecord
from bot.runbooks.store import RunStore, RunStoreUnavailable
from bot.runbooks.templates import TemplateError, condition_holds, fill, fill_text
from config.policy import END, Access, ApprovalStep, BranchStep, ExplainStep, Gate, Policy, Principal, Runbook, ToolStep
from tools.base import ErrorType, ToolResult
from tools.commands import ApprovalRequest, check_approval, run_approved
from tools.executor import Executor, RetryPolicy, ToolCall, redact_result

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

    def approval_needed(self, run: RunRecord, step: StepRecord, request: ApprovalRequest | Gate) -> None: ...

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
        explainer: Explainer | None = None,
        owner: str | None = None,
        lease_ttl_s: float = 60.0,
        max_steps: int = MAX_STEPS,
        clock: Callable[[], datetime] = _now,
    ) -> None:
        self.policy = policy
        self.executor = executor
        self.store = store
        self.reporter = reporter
        self.explainer = explainer
        self.owner = owner or default_owner()
        self.lease_ttl_s = lease_ttl_s
        self.max_steps = max_steps
        self.clock = clock

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
        token = self._token()
        if not self.store.lease(run.id, token, self.lease_ttl_s):
            # Only recover() in another process can have taken it this early; it runs the run.
            return self.store.load(run.id) or run
        try:
            return self._go_on(run, runbook, token)
        finally:
            self._release(run.id, token)

    def decide(self, run_id: str, approved: bool, by: Principal, waiting_for: str | None = None) -> RunRecord:
        """`by` approves or denies what run `run_id` waits for; an approval runs on until the next
        wait or the end. Refusals (not an approver, nothing waiting, decided already) raise
        `RunRefused` and change nothing. `waiting_for` is the run's `decision_key` when the
        question was shown: with it, a late click cannot answer a later question. Front ends with
        buttons must pass it; None decides whatever the run waits for now."""
        token = self._token()
        if not self._lease_soon(run_id, token):
            busy = self._loaded(run_id)
            raise RunRefused(
                self._not_waiting(busy) if busy.status != "waiting" else f"run {run_id} is being decided right now"
            )
        try:
            return self._decide(self._loaded(run_id), approved, by, token, waiting_for)
        except _Lost:
            # A cancel saved the run between this process loading it and storing an expiry.
            return self._loaded(run_id)
        finally:
            self._release(run_id, token)

    def _decide(self, run: RunRecord, approved: bool, by: Principal, token: str, waiting_for: str | None) -> RunRecord:
        record = run.current_step
        if run.status != "waiting" or record is None or record.status != "waiting":
            raise RunRefused(self._not_waiting(run))
        if waiting_for is not None and waiting_for != run.decision_key:
            raise RunRefused(f"that question of run {run.id} was answered already; it now waits at step {record.id}")
        runbook = self._runbook_of(run)
        if runbook is None:
            return self._runbook_gone(run)
        step = runbook.steps[run.current]
        if self._expired(record):
            return self._expire(run, record)
        if isinstance(step, ApprovalStep):
            return self._decide_gate(run, runbook, step, record, approved, by, token)
        if isinstance(step, ToolStep) and run.pending_approval is not None:
            return self._decide_command(run, runbook, step, record, run.pending_approval, approved, by, token)
        raise RunRefused(f"run {run.id} waits at step {record.id}, which takes no decision")

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
            finally:
                self._release(run_id, token)
        return touched

    # ---------------------------------------------------------------- deciding

    def _decide_gate(
        self,
        run: RunRecord,
        runbook: Runbook,
        step: ApprovalStep,
        record: StepRecord,
        approved: bool,
        by: Principal,
        token: str,
    ) -> RunRecord:
        gate = step.approval
        may = gate.approvers.allows(by) or (not approved and _same_person(by, run.requested_by))
        if not may:
            raise RunRefused(f"you may not {'approve' if approved else 'deny'} this step: {_who(gate.approvers)}")
        if approved and not gate.self_approval and _same_person(by, run.requested_by):
            raise RunRefused("the person who started this run cannot approve it; ask another approver")
        record.decided_by = by.user
        record.finished_at = self.clock()
        if not approved:
            return self._deny(run, record, by)
        record.status = "approved"
        record.note = f"approved by {by.user}"
        run.status = "running"
        run.current += 1
        self._claim(run, record)
        self._tell("step_finished", run, record)
        return self._go_on(run, runbook, token)

    def _decide_command(
        self,
        run: RunRecord,
        runbook: Runbook,
        step: ToolStep,
        record: StepRecord,
        request: ApprovalRequest,
        approved: bool,
        by: Principal,
        token: str,
    ) -> RunRecord:
        now = self.clock()
        if not approved:
            spec = self.policy.commands.get(request.command)
            approvers = None if spec is None else spec.approvers if spec.approvers is not None else spec.access
            if not (_same_person(by, request.requested_by) or (approvers is not None and approvers.allows(by))):
                raise RunRefused(f"you may not deny {request.command!r}: {_who(approvers or Access())}")
            record.decided_by = by.user
            record.finished_at = now
            return self._deny(run, record, by)
        # The checks run_approved makes, made first without running anything: a refused click
        # must not use the request up.
        checked = check_approval(self.policy, request, by, now)
        if isinstance(checked, ToolResult):
            raise RunRefused(checked.error.message if checked.error else f"{request.command!r} cannot run now")
        record.status = "running"
        record.decided_by = by.user
        record.note = f"approved by {by.user}; running {request.command}"
        run.status = "running"
        run.pending_approval = None
        self._claim(run, record)
        self._tell("step_started", run, record)
        # Held for as long as the command may take: a process starting meanwhile must not mark a
        # write that is still running as interrupted, even if this process stalls between renewals.
        self._keep_lease(run.id, token, self.lease_ttl_s + checked.spec.timeout_s)
        try:
            result = redact_result(run_approved(self.policy, request, by, now))
        except Exception as exc:  # noqa: BLE001 - the claim is stored: the step must end, not hang as running
            log.exception("approved command %s of run %s raised", request.command, run.id)
            result = redact_result(
                ToolResult.failure(ErrorType.failed, f"{request.command} failed: {type(exc).__name__}: {exc}")
            )
        record.attempts = 1  # the call that asked for approval ran nothing
        record.note = f"approved by {by.user}"
        try:
            self._tool_done(run, runbook, step, run.current, record, result)
        except _Lost:
            # Only when this process's lease ran out while the command ran and another marked
            # the step interrupted: what the command did is kept here at least.
            log.error("run %s was taken over while %s ran; its result: %s", run.id, request.command, result.render())
            return self.store.load(run.id) or run
        return self._go_on(run, runbook, token)

    def _deny(self, run: RunRecord, record: StepRecord, by: Principal) -> RunRecord:
        record.status = "denied"
        record.note = f"denied by {by.user}"
        self._end(run, "failed", f"step {record.id} was denied by {by.user}")
        self._claim(run, record)
        self._tell("step_finished", run, record)
        self._tell("run_finished", run)
        return run

    def _claim(self, run: RunRecord, record: StepRecord) -> None:
        """Store a decision; it is refused if anyone saved the run since it was loaded."""
        try:
            self._save(run)
        except _Lost:
            raise RunRefused(f"step {record.id} of run {run.id} was decided by someone else just now") from None

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
        request = _approval_request(result)
        if request is not None:
            record.output = result.model_dump(mode="json")
            record.status = "waiting"
            record.expires_at = request.expires_at
            record.note = f"{request.command} changes things: waiting for a person to approve it"
            run.status = "waiting"
            run.pending_approval = request
            self._commit(run, ("approval_needed", record, request))
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
        record = self._begin(run, "approval", "waiting")
        record.expires_at = record.started_at + timedelta(seconds=gate.timeout_s) if record.started_at else None
        record.output = gate.model_dump(mode="json")
        record.note = "waiting for a person to approve"
        run.status = "waiting"
        self._commit(run, ("approval_needed", record, gate))

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
        run.pending_approval = None
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


def _same_person(one: Principal, other: Principal | None) -> bool:
    # As tools/commands.py decides it: the user id on its platform, never the team id.
    return other is not None and (one.platform, one.user) == (other.platform, other.user)


def _who(access: Access) -> str:
    parts = []
    if access.users:
        parts.append(f"users {', '.join(sorted(access.users))}")
    if access.groups:
        parts.append(f"members of {', '.join(sorted(access.groups))}")
    if access.channels:
        parts.append(f"in channels {', '.join(sorted(access.channels))}")
    return "only " + " and ".join(parts) + " may decide" if parts else "nobody may decide"
