"""Runbooks: reviewed YAML files of diagnostic steps that opsbot runs when an alert fires or a
person asks (`/ops runbook run <id> k=v`). One file per runbook, under `policy.runbooks_dir`.

```yaml
id: checkout-erroring
description: checkout-api returns 5xx; look at its errors and its upstreams
params:                          # typed, as command parameters are: enum, pattern, or min/max
  service: {enum: [checkout, payments, auth], default: checkout}
  since: {pattern: "[0-9]{1,3}[mh]", default: 30m}
triggers:                        # alerts that start it; labels must all be equal
  - labels: {alertname: CheckoutErrorRate}
    params: {service: service}   # parameter <- alert label
    channel: C0123ABCD           # Slack channel for the alert thread (default: alerts.channel)
steps:
  - id: errors
    tool: query_logs             # query_logs, run_command, read_config, list_services, or <server>__<tool>
    args: {service: "{params.service}", level: ERROR, since: "{params.since}", limit: 20}
    timeout_s: 30
    retries: 1                   # for timeouts and unavailable tools
    on_failure: continue         # abort (default), continue, or the id of a step to go to
  - id: any-errors
    branch:
      - when: [{step: errors, path: data.matches, op: gt, value: 0}]
        goto: explain
    otherwise: end               # a step id, or end; default: the next step
  - id: approve-restart
    approval: {approvers: {groups: [S0ONCALL]}, timeout_s: 900, text: "Restart {params.service}?"}
  - id: restart
    tool: run_command
    args: {command: restart, params: {service: "{params.service}"}}
  - id: recent-deploys
    tool: git__git_log           # an MCP server's tool the policy lists (policy.mcp.git.tools.git_log)
    args: {repo_path: /srv/deploy, max_count: 5}   # checked against the server's input schema
  - id: explain
    explain: Summarise what the steps found and what to check next.
```

The rules, checked when the policy loads (`opsbot check-config` shows them with their lines):
- A value is a literal or exactly one template, `{params.NAME}` or `{steps.ID.data.KEY...}`; a
  template is the whole value, never part of a string. Parameters only ever come from typed
  sources: `/ops` arguments, defaults, or alert labels mapped by a trigger, each checked against
  its type. Step outputs may fill the arguments of read steps only: a `risk: write` command's
  parameters come from runbook parameters and literals, never from what a tool printed.
- `steps.ID` must name an earlier step; `goto`, `otherwise` and `on_failure` name a step or `end`.
- Commands, services and config roots must be declared in the policy, and a `run_command` step
  gives every parameter its command has no default for; a service or root named through a
  parameter (`{params.service}`) must be declared for every value the parameter admits (an
  enum's, its default). Runbooks written inside the policy file are checked by check-config.
- A `risk: write` command always waits for a person's approval before it runs (the command's own
  approvers), whether or not an `approval` step precedes it.
- An MCP tool step names a tool the policy lists for that server (`policy.mcp.<server>.tools`); a
  `risk: write` tool waits for approval like a write command, and its arguments never come from a
  step's output. Its arguments are checked against the server's input schema by check-config
  (which starts the servers) and again when the step runs; a parameter's text fills an integer,
  boolean, list or object argument as the schema types it (`"3"` -> 3).
- Conditions are declarative (`op`: eq, ne, gt, ge, lt, le, contains, empty, not_empty) on a
  step's `status` (ok, error, skipped), `error` (its error type) or `data.KEY...`; nothing is
  evaluated as code.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal, NamedTuple

from pydantic import Discriminator, Field, StringConstraints, Tag, ValidationError, field_validator, model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError

from .base import Access, Name, Strict
from .commands import Parameter, check_values
from .mcp import SEPARATOR

StepId = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9_-]{0,62}$")]
END = "end"
TOOLS = ("query_logs", "run_command", "read_config", "list_services")

TEMPLATE = re.compile(r"\{(params|steps)\.([A-Za-z0-9_.-]+)\}")
_BRACED = re.compile(r"\{[^{}]*\}")


class Template(NamedTuple):
    """`{{ params.x }}` or `{{ steps.id.field }}`: which of the two, and the rest."""

    namespace: str
    path: str


def template_of(value: object) -> Template | None:
    """(`params`|`steps`, the rest) when `value` is exactly one template, else None."""
    if isinstance(value, str) and (match := TEMPLATE.fullmatch(value)):
        return Template(match.group(1), match.group(2))
    return None


class McpStep(NamedTuple):
    server: str
    tool: str


class ToolStep(Strict):
    id: StepId
    tool: str = Field(description=f"{', '.join(TOOLS)}, or an MCP server's tool as <server>{SEPARATOR}<tool>")
    args: dict[str, Any] = Field(default_factory=dict)
    timeout_s: float = Field(default=30.0, gt=0, le=600)
    retries: int = Field(default=0, ge=0, le=5)
    on_failure: str = Field(default="abort", description="abort, continue, or a step id")

    @field_validator("tool")
    @classmethod
    def _a_tool(cls, value: str) -> str:
        server, _, tool = value.partition(SEPARATOR)
        if value not in TOOLS and not (server and tool):
            raise ValueError(f"a tool step calls {', '.join(TOOLS)}, or an MCP server's tool as <server>__<tool>")
        return value

    @property
    def mcp(self) -> McpStep | None:
        """The server and its tool, when the step calls an MCP server's tool."""
        server, _, tool = self.tool.partition(SEPARATOR)
        return McpStep(server, tool) if self.tool not in TOOLS and server and tool else None

    def templates(self) -> list[tuple[str, str]]:
        return [t for value in _values(self.args) if (t := template_of(value)) is not None]


