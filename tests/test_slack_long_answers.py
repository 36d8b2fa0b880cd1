"""An answer too long for one Slack message is never cut: it goes in several messages of its thread,
in order, each within Slack's limits, or past ANSWER_MESSAGES as a file with a note in the answer's
message; every notification text stays within Slack's 40,000 characters; and a retry posts nothing
twice.

Through opsbot's own client (`GuardedClient`: what it sends is made plain by bot/slack/outbound.py,
as in production) and the real slack-sdk against the fake Slack, which refuses what Slack refuses
(too long a text, markdown past 12,000 characters, an oversized text object) and takes files as
`files_upload_v2` sends them. The answers come from the loop and the scripted model server."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from opsbot.bot.agent import Agent
from opsbot.bot.agent import Reply as RunReply
from opsbot.bot.llm import ModelClient
from opsbot.bot.memory import InProcessMemory
from opsbot.bot.slack.blocks import (
    ANSWER_EVENT,
    ANSWER_MESSAGES,
    ANSWER_PART_EVENT,
    STEPS_EVENT,
    escape,
)
from opsbot.bot.slack.jobs import Job, ThreadRef
from opsbot.bot.slack.outbound import GuardedClient, Outbound
from opsbot.bot.slack.progress import SlackProgress
from opsbot.config.policy import Principal
from opsbot.config.settings import MemorySettings, Settings
from opsbot.tools.catalog import ops_tools
from tests.fakes.model_server import Call, ModelServer, Policy, Reply, script
from tests.fakes.slack_api import MARKDOWN_CHARS, TEXT_CHARS, SlackApi
from tests.fakes.slack_stack import Stacks, stack_settings

TIMEOUT_S = 1  # the client's: a response held longer is lost, and posting looks before it posts again
LINE = (
    "{n:05d} ERROR checkout-api POST /v1/checkout 502 upstream=payments:8443 <timeout> & retry, "
    "see https://grafana.example.com/d/abc?org=1&id={n}\n"
)


def long_answer(chars: int) -> str:
    """Log lines quoted by the model: `<`, `>` and `&` to escape, a link to each line to make plain."""
    lines, size, n = [], 0, 0
    while size < chars:
        lines.append(LINE.format(n=n))
        size, n = size + len(lines[-1]), n + 1
    return "Here is every error since noon:\n\n" + "".join(lines).rstrip("\n")  # as the loop strips it


def as_sent(text: str) -> str:
    """`text` as Slack is sent it by opsbot: escaped, then made plain on the way out."""
    return str(Outbound().args("chat.postMessage", {"text": escape(text)})["text"])  # type: ignore[index]


@dataclass
class Thread:
    slack: SlackApi
    root: str
    job: Job
    client: GuardedClient

    def replies(self) -> list[dict[str, Any]]:
        return self.slack.replies("C1", self.root)

    def answer_messages(self) -> list[dict[str, Any]]:
        """The answer's messages, in the thread's order: its parts, then its own."""
        kinds = (ANSWER_PART_EVENT, ANSWER_EVENT)
        return [m for m in self.replies() if (m.get("metadata") or {}).get("event_type") in kinds]

    def finish(self, reply: RunReply, stream: bool, resumed: bool = False) -> str:
        job = self.job.model_copy(update={"resumed": resumed})
        return SlackProgress(self.client, job, stream=stream).finish(reply)


@pytest.fixture
def thread() -> Iterator[Thread]:
    with SlackApi() as slack:
        root = slack.add_message("C1", "what failed since noon?")
        job = Job(
            id="job1",
            thread=ThreadRef(team="T1", channel="C1", thread_ts=root),
            user="U1",
            text="what failed since noon?",
            ts=root,
            principal=Principal(platform="slack", user="U1", team="T1", channel="C1"),
        )
        yield Thread(slack, root, job, GuardedClient(token=slack.token, base_url=slack.base_url, timeout=TIMEOUT_S))


@pytest.fixture
def answered(
    thread: Thread, model_server: Callable[[Policy], ModelServer], sample: Settings
) -> Callable[[str, bool], RunReply]:
    """The loop answers `text` after one step, shown in the thread as it goes (streamed or not).
    The model streams it when `written` (a reply of 200,000 characters in OpenAI's chunks takes
    the client many seconds to read); else its server answers whole."""

    def answer(text: str, stream: bool, written: bool = True) -> RunReply:
        server = model_server(script(Reply(calls=[Call("list_services", {})]), Reply(content=text, stream=written)))
        model = ModelClient(model="scripted", base_url=server.base_url, max_retries=0, timeout_s=30)
        # A window the answer fits in: no summary is asked for after it.
        memory = MemorySettings(window_tokens=200_000)
        agent = Agent(model, InProcessMemory(), tools=ops_tools(sample.policy), memory_settings=memory)
        progress = SlackProgress(thread.client, thread.job, stream=stream)
        reply = agent.run(thread.job.text, thread.job.thread.key, progress, thread.job.principal)
        assert reply.text == text
        progress.finish(reply)
        return reply

    return answer


def markdown(message: dict[str, Any]) -> str:
    [block] = [b for b in message["blocks"] if b["type"] == "markdown"]
    return str(block["text"])


def contexts(message: dict[str, Any]) -> list[str]:
    return [e["text"] for b in message["blocks"] if b["type"] == "context" for e in b["elements"]]


def within_limits(message: dict[str, Any]) -> bool:
    return (
        len(message["text"]) <= TEXT_CHARS
        and sum(len(b["text"]) for b in message["blocks"] if b["type"] == "markdown") <= MARKDOWN_CHARS
    )


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "steps message"])
def test_a_30000_character_answer_arrives_whole_in_messages_of_its_thread(thread: Thread, answered, stream) -> None:
    text = long_answer(30_000)

    answered(text, stream)

    messages = thread.answer_messages()
    assert 3 <= len(messages) <= ANSWER_MESSAGES
    assert "".join(markdown(m) for m in messages) == as_sent(text), "in order, nothing left out or cut"
    assert all(within_limits(m) for m in messages)
    *parts, last = messages
    assert all(m["metadata"]["event_type"] == ANSWER_PART_EVENT for m in parts)
    assert [contexts(m)[0] for m in parts] == [
        f"Part {n} of {len(messages)} of this answer: it goes on below." for n in range(1, len(messages))
    ]
    assert last["metadata"] == {"event_type": ANSWER_EVENT, "event_payload": {"job": "job1"}}
    assert contexts(last)[0] == f"Part {len(messages)} of {len(messages)}."
    assert [b["type"] for b in last["blocks"]][-1] == "context_actions", "the feedback buttons end the answer"
    [steps] = [m for m in thread.replies() if m not in messages]
    assert steps["metadata"]["event_type"] == STEPS_EVENT
    assert "list_services" in json.dumps(steps) and "ERROR checkout-api" not in json.dumps(steps), "steps alone"


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "steps message"])
def test_a_200000_character_answer_is_attached_whole_as_a_file_and_its_message_says_so(
    thread: Thread, answered, stream
) -> None:
    text = long_answer(200_000)

    answered(text, stream, written=False)

    [file] = thread.slack.files("C1")
    assert file["text"] == text and file["thread_ts"] == thread.root
    [message] = thread.answer_messages()
    assert file["ts"] < message["ts"], "the file first, then the answer's message that points to it"
    assert within_limits(message) and len(message["text"]) < 5_000
    shown = markdown(message)
    assert as_sent(text).startswith(shown) and 2_000 < len(shown) <= 3_000
    note = contexts(message)[0]
    assert f"This answer is {len(text):,} characters long" in note and file["name"] in note
    assert message["metadata"]["event_type"] == ANSWER_EVENT


def test_a_code_block_cut_between_two_messages_is_closed_and_opened_again(thread: Thread, answered) -> None:
    text = "The errors:\n\n```\n" + long_answer(20_000) + "\n```\nThat is all."

    answered(text, False)

    parts = [markdown(m) for m in thread.answer_messages()]
    assert len(parts) >= 2
    assert all(part.count("```") % 2 == 0 for part in parts), "each message shows its lines as code"
    fence = "```\n"
    middle = "".join(part.removeprefix(fence).removesuffix(fence) for part in parts[1:-1])
    assert parts[0].removesuffix(fence) + middle + parts[-1].removeprefix(fence) == as_sent(text)


def test_a_line_or_a_word_too_long_for_one_message_is_cut_between_messages_all_the_same(
    thread: Thread, answered
) -> None:
    text = "One line: " + "checkout " * 1_500 + "and one word: " + "x" * 12_000

    answered(text, False, written=False)

    messages = thread.answer_messages()
    assert 3 <= len(messages) <= ANSWER_MESSAGES and all(within_limits(m) for m in messages)
    assert "".join(markdown(m) for m in messages) == as_sent(text)


def test_a_retry_posts_no_part_twice(thread: Thread, answered) -> None:
    # Slack posts each of the first two messages, but its answer is lost: opsbot looks before posting again.
    thread.slack.late("chat.postMessage", respond_after_s=TIMEOUT_S + 0.5, times=2)
    answered(long_answer(30_000), True, written=False)

    messages = thread.answer_messages()
    assert len({markdown(m) for m in messages}) == len(messages) >= 3, "each part once"
    assert len(thread.slack.calls("chat.postMessage")) == len(messages)
    assert thread.slack.calls("conversations.replies"), "it looked rather than posted again"


def test_a_file_whose_sharing_answer_was_lost_is_shared_once(thread: Thread, answered) -> None:
    thread.slack.late("files.completeUploadExternal", respond_after_s=TIMEOUT_S + 0.5)
    answered(long_answer(60_000), False, written=False)

    assert len(thread.slack.files("C1")) == 1
    assert len(thread.answer_messages()) == 1


@pytest.mark.parametrize("chars", [30_000, 200_000])
def test_a_job_answered_again_after_a_restart_posts_nothing_new(thread: Thread, answered, chars) -> None:
    reply = answered(long_answer(chars), False, written=False)
    before = (thread.replies(), thread.slack.files())

    thread.finish(reply, stream=False, resumed=True)

    assert (thread.replies(), thread.slack.files()) == before


def test_a_file_slack_refuses_leaves_the_answers_beginning_and_says_why(thread: Thread, answered) -> None:
    thread.slack.fail("files.getUploadURLExternal", status=200, error="missing_scope")
    text = long_answer(200_000)

    answered(text, False, written=False)

    assert thread.slack.files() == []
    [message] = thread.answer_messages()
    assert as_sent(text).startswith(markdown(message))
    assert "could not be attached as a file (missing_scope)" in contexts(message)[0]


@pytest.mark.parametrize("chars", [30_000, 60_000])
def test_a_private_answer_too_long_for_one_message_is_never_cut_unsaid(
    redis_server, model_server: Callable[[Policy], ModelServer], sample: Settings, chars: int
) -> None:
    text = long_answer(chars)
    redis_server.flush()
    stacks, slack = Stacks(), SlackApi()
    server = model_server(script(Reply(content=text, stream=False)))
    stack = stacks.start(slack, stack_settings(slack, redis_server.url, sample.policy, server), server)
    try:
        slack.not_in_channel.add("C9")  # so `/ops` answers privately, at its response_url
        stack.command("what failed since noon?", key="private", channel="C9")
        assert stack.idle(timeout=60)
    finally:
        stacks.close()

    notice, *answers = slack.responses("private")
    assert "cannot post in this channel" in notice["text"]
    assert all(len(a["text"]) <= TEXT_CHARS and a["response_type"] == "ephemeral" for a in answers)
    shown = "".join(markdown(a) for a in answers)
    if chars <= 40_000:
        assert len(answers) > 1 and shown == as_sent(text)
    else:
        [answer] = answers
        assert as_sent(text).startswith(shown)
        assert "a reply only you see cannot carry a file" in contexts(answer)[0]
