"""`opsbot mcp-serve`: opsbot's tools served to other agents, driven by the official MCP SDK's own
clients — over stdio against the command as a subprocess, and over Streamable HTTP against
`--http` on a free port, with a throwaway redis-server (the audit trail, the approval requests)
and the fake Slack API where writes are put to people. A few in-process tests cover the rest."""

from __future__ import annotations

import getpass
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
import yaml
from click.testing import CliRunner

from opsbot.bot.approvals import Approvals, Decision, InProcessApprovalStore, Pending, RedisApprovalStore, Verdict
from opsbot.bot.build import build_tools
from opsbot.bot.cli import main
from opsbot.bot.mcp_serve.callers import CallersError, Tokens
from opsbot.bot.mcp_serve.desk import Desk
from opsbot.bot.mcp_serve.door import Door
from opsbot.bot.mcp_serve.terminal_desk import TerminalShowing
from opsbot.bot.telemetry.audit import AuditRecord, RedisAudit
from opsbot.config.mcp_serve import McpServeSettings
from opsbot.config.policy import Principal
from opsbot.config.sample_env import prepare_sample
from opsbot.config.settings import SAMPLE_CONFIG, Settings

from .fakes.redis_server import RedisServer, free_port
from .fakes.slack_api import SlackApi
from .fakes.waiting import until

OPSBOT = str(Path(sys.executable).parent / "opsbot")
SECRET = "Sup3rS3cret-db-pass"
ALICE_TOKEN = "alice-" + "7f3a9c1e5b2d4f6a8c0e"
BOB_TOKEN = "bob-" + "1b2c3d4e5f6a7b8c9d0e"
CHANNEL = "C0APPROVE"
# A terminal's clipboard write and a right-to-left override, in a log line: they must arrive inert.
ESCAPES = "\x1b]52;c;ZXZpbA==\x07 \u202etxt.exe"


def config(tmp_path: Path, approvers: tuple[str, ...] = ("UALICE", "UCAROL"), **mcp_serve: Any) -> Path:
    """The sample's services, re-dated to end now, one log line with a password in it; payments'
    logs and every config file for the oncall group; a write command that leaves a marker."""
    sample = prepare_sample(SAMPLE_CONFIG, "mcp-serve-test", cache_home=tmp_path / "cache").parent
    logs = tmp_path / "logs"
    shutil.copytree(sample / "logs", logs)
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    with (logs / "checkout.log").open("a", encoding="utf-8") as out:
        out.write(
            f"{now} ERROR checkout-api db connect failed url=postgres://checkout:{SECRET}@pg-primary:5432/shop "
            f"peer={ESCAPES}\n"
        )
    oncall = {"groups": ["oncall"]}
    policy = {
        "services": {
            "checkout": {"description": "checkout-api", "logs": [str(logs / "checkout.log")]},
            "payments": {"description": "payments", "logs": [str(logs / "payments.log")], "access": oncall},
        },
        "commands": {
            "uptime": {"description": "uptime", "argv": ["uptime"], "timeout_s": 5},
            "pause": {"description": "takes two seconds", "argv": ["sleep", "2"], "timeout_s": 5},
            "mark": {
                "description": "leaves a marker file (a stand-in for a restart)",
                "argv": ["touch", str(tmp_path / "marker")],
                "risk": "write",
                "access": oncall,
                "approvers": {"users": list(approvers)},
                "self_approval": True,  # and still the caller's own user may not approve an agent's request
                "timeout_s": 5,
            },
        },
        "config_files": {"payments": {"path": str(sample / "configs" / "payments.yaml"), "access": oncall}},
    }
    path = tmp_path / "opsbot.yaml"
    path.write_text(yaml.safe_dump({"mcp_serve": mcp_serve, "policy": policy}), encoding="utf-8")
    return path


def text_of(result: Any) -> dict[str, Any]:
    """A tools/call answer's one text block, as the JSON opsbot renders."""
    return json.loads(result.content[0].text)


