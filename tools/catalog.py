"""The ops tools an operator's policy provides, and the runbook steps checked against their arguments."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from pydantic import BaseModel, ValidationError

from ..config.policy import Policy, ToolStep, template_of
from ..config.wording import worded
from .alertmanager import query_alerts_tool
from .base import Tool
from .commands import run_command_tool
from .configs import read_config_tool
from .logs import query_logs_tool
from .mcp import argument_problems, typed
from .metrics import find_metrics_tool, query_metrics_tool
from .runbooks import list_runbooks_tool, read_runbook_tool
from .services import list_services_tool
from .writes import create_silence_tool


def ops_tools(policy: Policy) -> list[Tool[Any]]:
    runbooks: list[Tool[Any]] = [list_runbooks_tool(policy), read_runbook_tool(policy)] if policy.runbooks else []
    metrics: list[Tool[Any]] = [query_metrics_tool(policy), find_metrics_tool(policy)] if policy.metrics else []
    alerts: list[Tool[Any]] = [query_alerts_tool(policy), create_silence_tool(policy)] if policy.alertmanagers else []
    return [
        list_services_tool(policy),
        query_logs_tool(policy),
        run_command_tool(policy),
        read_config_tool(policy),
        *metrics,
        *alerts,
        *runbooks,
    ]


def runbook_arg_problems(policy: Policy, mcp_schemas: Mapping[str, dict[str, Any]] | None = None) -> list[str]:
    """Every tool step's literal arguments that its tool's argument model would refuse, one line each.

    Loading a runbook checks it against the policy only (config/ may not import tools/), so a
    misspelt key or a wrongly typed literal would otherwise load cleanly and fail only when an
    alert runs the step. Templated values are left out: what fills them is known only at run time,
    and a run_command parameter filled by one is checked by that command's own parameter types then.

    An MCP tool's arguments are checked against its server's input schema, by offered name in
    `mcp_schemas`, when the caller has the servers' listings (check-config starts them); otherwise
    only when the step runs (that the policy lists the tool is checked as the runbook loads).
    """
    models = {tool.name: tool.args_model for tool in ops_tools(policy)}
    schemas = mcp_schemas or {}
    problems: list[str] = []
    for name in sorted(policy.runbooks):
        for step in policy.runbooks[name].steps:
            if not isinstance(step, ToolStep):
                continue
            where = f"runbook {name}, step {step.id}"
            if step.mcp is not None:
                schema = schemas.get(step.tool)
                problems += [f"{where}: args: {problem}" for problem in _schema_problems(schema, step.args)]
                continue
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
        # Only the run can supply a templated value, so its absence here is expected.
        errors = [e for e in exc.errors() if not (e["type"] == "missing" and tuple(e["loc"]) in templated)]
        return [f"{'.'.join(('args', *(str(part) for part in w.path)))}: {w.message}" for w in worded(model, errors)]
    return []


def _schema_problems(schema: dict[str, Any] | None, args: dict[str, Any]) -> list[str]:
    """A step's literal arguments against an MCP tool's input schema (typed as a run types them);
    a templated argument's absence is no problem."""
    if schema is None:
        return []
    literal, templated = _without_templates(args, ())
    unfilled = frozenset(str(loc[0]) for loc in templated if len(loc) == 1)
    return argument_problems(schema, typed(schema, literal), unfilled=unfilled)


class Literals(NamedTuple):
    kept: dict[str, Any]  # the arguments without their templated entries
    templated: set[tuple[str | int, ...]]  # where each templated entry was, as pydantic's `loc`


def _without_templates(value: dict[str, Any], loc: tuple[str, ...]) -> Literals:
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
    return Literals(kept, templated)
