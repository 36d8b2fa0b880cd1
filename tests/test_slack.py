"""The Slack front end through Bolt's own request path: signed requests in, the fake Slack Web API
out, the scripted model server and a real Redis behind. Assertions are what people in Slack see."""

from __future__ import annotations

import ast
import json
import logging
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
from slack_bolt.adapter.socket_mode import SocketModeHandler
from slack_sdk.socket_mode.client import BaseSocketModeClient
from slack_sdk.socket_mode.request import SocketModeRequest
from slack_sdk.socket_mode.response import SocketModeResponse

from opsbot.bot.agent import UNBACKED
from opsbot.bot.agent.prompts import UNCHECKED
from opsbot.bot.slack.app import build_slack_app
from opsbot.config.policy import Command, Policy
from opsbot.config.settings import MemorySettings
from tests.fakes import slack_payloads as payloads
from tests.fakes.model_server import Call, Reply, has_tools, script
from tests.fakes.slack_api import SlackApi
from tests.fakes.slack_stack import SECRET, Stack, Stacks, stack_settings
from tests.fakes.waiting import until

Make = Callable[..., Stack]


@pytest.fixture
def make_stack(redis_server, model_server, sample) -> Iterator[Make]:
    stacks = Stacks()

    def make(
        model: Any = None,
        policy: Policy | None = None,
        groups: dict[str, list[str]] | None = None,
        memory: MemorySettings | None = None,
        **slack_settings: Any,
    ) -> Stack:
        redis_server.flush()
        slack = SlackApi(groups=groups)
        server = model_server(model) if model is not None else None
        settings = stack_settings(slack, redis_server.url, policy or sample.policy, server, memory, **slack_settings)
        return stacks.start(slack, settings, server)

    yield make
    stacks.close()


def echo(delay_s: float = 0.0) -> Callable[[dict[str, Any]], Reply]:
    """A model that answers "answer to <the last user message>"."""

    def policy(body: dict[str, Any]) -> Reply:
        last = [m for m in body["messages"] if m["role"] == "user"][-1]["content"]
        return Reply(content=f"answer to {last}", delay_s=delay_s)

    return policy


def answered(stack: Stack, channel: str, thread_ts: str, count: int = 1, timeout: float = 15) -> list[dict[str, Any]]:
    """The thread's answers once `count` arrived and nothing is left running; more would show here."""
    assert stack.slack.wait_for(lambda: len(stack.answers(channel, thread_ts)) >= count, timeout), (
        f"expected {count} answer(s) in {thread_ts}, got {stack.slack.messages(channel, thread_ts)}"
    )
    settle(stack)
    return stack.answers(channel, thread_ts)


def settle(stack: Stack) -> None:
    """Wait for the workers to finish. Listeners run before the ack (`process_before_response`), so
    a dispatched event's job is already queued: once nothing is queued or running, no further
    answer is on its way."""
    assert stack.idle()


def ack_text(response: Any) -> str:
    """What a command's ack shows its caller (privately): the HTTP response's text."""
    assert response.status == 200
    body = json.loads(response.body) if response.body else {}
    assert not body or body.get("response_type") == "ephemeral"
    return str(body.get("text", ""))


def answer_text(message: dict[str, Any]) -> str:
    """The answer as people read it: a posted answer's markdown block, or what streamed below the steps."""
    posted = " ".join(b.get("text", "") for b in message.get("blocks", []) if b["type"] == "markdown")
    return posted or "\n".join(line for line in message["text"].splitlines() if not is_step_line(line)).strip()


def is_step_line(line: str) -> bool:
    return line.startswith(("✓ ", "✗ ", "! "))


def blocks_of(message: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [b for b in message.get("blocks", []) if b["type"] == kind]


def context_texts(message: dict[str, Any]) -> list[str]:
    return [e["text"] for b in blocks_of(message, "context") for e in b["elements"]]


def user_messages(body: dict[str, Any]) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "user"]


# Conversations.


def test_a_mention_gets_one_answer_in_its_thread_with_its_steps_shown(make_stack) -> None:
    stack = make_stack(
        script(Reply(calls=[Call("query_logs", {"service": "checkout", "level": "ERROR"})]), Reply(content="db down"))
    )
    mention = payloads.app_mention("<@UBOT> why is checkout throwing 502s?")
    assert stack.event(mention).status == 200
    [answer] = answered(stack, "C1", mention["ts"])
    assert answer_text(answer) == "db down"
    assert "query_logs" in answer["text"] and "service=checkout" in answer["text"], "steps streamed into the answer"
    [warning, context] = context_texts(answer)
    assert warning == f":warning: {UNBACKED}", "nothing the answer states is in the logs it read"
    assert "2 step(s)" in context and "2 model call(s)" in context and "tokens" in context
    [feedback] = blocks_of(answer, "context_actions")
    assert [(e["type"], e["action_id"]) for e in feedback["elements"]] == [("feedback_buttons", "opsbot_feedback")]
    statuses = stack.slack.statuses("C1", mention["ts"])
    assert "querying checkout logs…" in statuses and statuses[-1] == "", "status shown per step, cleared at the end"
    assert stack.model is not None
    assert user_messages(stack.model.requests[0]) == ["why is checkout throwing 502s?"], "the mention is not sent"


def test_retries_twins_and_replays_of_a_message_add_nothing(make_stack) -> None:
    stack = make_stack(echo())
    mention = payloads.app_mention("<@UBOT> status?")
    event_id = "Ev0001"
    stack.event(mention, event_id=event_id)
    answered(stack, "C1", mention["ts"])
    stack.event(mention, event_id=event_id, retry=1)
    stack.event(mention, event_id=event_id, retry=2)
    twin = payloads.message("<@UBOT> status?", ts=mention["ts"])
    assert stack.event(twin, event_id="Ev0002").status == 200
    assert len(answered(stack, "C1", mention["ts"])) == 1
    assert stack.model is not None and len(stack.model.requests) == 1


