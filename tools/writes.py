"""The writes a person approves, taken one way: a `risk: write` command (tools/commands.py), an
Alertmanager silence (tools/alertmanager) or a call of an MCP server's `risk: write` tool
(tools/mcp). Each is an `ApprovalRequest`; `check_approval`,
`run_approved`, `deciders` and `show_done` take either, so the approvals service (bot/approvals)
has one way a decision becomes something done, and checks it again against the policy as it is
when the decision comes.

create_silence is the model's way to ask for a silence: checked (tools/alertmanager/silences.py),
then answered `needs_approval` with the request; nothing is created until a person approves. An
MCP write tool's call, checked by tools/mcp (access, the server's schema), is handed to
`mcp_needs_approval` the same way, and called once, on the process's hub, when approved.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from ..config.policy import Access, Policy, Principal
from .alertmanager import (
    CreateSilenceArgs,
    SilenceRequest,
    create_silence,
    show_silence,
    silence_refusal,
    silence_request,
)
from .base import ErrorType, Tool, ToolResult
from .commands import ApprovalRequest, Prepared, approver_refusal
from .commands import check_approval as check_command
from .http import described
from .mcp import McpWrite, call_approved, shared_hub
from .runner import shown

CREATE_SILENCE = "create_silence"


def create_silence_tool(policy: Policy) -> Tool[CreateSilenceArgs]:
    def run(args: CreateSilenceArgs, principal: Principal | None) -> ToolResult:
        silence = silence_request(policy, args, principal)
        return silence if isinstance(silence, ToolResult) else _needs_approval(policy, silence, principal)

    return Tool(
        name=CREATE_SILENCE,
        description=(
            "Ask for a silence on an Alertmanager: the alerts matching every matcher stop notifying for the "
            "duration. A person must approve it before it exists; at least one matcher must be name=value. "
            f"Alertmanagers: {described(policy.alertmanagers)}."
        ),
        args_model=CreateSilenceArgs,
        run=run,
    )


def silence_approval(
    policy: Policy, silence: SilenceRequest, principal: Principal | None, now: datetime | None = None
) -> ApprovalRequest:
    """The request a person approves for `silence`."""
    created = now or datetime.now(UTC)
    ttl = policy.alertmanagers[silence.source].silences.approval_ttl_s
    return ApprovalRequest(
        command=CREATE_SILENCE,
        description=f"a silence on Alertmanager {silence.source}",
        params={
            "source": silence.source,
            "matchers": ", ".join(m.shown() for m in silence.matchers),
            "duration": f"{silence.duration_s:g}s",
            "comment": silence.comment,
        },
        argv=(),
        digest=silence.digest(),
        requested_by=principal,
        created_at=created,
        expires_at=created + timedelta(seconds=ttl),
        silence=silence,
    )


def mcp_needs_approval(policy: Policy, write: McpWrite, principal: Principal | None) -> ToolResult:
    """A checked call of an MCP write tool, answered with the request a person approves."""
    spec = policy.mcp[write.server]
    created = datetime.now(UTC)
    request = ApprovalRequest(
        command=write.name,
        description=f"tool {write.tool} of MCP server {write.server}",
        params={key: json.dumps(value, ensure_ascii=False) for key, value in write.arguments.items()},
        argv=(),
        digest=write.digest(spec),
        requested_by=principal,
        created_at=created,
        expires_at=created + timedelta(seconds=spec.tools[write.tool].approval_ttl_s),
        mcp=write,
    )
    return ToolResult.failure(
        ErrorType.needs_approval,
        f"{write.name} changes things, so it is not called until a person approves it: {write.shown()}",
        hint="tell the user it is waiting for approval (request " + request.id + "); do not call it again",
        data=request,
    )


def check_approval(
    policy: Policy, request: ApprovalRequest, approver: Principal, now: datetime | None = None
) -> Prepared | SilenceRequest | McpWrite | ToolResult:
    """What would happen if `approver` approved `request` now, or why they may not, without doing
    anything (a refused click must not use up the request)."""
    if request.mcp is not None:
        return _check_mcp(policy, request, request.mcp, approver, now or datetime.now(UTC))
    silence = request.silence
    if silence is None:
        return check_command(policy, request, approver, now)
    refusal = silence_refusal(policy, silence, request.requested_by)
    if refusal is not None:
        return refusal
    if silence.digest() != request.digest:
        return ToolResult.failure(
            ErrorType.denied,
            "the silence differs from the one asked for; nothing was created",
            hint="ask for the silence again and approve the new request",
        )
    source = policy.alertmanagers[silence.source]
    refusal = approver_refusal(
        request,
        approver,
        now or datetime.now(UTC),
        ttl_s=source.silences.approval_ttl_s,
        self_approval=source.silences.self_approval,
        deciders=source.deciders,
    )
    return refusal if refusal is not None else silence


def run_approved(
    policy: Policy,
    request: ApprovalRequest,
    approver: Principal,
    now: datetime | None = None,
) -> ToolResult:
    """Do the write a person approved, checked again against `policy` as it is now: exactly the
    approved argv runs, or exactly the approved silence is created, or nothing happens. Single use
    is the caller's part: claim the request id atomically before calling this."""
    at = now or datetime.now(UTC)
    checked = check_approval(policy, request, approver, at)
    if isinstance(checked, ToolResult):
        return checked
    if isinstance(checked, SilenceRequest):
        asker = request.requested_by.user if request.requested_by is not None else "someone"
        return create_silence(policy, checked, f"{asker} via opsbot, approved by {approver.user}", at)
    if isinstance(checked, McpWrite):
        return call_approved(checked, policy.mcp[checked.server], shared_hub(policy.mcp))
    return checked.execute()


