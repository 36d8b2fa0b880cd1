"""`opsbot serve --http` end to end: signed requests over real HTTP to the real process.

What is asserted is what people in Slack would see: one answer per message in its thread,
progress while it works, nothing extra for Slack's retries and the `message` twin of a mention,
nothing at all for forged or stale requests, and a clear exit for a misconfigured deployment.
The process talks to the fake Slack Web API, the scripted model server and a real Redis; the
in-process stack (`slack_stack.py`) cannot catch what only exists in the deployed command:
environment handling, waitress, Bolt's WSGI adapter and the startup checks.
"""

from __future__ import annotations

import http.client
import json
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from opsbot.bot.version import VERSION
from tests.fakes import slack_payloads as payloads
from tests.fakes.model_server import Call, ModelServer, Reply, is_summary_request, tool_results
from tests.fakes.redis_server import RedisServer
from tests.fakes.serve_process import ServeProcess, run_cli, serving
from tests.fakes.slack_api import Message, SlackApi
from tests.fakes.slack_stack import settled
from tests.fakes.waiting import until

TOKEN = "xoxb-test"
SECRET = "test-signing-secret"
EVENTS = "/slack/events"


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
    redis_url: str

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
            served = Served(process, slack, model, redis_server.url)
            yield served
            assert not slack.errors, slack.errors[0]


def test_startup_says_its_version_and_what_it_serves_and_nothing_stray(served: Served) -> None:
    """SLACK_BOT_TOKEN is in the environment, as in every deployment: Bolt must not warn about it."""
    lines = served.process.output().splitlines()
    serving = next(n for n, line in enumerate(lines) if " serving Slack as " in line)
    assert lines[serving].startswith(f"opsbot {VERSION} serving Slack as UBOT (HTTP on port {served.process.port})")
    # The operator's: this Redis keeps nothing, and the model's state (tests/test_serve_checks.py).
    before = [line for line in lines[:serving] if not line.startswith(("Redis persistence: none", "model "))]
    assert before == [], before


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
    assert settled(served.redis_url)
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
    assert settled(served.redis_url)
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

    assert settled(served.redis_url)
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
    assert settled(served.redis_url)
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
    assert settled(served.redis_url)
    assert len(answers(served.slack, channel, roots[0]["ts"])) == 1
    assert len([m for m in served.slack.messages(channel) if "thread_ts" not in m]) == 1
    assert served.slack.responses("slash-question") == []  # the answer is in the channel, not private


def test_ops_question_root_is_posted_once_when_slacks_response_is_lost(served: Served) -> None:
    channel = "CLOST"
    # Slack posts the root question, then the response is lost (a 5xx after the fact).
    served.slack.fail("chat.postMessage", status=500, after_effect=True)

    assert served.command("is payments down", key="slash-lost", channel=channel)[0] == 200

    served.slack.wait_for(lambda: any(answers(served.slack, channel, m["ts"]) for m in served.slack.messages(channel)))
    assert settled(served.redis_url)
    roots = [m for m in served.slack.messages(channel) if "thread_ts" not in m]
    assert len(roots) == 1, [m["text"] for m in roots]


def test_ops_logs_answer_through_the_response_url_and_help_in_the_ack_without_a_model(own_redis: RedisServer) -> None:
    with SlackApi(token=TOKEN) as slack, ServeProcess(serve_env(slack, own_redis.url)) as process:
        assert slash(process, slack, "logs checkout", key="logs", channel="CLOGS")[0] == 200
        status, helped = slash(process, slack, "help", key="help", channel="CLOGS")
        assert status == 200
        ack = json.loads(helped)
        assert ack["response_type"] == "ephemeral" and "logs &lt;service&gt;" in ack["text"]

        assert slack.wait_for(lambda: bool(slack.responses("logs")), 10)
        (logs,) = slack.responses("logs")
        assert logs["response_type"] == "ephemeral"
        assert "checkout-api POST /v1/checkout" in logs["text"], logs["text"][:500]
        assert slack.responses("help") == [], "help needs no second message"
        assert slack.messages("CLOGS") == []  # private answers: nothing in the channel


