"""list_runbooks and read_runbook: the operator's reviewed runbooks, for the model to follow.

The model reads a runbook and runs its read steps itself with the ordinary tools; running a
runbook as a whole (and anything in it that writes) happens only through opsbot's runbook
machinery, where a write waits for a person's approval.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from config.policy import Policy, Principal
from config.policy_runbooks import Runbook, ToolStep, template_of
from tools.base import Tool, ToolResult
from tools.services import NoArgs


class ReadRunbookArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="runbook id, as listed by list_runbooks")


def list_runbooks_tool(policy: Policy) -> Tool:
    def run(_: NoArgs, principal: Principal | None) -> ToolResult:
        return ToolResult.success(
            {"runbooks": [{"name": r.id, "about": r.description} for r in sorted_runbooks(policy)]}
        )

    return Tool(
        name="list_runbooks",
        description="The operator's reviewed runbooks (step-by-step diagnostics for known problems), by name.",
        args_model=NoArgs,
        run=run,  # type: ignore[arg-type]
    )


def read_runbook_tool(policy: Policy) -> Tool:
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
        run=run,  # type: ignore[arg-type]
    )


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


def runbook_arg_problems(policy: Policy) -> list[str]:
    """Every tool step's literal arguments that its tool's argument model would refuse, one line each.

    Loading a runbook checks it against the policy only (config/ may not import tools/), so a
    misspelt key or a wrongly typed literal would otherwise load cleanly and fail only when an
    alert runs the step. Templated values are left out: what fills them is known only at run time,
    and a run_command parameter filled by one is checked by that command's own parameter types then.
    """
    # tools.catalog imports this module for list_runbooks and read_runbook.
    from tools.catalog import ops_tools

    models = {tool.name: tool.args_model for tool in ops_tools(policy)}
    problems: list[str] = []
    for name in sorted(policy.runbooks):
        for step in policy.runbooks[name].steps:
            if not isinstance(step, ToolStep):
                continue
            where = f"runbook {name}, step {step.id}"
            model = models.get(step.tool)
            if model is None:
                problems.append(f"{where}: tool {step.tool!r} is not available")
                continue
            problems += [f"{where}: {problem}" for problem in _arg_problems(model, step.args)]
    return problems


def _arg_problems(model: type[BaseModel], args: dict[str, Any]) -> list[str]:
    literal, templated = _without_templates(args, ())
    try:
        model.model_validate(literal)
    except ValidationError as exc:
        return [
            f"{'.'.join(('args', *(str(part) for part in error['loc'])))}: {error['msg']}"
            for error in exc.errors()
            # Only the run can supply a templated value, so its absence here is expected.
            if not (error["type"] == "missing" and tuple(error["loc"]) in templated)
        ]
    return []


def _without_templates(
    value: dict[str, Any], loc: tuple[str, ...]
) -> tuple[dict[str, Any], set[tuple[str | int, ...]]]:
    """`value` with every templated entry removed, at any depth of mappings (run_command's are in
    `params`), and where each one was. A mapping keeps its place even when emptied, so the shape
    around the templates is still checked."""
    kept: dict[str, Any] = {}
    templated: set[tuple[str | int, ...]] = set()
    for key, item in value.items():
        if template_of(item) is not None:
            templated.add((*loc, key))
        elif isinstance(item, dict):
            kept[key], inner = _without_templates(item, (*loc, key))
            templated |= inner
        else:
            kept[key] = item
    return kept, templated
