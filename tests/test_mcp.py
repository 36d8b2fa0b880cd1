"""Tools from an MCP server under opsbot's policy, against a small stdio server written with the
SDK's server side (tests/fakes/mcp_server.py) for what real servers do only by accident."""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from opsbot.config.policy import Access, McpServer, Policy, Principal
from opsbot.tools.base import Registry, ToolResult
from opsbot.tools.executor import Executor, RetryPolicy, ToolCall
from opsbot.tools.mcp import McpHub, offered_tools, refusals
from tests.fakes.clock import SkippingClock
from tests.fakes.mcp_server import INSTRUCTION, RLO, TOKEN
from tests.fakes.redis_server import free_port

FAKE = str(Path(__file__).parent / "fakes" / "mcp_server.py")
READS = ("echo", "crash", "huge", "status", "broken", "chart", "counts", "environment", "slow")
REFUSED = ("bad_schema", "big_schema", "missing")


def server(marker: Path, **spec: Any) -> McpServer:
    tools: dict[str, Any] = {name: {"risk": "read"} for name in (*READS, *REFUSED)}
    tools["restart"] = {"risk": "write"}
    tools.update(spec.pop("tools", {}))
    return McpServer.model_validate(
        {"command": [sys.executable, FAKE, "--marker", str(marker)], "timeout_s": 10, "tools": tools, **spec}
    )


class Rig:
    """A hub on the fake server, its offered tools in a registry, and the executor over them."""

    def __init__(self, marker: Path, clock: SkippingClock, environ: dict[str, str] | None = None, **spec: Any) -> None:
        self.marker = marker
        marker.write_text("")
        self.policy = Policy(mcp={"fake": server(marker, **spec)})
        self.hub = McpHub(self.policy.mcp, clock=clock, environ=environ)
        self.registry = Registry(offered_tools(self.policy, self.hub))
        # No retries: each call's own answer is what a test looks at.
        self.executor = Executor(self.registry, RetryPolicy(retries=0))

    def call(self, tool: str, principal: Principal | None = None, **args: Any) -> ToolResult:
        return self.executor.run_one(ToolCall("c1", f"fake__{tool}", json.dumps(args)), principal).result

    def ran(self) -> list[str]:
        return self.marker.read_text().split()


@pytest.fixture
def clock() -> SkippingClock:
    return SkippingClock()


@pytest.fixture
def rig(tmp_path: Path, clock: SkippingClock) -> Iterator[Rig]:
    made = Rig(tmp_path / "ran.txt", clock)
    yield made
    made.hub.close()


def test_only_the_policys_tools_with_sound_schemas_are_offered_under_the_servers_name(rig: Rig) -> None:
    assert rig.registry.names == sorted(f"fake__{name}" for name in (*READS, "restart"))
    schema = rig.registry.get("fake__echo").schema()  # type: ignore[union-attr]
    assert schema["function"]["parameters"] == {
        "type": "object",
        "properties": {
            "text": {"title": "Text", "type": "string"},
            "times": {"default": 1, "title": "Times", "type": "integer"},
        },
        "required": ["text"],
    }
    assert schema["function"]["description"].startswith("Echo the text back")


def test_check_config_words_say_why_a_listed_tool_is_not_offered(rig: Rig) -> None:
    listing = rig.hub.links["fake"].tools()
    assert isinstance(listing, dict)
    assert refusals(rig.policy.mcp["fake"], listing) == {
        "bad_schema": "refused, not offered: its input schema is not a valid JSON schema: 'zero' is not of type "
        "'number' (at properties.x.minimum)",
        "big_schema": "refused, not offered: its input schema is 49,324 characters, more than the 8,000 a tool "
        "may take",
        "missing": "the server has no tool 'missing', so it is not offered",
    }


def test_a_read_tool_runs_and_its_text_and_structured_content_are_rendered(rig: Rig) -> None:
    assert rig.call("echo", text="hi", times=2) == ToolResult.success(
        {"text": "hi hi", "structured": {"result": "hi hi"}}
    )
    counts = rig.call("counts")
    assert counts.ok and counts.data["structured"] == {"ok": 41, "failed": 1}
    assert rig.ran() == ["echo", "counts"]


def test_arguments_are_checked_against_the_servers_schema_before_anything_is_sent(rig: Rig) -> None:
    result = rig.call("echo", times="x")
    assert result.error is not None and result.error.type == "invalid_args"
    assert result.error.message == (
        "arguments do not fit fake__echo: (arguments): 'text' is a required property; "
        "times: 'x' is not of type 'integer'"
    )
    assert result.error.hint == "required: text; allowed: text, times"
    assert rig.ran() == []


def test_an_image_is_said_and_not_sent(rig: Rig) -> None:
    result = rig.call("chart")
    assert result.data == {"text": "error rate, last hour", "not_sent": ["image (image/png, 1,032 bytes): not sent"]}
    assert "iVBOR" not in result.render()


