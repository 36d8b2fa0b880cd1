"""A run's steps, run one after another until the run ends or waits for a person.

Tool steps go through the engine's one traced executor with the step's own timeout and retries,
and are audited as the loop's calls are (bot/telemetry/calls.py). A `risk: write` command, or
an MCP server's `risk: write` tool (`<server>__<tool>`), is never run here: its tool answers
`needs_approval`, and the step waits for the approvals service (bot/approvals) to ask, as an
approval step does.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from datetime import datetime
from typing import Any

from ...config.policy import END, ApprovalStep, BranchStep, ExplainStep, Runbook, ToolStep
from ...tools.base import ErrorType, ToolResult
from ...tools.commands import ApprovalRequest
from ...tools.executor import Executor, RetryPolicy, ToolCall
from ..approvals import Approvals, HandBack
from ..telemetry import tracing
from ..telemetry.audit import Audit
from ..telemetry.calls import audited
from .commits import Commits
from .errors import RunLost
from .leases import Leases
from .moves import begin, end, goto
from .records import RunRecord, StepRecord
from .reporting import ApprovalNeeded, StepFinished, StepStarted
from .templates import TemplateError, condition_holds, fill, fill_text

log = logging.getLogger(__name__)

MAX_STEPS = 100

Explainer = Callable[[str, RunRecord], str]
"""Asks the model `question` about the run's results; returns its answer. May raise."""


class Steps:
    def __init__(
        self,
        *,
        executor: Executor,
        approvals: Approvals,
        explainer: Explainer | None,
        commits: Commits,
        leases: Leases,
        clock: Callable[[], datetime],
        max_steps: int,
        audit: Audit,
    ) -> None:
        self.executor = executor
        self.approvals = approvals
        self.explainer = explainer
        self.commits = commits
        self.leases = leases
        self.clock = clock
        self.max_steps = max_steps
        self.audit = audit

    def resume(self, run: RunRecord, runbook: Runbook, token: str) -> RunRecord:
        """Go on with `run` from its current step, holding `token`'s lease, until it ends or waits.
        The run as this process left it; as stored, if another process or a cancel took it."""
        with tracing.span("opsbot.runbook_run", run_id=run.id, runbook=run.runbook):
            try:
                self._steps(run, runbook, token)
            except RunLost:
                log.warning("run %s was taken over or cancelled by someone else; this process stops it here", run.id)
                return self.commits.store.load(run.id) or run
        return run

    def _steps(self, run: RunRecord, runbook: Runbook, token: str) -> None:
        while run.status == "running":
            if run.current >= len(runbook.steps):
                end(run, "succeeded", "")
                self.commits.commit(run)
                break
            if run.executed >= self.max_steps:
                end(run, "failed", f"stopped after {self.max_steps} steps: a branch probably loops")
                self.commits.commit(run)
                break
            self.leases.keep(run.id, token)
            step = runbook.steps[run.current]
            run.executed += 1
            with self.leases.kept(run.id, token):
                if isinstance(step, ToolStep):
                    self._tool(run, runbook, step)
                elif isinstance(step, BranchStep):
                    self._branch(run, runbook, step)
                elif isinstance(step, ApprovalStep):
                    self._gate(run, step)
                else:
                    self._explain(run, step)

    def _tool(self, run: RunRecord, runbook: Runbook, step: ToolStep) -> None:
        record = begin(run, "tool", "running", self.clock())
        self.commits.commit(run, StepStarted(record))
        try:
            args = fill(step.args, run.params, _outputs(run))
        except TemplateError as exc:
            result = ToolResult.failure(
                ErrorType.invalid_args, str(exc), hint="the runbook's template names something this run does not have"
            )
        else:
            retry = RetryPolicy(step.timeout_s, step.retries, self.executor.retry.backoff_s, ceiling_s=step.timeout_s)
            call = ToolCall(f"{run.id}:{step.id}", step.tool, json.dumps(args))
            outcome = self.executor.run_one(call, run.requested_by, retry=retry)
            result = outcome.result
            record.attempts = outcome.attempts
            audited(
                self.audit,
                asked_by=run.requested_by,
                thread=run.origin.get("thread"),
                run=run.id,
                tool=step.tool,
                args=args,
                status=result.status,
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
            self.commits.commit(run, ApprovalNeeded(record, pending))
            return
        self.tool_done(run, runbook, step, record, result)

    def tool_done(
        self, run: RunRecord, runbook: Runbook, step: ToolStep, record: StepRecord, result: ToolResult
    ) -> None:
        """The current tool step ends with `result` (its own, or its approved command's)."""
        index = run.current
        record.output = result.model_dump(mode="json")
        record.finished_at = self.clock()
        if result.error is None:
            record.status = "ok"
            goto(run, runbook, index, None)
        else:
            record.status = "error"
            said = f"{result.error.type.value}: {result.error.message}"
            record.note = f"{record.note}; {said}" if record.note else said
            if step.on_failure == "abort":
                end(run, "failed", f"step {step.id} failed ({said})")
            else:
                goto(run, runbook, index, None if step.on_failure == "continue" else step.on_failure)
        self.commits.commit(run, StepFinished(record))

    def _branch(self, run: RunRecord, runbook: Runbook, step: BranchStep) -> None:
        index = run.current
        record = begin(run, "branch", "ok", self.clock())
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
        goto(run, runbook, index, target)
        self.commits.commit(run, StepFinished(record))

    def _gate(self, run: RunRecord, step: ApprovalStep) -> None:
        gate = step.approval.model_copy(update={"text": fill_text(step.approval.text, run.params)})
        why = f"runbook {run.runbook}, step {step.id}"
        pending = self.approvals.ask_gate(gate, run.requested_by, run.origin, run.id, why)
        record = begin(run, "approval", "waiting", self.clock())
        record.expires_at = pending.expires_at
        record.approval = pending.id
        record.output = gate.model_dump(mode="json")
        record.note = "waiting for a person to approve"
        run.status = "waiting"
        self.commits.commit(run, ApprovalNeeded(record, pending))

    def _explain(self, run: RunRecord, step: ExplainStep) -> None:
        if self.explainer is None:
            record = begin(run, "explain", "ok", self.clock())
            record.status = "skipped"
            record.note = "no model is configured, so nothing explains the results"
            record.finished_at = record.started_at
            run.current += 1
            self.commits.commit(run, StepFinished(record))
            return
        record = begin(run, "explain", "running", self.clock())
        self.commits.commit(run, StepStarted(record))
        try:
            record.output = self.explainer(step.explain, run.model_copy(deep=True))
            record.status = "ok"
        except Exception as exc:  # noqa: BLE001 - a model failure must not lose the results gathered so far
            log.warning("explain step %s of run %s failed: %s", step.id, run.id, exc)
            record.status = "error"
            record.note = f"the model could not explain the results: {exc}"
        record.finished_at = self.clock()
        run.current += 1
        self.commits.commit(run, StepFinished(record))


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
