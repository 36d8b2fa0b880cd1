"""The answer streamed into Slack as the model writes it, seen through the fake Slack API.

The loop, the model client and the scripted model server are real; `SlackProgress` is given a
clock the test moves (the model writes a line every 0.4 s), so coalescing is asserted without
sleeping. The way from a Slack event to `SlackProgress` is the stack's (tests/test_slack.py); the
seam here is the `Progress` hooks, because that is where time is injected.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from slack_sdk import WebClient

from opsbot.bot.agent import UNBACKED, Agent
from opsbot.bot.agent import Reply as RunReply
from opsbot.bot.agent.prompts import CUT_ANSWER, UNCHECKED
from opsbot.bot.llm import ModelClient
from opsbot.bot.memory import InProcessMemory
from opsbot.bot.slack.blocks import THINKING_NOTE
from opsbot.bot.slack.jobs import Job, ThreadRef
from opsbot.bot.slack.progress import SlackProgress
from opsbot.config.policy import Principal
from opsbot.config.settings import LoopLimits, MemorySettings, Settings
from opsbot.tools.catalog import ops_tools
from tests.fakes.model_server import Call, ModelServer, Policy, Reply, script
from tests.fakes.slack_api import ApiCall, SlackApi

LINE_S = 0.4  # how fast the scripted model writes, on the test's clock


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class PacedProgress(SlackProgress):
    """Each answer line arrives LINE_S after the one before."""

    def __init__(self, *args: Any, clock: Clock, **kwargs: Any) -> None:
        super().__init__(*args, clock=clock, **kwargs)
        self.paced = clock

    def on_answer_text(self, step: int, text: str) -> None:
        self.paced.now += LINE_S
        super().on_answer_text(step, text)


@dataclass
class Run:
    slack: SlackApi
    reply: RunReply
    thread_ts: str
    answer_ts: str

    def replies(self) -> list[dict[str, Any]]:
        return self.slack.replies("C1", self.thread_ts)

    def streamed(self) -> list[str]:
        """The text each start/append call carried, in order."""
        return [streamed(c) for c in self.slack.calls() if c.method in ("chat.startStream", "chat.appendStream")]

    def stop(self) -> ApiCall:
        [stop] = self.slack.calls("chat.stopStream")
        return stop


def streamed(call: ApiCall) -> str:
    """What a stream call adds: `markdown_text` and the markdown chunks (what `chat_stream()` sends)."""
    chunks = call.args.get("chunks") or []
    return (call.args.get("markdown_text") or "") + "".join(c["text"] for c in chunks if c["type"] == "markdown_text")


def shown(message: dict[str, Any]) -> str:
    """Everything a person reads in a message: what streamed into it, and every block's text. (A
    posted or rewritten message's `text` is the notification fallback; Slack shows its blocks.)"""
    streamed_in = "streaming" in message and "edited" not in message
    texts = [message["text"]] if streamed_in or not message.get("blocks") else []
    for block in message.get("blocks", []):
        if block["type"] == "markdown":
            texts.append(block["text"])
        elif block["type"] == "section":
            texts.append(block["text"]["text"])
        elif block["type"] == "context":
            texts += [e["text"] for e in block["elements"]]
    return "\n".join(texts)


STEP = "✓ 1. `list_services`"


