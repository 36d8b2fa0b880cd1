"""Runbook files: the shipped examples load, and every mistake is refused with its line."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest
import yaml

from opsbot.config.check import ConfigError
from opsbot.config.policy import ApprovalStep, BranchStep, ExplainStep, Policy, Runbook, ToolStep
from opsbot.config.runbooks import load_runbooks
from opsbot.config.settings import Settings
from opsbot.tools.catalog import runbook_arg_problems
from tests.conftest import SAMPLE_DIR

HEAD = """\
id: broken
description: a runbook with one mistake
params:
  service: {enum: [checkout, payments]}
steps:
"""


def test_the_sample_runbooks_load_with_every_kind_of_step(sample: Settings) -> None:
    runbooks = sample.policy.runbooks
    assert sorted(runbooks) == ["config-drift", "disk-filling", "service-erroring"]
    kinds = {type(step) for runbook in runbooks.values() for step in runbook.steps}
    assert kinds == {ToolStep, BranchStep, ApprovalStep, ExplainStep}
    erroring = runbooks["service-erroring"]
    assert erroring.check_params({"service": "auth"}) == {"service": "auth", "upstream": "payments", "since": "30m"}
    assert erroring.triggers[0].matches("alertmanager", {"alertname": "HighErrorRate", "service": "auth"})
    assert not erroring.triggers[0].matches("alertmanager", {"alertname": "Other"})


@pytest.mark.parametrize(
    ("steps", "line", "message"),
    [
        ("  - id: a\n    tool: query_logs\n    args: {service: nosuch}\n", 8, "'nosuch' is not declared"),
        ("  - id: a\n    tool: run_command\n    args: {command: reboot}\n", 8, "command 'reboot' is not declared"),
        ("  - id: a\n    tool: run_command\n    args: {command: uptime, params: {x: 1}}\n", 8, "has no parameter 'x'"),
        ("  - id: a\n    tool: read_config\n    args: {name: secrets}\n", 8, "'secrets' is not declared"),
        ('  - id: a\n    tool: query_logs\n    args: {service: "{params.nope}"}\n', 8, "not a declared parameter"),
        ('  - id: a\n    tool: query_logs\n    args: {service: "x{params.service}"}\n', 8, "must be the whole value"),
        (
            '  - id: a\n    tool: query_logs\n    args: {service: "{steps.b.data}"}\n  - id: b\n    explain: x\n',
            8,
            "does not name an earlier step",
        ),
        (
            "  - id: a\n    tool: query_logs\n    args: {service: checkout}\n"
            "  - id: b\n    tool: run_command\n"
            '    args: {command: restart, params: {service: "{steps.a.data.service}"}}\n',
            11,
            "cannot come from a step's output",
        ),
        (
            "  - id: a\n    tool: query_logs\n    args: {service: checkout}\n    on_failure: later\n",
            9,
            "is not abort, continue, end or a step id",
        ),
        (
            "  - id: a\n    explain: x\n  - id: b\n    branch:\n      - when: [{step: a, op: gt, value: big}]\n"
            "        goto: end\n",
            10,
            "compares numbers",
        ),
        (
            "  - id: a\n    explain: x\n  - id: b\n    branch:\n      - when: [{step: c}]\n        goto: end\n",
            10,
            "'c' is not an earlier step",
        ),
        (
            "  - id: a\n    explain: x\n  - id: b\n    branch:\n      - when: [{step: a}]\n        goto: nowhere\n",
            11,
            "'nowhere' is not a step id or end",
        ),
        ("  - id: a\n    explain: x\n  - id: a\n    explain: y\n", 8, "used by an earlier step"),
        ("  - id: a\n    shell: rm -rf /\n", 6, "one of: tool, branch, approval, explain"),
        ("  - id: a\n    tool: sh\n    args: {}\n", 7, "query_logs"),
        ("  - id: a\n    explain: x\n    eval: print(1)\n", 8, "unknown key 'eval' (known keys: id, explain)"),
    ],
    ids=[
        "unknown service",
        "unknown command",
        "unknown command parameter",
        "unknown config root",
        "undeclared parameter",
        "template inside a string",
        "later step",
        "write fed by tool output",
        "bad on_failure",
        "number op on text",
        "condition on unknown step",
        "goto nowhere",
        "repeated id",
        "unknown step kind",
        "unknown tool",
        "unknown key",
    ],
)
def test_a_mistake_is_refused_with_its_line(
    sample: Settings, tmp_path: Path, steps: str, line: int, message: str
) -> None:
    (tmp_path / "broken.yaml").write_text(HEAD + steps)
    with pytest.raises(ConfigError) as caught:
        load_runbooks(tmp_path, sample.policy)
    problems = caught.value.problems
    assert any(message in p.message for p in problems), problems
    assert any(p.where == f"{tmp_path / 'broken.yaml'}:{line}" for p in problems if message in p.message), problems


def test_check_config_lists_the_runbooks_and_their_problems(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from opsbot.bot.cli import main

    shutil.copytree(SAMPLE_DIR, tmp_path / "sample")
    config = tmp_path / "sample" / "opsbot.yaml"
    ok = CliRunner().invoke(main, ["check-config", str(config)])
    assert ok.exit_code == 0 and "3 runbook(s)" in ok.output
    (tmp_path / "sample" / "runbooks" / "bad.yaml").write_text(
        HEAD
        + textwrap.dedent("""\
          - id: a
            tool: run_command
            args: {command: reboot}
        """)
    )
    bad = CliRunner().invoke(main, ["check-config", str(config)])
    assert bad.exit_code == 1 and "bad.yaml:8" in bad.output and "'reboot' is not declared" in bad.output


def test_two_files_cannot_share_an_id(sample: Settings, tmp_path: Path) -> None:
    for name in ("one.yaml", "two.yaml"):
        (tmp_path / name).write_text(HEAD + "  - id: a\n    explain: x\n")
    with pytest.raises(ConfigError, match="used by another file"):
        load_runbooks(tmp_path, sample.policy)


# ---------------------------------------------------------------- arguments against the tools' own models

TYPED_HEAD = """\
id: typed
description: a runbook whose step arguments the tools check
params:
  service: {enum: [checkout, payments]}
  lines: {pattern: "[0-9]{1,3}", default: "20"}