# ------------------------------------------------------------------------------------------ stdio


def test_over_stdio_the_caller_gets_its_tools_redacted_logs_and_no_write_without_a_person(tmp_path: Path) -> None:
    from mcp import ClientSession, StdioServerParameters, stdio_client

    path = config(tmp_path, stdio={"user": "UALICE", "groups": ["oncall"]})
    stderr = tmp_path / "stderr.txt"
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path)}
    params = StdioServerParameters(command=OPSBOT, args=["--config", str(path), "-v", "mcp-serve"], env=env)

    async def session() -> dict[str, Any]:
        with stderr.open("w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as client:
                await client.initialize()
                listed = await client.list_tools()
                logs = await client.call_tool("query_logs", {"service": "checkout", "contains": "db connect"})
                write = await client.call_tool("run_command", {"command": "mark"})
                return {"tools": {t.name: t for t in listed.tools}, "logs": logs, "write": write}

    got = anyio.run(session)
    tools = got["tools"]
    assert {"query_logs", "run_command", "read_config", "list_services"} <= set(tools)
    assert "approval_status" not in tools  # no approval channel over stdio: writes are refused
    assert tools["query_logs"].input_schema["required"] == ["service"]
    logs = text_of(got["logs"])
    assert logs["ok"] and "db connect failed" in json.dumps(logs) and "pg-primary" in json.dumps(logs)
    assert SECRET not in got["logs"].content[0].text
    assert not {"\x1b", "\x07", "\u202e"} & set(str(logs)) and "ZXZpbA==" in str(logs)
    write = text_of(got["write"])
    assert got["write"].is_error and write["error"]["type"] == "denied"
    assert "no approval channel" in write["error"]["message"]
    assert not (tmp_path / "marker").exists()
    records = [json.loads(line) for line in stderr.read_text().splitlines() if line.startswith('{"at"')]
    calls = [(r["who"], r["thread"], r["tool"], r["status"]) for r in records if r["kind"] == "tool_call"]
    assert calls == [
        ("mcp:UALICE", "mcp-serve", "query_logs", "ok"),
        ("mcp:UALICE", "mcp-serve", "run_command", "denied"),
    ]
    assert SECRET not in stderr.read_text()


# ------------------------------------------------------------------------------------------- HTTP


class Served:
    def __init__(self, url: str, redis: RedisServer, slack: SlackApi, marker: Path, settings: Settings) -> None:
        self.url = url
        self.redis = redis
        self.slack = slack
        self.marker = marker
        self.settings = settings

    def session(self, token: str, *calls: tuple[str, dict[str, Any]]) -> list[Any]:
        return session(self.url, token, *calls)


def session(url: str, token: str, *calls: tuple[str, dict[str, Any]]) -> list[Any]:
    """tools/list, then each call, in one session of the SDK's Streamable HTTP client."""
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async def run() -> list[Any]:
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30)
        async with (
            streamable_http_client(url, http_client=http) as (read, write, *_),
            ClientSession(read, write) as client,
        ):
            await client.initialize()
            answers: list[Any] = [{t.name for t in (await client.list_tools()).tools}]
            for name, arguments in calls:
                answers.append(await client.call_tool(name, arguments))
            return answers

    return anyio.run(run)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One `opsbot mcp-serve --http` for the module (it takes seconds to start), on its own Redis."""
    tmp_path = tmp_path_factory.mktemp("served")
    own_redis = RedisServer(tmp_path / "redis")
    own_redis.start()
    path = config(
        tmp_path,
        tokens=[
            {"token_env": "TEST_MCP_ALICE", "user": "UALICE", "groups": ["oncall"]},
            {"token_env": "TEST_MCP_BOB", "user": "UBOB"},
        ],
        approvals_channel=CHANNEL,
    )
    port = free_port()
    with SlackApi() as slack:
        env = {
            "PATH": os.environ["PATH"],
            "HOME": str(tmp_path),
            "TEST_MCP_ALICE": ALICE_TOKEN,
            "TEST_MCP_BOB": BOB_TOKEN,
            "REDIS_URL": own_redis.url,
            "SLACK_BOT_TOKEN": slack.token,
            "SLACK_API_URL": slack.base_url,
        }
        argv = [OPSBOT, "--config", str(path), "mcp-serve", "--http", f"127.0.0.1:{port}"]
        process = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            started = until(
                lambda: socket.create_connection(("127.0.0.1", port), 0.2).close() or True, 30, 0.05, ignore=(OSError,)
            )
            assert started, process.stderr.read() if process.poll() is not None and process.stderr else "not started"
            settings = Settings.load(path)
            yield Served(f"http://127.0.0.1:{port}/mcp", own_redis, slack, tmp_path / "marker", settings)
        finally:
            process.terminate()
            process.wait(10)
            own_redis.stop()


def test_over_http_a_missing_or_unknown_token_is_refused_with_what_to_do(served: Served) -> None:
    for headers in ({}, {"Authorization": "Bearer not-a-token"}, {"Authorization": f"Basic {ALICE_TOKEN}"}):
        answer = httpx.post(served.url, headers=headers, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
        assert answer.status_code == 401
        assert answer.headers["www-authenticate"].startswith("Bearer")
        assert "Authorization: Bearer <token>" in answer.json()["message"]


def test_over_http_each_token_is_its_caller_with_its_access(served: Served) -> None:
    bob_tools, bob_logs, bob_config = served.session(
        BOB_TOKEN,
        ("query_logs", {"service": "payments"}),
        ("read_config", {"name": "payments"}),
    )
    # Bob may read checkout's logs and run uptime, nothing of payments, no config file.
    assert {"query_logs", "run_command"} <= bob_tools and "read_config" not in bob_tools
    assert bob_logs.is_error and text_of(bob_logs)["error"]["type"] == "denied"
    assert text_of(bob_logs)["error"]["message"] == "you may not read the logs of payments"
    assert bob_config.is_error and not served.marker.exists()
    (alice_tools, alice_logs) = served.session(ALICE_TOKEN, ("query_logs", {"service": "payments", "limit": 2}))
    assert "read_config" in alice_tools
    assert not alice_logs.is_error and text_of(alice_logs)["ok"]
    kept = list(RedisAudit(served.redis.client(), 3600).read(thread="mcp-serve"))
    assert [(r.who, r.tool, r.status) for r in kept if r.tool in ("query_logs", "read_config")] == [
        ("mcp:UBOB", "query_logs", text_of(bob_logs)["error"]["type"]),
        ("mcp:UBOB", "read_config", text_of(bob_config)["error"]["type"]),
        ("mcp:UALICE", "query_logs", "ok"),
    ]


def test_over_http_a_slow_call_holds_up_no_other(served: Served) -> None:
    """Tools run on worker threads: the server's loop answers a quick call while a slow one runs."""
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    took: dict[str, float] = {}

    async def timed(client: ClientSession, name: str, arguments: dict[str, Any], started: float) -> None:
        result = await client.call_tool(name, arguments)
        assert not result.is_error, result.content
        took[arguments.get("command", name)] = time.monotonic() - started

    async def run() -> None:
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {BOB_TOKEN}"}, timeout=30)
        async with (
            streamable_http_client(served.url, http_client=http) as (read, write, *_),
            ClientSession(read, write) as client,
        ):
            await client.initialize()
            async with anyio.create_task_group() as group:
                started = time.monotonic()
                group.start_soon(timed, client, "run_command", {"command": "pause"}, started)
                await anyio.sleep(0.2)
                group.start_soon(timed, client, "list_services", {}, time.monotonic())

    anyio.run(run)
    assert took["pause"] >= 2.0 and took["list_services"] < 1.0, took


