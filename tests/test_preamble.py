"""What the model writes beside a tool call ("Looking at checkout's errors first.") is part of that
step, never of the answer, in every front end: `opsbot ask` (stdout the answer alone, the preamble
with the step on stderr), `--json` (on the step's record), chat (live at a terminal, and plain),
and Slack (streamed with the step's line, or in the steps message).

The model is the scripted server over real HTTP: it writes a preamble beside its call, then the answer."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from opsbot.bot.slack.blocks import STEPS_EVENT
from opsbot.config.settings import SAMPLE_CONFIG
from tests.fakes import slack_payloads as payloads
from tests.fakes.model_server import Call, ModelServer, Policy, Reply, tool_results
from tests.fakes.slack_api import ApiCall
from tests.fakes.slack_stack import Stack
from tests.fakes.terminal import chats, clean_env

PREAMBLE = "Looking at checkout's errors first."
ANSWER = "Payments times out.\nRestart it."
CALL = Call("query_logs", {"service": "checkout", "level": "ERROR", "limit": 2})


def preamble_then_answer(streamed: bool = True) -> Policy:
    """The preamble beside a call, then, once the call's result is back, the answer. Not
    `streamed`: the server ignores `"stream": true` for the first (the client asks it again)."""

    def policy(body: dict[str, Any]) -> Reply:
        if not tool_results(body):
            return Reply(content=PREAMBLE, calls=[CALL], stream=streamed)
        return Reply(content=ANSWER)

    return policy


def opsbot(*args: str, cwd: Path, server: ModelServer, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "opsbot.bot", "--config", str(SAMPLE_CONFIG), *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=clean_env(OPENAI_BASE_URL=server.base_url, OPSBOT_LLM__MAX_RETRIES="0"),
        cwd=cwd,
        timeout=60,
    )


def step_lines(stderr: str) -> list[str]:
    return [line.strip() for line in stderr.splitlines() if line.strip()]


# ---------------------------------------------------------------- the terminal


def test_ask_prints_the_answer_alone_and_the_preamble_with_its_step(tmp_path: Path, model_server) -> None:
    done = opsbot("ask", "why 502?", cwd=tmp_path, server=model_server(preamble_then_answer()))

    assert done.returncode == 0, done.stderr
    assert done.stdout == f"{ANSWER}\n"
    lines = step_lines(done.stderr)
    said = lines.index(PREAMBLE)
    assert lines[said + 1].startswith("… step 1: query_logs") and lines[said + 2].startswith("✓ step 1: query_logs")


def test_ask_json_carries_the_preamble_on_its_step_and_not_in_the_answer(tmp_path: Path, model_server) -> None:
    done = opsbot("ask", "--json", "why 502?", cwd=tmp_path, server=model_server(preamble_then_answer()))

    assert done.returncode == 0, done.stderr
    reply = json.loads(done.stdout)
    assert reply["text"] == ANSWER
    first, last = reply["steps"]
    assert first["decision"] == "tool_calls" and first["preamble"] == PREAMBLE
    assert [call["tool"] for call in first["calls"]] == ["query_logs"]
    assert last["decision"] == "answer" and last["preamble"] is None


def test_plain_chat_shows_the_preamble_with_its_step_and_the_answer_alone(tmp_path: Path, model_server) -> None:
    done = opsbot("chat", cwd=tmp_path, server=model_server(preamble_then_answer()), stdin="why 502?\nexit\n")

    assert done.returncode == 0, done.stderr
    assert PREAMBLE not in done.stdout
    assert f"opsbot> {ANSWER}\n" in done.stdout
    lines = step_lines(done.stderr)
    assert lines[lines.index(PREAMBLE) + 2].startswith("✓ step 1: query_logs")


def test_a_chat_at_a_terminal_shows_the_preamble_above_its_step_and_the_answer_alone(
    tmp_path: Path, model_server
) -> None:
    with chats(tmp_path, SAMPLE_CONFIG) as open_chat:
        term = open_chat(model=model_server(preamble_then_answer()))
        term.enter("why 502?")
        screen = term.wait_for("model call(s)")

    rows = [row.strip() for row in screen.splitlines()]
    said = rows.index(PREAMBLE)
    assert rows[said + 1].startswith("✓ step 1: query_logs")
    assert rows[said + 2] == ANSWER.replace("\n", " ")  # rendered as markdown: one paragraph
    assert screen.count("Looking at checkout") == 1


def test_a_preamble_with_calls_where_tools_are_withdrawn_is_no_answer(tmp_path: Path, model_server) -> None:
    # Past max_steps the model is asked without tools; this one calls one all the same, with words.
    server = model_server(lambda body: Reply(content=PREAMBLE, calls=[CALL]))
    done = opsbot("ask", "--json", "why 502?", cwd=tmp_path, server=server)

    reply = json.loads(done.stdout)
    last = reply["steps"][-1]
    assert last["decision"] == "tool_calls_ignored" and last["preamble"] == PREAMBLE
    assert PREAMBLE not in reply["text"]


# ---------------------------------------------------------------- Slack


def ask(stack: Stack) -> list[dict[str, Any]]:
    """opsbot's messages in the thread of a mention, once it is answered."""
    mention = payloads.app_mention("<@UBOT> why is checkout throwing 502s?")
    stack.event(mention)
    assert stack.slack.wait_for(lambda: len(stack.answers("C1", mention["ts"])) == 1, 15)
    assert stack.idle()
    return stack.slack.replies("C1", mention["ts"])