def test_steps_go_to_a_steps_message_where_streams_are_unavailable(make_stack) -> None:
    stack = make_stack(
        script(
            Reply(calls=[Call("list_services", {})]),
            Reply(calls=[Call("query_logs", {"service": "auth"})]),
            Reply(content="all fine"),
        )
    )
    stack.slack.streams_supported = False
    mention = payloads.app_mention("<@UBOT> how is auth?")
    stack.event(mention)
    [answer] = answered(stack, "C1", mention["ts"])
    assert answer_text(answer) == "all fine"
    [steps] = [m for m in stack.slack.replies("C1", mention["ts"]) if m is not answer and m["ts"] != answer["ts"]]
    shown = steps["blocks"][0]["text"]["text"]
    assert "list_services" in shown and "query_logs" in shown and shown.startswith("*Steps*")
    # Posted with the first step and edited to hold the others: steps a second or less apart are
    # one edit (tests/test_slack_stream.py holds the pace), never a post each.
    assert 1 <= len(stack.slack.calls("chat.update")) <= 2, "the steps message grew by edits"


def test_replies_in_a_thread_opsbot_is_in_continue_it_and_other_threads_are_left_alone(make_stack) -> None:
    stack = make_stack(echo())
    mention = payloads.app_mention("<@UBOT> first question")
    stack.event(mention)
    answered(stack, "C1", mention["ts"])
    stack.event(payloads.message("and a follow-up", thread_ts=mention["ts"]))
    answers = answered(stack, "C1", mention["ts"], count=2)
    assert answer_text(answers[1]) == "answer to and a follow-up"
    assert stack.model is not None
    assert user_messages(stack.model.requests[1]) == ["first question", "and a follow-up"], "same memory"
    elsewhere = payloads.message("people talking", thread_ts=payloads.next_ts())
    stack.event(elsewhere)
    stack.event(payloads.message("a channel message without a mention"))
    settle(stack)
    assert len(stack.model.requests) == 2


@pytest.mark.parametrize(
    "event",
    [
        payloads.message("<@UBOT> from myself", user="UBOT"),
        payloads.bot_message("<@UBOT> from another integration"),
        payloads.message_changed("<@UBOT> edited"),
        payloads.message_deleted(deleted_ts="1700000000.000001"),
        payloads.channel_join(),
        {
            "type": "reaction_added",
            "user": "U1",
            "reaction": "eyes",
            "item": {"type": "message", "channel": "C1", "ts": "1700000000.000001"},
        },
    ],
    ids=["own", "other bot", "edit", "deletion", "join", "reaction"],
)
def test_what_opsbot_ignores_is_still_acknowledged(make_stack, event: dict[str, Any]) -> None:
    stack = make_stack(echo())
    assert stack.event(event).status == 200
    settle(stack)
    assert stack.model is not None and stack.model.requests == []
    assert stack.slack.calls("chat.postMessage") == [] and stack.slack.calls("chat.startStream") == []


def test_an_allowed_bot_is_answered(make_stack) -> None:
    stack = make_stack(echo(), allowed_bots=frozenset({"B9"}))
    event = payloads.bot_message("<@UBOT> alert: checkout 5xx", bot_id="B9")
    stack.event(event)
    assert answer_text(answered(stack, "C1", event["ts"])[0]) == "answer to alert: checkout 5xx"


def test_a_first_mention_in_a_human_thread_reads_it_with_secrets_redacted(make_stack) -> None:
    stack = make_stack(echo())
    root = stack.slack.add_message("C1", "checkout 502s since 03:00", user="U7")
    stack.slack.add_message("C1", "db url is postgres://app:Hunter2Secret@db:5432/shop", user="U8", thread_ts=root)
    mention = payloads.app_mention("<@UBOT> what do you make of this?", thread_ts=root)
    stack.event(mention)
    answered(stack, "C1", root)
    assert stack.model is not None
    question = user_messages(stack.model.requests[0])[-1]
    assert "checkout 502s since 03:00" in question and "U8: db url is postgres://" in question
    assert "Hunter2Secret" not in json.dumps(stack.model.requests[0])
    assert question.rstrip().endswith("what do you make of this?")


def test_direct_messages_need_no_mention(make_stack) -> None:
    stack = make_stack(echo())
    dm = payloads.im("is payments ok?")
    stack.event(dm)
    assert answer_text(answered(stack, "D1", dm["ts"])[0]) == "answer to is payments ok?"


def test_reset_in_a_thread_forgets_it(make_stack) -> None:
    stack = make_stack(echo())
    mention = payloads.app_mention("<@UBOT> remember the number 42")
    stack.event(mention)
    answered(stack, "C1", mention["ts"])
    stack.event(payloads.message("<@UBOT> reset", thread_ts=mention["ts"]))
    answers = answered(stack, "C1", mention["ts"], count=2)
    assert "forgotten" in answers[1]["text"]
    stack.event(payloads.message("what was the number?", thread_ts=mention["ts"]))
    answered(stack, "C1", mention["ts"], count=3)
    assert stack.model is not None
    assert user_messages(stack.model.requests[-1]) == ["what was the number?"]


def test_direct_commands_in_a_thread_show_output_in_a_code_block(make_stack) -> None:
    stack = make_stack(echo())
    mention = payloads.app_mention("<@UBOT> logs checkout ERROR")
    stack.event(mention)
    [answer] = answered(stack, "C1", mention["ts"])
    text = answer["blocks"][0]["text"]["text"]
    assert "```" in text and "ERROR" in text
    assert stack.model is not None and stack.model.requests == [], "a direct command needs no model"


# /ops.


def test_ops_question_posts_the_question_and_one_answer_in_a_new_thread(make_stack) -> None:
    stack = make_stack(echo())
    assert stack.command("what is wrong with checkout?", channel="C2").status == 200
    assert stack.slack.wait_for(lambda: stack.slack.messages("C2"), 5)
    root = stack.slack.messages("C2")[0]
    assert "<@U1> asked: what is wrong with checkout?" in root["text"]
    [answer] = answered(stack, "C2", root["ts"])
    assert answer_text(answer) == "answer to what is wrong with checkout?"