class Shown:
    """The View of a click, as Slack would show it: only what was decided."""

    def __init__(self) -> None:
        self.decisions: list[Decision] = []

    def running(self, pending: Pending, by: Principal) -> None:
        pass

    def decided(self, decision: Decision) -> None:
        self.decisions.append(decision)


def test_over_http_a_write_waits_in_slack_for_an_approver_other_than_the_caller(served: Served) -> None:
    _, asked = served.session(ALICE_TOKEN, ("run_command", {"command": "mark"}))
    said = text_of(asked)
    assert not asked.is_error and said["error"]["type"] == "needs_approval"
    assert (
        f"in Slack channel {CHANNEL}" in said["error"]["message"] and "users UALICE, UCAROL" in said["error"]["message"]
    )
    request = said["data"]["request"]
    assert not served.marker.exists()
    # The request is in the approvals channel, in a thread of its own, with its buttons.
    assert served.slack.wait_for(lambda: any(m.get("blocks") for m in _all(served.slack)))
    _, status = served.session(ALICE_TOKEN, ("approval_status", {"request": request}))
    assert text_of(status)["data"]["status"] == "waiting"
    _, other = served.session(BOB_TOKEN, ("approval_status", {"request": request}))
    assert text_of(other)["error"]["type"] == "not_found"

    # `opsbot serve`'s side: the clicks, decided by the approvals service on the same Redis.
    audit = RedisAudit(served.redis.client(), 3600)
    approvals = Approvals(served.settings.policy, RedisApprovalStore(served.redis.url), audit=audit)
    own = approvals.decide(request, True, Principal(platform="slack", user="UALICE", team="T1"), Shown())
    assert own.verdict is Verdict.refused and "someone else" in own.message
    assert not served.marker.exists()
    carol = approvals.decide(request, True, Principal(platform="slack", user="UCAROL", team="T1"), Shown())
    assert carol.verdict is Verdict.approved and carol.result is not None and carol.result.ok
    assert served.marker.exists()
    _, status = served.session(ALICE_TOKEN, ("approval_status", {"request": request}))
    assert {"status": "approved", "by": "UCAROL"}.items() <= text_of(status)["data"].items()

    kept = [
        r
        for r in audit.read(thread="mcp-serve")
        if r.request == request or (r.tool, r.who) == ("run_command", "mcp:UALICE")
    ]
    assert [(r.kind, r.who, r.status) for r in kept] == [
        ("approval_requested", "mcp:UALICE", None),
        ("tool_call", "mcp:UALICE", "needs_approval"),
        ("approval_decided", "slack:UALICE", "refused"),
        ("approval_decided", "slack:UCAROL", "approved"),
        ("write_run", "slack:UCAROL", "ok"),
    ]