def test_the_servers_is_error_is_failed_with_its_text(rig: Rig) -> None:
    result = rig.call("broken")
    assert result.error is not None and result.error.type == "failed" and not result.error.retryable
    assert result.error.message == "fake__broken failed: Error executing tool broken"


def test_a_write_tool_waits_for_a_person_and_never_runs(rig: Rig) -> None:
    result = rig.call("restart", service="db")
    assert result.error is not None and result.error.type == "needs_approval"
    assert "does not run until a person approves it" in result.error.message and "was not run" in result.error.message
    assert "approval" in rig.registry.get("fake__restart").description  # type: ignore[union-attr]
    assert rig.ran() == []


def test_an_unlisted_tool_the_server_exposes_cannot_be_called(rig: Rig) -> None:
    result = rig.call("bad_schema", x=1)
    assert result.error is not None and result.error.type == "unknown_tool"
    assert rig.ran() == []


def test_access_is_checked_per_tool(tmp_path: Path, clock: SkippingClock) -> None:
    rig = Rig(tmp_path / "ran.txt", clock, tools={"echo": {"risk": "read", "access": {"groups": ["oncall"]}}})
    try:
        someone = Principal(platform="slack", user="U1")
        result = rig.call("echo", someone, text="hi")
        assert result.error is not None and result.error.type == "denied"
        assert "oncall" in result.error.message
        oncall = Principal(platform="slack", user="U2", groups=frozenset({"oncall"}))
        assert rig.call("echo", oncall, text="hi").ok
        assert Access(groups=frozenset({"oncall"})).allows(oncall)
    finally:
        rig.hub.close()


def test_a_description_with_an_instruction_stays_data_redacted_and_inert(rig: Rig) -> None:
    description = rig.registry.get("fake__status").description  # type: ignore[union-attr]
    assert INSTRUCTION in description  # the model reads it, said to be the server's words
    assert "the description before this is the server's, not opsbot's" in description
    assert TOKEN not in description and RLO not in description
    # Doing what it says: git_commit is nothing this registry has, and the write waits.
    assert rig.call("git_commit", message="pwned").error.type == "unknown_tool"  # type: ignore[union-attr]
    assert rig.call("restart", service="all").error.type == "needs_approval"  # type: ignore[union-attr]
    assert TOKEN not in rig.call("status").render()
    assert rig.ran() == ["status"]


def test_a_huge_result_is_cut_in_the_middle_and_says_so(rig: Rig) -> None:
    result = rig.call("huge")
    assert result.ok and result.truncated is not None and "cut from the middle" in result.truncated
    text = result.data["text"]
    assert 200_000 <= len(text) < 200_100 and text.startswith("line 000000") and text.endswith("x" * 60)
    capped = result.capped(4_000)
    assert len(capped.render()) <= 4_000 and capped.truncated


def test_a_server_that_crashes_mid_call_is_unavailable_then_restarted_after_its_backoff(
    rig: Rig, clock: SkippingClock
) -> None:
    assert rig.call("echo", text="before").ok
    crashed = rig.call("crash")
    assert crashed.error is not None and crashed.error.type == "unavailable" and crashed.error.retryable
    assert crashed.error.message == (
        "MCP server fake is not running: it stopped during a call of crash; opsbot starts it again in 1.0s"
    )
    # Within the backoff, the server's tools say so without starting it.
    waiting = rig.call("echo", text="again")
    assert waiting.error is not None and waiting.error.type == "unavailable"
    assert "not running: it stopped during a call of crash" in waiting.error.message
    clock.sleep(1.5)
    restarted = rig.call("crash")
    assert restarted.ok and restarted.data["text"].startswith("alive, pid ")
    assert rig.ran() == ["echo", "crash", "crashed", "crash"]


def test_a_call_slower_than_the_servers_timeout_is_a_timeout_not_retried(tmp_path: Path, clock: SkippingClock) -> None:
    rig = Rig(tmp_path / "ran.txt", clock, timeout_s=0.5)
    try:
        result = rig.call("slow", seconds=1.5)
        assert result.error is not None and result.error.type == "timeout" and not result.error.retryable
        assert result.error.message == "MCP server fake did not answer the call of slow within 0.5s"
    finally:
        rig.hub.close()


def test_the_server_gets_only_the_variables_the_policy_names(tmp_path: Path, clock: SkippingClock) -> None:
    environ = {**os.environ, "PASSED_ON": "yes", "OPENAI_API_KEY": "sk-secret"}
    rig = Rig(tmp_path / "ran.txt", clock, environ=environ, env=["PASSED_ON"])
    try:
        names = set(rig.call("environment").data["text"].split(": ", 1)[1].split())
        assert "PASSED_ON" in names and "OPENAI_API_KEY" not in names
        assert names <= {"PASSED_ON", "HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LC_CTYPE"}
    finally:
        rig.hub.close()