class Condition(Strict):
    step: StepId
    path: str = Field(default="status", pattern=r"^(status|error|data(\.[A-Za-z0-9_-]+)*)$")
    op: Literal["eq", "ne", "gt", "ge", "lt", "le", "contains", "empty", "not_empty"] = "eq"
    value: str | int | float | bool | None = None

    @model_validator(mode="after")
    def _value_fits_op(self) -> Condition:
        if self.op in ("gt", "ge", "lt", "le") and (
            isinstance(self.value, bool) or not isinstance(self.value, int | float)
        ):
            raise ValueError(f"op {self.op} compares numbers: give a number as value")
        if self.op in ("empty", "not_empty") and self.value is not None:
            raise ValueError(f"op {self.op} takes no value")
        return self


class Case(Strict):
    when: list[Condition] = Field(min_length=1, description="all must hold")
    goto: StepId


class BranchStep(Strict):
    id: StepId
    branch: list[Case] = Field(min_length=1)
    otherwise: StepId | None = Field(default=None, description="a step id or end; default: the next step")


class Gate(Strict):
    approvers: Access = Field(description="who may approve (users, groups); empty = anyone of the workspace")
    timeout_s: float = Field(default=900, gt=0, le=86_400)
    text: str = Field(default="Go on with this runbook?", max_length=500)
    self_approval: bool = False


class ApprovalStep(Strict):
    id: StepId
    approval: Gate


class ExplainStep(Strict):
    id: StepId
    explain: str = Field(min_length=1, max_length=2000, description="what to ask the model about the results")


def _step_kind(value: Any) -> str | None:
    """Which kind of step a YAML mapping (by its key) or a built step is."""
    if isinstance(value, dict):
        return next((f"{kind} step" for kind in ("tool", "branch", "approval", "explain") if kind in value), None)
    kinds: dict[type, str] = {
        ToolStep: "tool step",
        BranchStep: "branch step",
        ApprovalStep: "approval step",
        ExplainStep: "explain step",
    }
    return kinds.get(type(value))


Step = Annotated[
    Annotated[ToolStep, Tag("tool step")]
    | Annotated[BranchStep, Tag("branch step")]
    | Annotated[ApprovalStep, Tag("approval step")]
    | Annotated[ExplainStep, Tag("explain step")],
    Discriminator(
        _step_kind,
        custom_error_type="step_kind",
        custom_error_message="a step has one of: tool, branch, approval, explain",
    ),
]


class Trigger(Strict):
    source: Literal["alertmanager", "pagerduty", "any"] = "any"
    labels: dict[str, str] = Field(min_length=1, description="alert labels that must all be equal")
    params: dict[str, str] = Field(default_factory=dict, description="runbook parameter <- alert label")
    channel: str | None = Field(default=None, pattern=r"^[CGD][A-Z0-9]{2,}$")

    def matches(self, source: str, labels: dict[str, str]) -> bool:
        return self.source in ("any", source) and all(labels.get(k) == v for k, v in self.labels.items())