def _all(slack: SlackApi) -> list[dict[str, Any]]:
    roots = slack.messages(CHANNEL)
    return roots + [reply for root in roots for reply in slack.replies(CHANNEL, root["ts"])]


# ------------------------------------------------------------------------------------- in process


def test_a_token_is_its_callers_and_an_unset_variable_is_said_by_name() -> None:
    settings = McpServeSettings.model_validate(
        {"tokens": [{"token_env": "T_A", "user": "UALICE", "groups": ["oncall"]}, {"token_env": "T_B", "user": "ci"}]}
    )
    tokens = Tokens.of(settings, {"T_A": ALICE_TOKEN, "T_B": BOB_TOKEN})
    alice = tokens.caller(f"Bearer {ALICE_TOKEN}")
    assert alice == Principal(platform="mcp", user="UALICE", groups=frozenset({"oncall"}))
    assert tokens.caller(f"bearer {BOB_TOKEN}") == Principal(platform="mcp", user="ci")
    for header in (None, "", "Bearer", f"Bearer {ALICE_TOKEN}x", f"Token {ALICE_TOKEN}", ALICE_TOKEN):
        assert tokens.caller(header) is None
    with pytest.raises(CallersError, match="T_B, which is not set"):
        Tokens.of(settings, {"T_A": ALICE_TOKEN})
    with pytest.raises(CallersError, match="mcp_serve.tokens"):
        Tokens.of(McpServeSettings(), {})


