"""Slack's requests over HTTP, checked before anything parses them (`POST /slack/events`, routed
here by bot/web/server.py).

In front of Bolt's WSGI adapter, `SlackEvents` checks every Slack request because Bolt parses
the body before it checks the signature (so a stranger's malformed body used to get a 500): the
body is read up to a cap, its signature is checked on the raw bytes, and it must be what its
Content-Type says and shaped like a Slack payload. Only then does Bolt get it, and it verifies
again. Refusals are logged on `opsbot.web`, with the rest of what the HTTP face answers.
"""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeGuard
from urllib.parse import parse_qsl

from pydantic import SecretStr
from slack_bolt.adapter.wsgi import SlackRequestHandler
from slack_bolt.adapter.wsgi.http_request import WsgiHttpRequest
from slack_bolt.adapter.wsgi.http_response import WsgiHttpResponse
from slack_sdk.signature import SignatureVerifier

from ..web.body import BodyRefused, read_body

if TYPE_CHECKING:
    from wsgiref.types import StartResponse, WSGIEnvironment

log = logging.getLogger("opsbot.web")

# Slack's payloads are a few KiB; a megabyte is generous and still cheap to hold and hash.
MAX_BODY_BYTES = 1 << 20
# Slack refuses requests signed more than five minutes ago, and so does slack_sdk's verifier.
SIGNATURE_WINDOW_S = 300
JSON = "application/json"
FORM = "application/x-www-form-urlencoded"
# What Slack sends with every slash command: a body without one of them was cut short.
COMMAND_FIELDS = ("command", "text", "team_id", "channel_id", "user_id", "response_url", "trigger_id")
_PLAIN: dict[str, Sequence[str]] = {"content-type": ["text/plain; charset=utf-8"]}