class Runbook(Strict):
    id: Name
    description: str = Field(min_length=1, max_length=500)
    params: dict[Annotated[str, StringConstraints(pattern=r"^[a-z_][a-z0-9_]{0,62}$")], Parameter] = Field(
        default_factory=dict
    )
    triggers: list[Trigger] = Field(default_factory=list)
    steps: list[Step] = Field(min_length=1, max_length=50)

    def step(self, step_id: str) -> ToolStep | BranchStep | ApprovalStep | ExplainStep:
        return next(step for step in self.steps if step.id == step_id)

    def index(self, step_id: str) -> int:
        return next(i for i, step in enumerate(self.steps) if step.id == step_id)

    def check_params(self, given: dict[str, str]) -> dict[str, str]:
        """Every parameter's checked value, defaults filled; ValueError naming every problem."""
        values, problems = check_values(self.params, given)
        if problems:
            raise ValueError("; ".join(problems))
        return values

    @model_validator(mode="after")
    def _references_resolve(self) -> Runbook:
        # Raised at each problem's own location, so check-config points at the step's line.
        problems: list[tuple[tuple[int | str, ...], str]] = []
        ids = [step.id for step in self.steps]
        targets = set(ids) | {END}
        for index, step in enumerate(self.steps):
            if step.id in ids[:index]:
                problems.append((("steps", index, "id"), f"step id {step.id!r} is used by an earlier step"))
            earlier = set(ids[:index])
            problems += [
                (("steps", index, *loc), m) for loc, m in _step_problems(step, targets, earlier, set(self.params))
            ]
        for n, trigger in enumerate(self.triggers):
            for name in sorted(set(trigger.params) - set(self.params)):
                problems.append((("triggers", n, "params", name), f"{name!r} is not a declared parameter"))
        if problems:
            errors = [
                InitErrorDetails(
                    type=PydanticCustomError("value_error", "{problem}", {"problem": message}), loc=loc, input=None
                )
                for loc, message in problems
            ]
            raise ValidationError.from_exception_data(type(self).__name__, errors)
        return self


def _step_problems(
    step: object, targets: set[str], earlier: set[str], params: set[str]
) -> list[tuple[tuple[int | str, ...], str]]:
    problems: list[tuple[tuple[int | str, ...], str]] = []
    if isinstance(step, ToolStep):
        if step.on_failure not in ("abort", "continue") and step.on_failure not in targets:
            problems.append((("on_failure",), f"{step.on_failure!r} is not abort, continue, end or a step id"))
        for value in _values(step.args):
            if isinstance(value, str) and _BRACED.search(value) and template_of(value) is None:
                problems.append(
                    (("args",), f'{value!r}: a template must be the whole value, e.g. "{{params.service}}"')
                )
        for kind, rest in step.templates():
            if kind == "params" and rest not in params:
                problems.append((("args",), f"{{params.{rest}}} is not a declared parameter"))
            if kind == "steps" and rest.split(".")[0] not in earlier:
                problems.append((("args",), f"{{steps.{rest}}} does not name an earlier step"))
    elif isinstance(step, BranchStep):
        for n, case in enumerate(step.branch):
            if case.goto not in targets:
                problems.append((("branch", n, "goto"), f"{case.goto!r} is not a step id or end"))
            problems += [
                (("branch", n, "when", m, "step"), f"{c.step!r} is not an earlier step")
                for m, c in enumerate(case.when)
                if c.step not in earlier
            ]
        if step.otherwise is not None and step.otherwise not in targets:
            problems.append((("otherwise",), f"{step.otherwise!r} is not a step id or end"))
    return problems


def _values(args: Any) -> list[Any]:
    """Every leaf value in a step's arguments (run_command's params are one level down)."""
    if isinstance(args, dict):
        return [leaf for value in args.values() for leaf in _values(value)]
    if isinstance(args, list):
        return [leaf for value in args for leaf in _values(value)]
    return [args]