def test_http_without_tokens_does_not_start_and_says_what_to_set(tmp_path: Path) -> None:
    path = config(tmp_path)
    answer = CliRunner().invoke(main, ["--config", str(path), "mcp-serve", "--http", f"127.0.0.1:{free_port()}"])
    assert answer.exit_code == 2
    assert "cannot start" in answer.output and "mcp_serve.tokens" in answer.output
    bad = CliRunner().invoke(main, ["--config", str(path), "mcp-serve", "--http", "127.0.0.1:http"])
    assert bad.exit_code == 2 and "HOST:PORT" in bad.output
    tokens = [{"token_env": "TEST_MCP_ALICE", "user": "UALICE"}]
    unset = CliRunner().invoke(main, ["--config", str(config(tmp_path / "t", tokens=tokens)), "mcp-serve", "--http"])
    assert unset.exit_code == 2 and "TEST_MCP_ALICE, which is not set" in unset.output
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        busy = CliRunner().invoke(
            main,
            ["--config", str(config(tmp_path / "b", tokens=tokens)), "mcp-serve", "--http", f"127.0.0.1:{port}"],
            env={"TEST_MCP_ALICE": ALICE_TOKEN},
        )
    assert busy.exit_code == 2 and f"cannot listen on 127.0.0.1:{port}" in busy.output


class Kept:
    def __init__(self) -> None:
        self.records: list[AuditRecord] = []

    def record(self, entry: AuditRecord) -> None:
        self.records.append(entry)


def test_at_the_terminal_a_person_other_than_the_caller_approves_and_only_then_it_runs(tmp_path: Path) -> None:
    settings = Settings.load(config(tmp_path))
    audit = Kept()
    asked: list[str] = []
    answered = threading.Event()

    def yes(question: str) -> bool:
        asked.append(question)
        answered.set()
        return True

    approvals = Approvals(settings.policy, InProcessApprovalStore(), audit=audit)
    carol = Principal(platform="cli", user="UCAROL")
    door = Door(
        settings.policy,
        build_tools(settings),
        limits=settings.loop,
        audit=audit,
        desk=Desk(approvals, TerminalShowing(approvals, user=carol, ask=yes)),
    )
    alice = Principal(platform="mcp", user="UALICE", groups=frozenset({"oncall"}))
    waiting = door.call(alice, "run_command", {"command": "mark"})
    assert waiting.error is not None and waiting.error.type == "needs_approval"
    assert "at the terminal running opsbot mcp-serve" in waiting.error.message
    assert answered.wait(10) and until(lambda: (tmp_path / "marker").exists(), 10)
    status = door.call(alice, "approval_status", {"request": waiting.data["request"]})
    assert status.ok and status.data["status"] == "approved" and status.data["by"] == "UCAROL"
    # At a terminal of the user the token names, the request is shown and not put to them.
    asked.clear()
    own = Desk(approvals, TerminalShowing(approvals, user=Principal(platform="cli", user="UALICE"), ask=yes))
    (tmp_path / "marker").unlink()
    door.desk = own
    again = door.call(alice, "run_command", {"command": "mark"})
    assert again.error is not None and again.error.type == "needs_approval"
    assert not until(lambda: asked or (tmp_path / "marker").exists(), 0.5)
    assert door.call(alice, "approval_status", {"request": again.data["request"]}).data["status"] == "waiting"


