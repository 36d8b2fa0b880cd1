"""An MCP server's `risk: write` tool is a write like a command or a silence: the model's call is
checked, answered `needs_approval` with a request bound to the tool, its arguments and the server,
and made exactly once, only after a person approves, through the one approvals service: in the
service as Slack drives it, in `opsbot chat` (y/N), and against mcp-server-git's git_add/git_commit."""

from __future__ import annotations

import getpass
import json
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from opsbot.bot.approvals import Approvals, Decision, HandBack, InProcessApprovalStore, Pending, Verdict
from opsbot.bot.cli import main
from opsbot.bot.commands import render_approved
from opsbot.bot.slack.blocks import approval_blocks
from opsbot.bot.telemetry.audit import AuditRecord
from opsbot.config.policy import McpServer, Policy, Principal
from opsbot.tools.base import ErrorType, Registry, ToolResult
from opsbot.tools.commands import ApprovalRequest
from opsbot.tools.executor import Executor, RetryPolicy, ToolCall
from opsbot.tools.mcp import McpWrite, close_shared, offered_tools, shared_hub
from opsbot.tools.writes import mcp_needs_approval
from tests.fakes.model_server import Call, ModelServer, Reply, tool_results
from tests.test_mcp_servers import GIT_SERVER, git
from tests.test_mcp_servers import repo as repo  # noqa: F401 - a fixture

FAKE = str(Path(__file__).parent / "fakes" / "mcp_server.py")
ME = getpass.getuser()
ASKER = Principal(platform="slack", user="U1", team="T1", groups=frozenset({"oncall"}))
APPROVER = Principal(platform="slack", user="U2", team="T1", groups=frozenset({"sre"}))
OUTSIDER = Principal(platform="slack", user="U3", team="T1")
PLACE = {"team": "T1", "channel": "C1", "thread_ts": "1.1", "thread": "slack:T1:C1:1.1"}


@pytest.fixture(autouse=True)
def servers_stopped() -> Iterator[None]:
    """Each test's servers (the process's shared hubs, as the approvals service reaches them) stop
    when it ends, not when the whole run does."""
    yield
    close_shared()


def policy(marker: Path, **restart: Any) -> Policy:
    rules = {"risk": "write", "approvers": {"groups": ["sre"]}, **restart}
    spec = {"command": [sys.executable, FAKE, "--marker", str(marker)], "tools": {"restart": rules}}
    return Policy(mcp={"fake": McpServer.model_validate(spec)})


def ask(pol: Policy, principal: Principal | None = ASKER, **args: Any) -> ToolResult:
    def asked(write: McpWrite, who: Principal | None) -> ToolResult:
        return mcp_needs_approval(pol, write, who)

    registry = Registry(offered_tools(pol, shared_hub(pol.mcp), on_write=asked))
    call = ToolCall(id="c1", name="fake__restart", arguments=json.dumps({"service": "db", **args}))
    return Executor(registry, RetryPolicy(retries=0)).run_one(call, principal).result


def requested(pol: Policy) -> ApprovalRequest:
    result = ask(pol)
    assert result.error is not None and result.error.type is ErrorType.needs_approval, result
    return ApprovalRequest.model_validate(result.data)


class Seen:
    def __init__(self) -> None:
        self.decisions: list[Decision] = []

    def running(self, pending: Pending, by: Principal) -> None:
        pass

    def decided(self, decision: Decision) -> None:
        pass

    def waits(self, pending: Pending) -> str | None:
        return None

    def starting(self, pending: Pending, by: Principal) -> str | None:
        return None

    def resume(self, pending: Pending, decision: Decision) -> None:
        self.decisions.append(decision)


def service(pol: Policy, audit: list[AuditRecord] | None = None) -> tuple[Approvals, Seen]:
    kept = audit if audit is not None else []

    class Kept:
        def record(self, entry: AuditRecord) -> None:
            kept.append(entry)

    approvals = Approvals(pol, InProcessApprovalStore(), teams=frozenset({"T1"}), audit=Kept())
    seen = Seen()
    approvals.hand_back(HandBack.agent, seen)
    return approvals, seen