def test_slacks_retry_after_redis_restarted_empty_adds_no_second_answer(own_redis: RedisServer) -> None:
    """Measured with the fault bench before this (20 threads of 5, Redis restarted empty, acks slower
    than Slack's 3 s on a loaded machine): 18 of 100 messages answered twice. A retry's first
    delivery had been taken and answered; the restart lost the mark that would have dropped it."""
    with SlackApi(token=TOKEN) as slack, ModelServer(answering_policy) as model:
        env = serve_env(slack, own_redis.url, model) | {"OPSBOT_SLACK__DRAIN_LEASE_S": "2"}
        with ServeProcess(env) as process:
            served = Served(process, slack, model, own_redis.url)
            question = "is the queue draining?"
            mention = payloads.app_mention(f"<@UBOT> {question}", channel="CRETRY")
            slack.add_message("CRETRY", mention["text"], ts=mention["ts"])
            assert served.event(mention)[0] == 200
            assert len(served.answered("CRETRY", mention["ts"])) == 1
            assert settled(own_redis.url)  # done, and Redis knows it

            own_redis.stop()
            own_redis.start()  # empty: what Redis knew of the delivery is gone
            assert until(lambda: served.event(mention, retry=1)[0] == 200, timeout=10)
            twin = payloads.message(f"<@UBOT> {question}", channel="CRETRY", ts=mention["ts"])
            assert served.event(twin, retry=2)[0] == 200
            # The retry reached Redis (not only held in the process while it reconnected), then ran out.
            assert until(lambda: any(own_redis.client().scan_iter("opsbot:slack:seen:*")), timeout=10)
            assert settled(own_redis.url)
            assert len(answers(slack, "CRETRY", mention["ts"])) == 1
            assert runs_for(model, question) == 1, "looked for in the thread and found, not asked again"


# A process killed after its acks.


def slow_answers(body: dict[str, Any]) -> Reply:
    """Answers naming the question after a second: long enough to be killed in the middle."""
    if is_summary_request(body):
        return Reply(content="summary")
    return Reply(content=f"answer to: {question_of(body)}", delay_s=1.0)


def test_a_process_killed_after_its_acks_loses_nothing_and_another_takes_over_within_a_lease(
    own_redis: RedisServer,
) -> None:
    lease_s = 1.5
    channel = "CKILL"
    with SlackApi(token=TOKEN) as slack, ModelServer(slow_answers) as model:
        env = serve_env(slack, own_redis.url, model) | {"OPSBOT_SLACK__DRAIN_LEASE_S": str(lease_s)}
        with serving(ServeProcess(env), ServeProcess(env)) as (doomed, survivor):
            mentions = [payloads.app_mention(f"<@UBOT> first {n}", channel=channel) for n in range(5)]
            replies = [
                payloads.message(f"then {n}", channel=channel, thread_ts=m["ts"]) for n, m in enumerate(mentions)
            ]
            for message in [*mentions, *replies]:
                body = json.dumps(payloads.event_callback(message))
                assert doomed.post(EVENTS, body, payloads.signed_headers(SECRET, body))[0] == 200
            assert until(lambda: len(model.requests) >= 5, 10)  # the first five runs are under way
            doomed.kill()
            killed = time.monotonic()

            def waits() -> list[float]:
                return [len(answers(slack, channel, m["ts"])) for m in mentions]

            assert slack.wait_for(lambda: waits() == [2] * 5, 30), waits()
            took = time.monotonic() - killed
            assert settled(own_redis.url)
            for n, mention in enumerate(mentions):
                said = [shown(a) for a in answers(slack, channel, mention["ts"])]
                assert len(said) == 2 and f"first {n}" in said[0] and f"then {n}" in said[1], said
            # The lease lapses, the survivor's next sweep (a third of a lease) takes over, and each
            # thread's two one-second answers follow: nothing waits for the 300 s memory lock.
            assert took < lease_s * 4 / 3 + 2 * 1.0 + 3.0, took
            assert survivor.get("/healthz")[0] == 200