def test_the_policys_mcp_tools_are_served_by_access_and_their_writes_wait_for_a_person(tmp_path: Path) -> None:
    from opsbot.config.policy import McpServer, Policy
    from opsbot.tools.mcp import close_shared

    from .test_mcp import FAKE

    marker = tmp_path / "ran"
    marker.write_text("")
    tools = {
        "echo": {"risk": "read", "access": {"groups": ["oncall"]}},
        "status": {"risk": "read"},
        "restart": {"risk": "write", "approvers": {"users": ["UCAROL"]}},
    }
    spec = {"command": [sys.executable, FAKE, "--marker", str(marker)], "timeout_s": 10, "tools": tools}
    settings = Settings(policy=Policy(mcp={"fake": McpServer.model_validate(spec)}))
    asked = threading.Event()

    def no(question: str) -> bool:
        asked.set()
        return False

    approvals = Approvals(settings.policy, InProcessApprovalStore(), audit=Kept())
    carol = Principal(platform="cli", user="UCAROL")
    desk = Desk(approvals, TerminalShowing(approvals, user=carol, ask=no))
    door = Door(settings.policy, build_tools(settings), limits=settings.loop, audit=Kept(), desk=desk)
    alice = Principal(platform="mcp", user="UALICE", groups=frozenset({"oncall"}))
    bob = Principal(platform="mcp", user="UBOB")
    try:
        assert {"fake__echo", "fake__status", "fake__restart"} <= {t.name for t in door.listed(alice)}
        assert "fake__echo" not in {t.name for t in door.listed(bob)}
        assert door.call(bob, "fake__echo", {"text": "hi"}).status == "denied"
        unknown = door.call(bob, "fake__delete_series", {})
        assert unknown.status == "unknown_tool" and unknown.error is not None and "fake__echo" not in unknown.error.hint
        echoed = door.call(alice, "fake__echo", {"text": "hi", "times": 2})
        assert echoed.ok and echoed.data["text"] == "hi hi"
        waiting = door.call(alice, "fake__restart", {"service": "checkout"})
        assert waiting.status == "needs_approval" and "users UCAROL" in (waiting.error.message if waiting.error else "")
        assert asked.wait(10)
        request = waiting.data["request"]
        assert until(lambda: door.call(alice, "approval_status", {"request": request}).data["status"] == "denied", 5)
        assert marker.read_text().split() == ["echo"]  # restart never ran
    finally:
        close_shared()


def test_at_the_terminal_running_http_the_local_user_is_asked_and_their_yes_runs_it(tmp_path: Path) -> None:
    from .fakes.terminal import Terminal

    local = getpass.getuser()
    tokens = [{"token_env": "TEST_MCP_ALICE", "user": "UALICE", "groups": ["oncall"]}]
    path = config(tmp_path, approvers=("UCAROL", local), tokens=tokens)
    port = free_port()
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "TEST_MCP_ALICE": ALICE_TOKEN}
    args = ["--config", str(path), "mcp-serve", "--http", f"127.0.0.1:{port}"]
    with Terminal(args, env, tmp_path) as term:
        term.wait_for("writes wait for approval at the terminal")
        assert until(lambda: socket.create_connection(("127.0.0.1", port), 0.2).close() or True, 30, ignore=(OSError,))
        url = f"http://127.0.0.1:{port}/mcp"
        (_, asked) = session(url, ALICE_TOKEN, ("run_command", {"command": "mark"}))
        said = text_of(asked)
        assert said["error"]["type"] == "needs_approval" and "at the terminal" in said["error"]["message"]
        screen = term.wait_for("approve and run it? [y/N]")
        assert f"may approve: users UCAROL, {local}" in screen and "mcp:UALICE" in screen
        assert not (tmp_path / "marker").exists()
        term.child.sendline("y")
        assert until(lambda: (tmp_path / "marker").exists(), 10)
        (_, status) = session(url, ALICE_TOKEN, ("approval_status", {"request": said["data"]["request"]}))
        assert {"status": "approved", "by": local}.items() <= text_of(status)["data"].items()


def test_check_config_warns_of_a_token_variable_that_is_not_set(tmp_path: Path) -> None:
    from opsbot.bot.config_check import check_config_file

    tokens = [{"token_env": "TEST_MCP_NEVER_SET", "user": "ci-agent"}]
    found = check_config_file(config(tmp_path, tokens=tokens))
    assert not found.errors
    assert any("mcp_serve.tokens[0].token_env: environment variable TEST_MCP_NEVER_SET" in w for w in found.warnings)