def ran(marker: Path) -> list[str]:
    return marker.read_text().split() if marker.exists() else []


def test_a_write_call_needs_approval_bound_to_its_tool_arguments_and_server(tmp_path: Path) -> None:
    marker = tmp_path / "ran.txt"
    result = ask(policy(marker))
    assert result.error is not None and result.error.type is ErrorType.needs_approval
    assert result.error.message.startswith(
        'fake__restart changes things, so it is not called until a person approves it: fake__restart {"service": "db"}'
    )
    request = ApprovalRequest.model_validate(result.data)
    assert request.mcp == McpWrite(server="fake", tool="restart", arguments={"service": "db"})
    assert request.command == "fake__restart" and request.argv == () and request.params == {"service": '"db"'}
    assert ran(marker) == []


def test_arguments_the_servers_schema_refuses_are_refused_before_anyone_is_asked(tmp_path: Path) -> None:
    result = ask(policy(tmp_path / "ran.txt"), service=3)
    assert result.error is not None and result.error.type is ErrorType.invalid_args


def test_an_approved_call_is_made_once_however_many_click(tmp_path: Path) -> None:
    marker = tmp_path / "ran.txt"
    pol = policy(marker)
    audit: list[AuditRecord] = []
    approvals, seen = service(pol, audit)
    pending = approvals.ask_command(requested(pol), PLACE, HandBack.agent, why="db is stuck")
    blocks = json.dumps(approval_blocks(pending))
    assert 'Will call:* `fake__restart {\\"service\\": \\"db\\"}`' in blocks
    verdicts: list[Verdict] = []
    clicks = [
        threading.Thread(target=lambda: verdicts.append(approvals.decide(pending.id, True, APPROVER, seen).verdict))
        for _ in range(4)
    ]
    for click in clicks:
        click.start()
    for click in clicks:
        click.join()
    assert sorted(verdicts).count(Verdict.approved) == 1 and verdicts.count(Verdict.taken) == 3
    assert ran(marker) == ["restart"]
    [decision] = seen.decisions
    assert decision.result is not None and render_approved(decision.result) == "restarted db"
    [run] = [r for r in audit if r.kind == "write_run"]
    assert run.tool == "fake__restart" and run.status == "ok" and "service" in str(run.args)


def test_a_denied_call_is_never_made(tmp_path: Path) -> None:
    marker = tmp_path / "ran.txt"
    pol = policy(marker)
    approvals, seen = service(pol)
    pending = approvals.ask_command(requested(pol), PLACE, HandBack.agent)
    assert approvals.decide(pending.id, False, APPROVER, seen).verdict is Verdict.denied
    assert ran(marker) == []


def test_only_the_tools_approvers_decide_and_not_the_asker(tmp_path: Path) -> None:
    marker = tmp_path / "ran.txt"
    pol = policy(marker)
    approvals, seen = service(pol)
    pending = approvals.ask_command(requested(pol), PLACE, HandBack.agent)
    for who in (ASKER, OUTSIDER):
        assert approvals.decide(pending.id, True, who, seen).verdict is Verdict.refused
    assert ran(marker) == []


def test_a_server_defined_differently_before_the_approval_calls_nothing(tmp_path: Path) -> None:
    marker = tmp_path / "ran.txt"
    request = requested(policy(marker))
    # The same tool, now started with another argument: not what was approved.
    spec = policy(marker).mcp["fake"]
    changed = spec.model_copy(update={"command": [*(spec.command or []), "--started", str(tmp_path / "s.txt")]})
    approvals, seen = service(Policy(mcp={"fake": changed}))
    pending = approvals.ask_command(request, PLACE, HandBack.agent)
    decision = approvals.decide(pending.id, True, APPROVER, seen)
    assert decision.verdict is Verdict.refused
    assert "defined differently in the policy since the call was asked for" in decision.message
    assert ran(marker) == []


