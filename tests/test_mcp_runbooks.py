"""Runbook steps that call MCP servers' tools (`<server>__<tool>`): a read tool runs with the
run's parameters typed by the server's schema, a write tool waits at the approvals service like a
write command and is called once approved; a step naming a tool the policy does not list is
refused as the runbook loads, with its line, and check-config checks literal arguments against
the running server's schema."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from opsbot.bot.approvals import Approvals, HandBack, InProcessApprovalStore
from opsbot.bot.build import build_tools
from opsbot.bot.cli import main
from opsbot.bot.runbooks import InProcessRunStore, RunbookEngine
from opsbot.config.check import ConfigError
from opsbot.config.policy import McpServer, Policy, Runbook
from opsbot.config.runbooks import load_runbooks
from opsbot.config.settings import Settings
from opsbot.tools.executor import Executor, RetryPolicy
from opsbot.tools.mcp import close_shared
from tests.fakes.slack_api import SlackApi
from tests.fakes.slack_stack import Stacks, stack_settings
from tests.test_runbook_engine import ALICE, BOB, CAROL, NotDecided, Recorder, click
from tests.test_slack_runbooks import approval_of, run_ended, thread_texts, wait
from tests.test_slack_runbooks import click as slack_click

FAKE = Path(__file__).parent / "fakes" / "mcp_server.py"
TOOLS = {"echo": {"risk": "read"}, "restart": {"risk": "write", "approvers": {"groups": ["S0ONCALL"]}}}
LOOK_AND_RESTART = {
    "id": "look-and-restart",
    "description": "echo the service, then restart it",
    "params": {"service": {"enum": ["db", "cache"], "default": "db"}, "times": {"min": 1, "max": 5, "default": 2}},
    "steps": [
        {"id": "look", "tool": "fake__echo", "args": {"text": "{params.service}", "times": "{params.times}"}},
        {"id": "restart", "tool": "fake__restart", "args": {"service": "{params.service}"}},
    ],
}


@pytest.fixture(autouse=True)
def servers_stopped() -> Iterator[None]:
    yield
    close_shared()


def fake(marker: Path, tools: dict[str, Any] = TOOLS) -> McpServer:
    return McpServer.model_validate({"command": [sys.executable, str(FAKE), "--marker", str(marker)], "tools": tools})


def ran(marker: Path) -> list[str]:
    return marker.read_text().split() if marker.exists() else []


def engine_for(policy: Policy) -> RunbookEngine:
    """A process's engine on the tools `serve` builds: the ops tools and the MCP servers'."""
    store = InProcessRunStore()
    approvals = Approvals(policy, InProcessApprovalStore())
    executor = Executor(build_tools(Settings(policy=policy)), RetryPolicy(backoff_s=0.01))
    engine = RunbookEngine(policy, executor, store=store, reporter=Recorder(store), approvals=approvals)
    approvals.hand_back(HandBack.runbook, engine)
    return engine


def test_a_read_tool_step_runs_with_typed_parameters_and_a_write_step_waits_then_runs_once(tmp_path: Path) -> None:
    marker = tmp_path / "ran.txt"
    runbook = Runbook.model_validate(LOOK_AND_RESTART)
    engine = engine_for(Policy(mcp={"fake": fake(marker)}, runbooks={runbook.id: runbook}))
    run = engine.start(runbook.id, {"times": "3"}, {}, requested_by=ALICE)
    look, restart = run.steps
    assert look.status == "ok" and look.output["data"]["text"] == "db db db", "times='3' became 3 for the schema"
    assert restart.status == "waiting" and run.status == "waiting"
    assert ran(marker) == ["echo"], "the write waits for a person"
    with pytest.raises(NotDecided, match="may not approve"):
        click(engine, run.id, True, CAROL)
    with pytest.raises(NotDecided, match="person who asked for it"):
        click(engine, run.id, True, ALICE)
    done = click(engine, run.id, True, BOB)
    assert done.status == "succeeded" and done.steps[1].output["data"]["text"] == "restarted db"
    assert ran(marker) == ["echo", "restart"]
    with pytest.raises(NotDecided):
        click(engine, run.id, True, BOB, request=restart.approval)  # a double click
    assert ran(marker) == ["echo", "restart"], "called once"


def test_a_denied_write_tool_step_calls_nothing(tmp_path: Path) -> None:
    marker = tmp_path / "ran.txt"
    runbook = Runbook.model_validate(LOOK_AND_RESTART)
    engine = engine_for(Policy(mcp={"fake": fake(marker)}, runbooks={runbook.id: runbook}))
    run = engine.start(runbook.id, {}, {}, requested_by=ALICE)
    done = click(engine, run.id, False, BOB)
    assert done.status != "succeeded" and ran(marker) == ["echo"]


HEAD = """\
id: broken
description: a runbook with one mistake
params:
  service: {enum: [db, cache]}