steps:
"""

ARG_MISTAKES = [
    (
        "tool: query_logs\n    args: {service: checkout, levl: ERROR}",
        "args: unknown key 'levl' — did you mean 'level'?",
    ),
    (
        "tool: query_logs\n    args: {service: checkout, limit: lots}",
        "args.limit: should be a whole number, got 'lots'",
    ),
    (
        "tool: run_command\n    args: {command: restart, params: {service: checkout}, reason: flaky}",
        "args: unknown key 'reason' (known keys: command, params)",
    ),
    (
        "tool: run_command\n    args: {command: uptime, params: [a]}",
        "args.params: should be a mapping of keys to values, got a list",
    ),
]
ARG_MISTAKE_IDS = ["misspelt key", "text for a number", "unknown run_command key", "params not a mapping"]


def _with_runbook(policy: Policy, text: str) -> Policy:
    # Built straight from the YAML, past load_runbooks: a mistake it also refuses must still be found here.
    runbook = Runbook.model_validate(yaml.safe_load(text))
    return policy.model_copy(update={"runbooks": {runbook.id: runbook}})


def test_the_sample_runbooks_fit_their_tools(sample: Settings) -> None:
    assert runbook_arg_problems(sample.policy) == []


@pytest.mark.parametrize(("step", "problem"), ARG_MISTAKES, ids=ARG_MISTAKE_IDS)
def test_an_argument_the_tool_refuses_is_a_problem_naming_runbook_step_and_field(
    sample: Settings, step: str, problem: str
) -> None:
    problems = runbook_arg_problems(_with_runbook(sample.policy, TYPED_HEAD + f"  - id: look\n    {step}\n"))
    assert len(problems) == 1, problems
    assert problems[0].startswith(f"runbook typed, step look: {problem}"), problems


@pytest.mark.parametrize(
    ("step", "shown"),
    [(step, f"runbook typed, step look: {problem}") for step, problem in ARG_MISTAKES[:3]]
    # A params that is not a mapping is refused already when the files load, at its line.
    + [(ARG_MISTAKES[3][0], "typed.yaml:9: steps[0].args.params: params is a mapping")],
    ids=ARG_MISTAKE_IDS,
)
def test_check_config_fails_on_an_argument_the_tool_refuses(tmp_path: Path, step: str, shown: str) -> None:
    from click.testing import CliRunner

    from opsbot.bot.cli import main

    shutil.copytree(SAMPLE_DIR, tmp_path / "sample")
    config = tmp_path / "sample" / "opsbot.yaml"
    (tmp_path / "sample" / "runbooks" / "typed.yaml").write_text(TYPED_HEAD + f"  - id: look\n    {step}\n")
    done = CliRunner().invoke(main, ["check-config", str(config)])
    assert done.exit_code == 1 and shown in done.output, done.output
    assert ": ok" not in done.output


@pytest.mark.parametrize(
    "step",
    [
        'tool: query_logs\n    args: {service: checkout, limit: "{params.lines}"}',
        'tool: query_logs\n    args: {service: "{params.service}", level: ERROR}',
        'tool: read_config\n    args: {name: "{params.service}", key: db.primary.pool_size}',
        'tool: run_command\n    args: {command: restart, params: {service: "{params.service}"}}',
    ],
    ids=["templated limit", "templated required service", "templated required name", "templated command param"],
)
def test_a_templated_argument_waits_for_the_run(sample: Settings, tmp_path: Path, step: str) -> None:
    (tmp_path / "typed.yaml").write_text(TYPED_HEAD + f"  - id: look\n    {step}\n")
    runbooks = load_runbooks(tmp_path, sample.policy)
    assert runbook_arg_problems(sample.policy.model_copy(update={"runbooks": runbooks})) == []
