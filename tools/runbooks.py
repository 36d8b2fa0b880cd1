"""list_runbooks and read_runbook: the operator's reviewed runbooks, for the model to follow.

The model reads a runbook and runs its read steps itself with the ordinary tools; running a
runbook as a whole (and anything in it that writes) happens only through opsbot's runbook
machinery, where a write waits for a person's approval.
"""

from __future__ import annotations

import textwrap
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field

from ..config.policy import Policy, Principal, Runbook
from .base import Tool, ToolResult
from .services import NoArgs, shown_entries
from .text import plural


class ReadRunbookArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="runbook id, as listed by list_runbooks")


def list_runbooks_tool(policy: Policy) -> Tool[NoArgs]:
    def run(_: NoArgs, principal: Principal | None) -> ToolResult:
        return ToolResult.success(
            {"runbooks": [{"name": r.id, "about": r.description} for r in sorted_runbooks(policy)]}
        )

    return Tool(
        name="list_runbooks",
        description="The operator's reviewed runbooks (step-by-step diagnostics for known problems), by name.",
        args_model=NoArgs,
        run=run,
        summarize=lambda data: plural(len(data["runbooks"]), "runbook"),
        show=lambda data: shown_entries(data["runbooks"]),
    )


def read_runbook_tool(policy: Policy) -> Tool[ReadRunbookArgs]:
    def run(args: ReadRunbookArgs, principal: Principal | None) -> ToolResult:
        runbook = policy.runbooks.get(args.name)
        if runbook is None:
            return ToolResult.unknown("runbook", args.name, policy.runbooks)
        return ToolResult.success(describe(runbook))

    return Tool(
        name="read_runbook",
        description=(
            "One runbook: its parameters and steps. Follow its read steps with the ordinary tools when it "
            "matches the problem; say which steps would change things instead of trying them."
        ),
        args_model=ReadRunbookArgs,
        run=run,
        summarize=lambda data: f"{data.get('name', 'runbook')}: {plural(len(data.get('steps', [])), 'step')}",
        show=_show,
    )


def _show(data: dict[str, Any]) -> str:
    """A runbook for a person who named it: what it is for, what it takes, its steps as written."""
    params = [{"name": p["name"], "about": p["accepts"]} for p in data["params"]]
    takes = f"params:\n{shown_entries(params, indent='  ')}" if params else "params: none"
    steps = yaml.safe_dump(data["steps"], sort_keys=False, allow_unicode=True, width=100).rstrip("\n")
    return "\n".join([data["about"], takes, "steps:", textwrap.indent(steps, "  ")])


def sorted_runbooks(policy: Policy) -> list[Runbook]:
    return [policy.runbooks[name] for name in sorted(policy.runbooks)]


def describe(runbook: Runbook) -> dict[str, Any]:
    """A runbook as plain data: parameters with what they accept, steps as written."""
    return {
        "name": runbook.id,
        "about": runbook.description,
        "params": [{"name": name, "accepts": param.expects()} for name, param in runbook.params.items()],
        "steps": [step.model_dump(mode="json", exclude_defaults=True) for step in runbook.steps],
    }