def test_ops_subcommands_work_without_a_model_and_bad_input_gets_usage(make_stack) -> None:
    stack = make_stack(model=None)
    stack.command("logs checkout ERROR", key="logs")
    stack.command("config checkout", key="config")
    stack.command("logs nosuch", key="bad")
    helped = stack.command("help", key="help")
    stack.command("why is it down?", key="question")
    for key in ("logs", "config", "bad"):
        assert stack.slack.wait_for(lambda key=key: stack.slack.responses(key), 10), key
    assert stack.slack.wait_for(lambda: stack.slack.messages("C1"), 10)
    answered(stack, "C1", stack.slack.messages("C1")[0]["ts"])
    logs = stack.slack.responses("logs")
    assert len(logs) == 1 and logs[0]["response_type"] == "ephemeral" and "ERROR" in logs[0]["text"]
    assert "checkout" in stack.slack.responses("config")[0]["text"]
    bad = stack.slack.responses("bad")[0]["text"]
    assert "There is no service 'nosuch'" in bad and "Usage" in bad and "Traceback" not in bad
    assert "/ops &lt;question&gt;" in ack_text(helped) and stack.slack.responses("help") == []
    [answer] = stack.answers("C1", stack.slack.messages("C1")[0]["ts"])
    # How to configure one is for the operator's log (tests/test_slack_faults.py): a channel reads this.
    assert "opsbot cannot use its model" in answer_text(answer) and "OPENAI_API_KEY" not in answer_text(answer)


def test_ops_reset_forgets_the_channels_conversations(make_stack) -> None:
    stack = make_stack(echo())
    first = payloads.app_mention("<@UBOT> one")
    stack.event(first)
    answered(stack, "C1", first["ts"])
    assert "Forgot 1 opsbot conversation(s)" in ack_text(stack.command("reset", key="reset"))
    stack.event(payloads.message("two", thread_ts=first["ts"]))
    answered(stack, "C1", first["ts"], count=2)
    assert stack.model is not None and user_messages(stack.model.requests[-1]) == ["two"]


def test_ops_help_or_reset_with_more_words_is_refused_in_the_ack_not_asked(make_stack) -> None:
    stack = make_stack(echo())
    for word in ("help", "reset"):
        said = ack_text(stack.command(f"{word} me with checkout", key=word))
        assert said.startswith(f"`{word}` takes no arguments.\n") and "/ops &lt;question&gt;" in said, said
    assert stack.model is not None and stack.model.requests == [] and stack.slack.messages("C1") == []


def test_ops_where_opsbot_cannot_post_answers_privately_and_says_why(make_stack) -> None:
    stack = make_stack(echo())
    stack.slack.not_in_channel.add("C9")
    stack.command("is checkout ok?", key="private", channel="C9")
    assert stack.slack.wait_for(lambda: len(stack.slack.responses("private")) >= 2, 10)
    notice, answer = stack.slack.responses("private")
    assert "cannot post in this channel" in notice["text"] and "/invite @opsbot" in notice["text"]
    assert answer["response_type"] == "ephemeral"
    assert [b["text"] for b in blocks_of(answer, "markdown")] == ["answer to is checkout ok?"]
    assert answer["text"].startswith("answer to is checkout ok?\n("), "its notification text: the answer, then the run"


def test_a_replayed_slash_command_runs_once(make_stack) -> None:
    stack = make_stack(model=None)
    fields = payloads.slash_command("logs auth", response_url=stack.slack.response_url("once"))
    body = payloads.form_body(fields)
    for _ in range(3):
        assert stack.dispatch(body, payloads.signed_headers(SECRET, body)).status == 200
    settle(stack)
    assert len(stack.slack.responses("once")) == 1


def test_forged_and_stale_requests_are_refused(make_stack) -> None:
    stack = make_stack(echo())
    body = json.dumps(payloads.event_callback(payloads.app_mention("<@UBOT> hi")))
    assert stack.dispatch(body, payloads.signed_headers("wrong-secret", body)).status == 401
    stale = payloads.signed_headers(SECRET, body, timestamp=int(time.time()) - 600)
    assert stack.dispatch(body, stale).status == 401
    settle(stack)
    assert stack.model is not None and stack.model.requests == []


# Delivery guarantees.


def test_when_every_worker_is_busy_a_message_waits_in_redis_and_is_answered_after(make_stack) -> None:
    stack = make_stack(echo(delay_s=1.0), workers=1, backlog=0, drain_lease_s=0.6)
    first, second = payloads.app_mention("<@UBOT> slow one"), payloads.app_mention("<@UBOT> another")
    stack.event(first)
    assert until(lambda: stack.model is not None and stack.model.requests)
    assert stack.event(second).status == 200
    # No busy refusal: the job waits for a free worker (this process's janitor sweeps it up).
    assert answer_text(answered(stack, "C1", second["ts"], timeout=20)[0]) == "answer to another"
    assert answer_text(answered(stack, "C1", first["ts"])[0]) == "answer to slow one"


def test_messages_during_a_run_are_answered_after_it_in_order(make_stack) -> None:
    stack = make_stack(echo(delay_s=0.4))
    mention = payloads.app_mention("<@UBOT> q1")
    stack.event(mention)
    assert until(lambda: stack.model is not None and stack.model.requests)
    later = [payloads.message(text, thread_ts=mention["ts"]) for text in ("q2", "q3")]
    for message in reversed(later):  # delivered out of order, as Slack may
        stack.event(message)
    answers = answered(stack, "C1", mention["ts"], count=3)
    assert [answer_text(a) for a in answers] == ["answer to q1", "answer to q2", "answer to q3"]
    assert stack.model is not None
    assert user_messages(stack.model.requests[2]) == ["q1", "q2", "q3"], "each run saw the whole run before it"


def test_rate_limited_posts_wait_and_arrive_once(make_stack) -> None:
    stack = make_stack(echo())
    stack.slack.streams_supported = False
    stack.slack.fail("chat.postMessage", status=429, retry_after=1)
    mention = payloads.app_mention("<@UBOT> hi")
    stack.event(mention)
    assert len(answered(stack, "C1", mention["ts"])) == 1
    calls = stack.slack.calls("chat.postMessage")
    assert len(calls) == 2 and calls[1].at - calls[0].at >= 0.9, "Retry-After honoured"


def test_a_post_whose_response_was_lost_is_not_posted_twice(make_stack) -> None:
    stack = make_stack(echo())
    stack.slack.streams_supported = False
    stack.slack.fail("chat.postMessage", status=500, after_effect=True)
    mention = payloads.app_mention("<@UBOT> hi")
    stack.event(mention)
    assert len(answered(stack, "C1", mention["ts"])) == 1
    assert stack.slack.calls("conversations.replies"), "opsbot looked before posting again"


@pytest.mark.usefixtures("instant_pacing")
def test_a_failed_post_is_retried(make_stack) -> None:
    stack = make_stack(echo())
    stack.slack.streams_supported = False
    stack.slack.fail("chat.postMessage", status=500, times=2)
    mention = payloads.app_mention("<@UBOT> hi")
    stack.event(mention)
    assert len(answered(stack, "C1", mention["ts"])) == 1
    assert len(stack.slack.calls("chat.postMessage")) == 3


