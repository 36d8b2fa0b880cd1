"""`opsbot serve --http` end to end: signed requests over real HTTP to the real process.

What is asserted is what people in Slack would see: one answer per message in its thread,
progress while it works, nothing extra for Slack's retries and the `message` twin of a mention,
nothing at all for forged or stale requests, and a clear exit for a misconfigured deployment.
The process talks to the fake Slack Web API, the scripted model server and a real Redis; the
in-process stack (`slack_stack.py`) cannot catch what only exists in the deployed command:
environment handling, waitress, Bolt's WSGI adapter and the startup checks.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pytest

from tests.fakes import slack_payloads as payloads
from tests.fakes.model_server import Call, ModelServer, Reply, is_summary_request, tool_results
from tests.fakes.redis_server import RedisServer
from tests.fakes.serve_process import ServeProcess, run_cli
from tests.fakes.slack_api import Message, SlackApi

TOKEN = "xoxb-test"
SECRET = "test-signing-secret"
EVENTS = "/slack/events"
# Long enough for a duplicate run to reach Slack: the scripted model answers in milliseconds.
SETTLE_S = 1.0


def question_of(body: dict[str, Any]) -> str:
    """The engineer's message of the current turn (loop notes are user messages too, so skip them)."""
    for message in reversed(body["messages"]):
        content = message.get("content") or ""
        if message["role"] == "user" and not content.startswith("[note from the opsbot loop"):
            return str(content)
    return ""


def answering_policy(body: dict[str, Any]) -> Reply:
    """Look at checkout's logs once, then answer naming the question, so an answer in the wrong
    thread shows. Stateless, so any number of runs can share it."""
    if is_summary_request(body):
        return Reply(content="summary")
    if not tool_results(body):
        return Reply(calls=[Call("query_logs", {"service": "checkout", "limit": 5})])
    return Reply(content=f"answer to: {question_of(body)}")


def runs_for(model: ModelServer, question: str) -> int:
    """Agent runs started for `question`: first model calls of a turn, before any tool result."""
    return sum(1 for body in list(model.requests) if question_of(body) == question and not tool_results(body))


def answers(slack: SlackApi, channel: str, thread_ts: str) -> list[Message]:
    """opsbot's answers in a thread, streamed or posted: the messages it marks as answers."""
    return [
        m for m in slack.messages(channel, thread_ts) if (m.get("metadata") or {}).get("event_type") == "opsbot_answer"
    ]


def shown(message: Message) -> str:
    """Everything a person reads in a message: its text and its blocks."""
    return str(message.get("text", "")) + json.dumps(message.get("blocks") or [], ensure_ascii=False)


@dataclass
class Served:
    process: ServeProcess
    slack: SlackApi
    model: ModelServer

    def event(self, event: dict[str, Any], *, retry: int | None = None, **envelope: Any) -> tuple[int, str]:
        body = json.dumps(payloads.event_callback(event, **envelope))
        headers = payloads.signed_headers(SECRET, body)
        if retry is not None:
            headers.update(payloads.retry_headers(retry))
        return self.process.post(EVENTS, body, headers)

    def command(self, text: str, key: str, channel: str) -> tuple[int, str]:
        return slash(self.process, self.slack, text, key, channel)

    def answered(self, channel: str, thread_ts: str, timeout: float = 10) -> list[Message]:
        """The thread's answers once there is one (or after `timeout`)."""
        self.slack.wait_for(lambda: bool(answers(self.slack, channel, thread_ts)), timeout)
        return answers(self.slack, channel, thread_ts)


def slash(process: ServeProcess, slack: SlackApi, text: str, key: str, channel: str) -> tuple[int, str]:
    body = payloads.form_body(payloads.slash_command(text, channel=channel, response_url=slack.response_url(key)))
    return process.post(EVENTS, body, payloads.signed_headers(SECRET, body))


