"""Running a runbook: step after step, every change stored, so a run survives its process.

The engine walks a run's steps (config/policy/runbooks.py) with the same tools the model uses,
and stops at the end, at a failure that aborts, or where a person must decide: an approval step,
or a `risk: write` command (which the run_command tool never runs by itself: it answers
`needs_approval`). Either way the engine asks the approvals service (bot/approvals), which decides
who may decide, claims the decision once and runs the approved command; the engine is what waits
(`Waiting`): it says whether a run still waits, marks an approved command started, and resumes
the run from the outcome.

What keeps a run from happening twice or being lost:
- `start` creates the record atomically: a second start with the same id (the same alert
  delivered to two processes) gets the existing run back and runs nothing.
- Only the holder of a run's lease (leases.py) moves it on, and every save is a compare-and-set
  on the record's version (commits.py): a process that lost the run stops at its next save.
- A decision is claimed once by the approvals service before anything runs. An approved write
  command is marked running (and saved) before it starts; found so after a restart, it is
  `interrupted` and never run again (takeover.py).
- `recover` (at startup) takes over runs a dead process left: a read step is simply run again.

Each job has its module: stepping.py runs steps, waiting.py is the `Waiting` side, takeover.py
recovers, leases.py holds runs, commits.py saves and then tells the front end (reporting.py).
Continuing a run has one verb, `resume`: from a step (stepping), from a decision (waiting).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import UTC, datetime

from ...config.policy import ApprovalStep, BranchStep, ExplainStep, Policy, Principal, ToolStep
from ...tools.executor import Executor
from ..approvals import Approvals, Decision, Pending
from ..telemetry import metrics
from ..telemetry.audit import Audit, LoggedAudit
from ..telemetry.calls import TracedExecutor
from .commits import Commits
from .errors import RunLost, RunRefused
from .leases import Leases, default_owner
from .moves import approved_write_in_flight, end
from .records import RunRecord, StepKind, StepRecord, runbook_digest
from .reporting import Reporter
from .stepping import MAX_STEPS, Explainer, Steps
from .store import RunStore
from .takeover import TakeOver
from .waiting import Decisions


def _now() -> datetime:
    return datetime.now(UTC)


_KINDS: dict[type, StepKind] = {
    ToolStep: "tool",
    BranchStep: "branch",
    ApprovalStep: "approval",
    ExplainStep: "explain",
}


class RunbookEngine:
    def __init__(
        self,
        policy: Policy,
        executor: Executor,
        *,
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
        self.store = store
        self.approvals = approvals
        self.owner = owner or default_owner()
        self.clock = clock
        self.leases = Leases(store, self.owner, lease_ttl_s)
        self.commits = Commits(store, reporter, clock)
        # One executor for every run: each step brings its own timeout and retries, and each call
        # gets its span as the loop's calls do.
        self.steps = Steps(
            executor=TracedExecutor(executor.registry, executor.retry, max_parallel=1),
            approvals=approvals,
            explainer=explainer,
            commits=self.commits,
            leases=self.leases,
            clock=clock,
            max_steps=max_steps,
            audit=audit or LoggedAudit(),
        )
        self.decisions = Decisions(
            policy=policy, commits=self.commits, leases=self.leases, steps=self.steps, clock=clock
        )
        self.takeover = TakeOver(policy=policy, commits=self.commits, leases=self.leases, steps=self.steps, clock=clock)

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
        token = self.leases.token()
        if not self.leases.take(run.id, token):
            # Only recover() in another process can have taken it this early; it runs the run.
            return self.store.load(run.id) or run
        try:
            return self.steps.resume(run, runbook, token)
        finally:
            self.leases.release(run.id, token)

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
            if record is not None and approved_write_in_flight(record):
                raise RunRefused(
                    f"step {record.id} is running an approved command right now; it cannot be stopped halfway"
                )
            if record is not None and record.status in ("running", "waiting"):
                record.status = "cancelled"
                record.finished_at = self.clock()
                record.note = f"cancelled: {reason}"
            end(run, "cancelled", f"cancelled: {reason}")
            try:
                self.commits.commit(run)
            except RunLost:
                continue  # it moved on meanwhile: look again
            return run
        raise RunRefused(f"run {run_id} keeps changing; try cancelling again")

    def recover(self) -> list[RunRecord]:
        """At startup: go on with the unfinished runs nobody holds. Waiting runs stay waiting (an
        expired wait fails) and are returned so the front end can show them again; running runs
        continue from their current step, except an approved write that may have started, which
        is marked `interrupted`. Returns every run it touched, as it left them."""
        return self.takeover.recover()

    # bot/approvals' `Waiting`, for runbook requests (HandBack.runbook): see waiting.py.

    def waits(self, pending: Pending) -> str | None:
        return self.decisions.waits(pending)

    def starting(self, pending: Pending, by: Principal) -> str | None:
        return self.decisions.starting(pending, by)

    def resume(self, pending: Pending, decision: Decision) -> None:
        self.decisions.resume(pending, decision)
