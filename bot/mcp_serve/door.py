"""The door other agents come through: opsbot's tools (the registry bot/build.py builds, the policy's
MCP tools among them) for one caller at a time, under the policy, in plain synchronous calls.

- `listed`: the tools the caller may use (access.py), with their JSON schemas.
- `call`: the executor runs it as it runs the model's calls (arguments parsed and validated, the
  tool's own access check for this caller, timeout, retries, the result redacted and made inert);
  a write answered `needs_approval` is handed to the desk (desk.py), never run; the result is cut
  to MAX_RESULT_CHARS; one `tool_call` audit record names the caller and the place `mcp-serve`.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from ...config.policy import Policy, Principal
from ...config.settings import LoopLimits
from ...tools.base import ErrorType, Registry, Tool, ToolResult
from ...tools.commands import ApprovalRequest
from ...tools.executor import RetryPolicy, ToolCall
from ..telemetry.audit import Audit
from ..telemetry.calls import TracedExecutor, audited
from .access import usable
from .desk import THREAD, Desk, status_tool

NO_DESK = (
    "writes are not taken here: opsbot mcp-serve has no approval channel (mcp_serve.approvals_channel with "
    "SLACK_BOT_TOKEN and REDIS_URL, or --http at a terminal), so nothing that changes things runs through it"
)
# What one call sends back at most: the caller's model has its own budget, and a tool's whole
# answer (a log query's lines) can be larger than any.
MAX_RESULT_CHARS = 16_000


class Door:
    def __init__(
        self, policy: Policy, registry: Registry, *, limits: LoopLimits, audit: Audit, desk: Desk | None
    ) -> None:
        self.policy = policy
        self.audit = audit
        self.desk = desk
        if desk is not None:
            registry.add(status_tool(desk))
        self.registry = registry
        retry = RetryPolicy(limits.tool_timeout_s, limits.tool_retries, limits.tool_retry_backoff_s)
        self.executor = TracedExecutor(registry, retry, max_parallel=1)

    def listed(self, caller: Principal) -> list[Tool[Any]]:
        """The tools `caller` may use, by name."""
        return sorted((t for t in self.registry if usable(self.policy, t.name, caller)), key=lambda t: t.name)

    def call(self, caller: Principal, name: str, arguments: dict[str, Any]) -> ToolResult:
        run = uuid.uuid4().hex
        result = self._result(caller, name, arguments, run)
        audited(self.audit, asked_by=caller, thread=THREAD, run=run, tool=name, args=arguments, status=result.status)
        return result.capped(MAX_RESULT_CHARS)

    def _result(self, caller: Principal, name: str, arguments: dict[str, Any], run: str) -> ToolResult:
        if self.registry.get(name) is None:
            # Named with the caller's own tools: the executor's hint would name every tool.
            known = ", ".join(t.name for t in self.listed(caller))
            return ToolResult.failure(
                ErrorType.unknown_tool, f"there is no tool named {name!r}", hint=f"tools: {known}"
            )
        call = ToolCall(id=run, name=name, arguments=json.dumps(arguments, ensure_ascii=False))
        result = self.executor.run_one(call, caller).result
        error = result.error
        if error is not None and error.type is ErrorType.needs_approval:
            return self._asked(result, caller)
        return result

    def _asked(self, result: ToolResult, caller: Principal) -> ToolResult:
        """A write: put to a person at the desk, or refused where there is none."""
        if self.desk is None or result.data is None:
            return ToolResult.failure(ErrorType.denied, NO_DESK, hint="ask a person to do it in Slack or opsbot chat")
        return self.desk.ask(ApprovalRequest.model_validate(result.data), caller)