@pytest.fixture
def run_with(model_server: Callable[[Policy], ModelServer], sample: Settings) -> Iterator[Callable[[Policy], Run]]:
    apis: list[SlackApi] = []

    def run(policy: Policy, slack_is: Callable[[SlackApi], None] = lambda slack: None, timeout_s: int = 30) -> Run:
        slack = SlackApi()
        apis.append(slack)
        slack_is(slack)
        server = model_server(policy)
        client = ModelClient(model="scripted", base_url=server.base_url, max_retries=0, timeout_s=10)
        agent = Agent(
            client,
            InProcessMemory(),
            tools=ops_tools(sample.policy),
            limits=LoopLimits(tool_retry_backoff_s=0.01),
            memory_settings=MemorySettings(),
        )
        root = slack.add_message("C1", "why is checkout slow?")
        job = Job(
            id="job1",
            thread=ThreadRef(team="T1", channel="C1", thread_ts=root),
            user="U1",
            text="why is checkout slow?",
            ts=root,
            principal=Principal(platform="slack", user="U1", team="T1", channel="C1"),
        )
        web = WebClient(token=slack.token, base_url=slack.base_url, timeout=timeout_s)
        progress = PacedProgress(web, job, stream=True, clock=Clock())
        reply = agent.run(job.text, job.thread.key, progress, job.principal)
        return Run(slack, reply, root, progress.finish(reply))

    yield run
    for api in apis:
        api.close()


def test_answer_lines_go_out_together_at_most_once_a_second_below_the_steps(run_with) -> None:
    # Words, not numbers: nothing here is a claim the check would mark (test_evidence.py has those).
    answer = "line a\nline b\nline c\nline d\nline e\nline <f>"
    run = run_with(script(Reply(calls=[Call("list_services", {})]), Reply(content=answer)))

    [step, *appends] = run.streamed()
    assert step.startswith(STEP) and step.endswith("\n")
    # Lines come 0.4 s apart: the first two wait for the third, 1.2 s after the step was shown.
    # A word goes once it ends (so no URL is split between two appends): the last, never ended, with the stop.
    assert appends == ["\nline a\nline b\nline c\n", "line d\nline e\nline "]
    stop = run.stop()
    assert streamed(stop) == "&lt;f&gt;"
    assert stop.args["metadata"] == {"event_type": "opsbot_answer", "event_payload": {"job": "job1"}}
    assert [b["type"] for b in stop.args["blocks"]] == ["context", "context", "context_actions"], (
        "no second copy of the answer"
    )
    assert stop.args["blocks"][0]["elements"][0]["text"] == f":warning: {UNBACKED}", "it states nothing the tools found"
    [message] = run.replies()
    assert message["ts"] == run.answer_ts
    assert message["text"] == f"{step}\nline a\nline b\nline c\nline d\nline e\nline &lt;f&gt;"
    assert shown(message).count("line a") == 1 and UNCHECKED not in shown(message)
    assert not run.slack.calls("chat.update") and not run.slack.calls("chat.postMessage")


def test_what_the_model_said_before_calling_tools_stays_and_the_answer_follows(run_with) -> None:
    run = run_with(
        script(Reply(content="Looking at the services.", calls=[Call("list_services", {})]), Reply(content="All fine."))
    )

    [message] = run.replies()
    lines = message["text"].splitlines()
    assert lines[0] == "Looking at the services." and lines[1].startswith(STEP)
    assert lines[2:] == ["", "All fine."]
    assert shown(message).count("All fine.") == 1
    assert not run.slack.calls("chat.update")


def test_a_cut_answer_is_completed_by_the_stop_with_the_cut_note(run_with) -> None:
    run = run_with(
        script(
            Reply(content="Checkout fails beca", finish_reason="length"),
            Reply(content="use payments times out", finish_reason="length"),
        )
    )

    assert run.reply.text == f"Checkout fails because payments times out{CUT_ANSWER}"
    # The continuation came 0.4 s after the first part went out: it waited, and the stop took it with
    # the note. A word goes once it ends, so the cut one waited too (no URL is split between appends).
    assert run.streamed() == ["Checkout fails "]
    assert streamed(run.stop()) == f"because payments times out{CUT_ANSWER}"
    [message] = run.replies()
    assert message["text"] == run.reply.text
    assert shown(message).count("payments times out") == 1
    assert not run.slack.calls("chat.update")


