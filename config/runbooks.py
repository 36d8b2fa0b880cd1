"""Loading the runbook files of `policy.runbooks_dir` and checking them against the policy: the
commands, services, config roots and MCP tools they use must exist (an MCP tool listed for its
server), and a write command's parameters, or a write MCP tool's arguments, must not come from
step outputs. Every problem is reported with its file and line."""

from __future__ import annotations

from pathlib import Path

from .check import ConfigError, Located, Problem, load_yaml_model
from .policy import Policy, Runbook, Template, ToolStep, template_of


def load_runbooks(directory: Path, policy: Policy) -> dict[str, Runbook]:
    """Every `*.yaml`/`*.yml` file of `directory`, one runbook each; `ConfigError` lists all problems."""
    if not directory.is_dir():
        raise ConfigError(directory, [Problem(str(directory), "policy.runbooks_dir", "is not a directory")])
    runbooks: dict[str, Runbook] = {}
    problems: list[Problem] = []
    files = sorted(p for p in directory.iterdir() if p.suffix in (".yaml", ".yml") and p.is_file())
    for path in files:
        try:
            runbook = load_yaml_model(path, Runbook, lambda r: policy_problems(r, policy))
        except ConfigError as exc:
            problems += exc.problems
            continue
        if runbook.id in runbooks:
            problems.append(Problem(f"{path}:1", "id", f"runbook id {runbook.id!r} is used by another file too"))
        runbooks[runbook.id] = runbook
    if problems:
        raise ConfigError(directory, problems)
    return runbooks


def policy_problems(runbook: Runbook, policy: Policy) -> list[Located]:
    """What in `runbook` the policy does not provide, at the key path of each problem."""
    found: list[Located] = []
    for index, step in enumerate(runbook.steps):
        if isinstance(step, ToolStep):
            found += [(("steps", index, *key), message) for key, message in _step_problems(step, runbook, policy)]
    return found


def _step_problems(step: ToolStep, runbook: Runbook, policy: Policy) -> list[tuple[tuple[str, ...], str]]:
    """Problems of a tool step, at key paths within the step."""
    if step.mcp is not None:
        return _mcp_problems(step, *step.mcp, policy)
    return [(("args", *key), message) for key, message in _tool_problems(step, runbook, policy)]


def _mcp_problems(step: ToolStep, server: str, tool: str, policy: Policy) -> list[tuple[tuple[str, ...], str]]:
    """An MCP server's tool: the policy must list it (the server's schema is known only to a
    running server: check-config and the run check the arguments against it)."""
    spec = policy.mcp.get(server)
    if spec is None:
        return [(("tool",), f"MCP server {server!r} is not declared (declared: {_names(dict(policy.mcp))})")]
    allowed = spec.tools.get(tool)
    if allowed is None:
        return [
            (
                ("tool",),
                f"MCP server {server} has no tool {tool!r} in the policy's list (listed: {_names(dict(spec.tools))})",
            )
        ]
    if allowed.risk != "write":
        return []
    return [
        (("args", key), "a write tool's argument cannot come from a step's output; use a runbook parameter")
        for key, value in step.args.items()
        if any(template.namespace == "steps" for template in _templates_in(value))
    ]


def _templates_in(value: object) -> list[Template]:
    """Every template in `value`, at any depth."""
    if isinstance(value, dict):
        return [t for item in value.values() for t in _templates_in(item)]
    if isinstance(value, list):
        return [t for item in value for t in _templates_in(item)]
    template = template_of(value)
    return [template] if template is not None else []


def _tool_problems(step: ToolStep, runbook: Runbook, policy: Policy) -> list[tuple[tuple[str, ...], str]]:
    args = step.args
    if step.tool == "run_command":
        name = args.get("command")
        if not isinstance(name, str) or template_of(name) is not None:
            return [(("command",), "a runbook names its command literally")]
        spec = policy.commands.get(name)
        if spec is None:
            return [(("command",), f"command {name!r} is not declared (declared: {_names(dict(policy.commands))})")]
        params = args.get("params") or {}
        if not isinstance(params, dict):
            return [(("params",), "params is a mapping of parameter names to values")]
        found: list[tuple[tuple[str, ...], str]] = [
            (("params", key), f"{name!r} has no parameter {key!r}") for key in params if key not in spec.params
        ]
        found += [
            (("params",), f"{name!r} needs parameter {key!r} ({param.expects()}), which has no default")
            for key, param in spec.params.items()
            if param.required and key not in params
        ]
        if spec.risk == "write":
            found += [
                (
                    ("params", key),
                    "a write command's parameter cannot come from a step's output; use a runbook parameter",
                )
                for key, value in params.items()
                if (template := template_of(value)) is not None and template.namespace == "steps"
            ]
        return found
    if step.tool not in ("query_logs", "read_config"):
        return []
    known: dict[str, object] = dict(policy.services) if step.tool == "query_logs" else dict(policy.config_files)
    key = "service" if step.tool == "query_logs" else "name"
    value = args.get(key)
    if isinstance(value, str) and template_of(value) is None and value not in known:
        return [((key,), f"{value!r} is not declared (declared: {_names(known)})")]
    return [((key,), problem) for problem in _templated_names(value, runbook, known)]


def _templated_names(value: object, runbook: Runbook, known: dict[str, object]) -> list[str]:
    """A service or config root named by a runbook parameter: the values its type admits (an
    enum's, a default) must be declared, or the step fails for them."""
    template = template_of(value)
    param = runbook.params.get(template.path) if template is not None and template.namespace == "params" else None
    if template is None or param is None:
        return []
    admitted = [*(param.enum or ()), *([str(param.default)] if param.default is not None else [])]
    return [
        f"parameter {template.path!r} may be {name!r}, which is not declared (declared: {_names(known)})"
        for name in dict.fromkeys(admitted)
        if name not in known
    ]


def _names(known: dict[str, object]) -> str:
    return ", ".join(sorted(known)) or "none"
