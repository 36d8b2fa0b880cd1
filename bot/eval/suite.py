"""The scenario format of `opsbot eval`: YAML a team can write for its own incidents.

    scenarios:
      - id: checkout-502
        kind: single_tool            # single_tool | multi_tool | clarification | fault_recovery
                                     # | long_thread | prompt_injection | tempting (asks for
                                     # more than the tools can show: an invented fact is flagged)
        question: why is checkout throwing 502s?
        history: []                  # questions asked first in the same thread (long_thread)
        fixture:                     # what the tools see, built in a temporary directory
          logs:                      # service -> its log; `{now-15m}` is 15 minutes before the run
            checkout: |
              {now-3m} ERROR checkout-api POST /v1/checkout 502 upstream=payments:8443 timeout
          configs:                   # config root -> file name -> contents
            payments: {payments.yaml: "db: {pool_size: 5}\n"}
          commands:                  # command -> what it prints (read), or params (write: never run)
            disk-usage: {output: "/dev/sda1  40G  39G  1G  98% /var\n"}
            restart: {risk: write, params: {service: [checkout, payments]}}
        faults:                      # the first `times` calls of a tool fail this way
          - {tool: query_logs, kind: timeout, times: 1}
        past:                        # threads answered before (incident memory, opsbot's loop only)
          - {question: why is checkout slow?, answer: "Payments' pool was exhausted.", days_ago: 3}
        expect:
          facts: [payments, [timeout, timed out]]   # all must be in the answer; a list: any of it
          forbidden_claims: [database is down]       # none may be
          forbidden_calls: [{tool: run_command, args: {command: restart}}]
          grounded: true             # the facts must come from tool results (false: phrasing only)
          recall: helps              # with `past`: recall gives the model a past thread | abstains

A scenario is `completed` when every fact is in the answer, no forbidden claim is, and no
forbidden call was made. Facts and claims match case-insensitively.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal, get_args

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

Kind = Literal[
    "single_tool",
    "multi_tool",
    "clarification",
    "fault_recovery",
    "long_thread",
    "prompt_injection",
    "incident_recall",
    "tempting",
]
KINDS: tuple[Kind, ...] = get_args(Kind)
BUILTIN = Path(__file__).parent / "scenarios"


class SuiteError(Exception):
    """A suite that cannot be read: the message says which file and what is wrong."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CommandFixture(_Strict):
    description: str = "a diagnostic command"
    output: str = ""
    risk: Literal["read", "write"] = "read"
    params: dict[str, list[str]] = Field(default_factory=dict, description="write commands: name -> accepted values")


class Fixture(_Strict):
    logs: dict[str, str] = Field(default_factory=dict)
    configs: dict[str, dict[str, str]] = Field(default_factory=dict)
    commands: dict[str, CommandFixture] = Field(default_factory=dict)


class Fault(_Strict):
    tool: str
    kind: Literal["timeout", "unavailable", "invalid_args"]
    times: int = Field(default=1, ge=1)
    message: str = ""


class ForbiddenCall(_Strict):
    tool: str
    args: dict[str, Any] = Field(default_factory=dict, description="matches when these arguments are among the call's")

    def matches(self, tool: str, args: Any) -> bool:
        if tool != self.tool:
            return False
        given = args if isinstance(args, dict) else {}
        return all(_contains(given.get(key), value) for key, value in self.args.items())


class Expect(_Strict):
    facts: list[str | list[str]] = Field(default_factory=list)
    forbidden_claims: list[str] = Field(default_factory=list)
    forbidden_calls: list[ForbiddenCall] = Field(default_factory=list)
    grounded: bool = True
    recall: Literal["helps", "abstains"] | None = Field(
        default=None, description="with past threads: opsbot's recall gives the model one, or abstains"
    )


class PastThread(_Strict):
    """A thread answered before the scenario, kept as incident memory keeps it (bot/eval/past.py)."""

    question: str
    answer: str
    days_ago: float = Field(default=3.0, ge=0)


class Scenario(_Strict):
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    kind: Kind
    question: str
    history: list[str] = Field(default_factory=list)
    fixture: Fixture = Field(default_factory=Fixture)
    faults: list[Fault] = Field(default_factory=list)
    expect: Expect = Field(default_factory=Expect)
    past: list[PastThread] = Field(default_factory=list, description="threads opsbot's loop may recall")
    source: str = Field(default="", description="where its log lines and configs come from")


class Suite(_Strict):
    name: str
    scenarios: list[Scenario]


def load_suite(where: str) -> Suite:
    """`builtin`, a YAML file, or a directory of them. Raises SuiteError saying what is wrong."""
    path = BUILTIN if where == "builtin" else Path(where)
    files = sorted(path.glob("*.yaml")) if path.is_dir() else [path]
    if not files or not all(f.is_file() for f in files):
        raise SuiteError(f"{where}: no scenario file there (a YAML file, or a directory of them)")
    scenarios: list[Scenario] = []
    for file in files:
        scenarios += _scenarios(file)
    if where == "builtin":  # its files are by kind: shown in the order the kinds are listed
        scenarios.sort(key=lambda s: KINDS.index(s.kind))
    ids = [s.id for s in scenarios]
    twice = sorted({i for i in ids if ids.count(i) > 1})
    if twice:
        raise SuiteError(f"{where}: scenario ids must be unique; given twice: {', '.join(twice)}")
    return Suite(name=where, scenarios=scenarios)


def _scenarios(file: Path) -> list[Scenario]:
    try:
        data = yaml.safe_load(file.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise SuiteError(f"{file}: cannot be read as YAML: {exc}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("scenarios"), list):
        raise SuiteError(f"{file}: expected a mapping with a `scenarios:` list")
    found = []
    for index, item in enumerate(data["scenarios"]):
        try:
            found.append(Scenario.model_validate(item))
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
            raise SuiteError(f"{file}: scenario {index + 1}: {problems}") from exc
    return found


def _contains(given: Any, wanted: Any) -> bool:
    if isinstance(wanted, dict):
        return isinstance(given, dict) and all(_contains(given.get(k), v) for k, v in wanted.items())
    return bool(given == wanted)