STREAMING = ("chat.startStream", "chat.appendStream")


def streamed_by(call: ApiCall) -> str:
    """What a stream call adds: `markdown_text` and the markdown chunks (what `chat_stream()` sends)."""
    chunks = call.args.get("chunks") or []
    return (call.args.get("markdown_text") or "") + "".join(c["text"] for c in chunks if c["type"] == "markdown_text")


def markdown_of(message: dict[str, Any]) -> list[str]:
    return [b["text"] for b in message.get("blocks", []) if b["type"] == "markdown"]


def test_slack_streams_the_preamble_with_its_steps_line_and_the_answer_below(sample_stack) -> None:
    stack = sample_stack(preamble_then_answer())

    [message] = ask(stack)
    lines = message["text"].splitlines()
    assert lines[0] == PREAMBLE
    assert lines[1].startswith("✓ 1. `query_logs`")
    assert lines[2:] == ["", *ANSWER.splitlines()]
    [stop] = stack.slack.calls("chat.stopStream")
    assert PREAMBLE not in json.dumps(stop.args), "the answer's own part holds no preamble"
    streamed = "".join(streamed_by(call) for call in stack.slack.calls() if call.method in STREAMING)
    assert f"{PREAMBLE}\n✓ 1. `query_logs`" in streamed, "the preamble went out with its step's line"


def test_slack_without_streams_shows_the_preamble_in_the_steps_message_not_the_answer(sample_stack) -> None:
    stack = sample_stack(preamble_then_answer())
    stack.slack.streams_supported = False

    steps, answer = ask(stack)
    assert steps["metadata"]["event_type"] == STEPS_EVENT
    lines = steps["blocks"][0]["text"]["text"].splitlines()
    assert lines[lines.index(PREAMBLE) + 1].startswith("✓ 1. `query_logs`")
    assert markdown_of(answer) == [ANSWER]
    assert PREAMBLE not in json.dumps(answer)


def test_slack_streams_a_preamble_that_did_not_stream_as_its_steps_first_line(sample_stack) -> None:
    # A reply the server would not stream: the client asks again, and from then on, without
    # streaming, so the preamble is known only with its call, and goes out with the step's line.
    stack = sample_stack(preamble_then_answer(streamed=False))

    [message] = ask(stack)
    [said, step] = message["text"].splitlines()
    assert said == PREAMBLE and step.startswith("✓ 1. `query_logs`")
    assert markdown_of(message) == [ANSWER], "the answer, whole at the stop, below the steps"
