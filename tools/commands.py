"""run_command: one of the operator's declared commands, by name, with typed parameters.

The model picks a command and gives parameter values; it never sends a command line. Each value is
checked against its parameter (config/policy/commands.py has the template rules) and becomes
exactly one argv element; the argv runs through tools/runner.py (no shell, no stdin, minimal
environment, process group killed whole, output capped).

Order of checks, each answered with a result the model can act on: unknown command (`not_found`,
listing the commands), who is asking (`denied`, naming what is missing), unknown, missing or
refused parameters (`invalid_args`, saying what each parameter accepts), a missing executable
(`unavailable`). A `risk: write` command is then not run: the result is `needs_approval` with an
`ApprovalRequest` in `data`, and only `run_approved`, called by a front end once a person has
approved, runs it. `run_approved` is not a tool, so the model cannot approve its own requests.
An approval is bound to everything that decides how the command runs (`Prepared.digest`: argv,
environment, user, limits, timeout, output cap, working directory): a policy change to any of
them between the request and the approval refuses the run.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import shlex
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr

from ..config.policy import Access, Command, Policy, Principal, check_values
from .alertmanager import SilenceRequest
from .base import ErrorType, Tool, ToolResult
from .mcp import McpWrite
from .runner import WORKING_DIRECTORY, Sandbox, as_tool_result, brief, run, shown, which

ParamValue = StrictStr | StrictInt


class RunCommandArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    command: str = Field(description="command name, as listed by list_services")
    params: dict[str, ParamValue] = Field(
        default_factory=dict, description="values for the command's parameters, by name, as listed by list_services"
    )


class ApprovalRequest(BaseModel):
    """A write someone asked for, exactly as it would happen: what a person approves. A write
    command (its argv), a silence (`silence`) or an MCP tool's call (`mcp`); for the last two
    `command` is the tool that asked for it and `argv` is empty. tools/writes.py checks and runs each."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(default_factory=lambda: uuid.uuid4().hex)
    command: str
    description: str
    params: dict[str, str] = Field(description="every parameter's value as checked, defaults included")
    argv: tuple[str, ...] = Field(description="the resolved argv that will run, executable first")
    digest: str = Field(description="of everything that decides how it runs (Prepared.digest)")
    requested_by: Principal | None
    created_at: datetime
    expires_at: datetime
    silence: SilenceRequest | None = Field(default=None, description="an Alertmanager silence, not a command")
    mcp: McpWrite | None = Field(default=None, description="a call of an MCP server's write tool, not a command")

    @property
    def action(self) -> str:
        """What happens once approved, in one line: the command line, or the silence."""
        if self.mcp is not None:
            return self.mcp.shown()
        return self.silence.shown() if self.silence is not None else shlex.join(self.argv)