def serve_env(slack: SlackApi, redis_url: str, model: ModelServer | None = None) -> dict[str, str]:
    env = {
        "SLACK_BOT_TOKEN": TOKEN,
        "SLACK_SIGNING_SECRET": SECRET,
        "SLACK_API_URL": slack.base_url,
        "REDIS_URL": redis_url,
        # A tool that fails is retried after this; the default would only slow failures down.
        "OPSBOT_LOOP__TOOL_RETRY_BACKOFF_S": "0.01",
    }
    if model is not None:
        env |= {"OPENAI_BASE_URL": model.base_url, "OPSBOT_MODEL": "scripted", "OPSBOT_LLM__MAX_RETRIES": "0"}
    return env


@pytest.fixture(scope="module")
def served(redis_server: RedisServer) -> Iterator[Served]:
    """One process for the tests that only send traffic; each uses channels of its own."""
    redis_server.flush()
    with SlackApi(token=TOKEN) as slack, ModelServer(answering_policy) as model:
        with ServeProcess(serve_env(slack, redis_server.url, model)) as process:
            served = Served(process, slack, model)
            yield served
            assert not slack.errors, slack.errors[0]


# Events.


def test_a_mention_gets_one_answer_with_progress_and_retries_or_its_twin_add_nothing(served: Served) -> None:
    channel, question = "CMENTION", "why are checkouts failing?"
    mention = payloads.app_mention(f"<@UBOT> {question}", channel=channel)
    body = json.dumps(payloads.event_callback(mention))
    headers = payloads.signed_headers(SECRET, body)

    assert served.process.post(EVENTS, body, headers)[0] == 200
    # Slack redelivers when it thinks the ack was late, and sends the same message as a `message`
    # event too (same ts, its own event_id); both arrive while the first run is under way.
    assert served.process.post(EVENTS, body, headers | payloads.retry_headers(1))[0] == 200
    twin = payloads.message(f"<@UBOT> {question}", channel=channel, ts=mention["ts"])
    assert served.event(twin)[0] == 200

    (answer,) = served.answered(channel, mention["ts"])
    assert f"answer to: {question}" in shown(answer)
    assert served.process.post(EVENTS, body, headers | payloads.retry_headers(2))[0] == 200
    time.sleep(SETTLE_S)
    assert len(answers(served.slack, channel, mention["ts"])) == 1
    assert len(served.slack.replies(channel, mention["ts"])) == 1  # steps and answer share the streamed message
    assert runs_for(served.model, question) == 1
    statuses = served.slack.statuses(channel, mention["ts"])
    assert "querying checkout logs…" in statuses and statuses[-1] == "", statuses
    assert any("query_logs" in m["text"] for m in served.slack.replies(channel, mention["ts"]))


def test_mentions_in_many_threads_at_once_each_get_one_answer(served: Served) -> None:
    channel = "CMANY"
    mentions = [payloads.app_mention(f"<@UBOT> what about order {n}?", channel=channel) for n in range(10)]

    with ThreadPoolExecutor(len(mentions)) as pool:
        statuses = list(pool.map(lambda m: served.event(m)[0], mentions))

    assert statuses == [200] * len(mentions)
    for n, mention in enumerate(mentions):
        (answer,) = served.answered(channel, mention["ts"], timeout=15)
        assert f"answer to: what about order {n}?" in shown(answer)
    time.sleep(SETTLE_S)
    assert [len(answers(served.slack, channel, m["ts"])) for m in mentions] == [1] * len(mentions)


