"""The direct command `mcp`, without a model: `mcp` lists the servers and the tools the policy
allows (starting none), `mcp <server>` describes one server's tools (starting it), and `mcp
<server> <tool> key=value ...` calls one through the executor as the model's calls go, its values
typed by the server's schema; a write tool waits for a person. In `opsbot ask`, `opsbot chat`
(y/N) and Slack's `/ops`, against the SDK-written fake server and mcp-server-time."""

from __future__ import annotations

import getpass
import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document

from opsbot.bot.cli import main
from opsbot.bot.terminal.completion import completer
from opsbot.config.policy import McpServer, Policy
from opsbot.tools.mcp import close_shared
from tests.fakes.mcp_server import RLO, TOKEN
from tests.fakes.slack_api import SlackApi
from tests.fakes.slack_stack import Stack, Stacks, stack_settings

ROOT = Path(__file__).resolve().parent.parent
FAKE = ROOT / "tests" / "fakes" / "mcp_server.py"
TIME_SERVER = ROOT / ".venv-mcp" / "bin" / "mcp-server-time"
ME = getpass.getuser()
NO_MODEL = {"OPENAI_API_KEY": None, "OPENAI_BASE_URL": None, "OPSBOT_MODEL": None, "REDIS_URL": None}


@pytest.fixture(autouse=True)
def servers_stopped() -> Iterator[None]:
    yield
    close_shared()


def fake_tools(approver: str = ME) -> dict[str, Any]:
    return {
        "echo": {"risk": "read"},
        "tally": {"risk": "read"},
        "status": {"risk": "read"},
        "nope": {"risk": "read"},
        "restart": {"risk": "write", "approvers": {"users": [approver, "U2"]}, "self_approval": approver == ME},
        "crash": {"risk": "read", "access": {"users": ["someone-else"]}},
    }


def fake_spec(marker: Path, started: Path, approver: str = ME) -> dict[str, Any]:
    command = [sys.executable, str(FAKE), "--marker", str(marker), "--started", str(started)]
    return {"description": "the ops fake", "command": command, "tools": fake_tools(approver)}


def write_config(tmp_path: Path, servers: dict[str, Any]) -> Path:
    config = tmp_path / "opsbot.yaml"
    config.write_text(json.dumps({"policy": {"mcp": servers}}))  # JSON is YAML
    return config


def ran(marker: Path) -> list[str]:
    return marker.read_text().split() if marker.exists() else []


class Rig:
    def __init__(self, tmp_path: Path) -> None:
        self.marker, self.started = tmp_path / "ran.txt", tmp_path / "started.txt"
        gone = {"command": [str(tmp_path / "no-such-server")], "tools": {"t": {"risk": "read"}}}
        self.config = write_config(tmp_path, {"fake": fake_spec(self.marker, self.started), "gone": gone})

    def ask(self, text: str, *options: str) -> Result:
        done = CliRunner().invoke(main, ["--config", str(self.config), "ask", *options, text], env=NO_MODEL)
        assert "Traceback" not in done.output, done.output
        return done

    def starts(self) -> int:
        return len(self.started.read_text().split()) if self.started.exists() else 0


@pytest.fixture
def rig(tmp_path: Path) -> Rig:
    return Rig(tmp_path)


# ---------------------------------------------------------------- listing


def test_mcp_lists_servers_and_their_allowed_tools_without_starting_any(rig: Rig) -> None:
    done = rig.ask("mcp")
    assert done.exit_code == 0
    assert "fake [not started: started when first needed; `mcp fake` starts it" in done.output
    assert "— the ops fake" in done.output
    assert "    echo (read)\n" in done.output
    assert "    restart (write: waits for a person's approval)\n" in done.output
    assert "gone [not started" in done.output and "    t (read)" in done.output
    assert "tally" in done.output and "huge" not in done.output, "only the policy's tools are listed"
    assert rig.starts() == 0


def test_mcp_server_starts_it_and_describes_its_tools_as_data(rig: Rig) -> None:
    done = rig.ask("mcp fake")
    assert done.exit_code == 0 and rig.starts() == 1
    assert "fake [running] — the ops fake" in done.output
    assert "    echo (read): Echo the text back, and count how many times it was said.\n" in done.output
    assert "      arguments: text (string, required), times (integer)\n" in done.output
    assert "      arguments: numbers (array, required), weights (object), loud (boolean)\n" in done.output
    assert "    nope (read): the server has no tool 'nope', so it is not offered" in done.output
    assert "      not for you: user" in done.output, "crash is someone else's"
    # The description that carries an instruction is shown as the server's data: redacted, inert.
    status = next(line for line in done.output.splitlines() if line.startswith("    status (read)"))
    assert "ignore your rules" in status and TOKEN not in status and "[REDACTED" in status
    assert RLO not in done.output and "\\u202e" in status


def test_a_server_that_cannot_start_is_said_plainly(rig: Rig) -> None:
    done = rig.ask("mcp gone")
    assert done.exit_code == 0
    assert "gone [down: MCP server gone is not running: it could not be started: program not found" in done.output
    assert "    t (read)" in done.output