def test_a_queue_left_by_a_dead_process_is_taken_over(make_stack) -> None:
    from opsbot.bot.slack.jobs import Job, ThreadRef
    from opsbot.config.policy import Principal

    stack = make_stack(echo())
    thread = ThreadRef(team="T1", channel="C1", thread_ts=stack.slack.add_message("C1", "root"))
    job = Job(
        id="orphan",
        thread=thread,
        user="U1",
        text="left behind",
        ts=thread.thread_ts,
        principal=Principal(platform="slack", user="U1", team="T1", channel="C1"),
    )
    state = stack.built.state
    token = state.accept(job, "orphan", 60).token
    assert token is not None
    state.abandon(thread.key, token)  # queued, then its process died before draining
    assert stack.built.dispatcher.sweep() == 1
    assert answer_text(answered(stack, "C1", thread.thread_ts)[0]) == "answer to left behind"


# The answer as it streams (pacing and resets in detail: tests/test_slack_stream.py).


def test_the_answer_streams_below_its_steps_and_is_in_its_message_once(make_stack) -> None:
    answer = "The database is down.\nRestart it.\nThen look again."
    stack = make_stack(script(Reply(calls=[Call("list_services", {})]), Reply(content=answer)))
    mention = payloads.app_mention("<@UBOT> why is checkout down?")
    stack.event(mention)
    [message] = answered(stack, "C1", mention["ts"])
    assert stack.slack.replies("C1", mention["ts"]) == [message], "steps and answer share one message"
    [steps, blank, *rest] = message["text"].splitlines()
    assert is_step_line(steps) and "list_services" in steps and blank == ""
    assert rest == answer.splitlines()
    assert not blocks_of(message, "markdown"), "the streamed text is the answer: no second copy below it"
    assert UNCHECKED not in " ".join(context_texts(message)), "the answer came after a tool result"
    assert len(stack.slack.calls("chat.stopStream")) == 1 and not stack.slack.calls("chat.postMessage")


def test_an_answer_without_any_tool_result_says_it_was_not_checked(make_stack) -> None:
    stack = make_stack(echo())
    mention = payloads.app_mention("<@UBOT> is auth fine?")
    stack.event(mention)
    [message] = answered(stack, "C1", mention["ts"])
    assert answer_text(message) == "answer to is auth fine?"
    assert context_texts(message)[0] == f":warning: {UNCHECKED}"


def test_thinking_streamed_before_the_answer_is_not_in_the_answer(make_stack) -> None:
    thinking = "The user asks about auth.\nI should answer briefly.\n</think>"
    stack = make_stack(script(Reply(content=f"{thinking}Auth is fine.")))
    mention = payloads.app_mention("<@UBOT> is auth fine?")
    stack.event(mention)
    [message] = answered(stack, "C1", mention["ts"])
    assert stack.slack.replies("C1", mention["ts"]) == [message]
    [start] = stack.slack.calls("chat.startStream")
    assert start.args["chunks"][0]["text"] == "The user asks about auth.\n", "it streamed as if it were the answer"
    assert [b["text"] for b in blocks_of(message, "markdown")] == ["Auth is fine."]
    everything = json.dumps(message)
    assert "The user asks" not in everything and "briefly" not in everything


def test_a_workspace_without_streams_gets_the_whole_answer_once_below_the_steps(make_stack) -> None:
    answer = "The database is down.\nRestart it."
    stack = make_stack(script(Reply(calls=[Call("list_services", {})]), Reply(content=answer)))
    stack.slack.streams_supported = False
    mention = payloads.app_mention("<@UBOT> why is checkout down?")
    stack.event(mention)
    [message] = answered(stack, "C1", mention["ts"])
    assert [b["text"] for b in blocks_of(message, "markdown")] == [answer]
    [steps] = [m for m in stack.slack.replies("C1", mention["ts"]) if m["ts"] != message["ts"]]
    assert "Restart it" not in json.dumps(steps), "the answer is not in the steps message"
    assert len(stack.slack.calls("chat.startStream")) == 1, "not asked again once refused"


# Approvals.


def approvers_policy(sample_policy: Policy, ttl_s: float = 900) -> Policy:
    restart = sample_policy.commands["restart"].model_dump()
    # A team's policy: someone other than the asker approves (the sample lets its one user do both).
    restart.update(approvers={"users": ["U2", "U1"]}, approval_ttl_s=ttl_s, self_approval=False)
    return sample_policy.model_copy(
        update={"commands": {**sample_policy.commands, "restart": Command.model_validate(restart)}}
    )


def restart_then_echo() -> Callable[[dict[str, Any]], Reply]:
    asked = script(Reply(calls=[Call("run_command", {"command": "restart", "params": {"service": "checkout"}})]))

    def policy(body: dict[str, Any]) -> Reply:
        if has_tools(body) and not any(m["role"] == "tool" for m in body["messages"]) and "restart" in str(body):
            return asked(body)
        return echo()(body)

    return policy


def approval_message(stack: Stack, channel: str, thread_ts: str) -> dict[str, Any]:
    assert stack.slack.wait_for(
        lambda: any(
            b.get("block_id") == "opsbot_approval"
            for m in stack.slack.messages(channel, thread_ts)
            for b in m.get("blocks", [])
        ),
        10,
    ), stack.slack.messages(channel, thread_ts)
    return next(
        m
        for m in stack.slack.messages(channel, thread_ts)
        if any(b.get("block_id") == "opsbot_approval" for b in m.get("blocks", []))
    )


def restart_asked(stack: Stack, text: str = "<@UBOT> restart checkout") -> tuple[dict[str, Any], dict[str, Any]]:
    """A mention whose model asks to restart checkout: the mention and its approval request,
    once the first answer (saying it waits) is out."""
    mention = payloads.app_mention(text)
    stack.event(mention)
    message = approval_message(stack, "C1", mention["ts"])
    answered(stack, "C1", mention["ts"])
    return mention, message


def request_id(message: dict[str, Any]) -> str:
    actions = next(b for b in message["blocks"] if b.get("block_id") == "opsbot_approval")
    return str(actions["elements"][0]["value"])


def results(stack: Stack, channel: str, thread_ts: str) -> list[dict[str, Any]]:
    return [
        m
        for m in stack.slack.messages(channel, thread_ts)
        if (m.get("metadata") or {}).get("event_type") == "opsbot_result"
    ]