def test_a_named_variable_that_is_not_set_keeps_the_server_down_and_says_which(
    tmp_path: Path, clock: SkippingClock
) -> None:
    rig = Rig(tmp_path / "ran.txt", clock, environ={"PATH": os.environ["PATH"]}, env=["DEPLOY_TOKEN"])
    try:
        # Its tools are still offered (the policy lists them) and answer what is wrong.
        assert "fake__echo" in rig.registry.names
        result = rig.call("echo", text="x")
        assert result.error is not None and result.error.type == "unavailable"
        assert "environment variable DEPLOY_TOKEN" in result.error.message
        assert "not set where opsbot runs" in result.error.message
    finally:
        rig.hub.close()


def test_a_program_that_is_not_there_is_said(tmp_path: Path, clock: SkippingClock) -> None:
    policy = Policy(
        mcp={
            "gone": McpServer.model_validate(
                {"command": [str(tmp_path / "no-such-server")], "tools": {"t": {"risk": "read"}}}
            )
        }
    )
    hub = McpHub(policy.mcp, clock=clock)
    try:
        [tool] = offered_tools(policy, hub)
        result = Executor(Registry([tool]), RetryPolicy(retries=0)).run_one(ToolCall("c", "gone__t", "{}")).result
        assert result.error is not None and result.error.type == "unavailable"
        assert "it could not be started: program not found" in result.error.message
        assert "no-such-server" in result.error.message
    finally:
        hub.close()


def test_closing_the_hub_stops_the_server(rig: Rig) -> None:
    pid = int(rig.call("environment").data["text"].split(":")[0].removeprefix("pid "))
    os.kill(pid, 0)
    rig.hub.close()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    after = rig.call("echo", text="x")
    assert after.error is not None
    assert after.error.message.startswith("MCP server fake is not running: opsbot is stopping")


@pytest.fixture(scope="module")
def http_server() -> Iterator[str]:
    """The fake over Streamable HTTP; its URL once it accepts connections."""
    port = free_port()
    process = subprocess.Popen([sys.executable, FAKE, "--http", str(port)], stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert process.poll() is None and time.monotonic() < deadline, "the HTTP server did not start"
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(10)


def test_a_streamable_http_server_is_called_with_headers_from_named_variables(
    http_server: str, clock: SkippingClock
) -> None:
    spec = {"url": http_server, "headers": {"Authorization": "FAKE_MCP_AUTH"}, "tools": {"whoami": {"risk": "read"}}}
    policy = Policy(mcp={"remote": McpServer.model_validate(spec)})
    hub = McpHub(policy.mcp, clock=clock, environ={"FAKE_MCP_AUTH": "Bearer s3cr3t-value"})
    try:
        registry = Registry(offered_tools(policy, hub))
        assert registry.names == ["remote__whoami"]
        result = Executor(registry, RetryPolicy(retries=0)).run_one(ToolCall("c", "remote__whoami", "{}")).result
        assert result.ok and result.data["text"] == "sha256 " + hashlib.sha256(b"Bearer s3cr3t-value").hexdigest()
    finally:
        hub.close()


def test_a_header_variable_that_is_not_set_is_said_and_nothing_is_sent(http_server: str, clock: SkippingClock) -> None:
    spec = {"url": http_server, "headers": {"Authorization": "FAKE_MCP_AUTH"}, "tools": {"whoami": {"risk": "read"}}}
    policy = Policy(mcp={"remote": McpServer.model_validate(spec)})
    hub = McpHub(policy.mcp, clock=clock, environ={})
    try:
        result = (
            Executor(Registry(offered_tools(policy, hub)), RetryPolicy(retries=0))
            .run_one(ToolCall("c", "remote__whoami", "{}"))
            .result
        )
        assert result.error is not None and result.error.type == "unavailable"
        assert "environment variable FAKE_MCP_AUTH (a header)" in result.error.message
    finally:
        hub.close()


def test_a_server_to_start_at_startup_starts_before_anything_asks_for_it(tmp_path: Path, clock: SkippingClock) -> None:
    started = tmp_path / "started.txt"
    spec = {
        "command": [sys.executable, FAKE, "--started", str(started)],
        "start": "at_startup",
        "tools": {"echo": {"risk": "read"}},
    }
    hub = McpHub({"early": McpServer.model_validate(spec)}, clock=clock)
    try:
        hub.start_eager()
        deadline = time.monotonic() + 30
        while not started.exists() or not started.read_text().strip():
            assert time.monotonic() < deadline, "the server was not started"
            time.sleep(0.05)
        [pid] = started.read_text().split()
        # Asked for its tools now, the running server answers: it is not started a second time.
        listing = hub.links["early"].tools()
        assert isinstance(listing, dict) and "echo" in listing
        assert started.read_text().split() == [pid]
    finally:
        hub.close()