# Bodies: each one is checked before anything parses it, and none gets a 500.

JSON = "application/json"
FORM = "application/x-www-form-urlencoded"
# In a body that is refused: the refusal's log line must not repeat it (bodies may hold secrets).
MARKER = "xoxb-body-marker-7f3a"
CUT_MENTION = '{"type": "event_callback", "event": {"type": "app_mention", "text": "<@UBOT> ' + MARKER


def cut_command(slack: SlackApi) -> str:
    full = payloads.form_body(payloads.slash_command(MARKER, channel="CCUT", response_url=slack.response_url("cut")))
    return full[: len(full) // 2]


def cut_click() -> str:
    full = payloads.interactive_body(payloads.block_action("feedback_good", MARKER, message_ts=payloads.next_ts()))
    return full[:-12]


@dataclass(frozen=True)
class Refusal:
    name: str
    status: int
    request: Callable[[SlackApi], tuple[str, dict[str, str]]]


def _signed(body: str, secret: str = SECRET, age_s: int = 0) -> tuple[str, dict[str, str]]:
    return body, payloads.signed_headers(secret, body, int(time.time()) - age_s)


REFUSALS = [
    Refusal("malformed JSON, unsigned", 401, lambda slack: (CUT_MENTION, {"Content-Type": JSON})),
    Refusal("malformed JSON, wrong signature", 401, lambda slack: _signed(CUT_MENTION, secret="not-the-secret")),
    Refusal("malformed JSON, stale signature", 401, lambda slack: _signed(CUT_MENTION, age_s=6 * 60)),
    Refusal("malformed JSON, signed", 400, lambda slack: _signed(CUT_MENTION)),
    Refusal("truncated slash command, signed", 400, lambda slack: _signed(cut_command(slack))),
    Refusal("truncated interactive payload, signed", 400, lambda slack: _signed(cut_click())),
    Refusal("JSON that is not an object, signed", 400, lambda slack: _signed(f'["{MARKER}"]')),
]


@pytest.mark.parametrize("case", REFUSALS, ids=[case.name for case in REFUSALS])
def test_refused_bodies_get_a_short_4xx_and_one_log_line_without_the_body(served: Served, case: Refusal) -> None:
    body, headers = case.request(served.slack)
    seen = len(served.process.output())

    status, answer = served.process.post(EVENTS, body, headers)

    assert status == case.status, answer
    assert 0 < len(answer) < 200 and "Traceback" not in answer and MARKER not in answer, answer
    logged = served.process.output()[seen:]
    assert logged.count(f"slack request refused {case.status}") == 1, logged
    assert MARKER not in logged and "Traceback" not in logged, logged


def test_bodies_over_a_mebibyte_get_413_and_far_bigger_ones_are_not_even_buffered(served: Served) -> None:
    over = json.dumps({"type": "event_callback", "padding": "x" * (1 << 20)})
    seen = len(served.process.output())

    assert served.process.post(EVENTS, over, payloads.signed_headers(SECRET, over))[0] == 413
    assert served.process.output()[seen:].count("slack request refused 413") == 1
    # waitress itself refuses what no endpoint would take on its Content-Length alone: the answer
    # comes before a byte of the body is sent.
    connection = http.client.HTTPConnection("127.0.0.1", served.process.port, timeout=5)
    try:
        connection.putrequest("POST", EVENTS)
        connection.putheader("Content-Type", JSON)
        connection.putheader("Content-Length", str(3 << 20))
        connection.endheaders()
        assert connection.getresponse().status == 413
    finally:
        connection.close()


def test_app_rate_limited_and_unknown_callbacks_are_acknowledged_and_logged_once(served: Served) -> None:
    # Slack's documented body (https://docs.slack.dev/reference/events/app_rate_limited/).
    limited = {"token": "legacy", "type": "app_rate_limited", "team_id": "T1", "minute_rate_limited": 1518467820}
    unknown = {"token": "legacy", "type": "some_future_callback", "team_id": "T1", "api_app_id": "A1"}
    unknown_event = {"type": "emoji_changed", "subtype": "add", "name": "shipit", "event_ts": payloads.next_ts()}
    seen = len(served.process.output())

    for body in (json.dumps(limited), json.dumps(unknown)):
        assert served.process.post(EVENTS, body, payloads.signed_headers(SECRET, body)) == (200, "")
    assert served.event(unknown_event)[0] == 200

    logged = served.process.output()[seen:]
    assert logged.count("Slack is dropping events for team 'T1' since minute 1518467820") == 1, logged
    assert logged.count("'some_future_callback' callback opsbot has no listener") == 1, logged
    assert "app_rate_limited" not in logged, logged  # answered in front of Bolt, which never saw it


def test_a_mention_is_still_answered_after_refused_bodies(served: Served) -> None:
    channel = "CAFTER"
    for body, headers in (_signed(CUT_MENTION), (CUT_MENTION, {"Content-Type": JSON})):
        assert served.process.post(EVENTS, body, headers)[0] in (400, 401)
    mention = payloads.app_mention("<@UBOT> is search up?", channel=channel)

    assert served.event(mention)[0] == 200

    (answer,) = served.answered(channel, mention["ts"])
    assert "answer to: is search up?" in shown(answer)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4),
    max_leaves=20,
)