def test_a_write_command_waits_for_an_approver_and_the_agent_goes_on_with_its_result(make_stack, sample) -> None:
    stack = make_stack(restart_then_echo(), policy=approvers_policy(sample.policy))
    mention = payloads.app_mention("<@UBOT> restart checkout please")
    stack.event(mention)
    message = approval_message(stack, "C1", mention["ts"])
    shown = json.dumps(message["blocks"])
    assert "would restart %s" in shown and "checkout" in shown and "<@U1>" in shown
    approve = next(b for b in message["blocks"] if b.get("block_id") == "opsbot_approval")["elements"][0]
    assert approve["action_id"] == "opsbot_approve" and "confirm" in approve
    answered(stack, "C1", mention["ts"])
    rid = request_id(message)

    stack.click("opsbot_approve", rid, user="U3", message_ts=message["ts"])  # not an approver
    stack.click("opsbot_approve", rid, user="U1", message_ts=message["ts"])  # the requester
    assert stack.slack.wait_for(lambda: len(stack.slack.ephemerals("C1")) >= 2, 5)
    refusals = [e["text"] for e in stack.slack.ephemerals("C1")]
    assert any("user U3 is not one of U1, U2" in r for r in refusals)
    assert any("cannot be approved by the person who asked" in r for r in refusals)
    settle(stack)
    assert results(stack, "C1", mention["ts"]) == [], "refused clicks run nothing"

    stack.click("opsbot_approve", rid, user="U2", message_ts=message["ts"])
    stack.click("opsbot_approve", rid, user="U2", message_ts=message["ts"])  # a double click
    answers = answered(stack, "C1", mention["ts"], count=2)
    [result] = results(stack, "C1", mention["ts"])
    assert "would restart checkout" in json.dumps(result["blocks"]), "exactly the approved argv ran"
    updated = next(m for m in stack.slack.messages("C1", mention["ts"]) if m["ts"] == message["ts"])
    assert "Approved by <@U2>" in updated["text"]
    assert not any(b.get("block_id") == "opsbot_approval" for b in updated["blocks"]), "buttons replaced"
    assert "approved `restart`; it ran" in answer_text(answers[1])
    assert any("already decided by <@U2>" in e["text"] for e in stack.slack.ephemerals("C1"))


def test_an_approved_write_leaves_its_whole_story_in_the_audit_trail(make_stack, sample) -> None:
    from opsbot.bot.redis.client import connect
    from opsbot.bot.telemetry.audit import RedisAudit

    stack = make_stack(restart_then_echo(), policy=approvers_policy(sample.policy))
    mention, message = restart_asked(stack, "<@UBOT> restart checkout please")
    rid = request_id(message)
    stack.click("opsbot_approve", rid, user="U3", message_ts=message["ts"])  # not an approver
    # Its refusal first: two clicks sent at once are handled side by side, in either order.
    assert stack.slack.wait_for(lambda: len(stack.slack.ephemerals("C1")) >= 1, 5)
    stack.click("opsbot_approve", rid, user="U2", message_ts=message["ts"])
    answered(stack, "C1", mention["ts"], count=2)
    settle(stack)

    thread = f"slack:T1:C1:{mention['ts']}"
    records = list(RedisAudit(connect(stack.settings.redis_url or ""), 3600).read(thread=thread))
    story = [(r.kind, r.who, r.tool, r.status) for r in records]
    assert story == [
        ("tool_call", "slack:U1", "run_command", "needs_approval"),
        ("run_finished", "slack:U1", None, "needs_approval"),
        ("approval_requested", "slack:U1", "restart", None),
        ("approval_decided", "slack:U3", None, "refused"),
        ("approval_decided", "slack:U2", None, "approved"),
        ("write_run", "slack:U2", "restart", "ok"),
        ("run_finished", "slack:U1", None, "answered"),  # the conversation going on from the outcome
    ], story
    assert {r.request for r in records[2:-1]} == {rid}
    assert records[1].args == {"question": "restart checkout please"} and records[1].run == records[0].run
    assert records[0].args == {"command": "restart", "params": {"service": "checkout"}}
    assert records[5].argv is not None and records[5].argv[-1] == "checkout"


def test_a_denied_command_does_not_run_and_the_model_is_told(make_stack, sample) -> None:
    stack = make_stack(restart_then_echo(), policy=approvers_policy(sample.policy))
    mention, message = restart_asked(stack)
    stack.click("opsbot_deny", request_id(message), user="U2", message_ts=message["ts"])
    answers = answered(stack, "C1", mention["ts"], count=2)
    assert "denied `restart`; it did not run" in answer_text(answers[1])
    assert results(stack, "C1", mention["ts"]) == []


def test_an_expired_request_refuses_approval(make_stack, sample) -> None:
    stack = make_stack(restart_then_echo(), policy=approvers_policy(sample.policy, ttl_s=60))
    mention, message = restart_asked(stack)
    stack.built.conversation.approvals.clock = lambda: datetime.now(UTC) + timedelta(seconds=60)
    stack.click("opsbot_approve", request_id(message), user="U2", message_ts=message["ts"])
    assert stack.slack.wait_for(lambda: stack.slack.ephemerals("C1"), 5)
    assert "expired" in stack.slack.ephemerals("C1")[0]["text"]
    settle(stack)
    assert results(stack, "C1", mention["ts"]) == []
    updated = next(m for m in stack.slack.messages("C1", mention["ts"]) if m["ts"] == message["ts"])
    assert "Expired" in updated["text"]


def test_ops_run_of_a_write_command_posts_a_request_approvers_can_find(make_stack, sample) -> None:
    stack = make_stack(model=None, policy=approvers_policy(sample.policy), groups={"S1": ["U4"]})
    stack.command("run restart service=payments", key="run")
    assert stack.slack.wait_for(lambda: stack.slack.responses("run"), 5)
    assert "waits for a person's approval" in stack.slack.responses("run")[0]["text"]
    assert stack.slack.wait_for(lambda: stack.slack.messages("C1"), 5)
    root = stack.slack.messages("C1")[0]
    assert "<@U1> asked to run `restart`" in root["text"]
    message = approval_message(stack, "C1", root["ts"])
    stack.click("opsbot_approve", request_id(message), user="U2", message_ts=message["ts"])
    assert stack.slack.wait_for(lambda: results(stack, "C1", root["ts"]), 10)
    assert "would restart payments" in json.dumps(results(stack, "C1", root["ts"])[0]["blocks"])


