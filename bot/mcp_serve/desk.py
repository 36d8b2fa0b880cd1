"""Where a caller's writes wait: the approvals service (bot/approvals), with a place people see it.

A write a caller asks for (a `risk: write` command, create_silence, an MCP write tool) comes back
from its tool as `needs_approval` with its `ApprovalRequest`, exactly as for the model. Here it is
stored as a request of the approvals service, marked as an agent's (`via: mcp-serve`: the user the
caller's token names may not approve it), and shown where the policy's approvers decide: a Slack
channel (slack_desk.py) or the terminal running `opsbot mcp-serve --http` (terminal_desk.py).
The caller is told that it waits, for whom and where, and the request id, which `approval_status`
answers about. Nothing is run on the caller's say.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Protocol

from pydantic import BaseModel, ConfigDict, Field

from ...config.policy import Principal
from ...tools.base import ErrorType, Tool, ToolResult
from ...tools.commands import ApprovalRequest
from ..approvals import VIA, VIA_AGENT, Approvals, ApprovalsUnavailable, Claim, HandBack, Pending, deciders_of

APPROVAL_STATUS = "approval_status"
THREAD = "mcp-serve"  # what audit records name as the place of an agent's calls and requests


class Showing(Protocol):
    """How a request reaches the people who decide it."""

    where: str  # "in Slack channel C0123", for the caller

    def place(self, request: ApprovalRequest) -> dict[str, str]:
        """Where the request will be shown, in the approvals service's terms (before it is stored)."""

    def show(self, pending: Pending) -> None:
        """Put the stored request in front of its approvers. Raises ShowFailed."""


class ShowFailed(Exception):
    """The request could not be shown to anyone (Slack refused it, no terminal)."""


class Desk:
    def __init__(self, approvals: Approvals, showing: Showing) -> None:
        self.approvals = approvals
        self.showing = showing

    def ask(self, request: ApprovalRequest, caller: Principal) -> ToolResult:
        """Store and show `request`; what the caller is told (needs_approval, the request id)."""
        place = {**self.showing.place(request), "thread": THREAD, VIA: VIA_AGENT}
        why = f"asked by an agent through opsbot mcp-serve (mcp:{caller.user})"
        try:
            pending = self.approvals.ask_command(request, place, HandBack.nobody, why)
            self.showing.show(pending)
        except (ApprovalsUnavailable, ShowFailed) as exc:
            return ToolResult.failure(
                ErrorType.unavailable, f"{request.command} was not run and could not be put to an approver: {exc}"
            )
        deciders = deciders_of(self.approvals.policy, pending)
        who = deciders.describe() if deciders is not None else "the policy's approvers"
        return ToolResult.failure(
            ErrorType.needs_approval,
            f"{request.command} changes things: it waits for approval by {who} {self.showing.where}; "
            f"nothing ran. Request {pending.id}, valid until {pending.expires_at:%H:%M} UTC.",
            hint=f"call {APPROVAL_STATUS} with request {pending.id} to learn the outcome; do not ask again",
            data={"request": pending.id, "waits_for": who, "where": self.showing.where, "action": pending.argv_shown},
        )

    def status(self, request_id: str, caller: Principal) -> ToolResult:
        pending = self.approvals.get(request_id)
        # Another caller's request is not even said to exist.
        if pending is None or not pending.asked_by_agent or not caller.same_person(pending.requested_by):
            return ToolResult.failure(
                ErrorType.not_found, f"no request {request_id} of yours is known", hint="ask for the write again"
            )
        return ToolResult.success(_status(pending, self.approvals.decision(request_id), self.showing.where))


def _status(pending: Pending, claim: Claim | None, where: str) -> dict[str, str]:
    said = {"request": pending.id, "action": pending.argv_shown}
    if claim is None and datetime.now(UTC) >= pending.expires_at:
        return {**said, "status": "expired"}  # nobody decided in time: nothing ran
    if claim is None:
        until = f"{pending.expires_at:%Y-%m-%dT%H:%M:%SZ}"
        return {**said, "status": "waiting", "until": until, "where": where}
    by = {"by": claim.by} if claim.by else {}
    return {**said, "status": claim.verdict.value, **by}


class StatusArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    request: str = Field(min_length=1, max_length=64, description="the request id a write was answered with")


def status_tool(desk: Desk) -> Tool[StatusArgs]:
    """`approval_status`: whether a write this caller asked for was approved, denied or expired."""

    def run(args: StatusArgs, principal: Principal | None) -> ToolResult:
        if principal is None:
            return ToolResult.failure(ErrorType.not_found, f"no request {args.request} of yours is known")
        return desk.status(args.request, principal)

    return Tool(
        name=APPROVAL_STATUS,
        description="Whether a write you asked for (answered needs_approval with a request id) was approved by a "
        "person and ran, was denied, or expired; `waiting` while nobody has decided.",
        args_model=StatusArgs,
        run=run,
    )
