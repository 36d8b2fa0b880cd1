"""The tools a scenario's loops call: the ops tools over its fixture, with its faults injected
and every result kept, so the report can tell whether an answer's facts came from a tool."""

from __future__ import annotations

import dataclasses
from typing import Any

from ...config.policy import Policy, Principal
from ...tools.base import ErrorType, Registry, Tool, ToolResult
from ...tools.catalog import ops_tools
from .suite import Fault

_FAULTS = {
    "timeout": (ErrorType.timeout, "{tool} did not finish within 30s", True),
    "unavailable": (ErrorType.unavailable, "{tool} could not reach its backend", True),
    "invalid_args": (ErrorType.invalid_args, "arguments do not fit {tool}", False),
}


class Watch:
    """One loop's run of one scenario: a fresh fault budget and a fresh record of results."""

    def __init__(self, policy: Policy, faults: list[Fault]) -> None:
        self.left = {index: fault.times for index, fault in enumerate(faults)}
        self.faults = faults
        self.injected = 0
        self.results: list[str] = []  # every result a tool returned, as text, for grounding
        self.registry = Registry(self._watched(tool) for tool in ops_tools(policy))

    def _watched(self, tool: Tool[Any]) -> Tool[Any]:
        def run(args: Any, principal: Principal | None) -> Any:
            fault = self._fault(tool.name)
            if fault is not None:
                return fault
            result = tool.run(args, principal)
            self.results.append(result.render() if isinstance(result, ToolResult) else str(result))
            return result

        return dataclasses.replace(tool, run=run)

    def _fault(self, tool: str) -> ToolResult | None:
        for index, fault in enumerate(self.faults):
            if fault.tool == tool and self.left[index] > 0:
                self.left[index] -= 1
                self.injected += 1
                kind, message, retryable = _FAULTS[fault.kind]
                return ToolResult.failure(kind, fault.message or message.format(tool=tool), retryable=retryable)
        return None