def test_approvers_may_be_a_user_group(make_stack, sample) -> None:
    restart = sample.policy.commands["restart"].model_dump()
    restart.update(approvers={"groups": ["S1"]})
    policy = sample.policy.model_copy(
        update={"commands": {**sample.policy.commands, "restart": Command.model_validate(restart)}}
    )
    stack = make_stack(model=None, policy=policy, groups={"S1": ["U4"]})
    stack.command("run restart service=auth", key="run")
    assert stack.slack.wait_for(lambda: stack.slack.messages("C1"), 5)
    root = stack.slack.messages("C1")[0]
    message = approval_message(stack, "C1", root["ts"])
    stack.click("opsbot_approve", request_id(message), user="U2", message_ts=message["ts"])
    assert stack.slack.wait_for(lambda: stack.slack.ephemerals("C1"), 5)
    assert "group among S1" in stack.slack.ephemerals("C1")[0]["text"]
    stack.click("opsbot_approve", request_id(message), user="U4", message_ts=message["ts"])
    assert stack.slack.wait_for(lambda: results(stack, "C1", root["ts"]), 10)


@pytest.mark.usefixtures("quick_redis_retries")
def test_with_redis_down_messages_wait_commands_are_refused_and_help_still_answers(
    own_redis, model_server, sample
) -> None:
    with SlackApi() as slack:
        server = model_server(echo())
        stack = Stack(slack, stack_settings(slack, own_redis.url, sample.policy, server), server)
        try:
            own_redis.stop()
            mention = payloads.app_mention("<@UBOT> anything?")
            assert stack.event(mention).status == 503, "not acked: Slack delivers it again"
            assert "cannot reach its Redis" in ack_text(stack.command("logs checkout", key="logs"))
            assert "/ops &lt;question&gt;" in ack_text(stack.command("help", key="help"))
            time.sleep(0.5)
            assert server.requests == [] and slack.replies("C1", mention["ts"]) == [], "nothing said yet"
            own_redis.start()
            # The message was held in the process meanwhile: it is answered once Redis is back...
            assert answer_text(answered(stack, "C1", mention["ts"])[0]) == "answer to anything?"
            # ...and Slack's retry of it adds nothing.
            assert stack.event(mention, retry=1).status == 200
            settle(stack)
            assert len(slack.replies("C1", mention["ts"])) == 1 and len(server.requests) == 1
        finally:
            stack.close()


# Socket Mode: the same app behind Bolt's socket-mode request path.


class RecordingSocketClient(BaseSocketModeClient):
    """Stands in for the websocket: what Bolt acknowledges is recorded instead of sent."""

    def __init__(self) -> None:
        self.logger = logging.getLogger("test.socket")
        self.sent: list[SocketModeResponse] = []

    def send_socket_mode_response(self, response: dict[str, Any] | SocketModeResponse) -> None:
        assert isinstance(response, SocketModeResponse)
        self.sent.append(response)


def test_socket_mode_envelopes_are_acked_and_answered_once(redis_server, model_server, sample) -> None:
    redis_server.flush()
    with SlackApi() as slack:
        server = model_server(echo())
        settings = stack_settings(slack, redis_server.url, sample.policy, server).model_copy(
            update={"slack_signing_secret": None}
        )
        built = build_slack_app(settings, http=False)
        handler = SocketModeHandler(built.app, app_token="xapp-1-test")
        client = RecordingSocketClient()
        try:
            mention = payloads.app_mention("<@UBOT> over the socket")
            slack.add_message("C1", mention["text"], ts=mention["ts"])
            envelope = payloads.event_callback(mention, event_id="EvSock1")
            handler.handle(client, SocketModeRequest(type="events_api", envelope_id="env-1", payload=envelope))
            handler.handle(
                client,
                SocketModeRequest(
                    type="events_api", envelope_id="env-2", payload=envelope, retry_attempt=1, retry_reason="timeout"
                ),
            )
            command = payloads.slash_command("help", response_url=slack.response_url("sock-help"))
            handler.handle(client, SocketModeRequest(type="slash_commands", envelope_id="env-3", payload=command))
            assert [r.envelope_id for r in client.sent] == ["env-1", "env-2", "env-3"], "every envelope acked"
            assert "/ops &lt;question&gt;" in (client.sent[2].payload or {})["text"], "help is in the ack"
            assert slack.wait_for(lambda: slack.replies("C1", mention["ts"]), 10)
            time.sleep(0.3)
            [answer] = slack.replies("C1", mention["ts"])
            assert answer_text(answer) == "answer to over the socket"
            assert len(server.requests) == 1, "the redelivered envelope ran nothing"
        finally:
            handler.client.close()
            built.close()


def test_socket_mode_without_an_app_token_names_the_variable(monkeypatch) -> None:
    from click.testing import CliRunner

    from opsbot.bot.cli import main

    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-not-used")
    monkeypatch.delenv("SLACK_APP_TOKEN", raising=False)
    result = CliRunner().invoke(main, ["serve"])
    assert result.exit_code == 2
    assert "SLACK_APP_TOKEN is not set" in result.output and "xoxb-not-used" not in result.output


# Two processes on one Redis.


def test_two_processes_share_dedupe_and_never_run_one_thread_twice_at_once(redis_server, model_server, sample) -> None:
    redis_server.flush()
    running: list[int] = []
    overlaps: list[int] = []
    lock = threading.Lock()
    answer = echo(delay_s=0.3)

    def watched(body: dict[str, Any]) -> Reply:
        with lock:
            running.append(1)
            if len(running) > 1:
                overlaps.append(len(running))
        try:
            time.sleep(0.3)
            return answer(body)
        finally:
            with lock:
                running.pop()

    with SlackApi() as slack:
        server = model_server(watched)
        settings = stack_settings(slack, redis_server.url, sample.policy, server)
        one, two = Stack(slack, settings, server), Stack(slack, settings, server)
        try:
            mention = payloads.app_mention("<@UBOT> q1")
            one.event(mention, event_id="EvTwin")
            two.event(mention, event_id="EvTwin")  # the same delivery reaching the other process
            assert until(lambda: server.requests)
            for n, stack in enumerate((two, one, two), start=2):
                stack.event(payloads.message(f"q{n}", thread_ts=mention["ts"]))
            answers = answered(one, "C1", mention["ts"], count=4)
            settle(two)
            assert [answer_text(a) for a in one.answers("C1", mention["ts"])] == [
                "answer to q1",
                "answer to q2",
                "answer to q3",
                "answer to q4",
            ]
            assert len(answers) == 4 and len(server.requests) == 4
            assert overlaps == [], "one thread's runs never overlapped across the two processes"
        finally:
            one.close()
            two.close()


