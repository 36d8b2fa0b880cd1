"""A tool call as the loop and a runbook make it: in a span, and in the audit trail.

The agent loop and the runbook engine both run tools through one `TracedExecutor` each and write
one `tool_call` record per call with `audited`, so a reviewer reading `opsbot audit` or a trace
sees a runbook's calls as it sees the model's: who asked, where, the tool, its arguments as
redacted, how it went, and the run they belong to (the span's `opsbot.run_id`, the record's `run`).
"""

from __future__ import annotations

from typing import Any

from ...config.policy import Principal
from ...tools.base import CallStatus, ErrorType
from ...tools.executor import Executor, Outcome, RetryPolicy, ToolCall
from . import tracing
from .audit import Audit, AuditRecord, who


class TracedExecutor(Executor):
    """The executor, with a span per tool call: a child of the current span (`run_many` hands
    its context to the pool's threads), so it carries that run's id."""

    def run_one(
        self, call: ToolCall, principal: Principal | None = None, *, retry: RetryPolicy | None = None
    ) -> Outcome:
        with tracing.span("opsbot.tool_call", tool=call.name) as span:
            outcome = super().run_one(call, principal, retry=retry)
            span.set(status=outcome.result.status.value, attempts=outcome.attempts)
            error = outcome.result.error
            # Asking a person first is how a write command is meant to go, not a failure.
            if error is not None and error.type is not ErrorType.needs_approval:
                span.failed(outcome.result.status.value)
        return outcome


def audited(
    audit: Audit,
    *,
    asked_by: Principal | None,
    thread: str | None,
    run: str,
    tool: str,
    args: Any,
    status: CallStatus,
) -> None:
    """One `tool_call` record (its arguments redacted by `AuditRecord.made`)."""
    audit.record(
        AuditRecord.made(
            "tool_call", who=who(asked_by), thread=thread, run=run, tool=tool, args=args, status=status.value
        )
    )