@settings(max_examples=150, deadline=None)
@given(
    body=st.binary(max_size=400) | json_values.map(lambda value: json.dumps(value).encode()),
    content_type=st.sampled_from([JSON, FORM, "text/plain", ""]),
    signed=st.booleans(),
)
def test_any_bytes_as_a_body_get_an_answer_below_500(
    served: Served, body: bytes, content_type: str, signed: bool
) -> None:
    headers = payloads.raw_signed_headers(SECRET if signed else "not-the-secret", body, content_type)

    status, answer = served.process.post(EVENTS, body, headers)

    assert status < 500 and "Traceback" not in answer, (status, answer)
    if not signed:
        assert status == 401, (status, answer)


# Health.


def wait_for_status(process: ServeProcess, status: int, timeout: float = 10) -> int:
    """/healthz's status once it is `status`, else the last one seen after `timeout`."""
    seen: list[int] = []

    def is_status() -> bool:
        seen.append(process.get("/healthz")[0])
        return seen[-1] == status

    until(is_status, timeout, interval=0.1)
    return seen[-1]


def test_healthz_follows_redis_and_says_it_keeps_nothing(own_redis: RedisServer) -> None:
    with SlackApi(token=TOKEN) as slack, ServeProcess(serve_env(slack, own_redis.url)) as process:
        status, body = process.get("/healthz")
        report = json.loads(body)
        assert (status, report["ok"], report["redis_keeps_data"]) == (200, True, False)
        assert report["redis_persistence"] == "none: a restart loses everything"
        assert "turn on appendonly" in process.output()

        own_redis.stop()
        assert wait_for_status(process, 503) == 503

        def repeated() -> bool:
            return process.output().count("Redis is unreachable") > 2

        # The janitor and the alert worker meet the outage and keep meeting it: a line per try would show.
        assert not until(repeated, 1.5, interval=0.05), process.output()
        own_redis.start()  # the same port: the process reconnects by itself
        assert wait_for_status(process, 200) == 200
        output = process.output()
        assert "Traceback" not in output, "an outage is a line in the log, not a traceback"
        assert output.count("Redis is unreachable") <= 2, output  # once each: janitor, alert worker


def test_healthz_says_when_redis_keeps_an_append_only_file(tmp_path: Path) -> None:
    server = RedisServer(tmp_path, args=["--appendonly", "yes"])
    server.start()
    try:
        with SlackApi(token=TOKEN) as slack, ServeProcess(serve_env(slack, server.url)) as process:
            status, body = process.get("/healthz")
            report = json.loads(body)
            assert (status, report["redis_keeps_data"], report["redis_persistence"]) == (
                200,
                True,
                "append-only file",
            )
            assert "turn on appendonly" not in process.output()
    finally:
        server.stop()


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