# What a review found: each of these once went wrong.


def test_the_asker_cannot_approve_their_own_request_from_another_team_id(make_stack, sample) -> None:
    stack = make_stack(model=None, policy=approvers_policy(sample.policy), allowed_teams=frozenset({"T9"}))
    stack.command("run restart service=payments", key="run")
    assert stack.slack.wait_for(lambda: stack.slack.messages("C1"), 5)
    root = stack.slack.messages("C1")[0]
    message = approval_message(stack, "C1", root["ts"])
    # The same person, U1, as Enterprise Grid or Slack Connect may present them: another team id.
    stack.click("opsbot_approve", request_id(message), user="U1", team="T9", message_ts=message["ts"])
    assert stack.slack.wait_for(lambda: stack.slack.ephemerals("C1"), 5)
    assert "cannot be approved by the person who asked" in stack.slack.ephemerals("C1")[0]["text"]
    settle(stack)
    assert results(stack, "C1", root["ts"]) == []


def test_people_of_other_teams_are_refused_unless_allowed(make_stack, sample) -> None:
    stack = make_stack(echo(), policy=approvers_policy(sample.policy))
    mention = payloads.app_mention("<@UBOT> hello from outside", user="UX", team="TX")
    stack.event(mention)
    [refusal] = answered(stack, "C1", mention["ts"])
    assert "only works for members of its own workspace" in refusal["text"]
    said = ack_text(stack.command("logs checkout", key="outside", user="UX", team="TX"))
    assert "only works for members" in said
    assert stack.model is not None and stack.model.requests == []


def test_an_allowed_teams_member_continues_the_same_thread(make_stack) -> None:
    stack = make_stack(echo(), allowed_teams=frozenset({"TX"}))
    mention = payloads.app_mention("<@UBOT> first")
    stack.event(mention)
    answered(stack, "C1", mention["ts"])
    # A Slack Connect reply: the event names the writer's own team, the envelope opsbot's.
    stack.event(payloads.message("from a partner", user="UX", team="TX", thread_ts=mention["ts"]))
    answers = answered(stack, "C1", mention["ts"], count=2)
    assert answer_text(answers[1]) == "answer to from a partner"
    assert stack.model is not None and user_messages(stack.model.requests[1]) == ["first", "from a partner"]


def test_clicks_from_another_team_or_message_decide_nothing(make_stack, sample) -> None:
    stack = make_stack(restart_then_echo(), policy=approvers_policy(sample.policy))
    mention, message = restart_asked(stack)
    rid = request_id(message)
    stack.click("opsbot_approve", rid, user="U2", team="TX", message_ts=message["ts"])
    stack.click("opsbot_approve", rid, user="U2", channel="C7", message_ts=message["ts"])
    stack.click("opsbot_approve", rid, user="U2", message_ts=mention["ts"])
    assert stack.slack.wait_for(lambda: len(stack.slack.ephemerals()) >= 3, 5)
    settle(stack)
    assert results(stack, "C1", mention["ts"]) == []
    stack.click("opsbot_approve", rid, user="U2", message_ts=message["ts"])
    assert stack.slack.wait_for(lambda: results(stack, "C1", mention["ts"]), 10), "the request was not used up"


def test_an_ops_question_is_redacted_before_it_is_posted(make_stack) -> None:
    stack = make_stack(echo())
    stack.command("why does postgres://app:Sup3rS3cret!@db:5432/x refuse me?", key="q")
    assert stack.slack.wait_for(lambda: stack.slack.messages("C1"), 5)
    root = stack.slack.messages("C1")[0]
    answered(stack, "C1", root["ts"])
    assert "Sup3rS3cret" not in json.dumps(stack.slack.messages("C1"))
    assert stack.model is not None and "Sup3rS3cret" not in json.dumps(stack.model.requests)


@pytest.mark.usefixtures("instant_pacing")
def test_an_ops_question_slack_will_not_post_is_answered_with_why(make_stack) -> None:
    stack = make_stack(echo())
    stack.slack.fail("chat.postMessage", status=500, times=10)
    stack.command("is checkout ok?", key="refused")
    assert stack.slack.wait_for(lambda: stack.slack.responses("refused"), 15)
    assert "nothing was run" in stack.slack.responses("refused")[0]["text"]
    assert stack.model is not None and stack.model.requests == []


def test_a_failure_after_the_answer_adds_a_note_not_a_second_answer(make_stack, sample, monkeypatch) -> None:
    from opsbot.bot.approvals import ApprovalsUnavailable

    stack = make_stack(restart_then_echo(), policy=approvers_policy(sample.policy))

    def unreachable(*args: Any, **kwargs: Any) -> None:
        raise ApprovalsUnavailable("cannot reach the approval requests' Redis: blip")

    monkeypatch.setattr(stack.built.conversation.approvals.store, "save", unreachable)
    mention = payloads.app_mention("<@UBOT> restart checkout please")
    stack.event(mention)
    answered(stack, "C1", mention["ts"])
    assert stack.slack.wait_for(
        lambda: any(
            "could not post the approval request" in m["text"] for m in stack.slack.replies("C1", mention["ts"])
        ),
        5,
    )
    assert len(stack.answers("C1", mention["ts"])) == 1


def test_a_stream_stop_whose_response_was_lost_is_not_answered_twice(make_stack) -> None:
    stack = make_stack(
        script(Reply(calls=[Call("list_services", {})]), Reply(content="fine")),
    )
    stack.slack.fail("chat.stopStream", status=500, after_effect=True)
    mention = payloads.app_mention("<@UBOT> anything?")
    stack.event(mention)
    assert len(answered(stack, "C1", mention["ts"])) == 1