def test_a_cut_answers_continuation_streams_with_its_leading_space(run_with) -> None:
    run = run_with(
        script(
            Reply(content="Checkout fails because", finish_reason="length"),
            Reply(content=" payments times out."),
        )
    )

    assert run.reply.text == "Checkout fails because payments times out."
    [message] = run.replies()
    assert "becausepayments" not in shown(message)
    assert shown(message).count("payments times out.") == 1
    assert message["metadata"]["event_type"] == "opsbot_answer"
    assert not run.slack.calls("chat.update"), "the preview was the answer: nothing to replace"


def test_thinking_that_streamed_as_the_answer_is_gone_from_the_final_message(run_with) -> None:
    thinking = "The user asks about checkout.\nMaybe payments?\n</think>"
    run = run_with(script(Reply(content=f"{thinking}Payments times out.")))

    assert run.reply.text == "Payments times out."
    # The first line went out at once, the reset was said while it streamed...
    assert run.streamed() == ["The user asks about checkout.\n", f"{THINKING_NOTE}\n"]
    [message] = run.replies()
    # ...and once stopped the message became the answer alone.
    assert [b["text"] for b in message["blocks"] if b["type"] == "markdown"] == ["Payments times out."]
    text = shown(message)
    assert "The user asks" not in text and "Maybe payments" not in text and THINKING_NOTE not in text
    assert text.count("Payments times out.") == 1
    assert message["metadata"] == {"event_type": "opsbot_answer", "event_payload": {"job": "job1"}}
    assert f":warning: {UNCHECKED}" in text, "no tool was run"


def test_thinking_that_had_not_gone_out_is_never_sent(run_with) -> None:
    thinking = "The user asks about checkout.\nMaybe payments?\n</think>"
    run = run_with(script(Reply(calls=[Call("list_services", {})]), Reply(content=f"{thinking}Payments times out.")))

    assert not any("The user asks" in text for text in run.streamed())
    [message] = run.replies()
    assert message["text"].splitlines()[-1] == "Payments times out."
    assert "The user asks" not in shown(message) and THINKING_NOTE not in shown(message)
    assert not run.slack.calls("chat.update"), "nothing to take back"


def test_a_stop_slack_answers_after_the_clients_timeout_is_looked_for_over_the_window(run_with) -> None:
    # The stop takes effect but is answered too late, and the finished message shows only after the
    # first look (the old code's single look found nothing and posted the answer a second time).
    def slow_stop(slack: SlackApi) -> None:
        slack.late("chat.stopStream", respond_after_s=0.5, visible_after_s=0.25)

    run = run_with(
        script(Reply(calls=[Call("list_services", {})]), Reply(content="checkout is fine")),
        slack_is=slow_stop,
        timeout_s=0.2,  # type: ignore[arg-type]  # the SDK types it int; urllib takes any number
    )

    assert run.slack.calls("chat.postMessage") == [], "the answer was posted again although the stop landed"
    [answer] = [m for m in run.replies() if m.get("metadata", {}).get("event_type") == "opsbot_answer"]
    assert answer["ts"] == run.answer_ts and "checkout is fine" in shown(answer)


def test_a_busy_threads_steps_message_is_edited_at_most_once_a_second_and_ends_whole(run_with) -> None:
    """Where Slack cannot stream, steps go to a steps message: four steps within a second are its
    post and one edit at the end (not three edits and a fourth), and the edit holds all four."""
    steps = [Reply(calls=[Call("list_services", {})])] + [
        Reply(calls=[Call("query_logs", {"service": name, "limit": 5})]) for name in ("checkout", "payments", "auth")
    ]
    run = run_with(
        script(*steps, Reply(content="all four looked at")),
        slack_is=lambda slack: setattr(slack, "streams_supported", False),
    )
    [steps_post, answer_post] = run.slack.calls("chat.postMessage")
    assert steps_post.args["metadata"]["event_type"] == "opsbot_steps"
    [edit] = run.slack.calls("chat.update")
    assert [f"✓ {n}. `" in json.dumps(edit.args["blocks"], ensure_ascii=False) for n in range(1, 5)] == [True] * 4
    assert answer_post.args["metadata"]["event_type"] == "opsbot_answer"