class _Refused(Exception):
    def __init__(self, status: int, message: str, headers: Mapping[str, Sequence[str]] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = dict(headers or {})


class SlackEvents:
    """WSGI app for `POST /slack/events`: a body reaches Bolt only once it is signed and readable.

    Refusals are short plain-text 4xx answers, logged in one line that never holds the body (it may
    carry secrets). Events API callbacks opsbot has no listener for are acknowledged with 200, since
    Slack turns off an app's event subscriptions when more than 5% of deliveries in an hour fail.
    """

    def __init__(
        self, bolt: SlackRequestHandler, signing_secret: SecretStr | None, max_body_bytes: int = MAX_BODY_BYTES
    ) -> None:
        if signing_secret is None:
            # Fail closed: without the secret no request could be verified, so none would be answered.
            raise ValueError("serving Slack over HTTP needs SLACK_SIGNING_SECRET")
        self.bolt = bolt
        self.verifier = SignatureVerifier(signing_secret.get_secret_value())
        self.max_body_bytes = max_body_bytes

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        try:
            response = self._handle(environ)
        except _Refused as refused:
            level = logging.WARNING if refused.status == 401 else logging.INFO
            log.log(level, "slack request refused %d: %s (from %s)", refused.status, refused.message, _peer(environ))
            response = WsgiHttpResponse(refused.status, {**_PLAIN, **refused.headers}, refused.message + "\n")
        start_response(response.status, response.get_headers())
        return response.get_body()

    def _handle(self, environ: WSGIEnvironment) -> WsgiHttpResponse:
        if environ.get("REQUEST_METHOD") != "POST":
            raise _Refused(405, "Slack requests are POSTs", {"allow": ["POST"]})
        try:
            raw = read_body(environ, self.max_body_bytes)
        except BodyRefused as refused:
            raise _Refused(refused.status, refused.message) from None
        media_type = environ.get("CONTENT_TYPE", "").split(";", 1)[0].strip().lower()
        if "HTTP_X_SLACK_SIGNATURE" not in environ and _is_ssl_check(raw, media_type):
            # Slack checks a command URL's certificate with an unsigned `ssl_check=1` POST (see
            # slackapi/bolt-js#1397); Bolt answers it before verifying, and so do we, running nothing.
            return _ok()
        self._verify(raw, environ)
        payload = _payload(raw.decode("utf-8"), media_type)  # verified, so UTF-8: the verifier decoded it
        if media_type == JSON and payload.get("type") == "app_rate_limited":
            # No listener can take it (it has no inner event), and it is news for whoever runs opsbot.
            log.warning(
                "Slack is dropping events for team %.40r since minute %.40r: over 30,000 events an hour",
                payload.get("team_id"),
                payload.get("minute_rate_limited"),
            )
            return _ok()
        return self._dispatch(raw, environ, payload, media_type)

    def _verify(self, raw: bytes, environ: WSGIEnvironment) -> None:
        timestamp = environ.get("HTTP_X_SLACK_REQUEST_TIMESTAMP")
        signature = environ.get("HTTP_X_SLACK_SIGNATURE")
        if not timestamp or not signature:
            raise _Refused(401, "missing X-Slack-Signature or X-Slack-Request-Timestamp")
        try:
            sent_at = int(timestamp)
        except ValueError:
            raise _Refused(401, "X-Slack-Request-Timestamp is not a number") from None
        try:
            valid = self.verifier.is_valid(raw, timestamp, signature)
        except (UnicodeDecodeError, TypeError):
            # The SDK signs the body as UTF-8 text and compares signatures as ASCII text: a body or
            # signature that is neither cannot be one Slack made.
            valid = False
        if valid:
            return
        if abs(self.verifier.clock.now() - sent_at) > SIGNATURE_WINDOW_S:
            raise _Refused(401, "X-Slack-Request-Timestamp is more than 5 minutes off: a replay, or a wrong clock")
        raise _Refused(401, "X-Slack-Signature does not match the body")

    def _dispatch(
        self, raw: bytes, environ: WSGIEnvironment, payload: dict[str, Any], media_type: str
    ) -> WsgiHttpResponse:
        # The body was read here, so Bolt reads it again from a copy.
        request = WsgiHttpRequest({**environ, "wsgi.input": io.BytesIO(raw), "CONTENT_LENGTH": str(len(raw))})
        try:
            answer = self.bolt.dispatch(request)
        except Exception as exc:
            # Bolt answers 500 itself for whatever its middleware and listeners raise; what escapes
            # is its reading of the body (ids taken from the wrong types), so the body is at fault.
            raise _Refused(400, f"not a Slack payload opsbot can read ({type(exc).__name__})") from None
        if answer.status == 404 and media_type == JSON:
            # Bolt's "no listener": for the Events API that counts as a failed delivery.
            log.info("acknowledged a Slack %.60r callback opsbot has no listener for", payload.get("type"))
            return _ok()
        return WsgiHttpResponse(answer.status, answer.headers, answer.body)


def _is_ssl_check(raw: bytes, media_type: str) -> bool:
    # A lenient form parse cannot fail, and the answer is an empty 200 whatever else the body says.
    if media_type != FORM:
        return False
    return dict(parse_qsl(raw.decode("utf-8", "replace"), keep_blank_values=True)).get("ssl_check") == "1"


def _payload(text: str, media_type: str) -> dict[str, Any]:
    """The body as Bolt will parse it, refused (400) unless it is a whole Slack payload."""
    if media_type == JSON:
        return _slack_object(_json_value(text, "the body"), "the body")
    if media_type == FORM:
        return _form_payload(text)
    raise _Refused(415, f"send {JSON} (Events API) or {FORM} (commands, interactivity)")


def _form_payload(text: str) -> dict[str, Any]:
    if text.startswith("{"):
        raise _Refused(400, "a form body starting with '{'")  # Bolt would read it as JSON
    try:
        fields = dict(parse_qsl(text, keep_blank_values=True, strict_parsing=True))
    except ValueError:
        raise _Refused(400, "the body is not form-encoded") from None
    if "payload" in fields:
        return _slack_object(_json_value(fields["payload"], "payload"), "payload")
    if "command" in fields:
        missing = [name for name in COMMAND_FIELDS if name not in fields]
        if missing:
            raise _Refused(400, f"a slash command without {', '.join(missing)}")
        return fields
    if fields.get("ssl_check") == "1":
        return fields  # signed this time; Bolt answers it
    raise _Refused(400, "a form body with neither a payload nor a slash command")


def _json_value(text: str, what: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: nesting deeper than the parser goes
        raise _Refused(400, f"{what} is not JSON") from None


def _slack_object(value: Any, what: str) -> dict[str, Any]:
    # The parts Bolt reads while matching listeners, where a wrong type would make it answer 500.
    if not _typed(value):
        raise _Refused(400, f"{what} is not a JSON object with a type")
    kind = value["type"]
    if kind == "event_callback" and not _typed(value.get("event")):
        raise _Refused(400, "an event_callback without an event object with a type")
    if "view" in value and not _typed(value["view"]):
        raise _Refused(400, f"a {kind:.40} whose view is not an object with a type")
    if kind in ("block_actions", "interactive_message") and not _actions(value.get("actions"), kind):
        raise _Refused(400, f"a {kind} without a list of actions")
    return value


def _typed(value: Any) -> TypeGuard[dict[str, Any]]:
    return isinstance(value, dict) and isinstance(value.get("type"), str)


def _actions(value: Any, kind: str) -> bool:
    # Bolt reads the first action of either kind, and matches a block action on its `action_id`.
    if not isinstance(value, list) or not value or not all(isinstance(action, dict) for action in value):
        return False
    return kind != "block_actions" or all(isinstance(action.get("action_id"), str) for action in value)


def _ok() -> WsgiHttpResponse:
    return WsgiHttpResponse(200, _PLAIN, "")


def _peer(environ: WSGIEnvironment) -> str:
    return str(environ.get("REMOTE_ADDR", "?"))