def test_forged_and_stale_requests_are_refused_and_a_replay_adds_nothing(served: Served) -> None:
    channel = "CSIGNED"
    forged = json.dumps(payloads.event_callback(payloads.app_mention("<@UBOT> forged", channel=channel)))
    stale = json.dumps(payloads.event_callback(payloads.app_mention("<@UBOT> stale", channel=channel)))
    valid_event = payloads.app_mention("<@UBOT> valid", channel=channel)
    valid = json.dumps(payloads.event_callback(valid_event))
    valid_headers = payloads.signed_headers(SECRET, valid)

    assert served.process.post(EVENTS, forged, payloads.signed_headers("not-the-secret", forged))[0] == 401
    six_minutes_ago = int(time.time()) - 6 * 60
    assert served.process.post(EVENTS, stale, payloads.signed_headers(SECRET, stale, six_minutes_ago))[0] == 401
    assert served.process.post(EVENTS, valid, valid_headers)[0] == 200
    assert len(served.answered(channel, valid_event["ts"])) == 1
    # A replay inside the five minutes carries a valid signature: what matters is that it changes nothing.
    assert served.process.post(EVENTS, valid, valid_headers)[0] < 500

    time.sleep(SETTLE_S)
    assert len(answers(served.slack, channel, valid_event["ts"])) == 1
    bot_messages = [m for m in served.slack.messages(channel) if m.get("user") == "UBOT"]
    assert len(bot_messages) == 1, bot_messages  # the valid one's answer; nothing for forged or stale
    assert runs_for(served.model, "forged") == runs_for(served.model, "stale") == 0


def test_url_verification_is_answered_and_other_events_are_acknowledged(served: Served) -> None:
    channel = "COTHER"
    challenge = json.dumps({"token": "legacy-verification-token", "challenge": "c-123", "type": "url_verification"})

    status, body = served.process.post(EVENTS, challenge, payloads.signed_headers(SECRET, challenge))

    assert (status, json.loads(body)) == (200, {"challenge": "c-123"})
    original = payloads.message("checkout is slow", channel=channel)
    ignored = [
        {
            "type": "reaction_added",
            "user": "U1",
            "reaction": "eyes",
            "item": {"type": "message", "channel": channel, "ts": original["ts"]},
            "item_user": "U1",
            "event_ts": payloads.next_ts(),
        },
        # An edit that adds a mention is still an edit: answering it would answer the message twice.
        payloads.message_changed("<@UBOT> checkout is slow", message_ts=original["ts"], channel=channel),
        payloads.channel_join(channel=channel),
    ]
    for event in ignored:
        status, _ = served.event(event)
        assert 200 <= status < 300, (event["type"], event.get("subtype"), status)
    time.sleep(SETTLE_S)
    assert served.slack.messages(channel) == []


# Slash commands.


def test_ops_question_posts_a_root_message_and_one_answer_in_its_thread(served: Served) -> None:
    channel = "CSLASH"

    assert served.command("what is wrong", key="slash-question", channel=channel)[0] == 200

    served.slack.wait_for(lambda: len(served.slack.messages(channel)) >= 2, 10)
    roots = [m for m in served.slack.messages(channel) if "thread_ts" not in m]
    assert len(roots) == 1 and "what is wrong" in roots[0]["text"], roots
    (answer,) = served.answered(channel, roots[0]["ts"])
    assert "answer to: what is wrong" in shown(answer)
    time.sleep(SETTLE_S)
    assert len(answers(served.slack, channel, roots[0]["ts"])) == 1
    assert len([m for m in served.slack.messages(channel) if "thread_ts" not in m]) == 1
    assert served.slack.responses("slash-question") == []  # the answer is in the channel, not private


def test_ops_question_root_is_posted_once_when_slacks_response_is_lost(served: Served) -> None:
    channel = "CLOST"
    # Slack posts the root question, then the response is lost (a 5xx after the fact).
    served.slack.fail("chat.postMessage", status=500, after_effect=True)

    assert served.command("is payments down", key="slash-lost", channel=channel)[0] == 200

    served.slack.wait_for(lambda: any(answers(served.slack, channel, m["ts"]) for m in served.slack.messages(channel)))
    time.sleep(SETTLE_S)
    roots = [m for m in served.slack.messages(channel) if "thread_ts" not in m]
    assert len(roots) == 1, [m["text"] for m in roots]