@dataclass(frozen=True)
class Prepared:
    """A command whose parameters passed every check: what would run, and how."""

    name: str
    spec: Command
    params: dict[str, str]
    argv: tuple[str, ...]

    def sandbox(self) -> Sandbox:
        limits = self.spec.limits
        return Sandbox(
            timeout_s=self.spec.timeout_s,
            max_output_bytes=self.spec.max_output_bytes,
            env=self.spec.env,
            cpu_s=limits.cpu_s if limits else None,
            memory_bytes=int(limits.memory_bytes) if limits and limits.memory_bytes else None,
            run_as=self.spec.run_as,
        )

    def digest(self) -> str:
        """A hash of everything that decides how the command runs: the argv and the whole sandbox
        (environment, user, limits, timeout, output cap) and the working directory."""
        box = self.sandbox()
        sandbox = {f.name: getattr(box, f.name) for f in dataclasses.fields(box)}
        sandbox["env"] = dict(box.env)
        text = json.dumps({"argv": self.argv, "sandbox": sandbox, "cwd": WORKING_DIRECTORY}, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()

    def execute(self) -> ToolResult:
        return as_tool_result(run(self.argv, self.sandbox()), extra={"command": self.name, "argv": list(self.argv)})

    def approval_request(self, principal: Principal | None, now: datetime | None = None) -> ApprovalRequest:
        created = now or datetime.now(UTC)
        return ApprovalRequest(
            command=self.name,
            description=self.spec.description,
            params=self.params,
            argv=self.argv,
            digest=self.digest(),
            requested_by=principal,
            created_at=created,
            expires_at=created + timedelta(seconds=self.spec.approval_ttl_s),
        )


class CommandBook:
    """The policy's commands with their executables resolved, once, when the book is made: a
    later change of PATH or of the working directory cannot swap a binary in."""

    def __init__(self, policy: Policy) -> None:
        self.commands = policy.commands
        self.executables = {name: which(spec.argv[0]) for name, spec in policy.commands.items()}

    def prepare(self, name: str, params: Mapping[str, object], principal: Principal | None) -> Prepared | ToolResult:
        spec = self.commands.get(name)
        if spec is None:
            return ToolResult.unknown("command", name, self.commands)
        if not spec.access.allows(principal):
            return _denied(f"run {name!r}", spec.access, principal)
        checked = check_params(name, spec, params)
        if isinstance(checked, ToolResult):
            return checked
        executable = self.executables[name]
        if executable is None:
            return ToolResult.failure(
                ErrorType.unavailable,
                f"{spec.argv[0]!r}, the program of command {name!r}, is not installed on the opsbot host",
                hint="tell the user; another command may show the same thing",
            )
        return Prepared(name, spec, checked, render_argv(spec, executable, checked))


# Killing a process group and reaping it takes a moment after the command's own timeout.
_REAP_GRACE_S = 5.0


def run_command_tool(policy: Policy) -> Tool[RunCommandArgs]:
    book = CommandBook(policy)

    def run_one(args: RunCommandArgs, principal: Principal | None) -> ToolResult:
        prepared = book.prepare(args.command, args.params, principal)
        if isinstance(prepared, ToolResult):
            return prepared
        if prepared.spec.risk == "write":
            return _needs_approval(prepared, principal)
        return prepared.execute()

    return Tool(
        name="run_command",
        description=(
            "Run one allowlisted diagnostic command by name, with values for its parameters, and return "
            "its exit code and output. list_services shows the commands and what each parameter accepts."
        ),
        args_model=RunCommandArgs,
        run=run_one,
        summarize=brief,
        show=shown,
        timeout_s=max((spec.timeout_s for spec in policy.commands.values()), default=0) + _REAP_GRACE_S,
    )


def run_approved(
    policy: Policy, request: ApprovalRequest, approver: Principal, now: datetime | None = None
) -> ToolResult:
    """Run a write command a person approved: everything is checked again against `policy` as it
    is now, and exactly the approved argv runs, or nothing does. Single use is the caller's part:
    claim the request id atomically before calling this."""
    checked = check_approval(policy, request, approver, now)
    return checked if isinstance(checked, ToolResult) else checked.execute()


def check_approval(
    policy: Policy, request: ApprovalRequest, approver: Principal, now: datetime | None = None
) -> Prepared | ToolResult:
    """What would run if `approver` approved `request` now, or why they may not: the same checks
    as `run_approved`, without running anything (a refused click must not use up the request)."""
    prepared = CommandBook(policy).prepare(request.command, request.params, request.requested_by)
    if isinstance(prepared, ToolResult):
        return prepared
    refusal = _approval_refusal(prepared, request, approver, now or datetime.now(UTC))
    return refusal if refusal is not None else prepared


def check_params(name: str, spec: Command, given: Mapping[str, object]) -> dict[str, str] | ToolResult:
    """Every parameter's value as the argv element it becomes, or `invalid_args` naming every problem."""
    values, problems = check_values(spec.params, given)
    if problems:
        message = f"command {name!r}: {'; '.join(problems)}"
        return ToolResult.failure(ErrorType.invalid_args, message, hint=_expected(spec))
    return values


def render_argv(spec: Command, executable: str, values: Mapping[str, str]) -> tuple[str, ...]:
    """The template with each slot replaced by its value, as one element, and the resolved executable."""
    argv = [executable, *spec.argv[1:]]
    for slot in spec.slots():
        argv[slot.position] = slot.prefix + values[slot.name]
    return tuple(argv)


def _expected(spec: Command) -> str:
    if not spec.params:
        return "this command takes no parameters; call it with the command name alone"
    listed = "; ".join(f"{name}: {param.expects()}" for name, param in spec.params.items())
    return f"parameters: {listed}"


def _needs_approval(prepared: Prepared, principal: Principal | None) -> ToolResult:
    request = prepared.approval_request(principal)
    return ToolResult.failure(
        ErrorType.needs_approval,
        f"{prepared.name!r} changes things, so it does not run until a person approves it: {shlex.join(request.argv)}",
        hint="tell the user it is waiting for approval (request " + request.id + "); do not call it again",
        data=request,
    )


def _approval_refusal(
    prepared: Prepared, request: ApprovalRequest, approver: Principal, now: datetime
) -> ToolResult | None:
    spec = prepared.spec
    if prepared.argv != request.argv:
        return ToolResult.failure(
            ErrorType.denied,
            f"the approved argv differs from what {request.command!r} runs with these parameters now; nothing was run",
            hint="ask for the command again and approve the new request",
        )
    if prepared.digest() != request.digest:
        return ToolResult.failure(
            ErrorType.denied,
            f"how {request.command!r} runs (its environment, user, limits or timeout) changed in the policy "
            "since it was requested; nothing was run",
            hint="ask for the command again and approve the new request",
        )
    return approver_refusal(
        request, approver, now, ttl_s=spec.approval_ttl_s, self_approval=spec.self_approval, deciders=spec.deciders
    )


def approver_refusal(
    request: ApprovalRequest,
    approver: Principal,
    now: datetime,
    *,
    ttl_s: float,
    self_approval: bool,
    deciders: Access,
) -> ToolResult | None:
    """Why `approver` may not approve `request` now, by the rules every write shares (its time to
    live, self-approval, who decides, each as the policy says now), or None."""
    expires = min(request.expires_at, request.created_at + timedelta(seconds=ttl_s))
    if now >= expires:
        return ToolResult.failure(
            ErrorType.denied, f"the approval request expired at {expires.isoformat()}", hint="ask for it again"
        )
    if not self_approval and approver.same_person(request.requested_by):
        return ToolResult.failure(
            ErrorType.denied,
            "a request cannot be approved by the person who asked for it",
            hint="ask another allowed approver",
        )
    if not deciders.allows(approver):
        return _denied(f"approve {request.command!r}", deciders, approver)
    return None


def _denied(action: str, access: Access, principal: Principal | None) -> ToolResult:
    return ToolResult.failure(
        ErrorType.denied,
        f"you may not {action}: {'; '.join(access.missing(principal))}",
        hint="tell the user who may do it; do not try other ways to run it",
    )
