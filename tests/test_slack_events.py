"""`SlackEvents`, the WSGI app in front of Bolt, called in process through WSGI with a real Bolt app.

Over HTTP (tests/test_slack_http.py) the refusals are seen as Slack sees them; here each one can be
checked for what matters behind it: that Bolt never got the request. Bolt runs on the fake Web API
(its authorization calls auth.test) with catch-all listeners, so "no listener" means an unknown
kind of request, never a missing one.
"""

from __future__ import annotations

import io
import json
import logging
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import SecretStr
from slack_bolt import Ack, App
from slack_bolt.adapter.wsgi import SlackRequestHandler
from slack_bolt.adapter.wsgi.http_request import WsgiHttpRequest
from slack_bolt.response import BoltResponse
from slack_sdk import WebClient

from opsbot.bot.slack.requests import SlackEvents
from tests.fakes import slack_payloads as payloads
from tests.fakes.mutations import one_value_swapped
from tests.fakes.slack_api import SlackApi

SECRET = "test-signing-secret"
TOKEN = "xoxb-test"
JSON = "application/json"
FORM = "application/x-www-form-urlencoded"
MARKER = "xoxb-body-marker-91c2"  # in refused bodies: never in an answer or a log line


class CountingHandler(SlackRequestHandler):
    """Bolt's WSGI adapter, counting the requests that reach Bolt."""

    def __init__(self, app: App) -> None:
        super().__init__(app)
        self.dispatched = 0

    def dispatch(self, request: WsgiHttpRequest) -> BoltResponse:
        self.dispatched += 1
        return super().dispatch(request)


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    text: str