def test_ops_logs_and_help_answer_through_the_response_url_without_a_model(own_redis: RedisServer) -> None:
    with SlackApi(token=TOKEN) as slack, ServeProcess(serve_env(slack, own_redis.url)) as process:
        assert slash(process, slack, "logs checkout", key="logs", channel="CLOGS")[0] == 200
        assert slash(process, slack, "help", key="help", channel="CLOGS")[0] == 200

        assert slack.wait_for(lambda: bool(slack.responses("logs")) and bool(slack.responses("help")), 10)
        (logs,) = slack.responses("logs")
        assert logs["response_type"] == "ephemeral"
        assert "checkout-api POST /v1/checkout" in logs["text"], logs["text"][:500]
        (help_,) = slack.responses("help")
        assert "logs <service>" in help_["text"]
        assert slack.messages("CLOGS") == []  # private answers: nothing in the channel


# Health.


def wait_for_status(process: ServeProcess, status: int, timeout: float = 10) -> int:
    """/healthz's status once it is `status`, else the last one seen after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        seen = process.get("/healthz")[0]
        if seen == status or time.monotonic() > deadline:
            return seen
        time.sleep(0.1)


def test_healthz_follows_redis(own_redis: RedisServer) -> None:
    with SlackApi(token=TOKEN) as slack, ServeProcess(serve_env(slack, own_redis.url)) as process:
        status, body = process.get("/healthz")
        assert (status, json.loads(body)["ok"]) == (200, True)

        own_redis.stop()
        assert wait_for_status(process, 503) == 503
        own_redis.start()  # the same port: the process reconnects by itself
        assert wait_for_status(process, 200) == 200


# Startup.

# Distinctive values, so any appearance in the output is certainly a leak. The fake Slack API
# accepts only VALID_TOKEN, so SECRET_TOKEN is well formed but refused (invalid_auth).
VALID_TOKEN = "xoxb-0000000000-leakcheck-valid0000000"
SECRET_TOKEN = "xoxb-0000000000-leakcheck-a1b2c3d4e5f6"
WRONG_KIND = "xoxp-0000000000-leakcheck-f6e5d4c3b2a1"


@dataclass(frozen=True)
class Startup:
    name: str
    variable: str
    env: Callable[[SlackApi, str], dict[str, str]]


def _full(slack: SlackApi, redis_url: str) -> dict[str, str]:
    return {
        "SLACK_BOT_TOKEN": slack.token,
        "SLACK_SIGNING_SECRET": SECRET,
        "SLACK_API_URL": slack.base_url,
        "REDIS_URL": redis_url,
    }


def _without(name: str) -> Callable[[SlackApi, str], dict[str, str]]:
    return lambda slack, url: {k: v for k, v in _full(slack, url).items() if k != name}


def _with(name: str, value: str) -> Callable[[SlackApi, str], dict[str, str]]:
    return lambda slack, url: _full(slack, url) | {name: value}


STARTUPS = [
    Startup("no bot token", "SLACK_BOT_TOKEN", _without("SLACK_BOT_TOKEN")),
    Startup("not a bot token", "SLACK_BOT_TOKEN", _with("SLACK_BOT_TOKEN", WRONG_KIND)),
    Startup("token refused by Slack", "SLACK_BOT_TOKEN", _with("SLACK_BOT_TOKEN", SECRET_TOKEN)),
    Startup("no signing secret", "SLACK_SIGNING_SECRET", _without("SLACK_SIGNING_SECRET")),
    Startup("no redis url", "REDIS_URL", _without("REDIS_URL")),
]


@pytest.mark.parametrize("case", STARTUPS, ids=[case.name for case in STARTUPS])
def test_startup_errors_exit_2_naming_the_variable_and_never_the_token(
    case: Startup, redis_server: RedisServer
) -> None:
    with SlackApi(token=VALID_TOKEN) as slack:
        # A process that wrongly starts would serve until the timeout, which fails the test.
        code, output = run_cli(case.env(slack, redis_server.url), timeout=15)

    assert code == 2, output
    assert case.variable in output, output
    for token in (VALID_TOKEN, SECRET_TOKEN, WRONG_KIND, SECRET):
        assert token not in output, f"{token!r} leaked: {output}"
    assert "Traceback" not in output, output