steps:
  - id: look
    tool: fake__echo
    args: {text: hi}
"""


@pytest.mark.parametrize(
    ("step", "line", "message"),
    [
        (
            "  - id: s\n    tool: fake__status\n    args: {}\n",
            10,
            "MCP server fake has no tool 'status' in the policy's list (listed: echo, restart)",
        ),
        ("  - id: s\n    tool: nosuch__echo\n", 10, "MCP server 'nosuch' is not declared (declared: fake)"),
        ("  - id: s\n    tool: fake__\n", 10, "or an MCP server's tool as <server>__<tool>"),
        (
            '  - id: s\n    tool: fake__restart\n    args: {service: "{steps.look.data.text}"}\n',
            11,
            "a write tool's argument cannot come from a step's output",
        ),
    ],
    ids=["unlisted tool", "unknown server", "no tool named", "write fed by tool output"],
)
def test_a_step_naming_what_the_policy_does_not_list_is_refused_as_it_loads_with_its_line(
    tmp_path: Path, step: str, line: int, message: str
) -> None:
    (tmp_path / "broken.yaml").write_text(HEAD + step)
    with pytest.raises(ConfigError) as caught:
        load_runbooks(tmp_path, Policy(mcp={"fake": fake(tmp_path / "ran.txt")}))
    problems = caught.value.problems
    assert any(p.where == f"{tmp_path / 'broken.yaml'}:{line}" and message in p.message for p in problems), problems


def test_check_config_checks_a_steps_literal_arguments_against_the_servers_schema(tmp_path: Path) -> None:
    marker = tmp_path / "ran.txt"
    steps = [
        {"id": "fine", "tool": "fake__echo", "args": {"text": "{params.word}", "times": 2}},
        {"id": "wrong", "tool": "fake__echo", "args": {"text": "hi", "times": "many", "loud": True}},
        {"id": "missing", "tool": "fake__echo", "args": {"times": "3"}},
    ]
    runbook = {"id": "typed", "description": "echoes", "params": {"word": {"pattern": "[a-z]+"}}, "steps": steps}
    policy = {"mcp": {"fake": fake(marker).model_dump(mode="json")}, "runbooks": {"typed": runbook}}
    config = tmp_path / "opsbot.yaml"
    config.write_text(json.dumps({"policy": policy}))
    done = CliRunner().invoke(main, ["check-config", str(config)], env={"REDIS_URL": None})
    assert done.exit_code == 1 and "Traceback" not in done.output, done.output
    assert "runbook typed, step wrong: args: times: 'many' is not of type 'integer'" in done.output
    assert "runbook typed, step wrong: args: loud: not an argument of this tool" in done.output
    assert "runbook typed, step missing: args: 'text' is a required property" in done.output
    assert "step fine" not in done.output, "a templated argument is filled when the run starts"
    assert ran(marker) == [], "checking calls nothing"


def test_ops_runbook_run_in_slack_calls_the_read_tool_and_the_write_once_approved(
    redis_server,  # noqa: ANN001 - fixtures
    sample: Settings,
    tmp_path: Path,
) -> None:
    marker = tmp_path / "ran.txt"
    tools = {**TOOLS, "restart": {"risk": "write", "approvers": {"users": ["U2"]}}}
    runbook = Runbook.model_validate(LOOK_AND_RESTART)
    policy = sample.policy.model_copy(
        update={"mcp": {"fake": fake(marker, tools)}, "runbooks": {**sample.policy.runbooks, runbook.id: runbook}}
    )
    redis_server.flush()
    stacks = Stacks()
    slack = SlackApi()
    stack = stacks.start(slack, stack_settings(slack, redis_server.url, policy, None), None)
    try:
        stack.command("runbook run look-and-restart service=cache times=2", key="run", channel="CALERTS")
        wait(stack, lambda: stack.slack.responses("run"))
        root = stack.slack.messages("CALERTS")[0]
        request = approval_of(stack, "CALERTS", root["ts"])
        assert "fake__restart" in json.dumps(request["blocks"]) and ran(marker) == ["echo"]
        assert any("cache cache" in t for t in thread_texts(stack, "CALERTS", root["ts"]))
        slack_click(stack, request, approve=True, user="U2")
        slack_click(stack, request, approve=True, user="U2")  # a double click
        wait(stack, lambda: run_ended(stack, "CALERTS", root["ts"]), timeout=30)
        assert stack.idle()
        assert ran(marker) == ["echo", "restart"], "the write was called once, after the approval"
        assert any("restarted cache" in t for t in thread_texts(stack, "CALERTS", root["ts"]))
    finally:
        stacks.close()