@dataclass
class Front:
    events: SlackEvents
    bolt: CountingHandler

    def call(self, body: bytes, headers: dict[str, str], method: str = "POST", **environ: Any) -> Answer:
        """One WSGI call; `environ` overrides what a server would set (CONTENT_LENGTH, input_terminated)."""
        env: dict[str, Any] = {
            "REQUEST_METHOD": method,
            "PATH_INFO": "/slack/events",
            "SERVER_PROTOCOL": "HTTP/1.1",
            "REMOTE_ADDR": "203.0.113.9",
            "CONTENT_LENGTH": str(len(body)),
            "wsgi.input": io.BytesIO(body),
        }
        for name, value in headers.items():
            key = name.upper().replace("-", "_")
            env[key if key == "CONTENT_TYPE" else f"HTTP_{key}"] = value
        env.update(environ)
        seen: dict[str, Any] = {}

        def start_response(status: str, response_headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            seen["status"], seen["headers"] = int(status.split()[0]), {k.lower(): v for k, v in response_headers}

        text = b"".join(self.events(env, start_response)).decode()
        return Answer(seen["status"], seen["headers"], text)

    def signed(self, body: bytes | str, content_type: str = JSON, **environ: Any) -> Answer:
        raw = body.encode() if isinstance(body, str) else body
        return self.call(raw, payloads.raw_signed_headers(SECRET, raw, content_type), **environ)


@pytest.fixture(scope="module")
def front() -> Iterator[Front]:
    with SlackApi(token=TOKEN) as slack:
        app = App(
            client=WebClient(token=TOKEN, base_url=slack.base_url),
            signing_secret=SECRET,
            token_verification_enabled=False,
        )

        @app.event(re.compile(".*"))
        def any_event() -> None:
            pass

        @app.command("/ops")
        def ops(ack: Ack) -> None:
            ack()

        @app.action(re.compile(".*"))
        def any_action(ack: Ack) -> None:
            ack()

        bolt = CountingHandler(app)
        yield Front(SlackEvents(bolt, SecretStr(SECRET), max_body_bytes=4096), bolt)


@pytest.fixture
def fresh(front: Front) -> Front:
    front.bolt.dispatched = 0
    return front


def command_body(**fields: str) -> str:
    return payloads.form_body(payloads.slash_command("status", response_url="https://hooks.example/r") | fields)


def click_payload(**fields: Any) -> dict[str, Any]:
    return payloads.block_action("approve", "r-1", message_ts=payloads.next_ts()) | fields


@dataclass(frozen=True)
class Case:
    name: str
    status: int
    body: bytes | str
    content_type: str = JSON
    secret: str | None = SECRET  # None: no signature headers at all
    age_s: int = 0
    headers: dict[str, str] = field(default_factory=dict)  # over the signed ones
    environ: dict[str, Any] = field(default_factory=dict)  # over what a server would set

    def request(self) -> tuple[bytes, dict[str, str]]:
        # Signed when the test runs, so "fresh" means fresh however long the suite has taken.
        raw = self.body.encode() if isinstance(self.body, str) else self.body
        if self.secret is None:
            return raw, {"Content-Type": self.content_type}
        stamp = int(time.time()) - self.age_s
        return raw, payloads.raw_signed_headers(self.secret, raw, self.content_type, stamp) | self.headers


CUT = f'{{"type": "event_callback", "event": {{"text": "{MARKER}'
CASES = [
    Case("a GET", 405, "", environ={"REQUEST_METHOD": "GET"}),
    Case("no signature", 401, CUT, secret=None),
    Case("wrong signature", 401, CUT, secret="not-the-secret"),
    Case("stale signature", 401, CUT, age_s=6 * 60),
    Case("signature from the future", 401, CUT, age_s=-6 * 60),
    Case("timestamp not a number", 401, CUT, headers={"X-Slack-Request-Timestamp": "soon"}),
    Case("signature not ASCII", 401, CUT, headers={"X-Slack-Signature": "v0=\u00e9"}),
    Case("signed bytes that are not UTF-8", 401, b"\xff\xfe" + MARKER.encode()),
    Case("over the cap", 413, "{" + " " * 5000 + "}"),
    Case("Content-Length over the cap, nothing read", 413, CUT, environ={"CONTENT_LENGTH": "999999"}),
    Case("Content-Length not a number", 400, CUT, environ={"CONTENT_LENGTH": "12e3"}),
    Case("shorter than its Content-Length", 400, CUT, environ={"CONTENT_LENGTH": str(len(CUT) + 10)}),
    Case("no Content-Length, no end of input", 411, CUT, environ={"CONTENT_LENGTH": ""}),
    Case("malformed JSON", 400, CUT),
    Case("JSON nested past the parser", 400, "[" * 3000),
    Case("JSON without a type", 400, json.dumps({"text": MARKER})),
    Case("an event_callback whose event is text", 400, json.dumps({"type": "event_callback", "event": MARKER})),
    Case("a click without actions", 400, urlencode({"payload": json.dumps(click_payload(actions=[]))}), FORM),
    Case("a view that is text", 400, urlencode({"payload": json.dumps({"type": "x", "view": MARKER})}), FORM),
    Case("a form body that is JSON", 400, json.dumps({"type": "url_verification"}), FORM),
    Case("a form field without '='", 400, f"command=%2Fops&{MARKER}", FORM),
    Case("a slash command cut short", 400, command_body(text=MARKER).split("&response_url")[0], FORM),
    Case("a form without payload or command", 400, f"text={MARKER}", FORM),
    Case("a payload that is not JSON", 400, f"payload=%7B%22{MARKER}", FORM),
    Case("neither JSON nor a form", 415, MARKER, "text/plain"),
]


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_refused_requests_get_a_short_plain_4xx_and_never_reach_bolt(
    fresh: Front, case: Case, caplog: pytest.LogCaptureFixture
) -> None:
    body, headers = case.request()
    stream = io.BytesIO(body)
    with caplog.at_level(logging.INFO, logger="opsbot.web"):
        answer = fresh.call(body, headers, **({"wsgi.input": stream} | case.environ))

    assert answer.status == case.status, answer
    assert answer.headers["content-type"].startswith("text/plain") and 0 < len(answer.text) < 120, answer
    assert MARKER not in answer.text
    assert fresh.bolt.dispatched == 0
    (record,) = [r for r in caplog.records if r.name == "opsbot.web"]
    assert f"refused {case.status}" in record.getMessage() and MARKER not in record.getMessage()
    assert "203.0.113.9" in record.getMessage()
    if case.status == 405:
        assert answer.headers["allow"] == "POST"
    if case.environ.get("CONTENT_LENGTH") == "999999":
        assert stream.tell() == 0  # refused on the header alone


def test_a_body_bolt_cannot_read_gets_400_not_500(fresh: Front) -> None:
    # Well-formed and typed, but Bolt's id extraction trips over a team that is a number.
    answer = fresh.signed(json.dumps({"type": "block_suggestion", "team": 5}))

    assert (answer.status, fresh.bolt.dispatched) == (400, 1), answer
    assert "TypeError" in answer.text and "Traceback" not in answer.text


def test_an_unsigned_ssl_check_is_answered_200_and_reaches_nothing(fresh: Front) -> None:
    # Slack's certificate check carries no signature (slackapi/bolt-js#1397).
    body = b"ssl_check=1&token=legacy-verification-token"

    assert fresh.call(body, {"Content-Type": FORM}).status == 200
    assert fresh.call(body, {"Content-Type": JSON}).status == 401  # only a form can be one
    assert fresh.bolt.dispatched == 0


def test_app_rate_limited_is_acknowledged_logged_once_and_never_dispatched(
    fresh: Front, caplog: pytest.LogCaptureFixture
) -> None:
    body = {"token": "legacy", "type": "app_rate_limited", "team_id": "T1", "minute_rate_limited": 1518467820}

    with caplog.at_level(logging.INFO):
        answer = fresh.signed(json.dumps(body))

    assert (answer.status, answer.text, fresh.bolt.dispatched) == (200, "", 0)
    (record,) = [r for r in caplog.records if r.name == "opsbot.web"]
    assert record.levelno == logging.WARNING and "'T1'" in record.getMessage()


def test_events_api_callbacks_without_a_listener_get_200_while_other_requests_keep_bolts_answer(
    fresh: Front, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="opsbot.web"):
        unknown = fresh.signed(json.dumps({"type": "some_future_callback", "team_id": "T1"}))
    challenge = fresh.signed(json.dumps({"type": "url_verification", "challenge": "c-1"}))
    command = fresh.signed(command_body(), FORM)
    # An unknown command is the user's to hear about (Slack shows them the failure), not a delivery.
    other_command = fresh.signed(command_body(command="/elsewhere"), FORM)

    assert unknown.status == 200
    assert [r.getMessage() for r in caplog.records if r.name == "opsbot.web"] == [
        "acknowledged a Slack 'some_future_callback' callback opsbot has no listener for"
    ]
    assert (challenge.status, json.loads(challenge.text)) == (200, {"challenge": "c-1"})
    assert command.status == 200 and other_command.status == 404
    assert fresh.bolt.dispatched == 4


def test_a_missing_signing_secret_fails_at_construction(front: Front) -> None:
    with pytest.raises(ValueError, match="SLACK_SIGNING_SECRET"):
        SlackEvents(front.bolt, None)


# Whatever shape a signed payload has, Bolt is never left to answer 500.

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3),
    max_leaves=10,
)
MODAL = {"type": "modal", "callback_id": "v", "state": {"values": {}}}
SHAPES: list[tuple[str, dict[str, Any]]] = [
    (JSON, payloads.event_callback(payloads.app_mention("<@UBOT> status"))),
    (JSON, payloads.event_callback(payloads.message_changed("edited", message_ts=payloads.next_ts()))),
    (JSON, {"token": "legacy", "type": "url_verification", "challenge": "c"}),
    (JSON, {"token": "legacy", "type": "app_rate_limited", "team_id": "T1", "minute_rate_limited": 1}),
    (FORM, click_payload()),
    (FORM, {"type": "view_submission", "team": {"id": "T1"}, "user": {"id": "U1"}, "view": MODAL}),
    (FORM, {"type": "shortcut", "callback_id": "s", "team": {"id": "T1"}, "user": {"id": "U1"}}),
]


@st.composite
def near_valid(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    """A real payload with one value somewhere swapped for arbitrary JSON."""
    content_type, shape = draw(st.sampled_from(SHAPES))
    return content_type, one_value_swapped(draw, shape, json_values)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=near_valid())
def test_signed_payloads_of_any_shape_get_an_answer_below_500(front: Front, case: tuple[str, dict[str, Any]]) -> None:
    content_type, doc = case
    body = json.dumps(doc) if content_type == JSON else urlencode({"payload": json.dumps(doc)})

    answer = front.signed(body, content_type)

    assert answer.status < 500, (answer, doc)