def deciders(policy: Policy, request: ApprovalRequest) -> Access | None:
    """Who may decide `request` (None: what it would write to is gone from the policy)."""
    if request.silence is not None:
        source = policy.alertmanagers.get(request.silence.source)
        return source.deciders if source is not None else None
    if request.mcp is not None:
        server = policy.mcp.get(request.mcp.server)
        tool = server.tools.get(request.mcp.tool) if server is not None else None
        return tool.deciders if tool is not None else None
    spec = policy.commands.get(request.command)
    return spec.deciders if spec is not None else None


def show_done(data: Mapping[str, Any]) -> str:
    """An approved write's result, for people: a command's output as `run` shows it, the silence,
    or an MCP tool's text."""
    if "silence_id" in data:
        return show_silence(data)
    return shown(data) if "exit_code" in data else str(data.get("text", "")) or "(no text)"


def _check_mcp(
    policy: Policy, request: ApprovalRequest, write: McpWrite, approver: Principal, now: datetime
) -> McpWrite | ToolResult:
    """The MCP call as approved, if the policy as it is now still allows it: the tool listed as a
    write, the asker still allowed, the server unchanged (the digest), and the approver's rules."""
    server = policy.mcp.get(write.server)
    tool = server.tools.get(write.tool) if server is not None else None
    if server is None or tool is None or tool.risk != "write":
        return ToolResult.failure(
            ErrorType.denied,
            f"{write.name} is no longer a write tool of the policy; nothing was called",
            hint="ask for it again if it is still wanted",
        )
    if not tool.access.allows(request.requested_by):
        return ToolResult.failure(
            ErrorType.denied, f"the asker may no longer call {write.name}; nothing was called", hint="tell the user"
        )
    if write.digest(server) != request.digest:
        return ToolResult.failure(
            ErrorType.denied,
            f"MCP server {write.server} is defined differently in the policy since the call was asked for; "
            "nothing was called",
            hint="ask for the call again and approve the new request",
        )
    refusal = approver_refusal(
        request, approver, now, ttl_s=tool.approval_ttl_s, self_approval=tool.self_approval, deciders=tool.deciders
    )
    return refusal if refusal is not None else write


def _needs_approval(policy: Policy, silence: SilenceRequest, principal: Principal | None) -> ToolResult:
    request = silence_approval(policy, silence, principal)
    return ToolResult.failure(
        ErrorType.needs_approval,
        f"a silence changes who gets paged, so it is not created until a person approves it: {silence.shown()}",
        hint="tell the user it is waiting for approval (request " + request.id + "); do not call it again",
        data=request,
    )
