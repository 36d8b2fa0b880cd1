"""The Slack fakes behave as Slack does for the real `slack_sdk.WebClient` and for Bolt's request parsing.

Tests of opsbot's Slack front end trust these fakes, so their own fidelity is pinned here first.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from collections.abc import Iterator

import pytest
from slack_bolt.request import BoltRequest
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_handlers import RateLimitErrorRetryHandler
from slack_sdk.signature import SignatureVerifier
from slack_sdk.webhook import WebhookClient

from tests.fakes import slack_payloads as payloads
from tests.fakes.slack_api import SlackApi

TOKEN = "xoxb-test"


@pytest.fixture
def slack() -> Iterator[SlackApi]:
    with SlackApi(token=TOKEN, groups={"S1": ["U1", "U2"]}) as fake:
        yield fake


@pytest.fixture
def client(slack: SlackApi) -> WebClient:
    # No retry handlers unless a test adds them: a failure should surface, not be retried silently.
    client = WebClient(token=TOKEN, base_url=slack.base_url)
    client.retry_handlers = []
    return client


def error_of(excinfo: pytest.ExceptionInfo[SlackApiError]) -> str:
    return str(excinfo.value.response["error"])


def test_post_message_then_replies_round_trip(slack: SlackApi, client: WebClient) -> None:
    root = slack.add_message("C1", "is the db down?")
    blocks = [{"type": "section", "text": {"type": "mrkdwn", "text": "*checking*"}}]
    metadata = {"event_type": "opsbot_answer", "event_payload": {"run": "r1"}}

    posted = client.chat_postMessage(channel="C1", text="checking", thread_ts=root, blocks=blocks, metadata=metadata)

    assert posted["ok"] and posted["channel"] == "C1"
    assert posted["message"]["user"] == "UBOT" and posted["message"]["bot_id"] == "BBOT"
    thread = client.conversations_replies(channel="C1", ts=root, include_all_metadata=True)["messages"]
    assert [m["ts"] for m in thread] == [root, posted["ts"]]
    assert thread[0]["reply_count"] == 1 and thread[0]["thread_ts"] == root
    assert thread[1]["blocks"] == blocks and thread[1]["metadata"] == metadata
    assert "metadata" not in client.conversations_replies(channel="C1", ts=root)["messages"][1]
    page = client.conversations_replies(channel="C1", ts=root, limit=1)
    assert len(page["messages"]) == 1 and page["has_more"]
    assert [m["text"] for m in slack.replies("C1", root)] == ["checking"]
    assert float(posted["ts"]) > float(root)


def test_form_encoded_blocks_and_metadata_are_decoded(slack: SlackApi, client: WebClient) -> None:
    blocks = [{"type": "divider"}]
    client.api_call(
        "chat.postMessage",
        params={
            "channel": "C1",
            "text": "hi",
            "blocks": json.dumps(blocks),
            "metadata": json.dumps({"event_type": "e"}),
        },
    )

    (message,) = slack.messages("C1")
    assert message["blocks"] == blocks and message["metadata"] == {"event_type": "e", "event_payload": {}}
    assert slack.calls("chat.postMessage")[0].args["blocks"] == blocks


def test_post_errors(slack: SlackApi, client: WebClient) -> None:
    slack.not_in_channel.add("C9")
    with pytest.raises(SlackApiError) as missing:
        client.api_call("chat.postMessage", json={"text": "hi"})
    with pytest.raises(SlackApiError) as outside:
        client.chat_postMessage(channel="C9", text="hi")
    with pytest.raises(SlackApiError) as no_thread:
        client.conversations_replies(channel="C1", ts="1.000001")

    assert error_of(missing) == "channel_not_found"
    assert error_of(outside) == "not_in_channel"
    assert error_of(no_thread) == "thread_not_found"
    assert slack.messages("C9") == []


def test_update_replaces_text_and_blocks(slack: SlackApi, client: WebClient) -> None:
    ts = client.chat_postMessage(channel="C1", text="working…")["ts"]

    client.chat_update(channel="C1", ts=ts, text="done", blocks=[{"type": "divider"}])

    (message,) = slack.messages("C1")
    assert message["text"] == "done" and message["blocks"] == [{"type": "divider"}]
    with pytest.raises(SlackApiError) as missing:
        client.chat_update(channel="C1", ts="1.000001", text="x")
    assert error_of(missing) == "message_not_found"


def test_streams_append_and_stop(slack: SlackApi, client: WebClient) -> None:
    root = slack.add_message("C1", "why is checkout slow?")
    ts = client.chat_startStream(
        channel="C1", thread_ts=root, markdown_text="Look", recipient_user_id="U1", recipient_team_id="T1"
    )["ts"]
    assert slack.messages("C1", root)[1]["streaming"] is True
    client.chat_appendStream(channel="C1", ts=ts, markdown_text="ing at ")
    client.chat_stopStream(channel="C1", ts=ts, markdown_text="logs.", metadata={"event_type": "e"})

    (reply,) = slack.replies("C1", root)
    assert reply["text"] == "Looking at logs." and reply["streaming"] is False
    assert reply["metadata"]["event_type"] == "e" and reply["thread_ts"] == root
    with pytest.raises(SlackApiError) as stopped:
        client.chat_appendStream(channel="C1", ts=ts, markdown_text="more")
    with pytest.raises(SlackApiError) as unknown:
        client.chat_appendStream(channel="C1", ts="1.000001", markdown_text="more")
    assert error_of(stopped) == "message_not_in_streaming_state"
    assert error_of(unknown) == "message_not_found"


def test_sdk_chat_stream_helper_sends_chunks_the_fake_understands(slack: SlackApi, client: WebClient) -> None:
    root = slack.add_message("C1", "hello")

    stream = client.chat_stream(channel="C1", thread_ts=root, recipient_user_id="U1", recipient_team_id="T1")
    stream.append(markdown_text="a" * 300)
    stream.append(markdown_text="b")
    stream.stop()

    (reply,) = slack.replies("C1", root)
    assert reply["text"] == "a" * 300 + "b" and reply["streaming"] is False


def test_streams_unsupported_answer_unknown_method(slack: SlackApi, client: WebClient) -> None:
    slack.streams_supported = False

    with pytest.raises(SlackApiError) as refused:
        client.chat_startStream(channel="C1", thread_ts=slack.add_message("C1", "hi"))

    assert error_of(refused) == "unknown_method"
    assert len(slack.calls("chat.startStream")) == 1


def test_rate_limit_is_honoured_by_the_sdk_retry_handler(slack: SlackApi, client: WebClient) -> None:
    client.retry_handlers = [RateLimitErrorRetryHandler(max_retry_count=1)]
    slack.fail("chat.postMessage", status=429, retry_after=1)

    started = time.monotonic()
    client.chat_postMessage(channel="C1", text="hi")

    first, second = slack.calls("chat.postMessage")
    assert second.at - first.at >= 1 and time.monotonic() - started >= 1
    assert len(slack.messages("C1")) == 1


def test_lost_response_still_stores_the_message(slack: SlackApi, client: WebClient) -> None:
    slack.fail("chat.postMessage", status=500, after_effect=True)

    with pytest.raises(SlackApiError) as lost:
        client.chat_postMessage(channel="C1", text="hi")

    assert lost.value.response.status_code == 500 and error_of(lost) == "internal_error"
    assert [m["text"] for m in slack.messages("C1")] == ["hi"]
    client.chat_postMessage(channel="C1", text="again")  # the failure was used up
    assert len(slack.messages("C1")) == 2


def test_plain_error_and_delay(slack: SlackApi, client: WebClient) -> None:
    slack.fail("auth.test", status=200, error="account_inactive")
    slack.delay("auth.test", 0.2)

    with pytest.raises(SlackApiError) as inactive:
        client.auth_test()
    started = time.monotonic()
    identity = client.auth_test()

    assert error_of(inactive) == "account_inactive"
    assert time.monotonic() - started >= 0.2
    assert (identity["user_id"], identity["bot_id"], identity["team_id"]) == ("UBOT", "BBOT", "T1")


def test_invalid_token(slack: SlackApi) -> None:
    with pytest.raises(SlackApiError) as refused:
        WebClient(token="xoxb-wrong", base_url=slack.base_url).auth_test()

    assert refused.value.response.status_code == 200 and error_of(refused) == "invalid_auth"
    assert slack.calls("auth.test")[0].headers["authorization"] == "Bearer xoxb-wrong"


def test_status_ephemeral_groups_and_unknown_methods(slack: SlackApi, client: WebClient) -> None:
    root = slack.add_message("C1", "hi")

    client.assistant_threads_setStatus(channel_id="C1", thread_ts=root, status="is thinking…")
    client.assistant_threads_setStatus(channel_id="C1", thread_ts=root, status="")
    ephemeral = client.chat_postEphemeral(channel="C1", user="U1", text="only you")
    groups = client.usergroups_list(include_users=True)["usergroups"]
    with pytest.raises(SlackApiError) as unknown:
        client.api_call("reactions.add", json={"channel": "C1", "name": "eyes", "timestamp": root})

    assert slack.statuses("C1", root) == ["is thinking…", ""]
    assert ephemeral["message_ts"] and slack.ephemerals("C1")[0]["text"] == "only you"
    assert len(slack.messages("C1")) == 1
    assert groups == [
        {
            "id": "S1",
            "team_id": "T1",
            "is_usergroup": True,
            "name": "S1",
            "handle": "s1",
            "user_count": 2,
            "users": ["U1", "U2"],
        }
    ]
    assert error_of(unknown) == "unknown_method" and slack.calls("reactions.add")


def test_wait_for_wakes_on_a_call(slack: SlackApi, client: WebClient) -> None:
    poster = threading.Timer(0.1, lambda: client.chat_postMessage(channel="C1", text="late"))
    poster.start()

    assert slack.wait_for(lambda: len(slack.messages("C1")) == 1, timeout=5)
    assert not slack.wait_for(lambda: False, timeout=0.05)
    poster.join()


def test_response_url_records_json_posts(slack: SlackApi) -> None:
    url = slack.response_url("cmd-1")
    request = urllib.request.Request(
        url, data=json.dumps({"text": "working"}).encode(), headers={"Content-Type": "application/json"}
    )

    with urllib.request.urlopen(request, timeout=5) as answer:
        assert answer.status == 200 and answer.read() == b"ok"
    sent = WebhookClient(url).send(text="done", response_type="in_channel", replace_original=True)

    assert sent.status_code == 200
    assert slack.responses("cmd-1") == [
        {"text": "working"},
        {"text": "done", "response_type": "in_channel", "replace_original": True},
    ]


def test_signed_headers_verify() -> None:
    body = json.dumps(payloads.event_callback(payloads.app_mention("<@UBOT> status")))

    headers = payloads.signed_headers("s3cret", body)

    verifier = SignatureVerifier("s3cret")
    stamp, signature = headers["X-Slack-Request-Timestamp"], headers["X-Slack-Signature"]
    assert verifier.is_valid(body=body, timestamp=stamp, signature=signature)
    assert verifier.is_valid_request(body, headers) and headers["Content-Type"] == "application/json"
    assert not SignatureVerifier("other").is_valid(body=body, timestamp=stamp, signature=signature)
    assert payloads.retry_headers(2) == {"X-Slack-Retry-Num": "2", "X-Slack-Retry-Reason": "http_timeout"}


def test_payloads_parse_as_bolt_expects() -> None:
    mention = payloads.app_mention("<@UBOT> status", channel="C7", user="U7", thread_ts="1700000000.000001")
    event = BoltRequest(body=json.dumps(payloads.event_callback(mention, team="T7")))
    command_fields = payloads.slash_command("deploy", user="U8", channel="C8", response_url="http://x/respond/1")
    command = BoltRequest(body=payloads.form_body(command_fields))
    click = payloads.block_action("approve", "yes", message_ts="1700000000.000002", thread_ts="1700000000.000001")
    action = BoltRequest(body=payloads.interactive_body(click))

    assert (event.context.team_id, event.context.user_id, event.context.channel_id) == ("T7", "U7", "C7")
    assert event.context.thread_ts == "1700000000.000001" and event.body["event"]["type"] == "app_mention"
    assert (command.context.user_id, command.context.channel_id, command.body["command"]) == ("U8", "C8", "/ops")
    assert command.context.response_url == "http://x/respond/1"
    assert action.body["actions"][0]["value"] == "yes" and action.context.thread_ts == "1700000000.000001"
    assert (action.context.user_id, action.context.channel_id) == ("U1", "C1")
    first, second = payloads.message("a"), payloads.message("b")
    assert float(second["ts"]) > float(first["ts"])
    assert payloads.event_callback(first)["event_id"] != payloads.event_callback(second)["event_id"]


def test_a_late_answer_times_the_client_out_after_the_post_took_effect() -> None:
    now = [0.0]
    with SlackApi(token=TOKEN, clock=lambda: now[0]) as fake:
        client = WebClient(token=TOKEN, base_url=fake.base_url, timeout=0.2)  # type: ignore[arg-type]
        client.retry_handlers = []
        root = fake.add_message("C1", "is the db down?")
        fake.late("chat.postMessage", respond_after_s=5, visible_after_s=3)

        started = time.monotonic()
        with pytest.raises(TimeoutError):
            client.chat_postMessage(channel="C1", thread_ts=root, text="late")

        assert time.monotonic() - started < 2, "the client gave up; the fake did not make it wait"
        assert [m["text"] for m in fake.replies("C1", root)] == ["late"], "posted although unanswered"

        def shown() -> list[str]:
            return [m["text"] for m in client.conversations_replies(channel="C1", ts=root)["messages"]]

        assert shown() == ["is the db down?"], "not visible yet on the fake's clock"
        now[0] = 3.0
        assert shown() == ["is the db down?", "late"]
        assert "visible_at" not in client.conversations_replies(channel="C1", ts=root)["messages"][1]
        assert client.chat_postMessage(channel="C1", text="on time")["ok"], "only the next call was late"
        assert fake.calls("chat.postMessage")[0].at == 0.0, "calls are timed on the fake's clock"


def test_late_and_fail_are_taken_in_the_order_they_were_asked_for(slack: SlackApi, client: WebClient) -> None:
    slack.fail("chat.postMessage", status=500)
    slack.late("chat.postMessage", respond_after_s=0.05)
    slack.fail("chat.postMessage", status=200, error="is_archived")

    with pytest.raises(SlackApiError) as first:
        client.chat_postMessage(channel="C1", text="a")
    second = client.chat_postMessage(channel="C1", text="b")  # the client waits longer than 0.05 s
    with pytest.raises(SlackApiError) as third:
        client.chat_postMessage(channel="C1", text="c")

    assert error_of(first) == "internal_error" and second["ok"] and error_of(third) == "is_archived"
    assert [m["text"] for m in slack.messages("C1")] == ["b"]


def test_flaky_fails_the_same_calls_on_every_run() -> None:
    def failures(seed: int) -> list[bool]:
        with SlackApi(token=TOKEN) as fake:
            flaky = WebClient(token=TOKEN, base_url=fake.base_url)
            flaky.retry_handlers = []
            fake.fail("conversations.history", status=503, times=2)  # queued failures come first
            fake.flaky("conversations.history", rate=0.5, seed=seed)
            failed = []
            for _ in range(20):
                try:
                    flaky.conversations_history(channel="C1")
                    failed.append(False)
                except SlackApiError as exc:
                    assert exc.response.status_code in (500, 503)
                    failed.append(True)
            fake.flaky("conversations.history", rate=0)
            assert flaky.conversations_history(channel="C1")["ok"], "rate 0 stops it"
            return failed

    first = failures(seed=7)
    assert first == failures(seed=7) and first[:2] == [True, True]
    assert 3 <= sum(first[2:]) <= 15, "about half of the later calls fail"