def test_a_job_left_in_flight_by_a_dead_process_is_finished_once(make_stack) -> None:
    from opsbot.bot.slack.jobs import Job, ThreadRef
    from opsbot.config.policy import Principal

    stack = make_stack(echo())
    state = stack.built.state
    thread = ThreadRef(team="T1", channel="C1", thread_ts=stack.slack.add_message("C1", "root"))
    job = Job(
        id="inflight",
        thread=thread,
        user="U1",
        text="half done",
        ts=thread.thread_ts,
        principal=Principal(platform="slack", user="U1", team="T1", channel="C1"),
    )
    token = state.accept(job, "first", 60).token
    taken = state.next_job(thread.key, token) if token else None
    assert taken is not None and taken.id == job.id and not taken.resumed  # taken, then the process died
    state.abandon(thread.key, token)
    assert stack.built.dispatcher.sweep() == 1
    assert answer_text(answered(stack, "C1", thread.thread_ts)[0]) == "answer to half done"

    # Answered, but the record of it was lost (a Redis restart without persistence), and the job,
    # queued again by the process that accepted it, is taken by one that dies at once.
    state.redis.delete(*state.redis.keys(f"{state.prefix}:done:*"))
    token = state.accept(job, "first", 60, replay=True).token
    assert token is not None and state.next_job(thread.key, token) is not None
    state.abandon(thread.key, token)
    assert stack.built.dispatcher.sweep() == 1
    settle(stack)
    assert len(stack.answers("C1", thread.thread_ts)) == 1
    assert stack.model is not None and len(stack.model.requests) == 1


def test_a_run_longer_than_the_lock_ttl_keeps_its_thread(make_stack) -> None:
    stack = make_stack(echo(delay_s=1.5), memory=MemorySettings(lock_ttl_s=0.6, lock_wait_s=30))
    mention = payloads.app_mention("<@UBOT> slow")
    stack.event(mention)
    assert until(lambda: stack.model is not None and stack.model.requests)
    time.sleep(1.0)  # past the lock's ttl, inside the run
    stack.event(payloads.message("meanwhile", thread_ts=mention["ts"]))
    answers = answered(stack, "C1", mention["ts"], count=2, timeout=20)
    assert [answer_text(a) for a in answers] == ["answer to slow", "answer to meanwhile"]


def test_long_output_keeps_its_fence_tail_and_note_and_the_confirm_fits() -> None:
    from datetime import UTC, datetime, timedelta

    from opsbot.bot.approvals import HandBack, Pending
    from opsbot.bot.slack.blocks import approval_blocks, output_blocks
    from opsbot.tools.commands import ApprovalRequest

    blocks = output_blocks("logs", "<" * 2700 + "THE END", True, 2800)
    text = blocks[0]["text"]["text"]
    assert text.endswith("THE END```") and len(text) <= 3000
    assert "cut" in blocks[1]["elements"][0]["text"]
    now = datetime.now(UTC)
    request = ApprovalRequest(
        command="restart",
        description="d",
        params={"x": "a" * 1000},
        argv=("printf", "a" * 1000),
        digest="0",
        requested_by=None,
        created_at=now,
        expires_at=now + timedelta(minutes=5),
    )
    pending = Pending(
        id=request.id,
        command=request,
        requested_by=None,
        why="w",
        place={"team": "T1", "channel": "C1", "thread_ts": "1.1"},
        hand_back=HandBack.nobody,
        created_at=request.created_at,
        expires_at=request.expires_at,
    )
    actions = next(b for b in approval_blocks(pending) if b.get("block_id") == "opsbot_approval")
    assert len(actions["elements"][0]["confirm"]["text"]["text"]) <= 300


def test_ops_runbook_list_and_show_need_no_model(make_stack) -> None:
    stack = make_stack(model=None)
    stack.command("runbook list", key="list")
    stack.command("runbook show service-erroring", key="show")
    assert stack.slack.wait_for(lambda: stack.slack.responses("list") and stack.slack.responses("show"), 10)
    assert "service-erroring" in stack.slack.responses("list")[0]["text"]
    assert "approve-restart" in json.dumps(stack.slack.responses("show")[0])


# A mention's walk through the front end.

ROOT = Path(__file__).resolve().parent.parent
SLACK = ROOT / "bot" / "slack"


class Walk:
    """Entries into each file of bot/slack/: calls into it from code outside it, in every thread."""

    def __init__(self) -> None:
        self.entries: Counter[str] = Counter()
        self._lock = threading.Lock()

    def __call__(self, frame: FrameType, event: str, arg: Any) -> None:
        callee = frame.f_code.co_filename
        if event != "call" or not callee.startswith(str(SLACK)):
            return
        caller = frame.f_back.f_code.co_filename if frame.f_back else ""
        if caller != callee:
            with self._lock:
                self.entries[Path(callee).relative_to(ROOT).as_posix()] += 1


def test_a_mention_enters_its_handler_and_the_posting_code_once_or_twice(make_stack: Make) -> None:
    """The job decides once where its answer goes (a delivery target, bot/slack/target.py), so its
    handler and the posting code are not entered once per send (the walk that led here entered
    conversation.py 11 times and posting.py 8 times for one mention)."""
    walk = Walk()
    threading.setprofile(walk)  # the stack's threads start below, so they are walked too
    sys.setprofile(walk)
    try:
        stack = make_stack(script(Reply(calls=[Call("query_logs", {"service": "checkout"})]), Reply(content="ok")))
        built = Counter(walk.entries)
        mention = payloads.app_mention("<@UBOT> why is checkout throwing 502s?")
        assert stack.event(mention).status == 200
        answered(stack, "C1", mention["ts"])
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
    entries = walk.entries - built
    assert entries["bot/slack/target.py"] >= 1, entries  # the walk was seen at all
    # The handler takes the job and hands the run to the target; the progress posts its last word.
    assert entries["bot/slack/conversation.py"] <= 2, entries
    assert entries["bot/slack/posting.py"] <= 2, entries


def _response_url_readers(path: Path) -> set[str]:
    """The functions of `path` that read some object's `response_url`."""
    readers = set()
    for function in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            for node in ast.walk(function):
                if isinstance(node, ast.Attribute) and node.attr == "response_url" and isinstance(node.ctx, ast.Load):
                    readers.add(f"{path.relative_to(ROOT).as_posix()}:{function.name}")
    return readers


def test_where_an_answer_goes_is_decided_in_one_place() -> None:
    """Only the choice of a job's target reads its `response_url`; everything after asks the target."""
    readers = set().union(*(_response_url_readers(path) for path in SLACK.rglob("*.py")))
    assert readers == {"bot/slack/conversation.py:_target"}