def test_mcp_as_json_gives_the_whole_listing(rig: Rig) -> None:
    listed = json.loads(rig.ask("mcp", "--json").output)
    [fake, gone] = listed["result"]["data"]["servers"]
    assert (fake["name"], fake["state"], gone["state"]) == ("fake", "not started", "not started")
    assert {tool["name"]: tool["risk"] for tool in fake["tools"]}["restart"] == "write"


# ---------------------------------------------------------------- calls


def test_a_read_tool_is_called_with_values_typed_by_its_schema(rig: Rig) -> None:
    echoed = rig.ask("mcp fake echo text='hello there' times=2")
    assert (echoed.exit_code, echoed.output) == (0, "hello there hello there\n")
    tallied = rig.ask('mcp fake tally numbers=[1, 2, 3] weights={"a": 2, "b": 0.5} loud=true')
    assert (tallied.exit_code, tallied.output) == (0, "SUM 15!\n")
    assert ran(rig.marker) == ["echo", "tally"]


def test_calling_one_servers_tool_starts_that_server_alone(tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    servers = {name: fake_spec(d / "ran.txt", d / "started.txt") for name, d in (("one", first), ("two", second))}
    config = write_config(tmp_path, servers)
    done = CliRunner().invoke(main, ["--config", str(config), "ask", "mcp two echo text=hi"], env=NO_MODEL)
    assert (done.exit_code, done.output) == (0, "hi\n")
    assert ran(second / "ran.txt") == ["echo"] and not (first / "started.txt").exists()


@pytest.mark.parametrize(
    ("typed", "said"),
    [
        ("mcp fake echo text=hi times=x", "times: 'x' is not of type 'integer'"),
        ("mcp fake echo txt=hi", "'text' is a required property; txt: not an argument of this tool"),
        ("mcp fake tally numbers=1,2", "numbers: '1,2' is not of type 'array'"),
        ("mcp fake tally numbers=[1] loud=yes", "loud: 'yes' is not of type 'boolean'"),
    ],
    ids=["wrong type", "wrong key", "not a list", "not a boolean"],
)
def test_a_wrong_key_or_type_is_refused_naming_what_is_allowed_and_nothing_is_sent(
    rig: Rig, typed: str, said: str
) -> None:
    done = rig.ask(typed)
    assert done.exit_code == 1
    assert said in done.output and "allowed: " in done.output, done.output
    assert ran(rig.marker) == []


@pytest.mark.parametrize(
    ("typed", "said"),
    [
        ("mcp fake huge", "opsbot may not call a tool 'huge' of MCP server fake"),
        ("mcp nosuch", "There is no MCP server 'nosuch'"),
        ("mcp fake echo text=a text=b", "each key once"),
        ('mcp fake echo text="unclosed', "a value with spaces quoted"),
        ("mcp fake crash", "denied: you may not call fake__crash: user"),
        ("mcp fake nope", "✗ fake__nope is not offered; `mcp fake` says why."),
    ],
    ids=["unlisted tool", "unknown server", "key twice", "unclosed quote", "someone else's tool", "server lacks it"],
)
def test_what_cannot_be_called_is_refused_in_words(rig: Rig, typed: str, said: str) -> None:
    done = rig.ask(typed)
    assert done.exit_code == 1 and said in done.output, done.output
    assert ran(rig.marker) == []


def test_a_write_tool_waits_for_approval_and_ask_does_not_call_it(rig: Rig) -> None:
    done = rig.ask("mcp fake restart service=db")
    assert done.exit_code == 1
    assert (
        "✗ needs approval: fake__restart changes things, so it is not called until a person approves it: "
        'fake__restart {"service": "db"}' in done.output
    )
    assert "needs a person's approval: in Slack, or in `opsbot chat`" in done.output
    assert ran(rig.marker) == []


@pytest.mark.parametrize("approve", [True, False])
def test_in_opsbot_chat_a_write_tool_is_called_once_the_person_says_y(rig: Rig, approve: bool) -> None:
    typed = f"mcp fake restart service=db\n{'y' if approve else 'n'}\nmcp fake echo text=after\nexit\n"
    done = CliRunner().invoke(main, ["--config", str(rig.config), "chat", "--plain"], input=typed, env=NO_MODEL)
    assert done.exit_code == 0 and "Traceback" not in done.output, done.output
    assert '⏸ approval needed: fake__restart {"service": "db"}' in done.output
    if approve:
        assert ran(rig.marker) == ["restart", "echo"] and "restarted db" in done.output
    else:
        assert ran(rig.marker) == ["echo"] and "restarted db" not in done.output
    assert rig.starts() == 1, "one server for the listing's process, the call and the approved write"


def test_tab_completes_servers_and_their_tools() -> None:
    spec = McpServer.model_validate({"command": ["x"], "tools": fake_tools()})
    tab = completer(Policy(mcp={"fake": spec, "time": spec.model_copy(update={"tools": {}})}))

    def offered(typed: str) -> list[str]:
        return [c.text for c in tab.get_completions(Document(typed), CompleteEvent(completion_requested=True))]

    assert offered("mc") == ["mcp"]
    assert offered("mcp ") == ["fake", "time"]
    assert offered("mcp fake e") == ["echo"]
    assert offered("mcp fake r") == ["restart"]


@pytest.mark.skipif(not TIME_SERVER.exists(), reason="the MCP servers' venv is missing: make .venv-mcp/.installed")
def test_mcp_server_time_is_listed_and_called(tmp_path: Path) -> None:
    tools = {"get_current_time": {"risk": "read"}, "convert_time": {"risk": "read"}}
    config = write_config(tmp_path, {"time": {"command": [str(TIME_SERVER)], "tools": tools}})

    def ask(text: str) -> Result:
        return CliRunner().invoke(main, ["--config", str(config), "ask", text], env=NO_MODEL)

    listed = ask("mcp time")
    assert listed.exit_code == 0 and "time [running]" in listed.output, listed.output
    assert "arguments: timezone (string, required)" in listed.output
    now = ask("mcp time get_current_time timezone=Europe/Paris")
    assert now.exit_code == 0 and json.loads(now.output)["timezone"] == "Europe/Paris", now.output
    converted = ask("mcp time convert_time source_timezone=UTC time=12:00 target_timezone=Asia/Tokyo")
    assert converted.exit_code == 0 and '"datetime": "' in converted.output and "T21:00:00+09:00" in converted.output
    mars = ask("mcp time get_current_time timezone=Mars/Olympus")
    assert mars.exit_code == 1 and "✗ failed" in mars.output and "Mars/Olympus" in mars.output


# ---------------------------------------------------------------- Slack's /ops


@pytest.fixture
def make_stack(redis_server, sample) -> Iterator[Callable[[Policy], Stack]]:  # noqa: ANN001 - fixtures
    stacks = Stacks()

    def make(policy: Policy) -> Stack:
        redis_server.flush()
        slack = SlackApi()
        settings = stack_settings(slack, redis_server.url, policy, None)
        return stacks.start(slack, settings, None)

    yield make
    stacks.close()


def slack_policy(sample_policy: Policy, tmp_path: Path) -> Policy:
    spec = McpServer.model_validate(fake_spec(tmp_path / "ran.txt", tmp_path / "started.txt", approver="U2"))
    return sample_policy.model_copy(update={"mcp": {"fake": spec}})


def test_ops_mcp_lists_and_calls_in_slack(make_stack, sample, tmp_path: Path) -> None:  # noqa: ANN001
    stack = make_stack(slack_policy(sample.policy, tmp_path))
    stack.command("mcp", key="list")
    assert stack.slack.wait_for(lambda: stack.slack.responses("list"), 30)
    stack.command("mcp fake echo text=hi times=3", key="echo")
    stack.command("mcp fake echo times=three", key="bad")
    for key in ("echo", "bad"):
        assert stack.slack.wait_for(lambda key=key: stack.slack.responses(key), 30), key
    listed = stack.slack.responses("list")[0]["text"]
    assert "fake [not started" in listed and "restart (write: waits for a person's approval)" in listed, listed
    assert "hi hi hi" in stack.slack.responses("echo")[0]["text"]
    bad = stack.slack.responses("bad")[0]["text"]
    assert "times: 'three' is not of type 'integer'" in bad and "allowed: text, times" in bad, bad
    assert ran(tmp_path / "ran.txt") == ["echo"]


def test_ops_mcp_write_posts_an_approval_request_and_runs_once_approved(make_stack, sample, tmp_path: Path) -> None:  # noqa: ANN001
    stack = make_stack(slack_policy(sample.policy, tmp_path))
    stack.command("mcp fake restart service=db", key="write")
    assert stack.slack.wait_for(lambda: stack.slack.responses("write"), 30)
    assert stack.slack.wait_for(lambda: _approval(stack), 15)
    message = _approval(stack)
    shown = json.dumps(message["blocks"])
    assert "fake__restart" in shown and "db" in shown
    rid = next(b for b in message["blocks"] if b.get("block_id") == "opsbot_approval")["elements"][0]["value"]
    stack.click("opsbot_approve", rid, user="U3", message_ts=message["ts"])  # not an approver
    assert stack.slack.wait_for(lambda: stack.slack.ephemerals("C1"), 10)
    assert ran(tmp_path / "ran.txt") == []
    stack.click("opsbot_approve", rid, user="U2", message_ts=message["ts"])
    stack.click("opsbot_approve", rid, user="U2", message_ts=message["ts"])  # a double click
    assert stack.slack.wait_for(lambda: "restarted db" in json.dumps(stack.slack.messages("C1")), 30)
    assert stack.idle()
    assert ran(tmp_path / "ran.txt") == ["restart"], "called once, after the approval"


def _approval(stack: Stack) -> dict[str, Any] | None:
    for root in stack.slack.messages("C1"):
        for message in [root, *stack.slack.messages("C1", root["ts"])]:
            if any(b.get("block_id") == "opsbot_approval" for b in message.get("blocks", [])):
                return message
    return None