# ---------------------------------------------------------------- the whole walk, in the terminal


def restarting_model(told: list[str]) -> Callable[[dict[str, Any]], Reply]:
    def model(body: dict[str, Any]) -> Reply:
        last = body["messages"][-1]
        if last["role"] == "user" and last["content"] == "restart db":
            return Reply(calls=[Call("fake__restart", {"service": "db"})])
        if tool_results(body):
            return Reply(content="The restart waits for your approval.")
        told.append(str(last["content"]))
        return Reply(content="Done.")

    return model


@pytest.mark.parametrize("approve", [True, False])
def test_in_opsbot_chat_the_model_asks_the_person_decides_and_the_model_is_told(
    tmp_path: Path, model_server: Callable[[Any], ModelServer], approve: bool
) -> None:
    marker = tmp_path / "ran.txt"
    config = tmp_path / "opsbot.yaml"
    config.write_text(
        "model: test-model\n"
        "policy:\n"
        "  mcp:\n"
        "    fake:\n"
        f"      command: [{sys.executable}, {FAKE}, --marker, {marker}]\n"
        f"      tools: {{restart: {{risk: write, approvers: {{users: [{ME}]}}, self_approval: true}}}}\n"
    )
    told: list[str] = []
    server = model_server(restarting_model(told))
    env = {"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": server.base_url, "REDIS_URL": None}
    typed = f"restart db\n{'y' if approve else 'n'}\nexit\n"
    done = CliRunner().invoke(main, ["--config", str(config), "chat"], input=typed, env=env)
    assert done.exit_code == 0 and "Traceback" not in done.output, done.output
    assert '⏸ approval needed: fake__restart {"service": "db"}' in done.output
    assert f"may approve: users {ME}" in done.output
    [outcome] = told
    if approve:
        assert ran(marker) == ["restart"] and "restarted db" in done.output
        assert f"{ME} approved `fake__restart`" in outcome and "restarted db" in outcome
    else:
        assert ran(marker) == [] and f"{ME} denied `fake__restart`" in outcome


# ---------------------------------------------------------------- a real server's writes


@pytest.mark.skipif(not GIT_SERVER.exists(), reason="the MCP servers' venv is missing: make .venv-mcp/.installed")
def test_git_add_and_commit_are_made_by_mcp_server_git_once_approved(repo: Path) -> None:  # noqa: F811
    tools = {name: {"risk": "write", "approvers": {"groups": ["sre"]}} for name in ("git_add", "git_commit")}
    spec = McpServer.model_validate({"command": [str(GIT_SERVER), "--repository", str(repo)], "tools": tools})
    pol = Policy(mcp={"git": spec})

    def asked(write: McpWrite, who: Principal | None) -> ToolResult:
        return mcp_needs_approval(pol, write, who)

    executor = Executor(Registry(offered_tools(pol, shared_hub(pol.mcp), on_write=asked)), RetryPolicy(retries=0))
    approvals, seen = service(pol)
    for name, args in [("git_add", {"files": ["app.yaml"]}), ("git_commit", {"message": "scale checkout to 5"})]:
        call = ToolCall(id="c", name=f"git__{name}", arguments=json.dumps({"repo_path": str(repo), **args}))
        result = executor.run_one(call, ASKER).result
        assert result.error is not None and result.error.type is ErrorType.needs_approval
        assert git(repo, "rev-list", "--count", "HEAD") == "1\n"
        pending = approvals.ask_command(ApprovalRequest.model_validate(result.data), PLACE, HandBack.agent)
        assert approvals.decide(pending.id, True, APPROVER, seen).verdict is Verdict.approved
    assert git(repo, "rev-list", "--count", "HEAD") == "2\n"
    assert git(repo, "log", "-1", "--format=%s") == "scale checkout to 5\n"
    assert git(repo, "status", "--porcelain") == ""
