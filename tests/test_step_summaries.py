"""Each step's line ends with what the tool found, in a few words (tools.base.brief), in the
terminal and in Slack alike: "ok: 38 matching lines, showing the last 2", "ok: exit 0, 1 line",
"denied: you may not read the logs of payments". Built from the redacted result, a summary says
nothing redaction hides: no secret of the corpus, whether it was in a command's output, a config
value or a log line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from opsbot.bot.agent import CallRecord, Step, StepDecision
from opsbot.bot.slack.blocks import step_lines
from opsbot.config.policy import Access, Command, ConfigRoot, Policy, Principal, Service
from opsbot.config.settings import Settings
from opsbot.tools.base import CallStatus, Registry, brief
from opsbot.tools.catalog import ops_tools
from opsbot.tools.executor import Executor, ToolCall
from tests.corpus.secrets import KINDS, SecretKind, leaks


def summary(policy: Policy, tool: str, args: dict[str, Any], who: Principal | None = None) -> str:
    registry = Registry(ops_tools(policy))
    outcome = Executor(registry).run_one(ToolCall("1", tool, json.dumps(args)), who)
    return brief(outcome.result, registry.get(tool))


def test_what_each_tool_found(sample: Settings) -> None:
    policy = sample.policy
    logs = summary(policy, "query_logs", {"service": "checkout", "level": "ERROR", "limit": 2})
    assert logs.endswith("matching lines, showing the last 2") and logs.split()[0].isdigit()
    assert summary(policy, "query_logs", {"service": "checkout", "contains": "no-such-text-anywhere"}) == (
        "no matching lines"
    )
    assert summary(policy, "run_command", {"command": "uptime"}) == "exit 0, 1 line"
    assert summary(policy, "read_config", {"name": "payments"}) == "payments: yaml, 13 lines"
    assert summary(policy, "read_config", {"name": "payments", "key": "db.primary.pool_size"}) == (
        "payments: key db.primary.pool_size found"
    )
    assert summary(policy, "read_config", {"name": "checkout"}) == "1 file, 2 withheld"  # the .env and the key
    services = len(policy.services), len(policy.commands), len(policy.config_files)
    assert summary(policy, "list_services", {}) == (
        f"{services[0]} services, {services[1]} commands, {services[2]} config roots"
    )
    assert summary(policy, "list_runbooks", {}) == f"{len(policy.runbooks)} runbooks"


def test_errors_say_their_message(sample: Settings) -> None:
    policy = sample.policy
    assert summary(policy, "query_logs", {"service": "nope"}) == "unknown service 'nope'"
    assert "approv" in summary(policy, "run_command", {"command": "restart", "params": {"service": "payments"}})
    assert summary(policy, "query_logs", {"service": "checkout", "limit": "many"}).startswith(
        "arguments do not fit query_logs: limit"
    )


def test_a_denied_call_says_so_in_its_line(sample: Settings) -> None:
    only = Access(users=frozenset({"somebody-else"}))
    locked = sample.policy.services["payments"].model_copy(update={"access": only})
    policy = sample.policy.model_copy(update={"services": {**sample.policy.services, "payments": locked}})
    said = summary(policy, "query_logs", {"service": "payments"}, Principal(platform="cli", user="me"))
    assert said == "you may not read the logs of payments"
    record = CallRecord(id="1", tool="query_logs", args={"service": "payments"}, status=CallStatus.denied, summary=said)
    [line] = step_lines(Step(n=1, decision=StepDecision.tool_calls, calls=[record]))
    assert "→ denied: you may not read the logs of payments (0 ms)" in line


def test_a_long_message_is_cut_to_one_short_line() -> None:
    from opsbot.tools.base import BRIEF_CHARS, ErrorType, ToolResult

    said = brief(ToolResult.failure(ErrorType.failed, "word " * 200 + "\nsecond line"), None)
    assert len(said) == BRIEF_CHARS and said.endswith("…") and "\n" not in said


SINGLE_LINE = [k for k in KINDS if not k.multiline]


@pytest.fixture
def leaky(tmp_path: Path) -> Policy:
    """A command that prints every secret of the corpus, a log and a config file holding them."""
    lines = "\n".join(k.line for k in SINGLE_LINE)
    (tmp_path / "out.txt").write_text(lines + "\n")
    (tmp_path / "app.log").write_text(
        "".join(f"2026-12-01T10:00:{n % 60:02d}Z ERROR {k.line}\n" for n, k in enumerate(SINGLE_LINE))
    )
    (tmp_path / "app.yaml").write_text("".join(f"k{n}: {json.dumps(k.value)}\n" for n, k in enumerate(SINGLE_LINE)))
    cat = shutil.which("cat")
    assert cat is not None
    return Policy(
        services={"app": Service(description="app", logs=[str(tmp_path / "app.log")])},
        commands={"dump": Command(description="dump", argv=[cat, str(tmp_path / "out.txt")])},
        config_files={"app": ConfigRoot(description="app", path=str(tmp_path / "app.yaml"))},
    )


@pytest.mark.parametrize("kind", SINGLE_LINE, ids=lambda k: k.id)
def test_no_summary_says_what_redaction_hides(leaky: Policy, kind: SecretKind) -> None:
    index = SINGLE_LINE.index(kind)
    said = [
        summary(leaky, "run_command", {"command": "dump"}),
        summary(leaky, "query_logs", {"service": "app", "regex": kind.line[:12]}),
        summary(leaky, "read_config", {"name": "app", "key": f"k{index}"}),
    ]
    for text in said:
        assert not leaks(kind.secret, text), (kind.id, text)
