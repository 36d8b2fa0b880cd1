"""A fake Slack Web API on a local port, spoken to over real HTTP by the real `slack_sdk.WebClient`.

Mocking `WebClient` methods would skip what goes wrong in production: how the client encodes each
method (JSON bodies for chat.*, form fields for the rest), how it turns `ok: false` into
`SlackApiError`, how its retry handlers read `Retry-After`, and what Bolt's `respond()` posts.
So the fake sits behind the HTTP boundary instead (`WebClient(token=..., base_url=fake.base_url)`)
and keeps the state tests assert on: each channel's messages, threads, streams, assistant statuses,
and every call made. Failures (rate limits, 5xx, lost responses, a seeded share of calls) and
slowness (a call held before it takes effect, or an answer held after it took effect, so the
client times out on a post Slack made) can be injected per method, which is what retry and
de-duplication tests need.

The synchronous WebClient POSTs every method, even those the SDK marks GET (conversations.replies,
usergroups.list): their arguments arrive as form fields. The fake also accepts real GETs and query
strings, so any client shape works.
"""

from __future__ import annotations

import copy
import json
import math
import random
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from tests.fakes.slack_payloads import next_ts, note_ts

Message = dict[str, Any]
Answer = dict[str, Any]


@dataclass(frozen=True)
class ApiCall:
    method: str
    args: dict[str, Any]
    headers: dict[str, str]  # lower-cased names, so tests need not guess the client's casing
    at: float  # the fake's clock (time.monotonic() unless given) on arrival, for asserting on back-off


@dataclass
class _Failure:
    status: int
    error: str
    retry_after: int
    after_effect: bool
    times: int


@dataclass
class _Late:
    """A call that takes effect on arrival but is answered `respond_after_s` later."""

    respond_after_s: float
    visible_after_s: float
    times: int


@dataclass
class _Pace:
    """A token bucket per channel: `burst` calls at once, refilled at `per_s` a second."""

    per_s: float
    burst: int
    buckets: dict[str, tuple[float, float]] = field(default_factory=dict)  # channel -> (tokens, when)

    def retry_after(self, channel: str, now: float) -> int:
        """0 when the call may go; else the whole seconds until a token is back (Slack's Retry-After)."""
        tokens, then = self.buckets.get(channel, (float(self.burst), now))
        tokens = min(float(self.burst), tokens + (now - then) * self.per_s)
        if tokens >= 1:
            self.buckets[channel] = (tokens - 1, now)
            return 0
        self.buckets[channel] = (tokens, now)
        return max(1, math.ceil((1 - tokens) / self.per_s))


@dataclass
class _Flaky:
    """Each call fails with probability `rate`, drawn from a seeded generator: the same calls of
    a run fail every time the test runs."""

    rate: float
    rng: random.Random
    failure: _Failure


class _ApiError(Exception):
    """An `ok: false` answer; Slack sends these with HTTP 200."""

    def __init__(self, error: str) -> None:
        super().__init__(error)
        self.error = error


# Fields that carry JSON; form-encoded clients send them as JSON strings.
_JSON_FIELDS = ("blocks", "attachments", "metadata", "chunks", "files", "view", "prompts")
_STREAM_METHODS = frozenset({"chat.startStream", "chat.appendStream", "chat.stopStream"})
# What Slack refuses (docs.slack.dev: chat.postMessage's `msg_too_long`; Block Kit's limits, each
# `invalid_blocks`): a message's text past 40,000 characters, more than 50 blocks, a text object past
# 3,000, markdown blocks past 12,000 together, a stream call's markdown past 12,000.
TEXT_CHARS = 40_000
MAX_BLOCKS = 50
MAX_VIEW_BLOCKS = 100  # a Home tab's or a modal's (Block Kit reference, Views)
TEXT_OBJECT_CHARS = 3_000
MARKDOWN_CHARS = 12_000
# Kept on stored messages for tests, never shown through the API.
_PRIVATE_KEYS = ("streaming", "visible_at")
_DEFAULT_LIMIT = 1000


def _default_error(status: int) -> str:
    return "ratelimited" if status == 429 else "internal_error" if status >= 500 else "fatal_error"


def _truthy(value: Any) -> bool:
    # The WebClient turns bools into "1"/"0" in forms; JSON keeps true/false.
    return value is True or str(value).lower() in ("1", "true")


def _ts_key(message: Message) -> Decimal:
    # Decimal, not float: a float cannot hold ten digits of seconds plus six of micros exactly.
    return Decimal(message["ts"])


def _parse_args(query: str, raw: bytes, content_type: str) -> tuple[dict[str, Any], str | None]:
    """Arguments from the query string and the body, whichever the client used; and a parse error, if any."""
    args: dict[str, Any] = dict(parse_qsl(query, keep_blank_values=True))
    if raw:
        text = raw.decode("utf-8")
        if content_type.startswith("application/json"):
            try:
                body = json.loads(text)
            except json.JSONDecodeError:
                return args, "invalid_json"
            if not isinstance(body, dict):
                return args, "invalid_json"
            args.update(body)
        else:
            args.update(parse_qsl(text, keep_blank_values=True))
    for name in _JSON_FIELDS:
        value = args.get(name)
        if isinstance(value, str) and value.startswith(("[", "{")):
            try:
                args[name] = json.loads(value)
            except json.JSONDecodeError:
                pass  # left a string, which the method rejects as Slack would (invalid_blocks, ...)
    return args, None


def _blocks_fit(blocks: list[Any]) -> bool:
    """Whether Slack takes these blocks: 50 at most, each text object within its limit, the
    markdown blocks within theirs together."""
    markdown = [b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "markdown"]
    objects = [t for b in blocks if isinstance(b, dict) for t in _text_objects(b)]
    return (
        len(blocks) <= MAX_BLOCKS
        and sum(len(str(text)) for text in markdown) <= MARKDOWN_CHARS
        and all(len(text) <= TEXT_OBJECT_CHARS for text in objects)
    )


def _text_objects(value: Any) -> list[str]:
    """The text of every text object (`{"type": "mrkdwn" | "plain_text", "text": …}`) within `value`."""
    if isinstance(value, list):
        return [t for item in value for t in _text_objects(item)]
    if not isinstance(value, dict):
        return []
    own = [str(value.get("text", ""))] if value.get("type") in ("mrkdwn", "plain_text") else []
    return own + [t for key, item in value.items() if key != "text" or not own for t in _text_objects(item)]


def _check_stream_text(args: dict[str, Any]) -> None:
    if len(_stream_text(args)) > MARKDOWN_CHARS:
        raise _ApiError("msg_too_long")


def _public(message: Message, *, metadata: bool = True) -> Message:
    shown = {key: value for key, value in copy.deepcopy(message).items() if key not in _PRIVATE_KEYS}
    if not metadata:
        shown.pop("metadata", None)
    return shown


def _stream_text(args: dict[str, Any]) -> str:
    """Text a stream call adds: `markdown_text`, then any markdown chunks (what `chat_stream()` sends)."""
    parts = [str(args.get("markdown_text") or "")]
    chunks = args.get("chunks")
    if isinstance(chunks, list):
        parts += [str(c.get("text", "")) for c in chunks if isinstance(c, dict) and c.get("type") == "markdown_text"]
    return "".join(parts)


class _Server(ThreadingHTTPServer):
    # socketserver's backlog of 5 drops connections when dozens of workers call at once, and a
    # dropped SYN is sent again only after a second, past the stack's client timeout: Slack takes them all.
    request_queue_size = 128


class SlackApi:
    """The fake Web API. Use as a context manager, or call `close()`; it serves from construction."""

    def __init__(
        self,
        token: str = "xoxb-test",
        *,
        team_id: str = "T1",
        bot_user_id: str = "UBOT",
        bot_id: str = "BBOT",
        app_id: str = "A1",
        groups: dict[str, list[str]] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """`clock` is what `late(visible_after_s=...)` and `ApiCall.at` count on: a test that fakes
        time for the code under test passes the same clock, so a message shows when that code
        believes it is due."""
        self.token = token
        self.team_id = team_id
        self.bot_user_id = bot_user_id
        self.bot_id = bot_id
        self.app_id = app_id
        # Tests may change these three at any time.
        self.groups: dict[str, list[str]] = dict(groups or {})
        self.not_in_channel: set[str] = set()
        self.no_im_write = False  # conversations.open answers missing_scope, as for an app installed without im:write
        self.streams_supported = True
        self.home_tab_enabled = True  # views.publish answers not_enabled when False, as for an app without a Home tab
        # What agents.sessions.setStatus answers every call, as for an app not declared an agent
        # ("not_allowed_token_type") or a workspace without sessions ("unknown_method"); None: it works.
        self.sessions_error: str | None = None
        self.stop_event_subscribed = True  # else setStatus warns, as Slack does
        # Tracebacks of bugs in the fake itself, answered as HTTP 500 so they are not mistaken for Slack errors.
        self.errors: list[str] = []

        # Re-entrant so a wait_for predicate can call the helpers while the condition holds the lock.
        self._lock = threading.RLock()
        self._changed = threading.Condition(self._lock)
        self._calls: list[ApiCall] = []
        self._channels: dict[str, list[Message]] = {}
        self._ephemerals: list[Message] = []
        self._statuses: dict[tuple[str, str], list[str]] = {}
        self._sessions: dict[tuple[str, str], dict[str, Any]] = {}  # (channel, thread_ts) -> title, statuses
        self._responses: dict[str, list[dict[str, Any]]] = {}
        self._files: dict[str, dict[str, Any]] = {}  # id -> name, length, content (bytes once uploaded), shares
        self._views: dict[str, list[dict[str, Any]]] = {}  # user -> every Home view published for them, in order
        self._prompts: dict[str, list[dict[str, Any]]] = {}  # channel -> every suggested prompts call taken
        self._failures: dict[str, list[_Failure | _Late]] = {}
        self._flaky: dict[str, _Flaky] = {}
        self._delays: dict[str, float] = {}
        self._paces: dict[str, _Pace] = {}
        self.rate_limited: list[ApiCall] = []  # the calls a `rate_limit` answered 429
        self._clock = clock
        # Set on close: answers held back by `late` go out at once rather than outliving the fake.
        self._closing = threading.Event()
        self._methods: dict[str, Callable[[dict[str, Any]], Answer]] = {
            "auth.test": self._auth_test,
            "chat.postMessage": self._post_message,
            "chat.update": self._update,
            "chat.postEphemeral": self._post_ephemeral,
            "chat.startStream": self._start_stream,
            "chat.appendStream": self._append_stream,
            "chat.stopStream": self._stop_stream,
            "assistant.threads.setStatus": self._set_status,
            "agents.sessions.setStatus": self._sessions_set_status,
            "conversations.replies": self._conversations_replies,
            "conversations.history": self._conversations_history,
            "usergroups.list": self._usergroups_list,
            "conversations.open": self._conversations_open,
            "files.getUploadURLExternal": self._get_upload_url,
            "files.completeUploadExternal": self._complete_upload,
            "views.publish": self._views_publish,
            "assistant.threads.setSuggestedPrompts": self._set_suggested_prompts,
        }
        self._http = _Server(("127.0.0.1", 0), self._handler_class())
        self._http.daemon_threads = True
        # A short poll so close() returns at once rather than after serve_forever's default half second.
        self._thread = threading.Thread(
            target=self._http.serve_forever, kwargs={"poll_interval": 0.02}, name="fake-slack-api", daemon=True
        )
        self._thread.start()
        self._closed = False

    # Lifecycle.

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._http.server_address[1]}/api/"

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._closing.set()
        self._http.shutdown()
        self._http.server_close()

    def __enter__(self) -> SlackApi:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # What tests seed and inspect.

    def add_message(
        self,
        channel: str,
        text: str,
        user: str = "U1",
        thread_ts: str | None = None,
        ts: str | None = None,
        bot_id: str | None = None,
    ) -> str:
        """Seed a message as if someone had posted it; returns its ts."""
        with self._changed:
            if ts is None:
                ts = next_ts()
            else:
                note_ts(ts)
            message: Message = {"type": "message", "ts": ts, "text": text, "user": user, "team": self.team_id}
            if bot_id is not None:
                message["bot_id"] = bot_id
            if thread_ts is not None:
                message["thread_ts"] = thread_ts
            self._store(channel, message)
            self._changed.notify_all()
            return ts

    def messages(self, channel: str, thread_ts: str | None = None) -> list[Message]:
        """A thread (root, then replies) or, without `thread_ts`, every message of the channel; by ts."""
        with self._lock:
            stored = self._channels.get(channel, [])
            if thread_ts is not None:
                stored = [m for m in stored if m["ts"] == thread_ts or m.get("thread_ts") == thread_ts]
            return copy.deepcopy(stored)

    def replies(self, channel: str, thread_ts: str) -> list[Message]:
        """Only what the bot posted in the thread, root excluded: usually what a test asserts on."""
        return [m for m in self.messages(channel, thread_ts) if m["ts"] != thread_ts and self._is_bot(m)]

    def ephemerals(self, channel: str | None = None) -> list[Message]:
        with self._lock:
            return [copy.deepcopy(m) for m in self._ephemerals if channel is None or m["channel"] == channel]

    def statuses(self, channel: str, thread_ts: str) -> list[str]:
        """Every assistant status set on the thread, in order ("" is Slack's way of clearing it)."""
        with self._lock:
            return list(self._statuses.get((channel, thread_ts), []))

    def end_stream(self, channel: str, ts: str) -> None:
        """Stop a stream as Slack does when a person clicks Stop on its agent session: later
        appends and stops are refused (`message_not_in_streaming_state`)."""
        with self._changed:
            self._find(channel, ts)["streaming"] = False
            self._changed.notify_all()

    def session(self, channel: str, thread_ts: str) -> dict[str, Any] | None:
        """A thread's agent session: its `title` and every status it was set to, in order."""
        with self._lock:
            found = self._sessions.get((channel, thread_ts))
            return copy.deepcopy(found) if found is not None else None

    def calls(self, method: str | None = None) -> list[ApiCall]:
        with self._lock:
            return [call for call in self._calls if method is None or call.method == method]

    def wait_for(self, predicate: Callable[[], bool], timeout: float = 10) -> bool:
        """Block until `predicate()` holds, re-checking whenever a call arrives or changes state."""
        with self._changed:
            return self._changed.wait_for(predicate, timeout)

    # Misbehaviour on demand.

    def fail(
        self,
        method: str,
        *,
        status: int = 429,
        times: int = 1,
        retry_after: int = 1,
        error: str | None = None,
        after_effect: bool = False,
    ) -> None:
        """Make the next `times` calls of `method` fail.

        429 answers with `Retry-After: retry_after` and `ratelimited`; any other status answers
        with that HTTP status and `{"ok": false, "error": error}` (200 gives a plain Slack error).
        With `after_effect` the call takes effect first and only the answer is lost, as when a
        response times out after Slack has already posted the message.
        """
        failure = _Failure(status, error or _default_error(status), retry_after, after_effect, times)
        with self._lock:
            self._failures.setdefault(method, []).append(failure)

    def rate_limit(self, method: str = "chat.postMessage", *, per_s: float = 1.0, burst: int = 3) -> None:
        """Slack's special limit on chat.postMessage, "1 message per second per channel, short
        bursts allowed" (api.slack.com/methods/chat.postMessage, Rate limiting): past `burst` calls
        at once in one channel, a call is answered 429 `ratelimited` with Retry-After, and does
        nothing, until the channel's bucket refills at `per_s` a second (on the fake's clock)."""
        with self._lock:
            self._paces[method] = _Pace(per_s, burst)

    def delay(self, method: str, seconds: float) -> None:
        """Answer every later call of `method` after `seconds` (0 to stop); the call is recorded on arrival."""
        with self._lock:
            self._delays[method] = seconds

    def late(self, method: str, *, respond_after_s: float, visible_after_s: float = 0.0, times: int = 1) -> None:
        """Make the next `times` calls of `method` take effect on arrival but answer only after
        `respond_after_s` (real seconds): a client whose timeout is shorter gives up on a post Slack
        made, as when Slack is slow. What such a call posts stays out of conversations.replies and
        conversations.history until `visible_after_s` later on the fake's clock (`messages()`
        shows it at once). Queued with `fail`'s failures, in the order they were asked for."""
        with self._lock:
            self._failures.setdefault(method, []).append(_Late(respond_after_s, visible_after_s, times))

    def flaky(self, method: str, *, rate: float, seed: int = 0, status: int = 500, error: str | None = None) -> None:
        """Make a share `rate` of the later calls of `method` fail as `fail` would (0 to stop); which
        ones is drawn from a generator seeded with `seed`. Calls queued by `fail` and `late` go first."""
        with self._lock:
            if rate <= 0:
                self._flaky.pop(method, None)
                return
            failure = _Failure(status, error or _default_error(status), 1, after_effect=False, times=1)
            self._flaky[method] = _Flaky(rate, random.Random(seed), failure)

    # Slash command response_urls.

    def response_url(self, key: str) -> str:
        return f"http://127.0.0.1:{self._http.server_address[1]}/respond/{key}"

    def responses(self, key: str) -> list[dict[str, Any]]:
        with self._lock:
            return copy.deepcopy(self._responses.get(key, []))

    # Files (files_upload_v2: files.getUploadURLExternal, the bytes to its URL, files.completeUploadExternal).

    def files(self, channel: str | None = None) -> list[dict[str, Any]]:
        """Every file shared (in `channel`), in the order shared: id, name, title, alt_txt, its bytes
        (`content`) and as text, where."""
        with self._lock:
            shared = [
                {**f, "text": f["content"].decode(errors="replace"), **share}
                for f in self._files.values()
                for share in f["shares"]
            ]
        return [f for f in shared if channel is None or f["channel"] == channel]

    # The App Home (views.publish, assistant.threads.setSuggestedPrompts).

    def home_views(self, user: str) -> list[dict[str, Any]]:
        """Every Home tab view published for `user`, oldest first: the last is what they see."""
        with self._lock:
            return copy.deepcopy(self._views.get(user, []))

    def suggested_prompts(self, channel: str) -> list[dict[str, Any]]:
        """Every suggested-prompts call Slack took for `channel` (its `title` and `prompts`), in order."""
        with self._lock:
            return copy.deepcopy(self._prompts.get(channel, []))

    # The HTTP side.

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                self._dispatch()

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                self._dispatch()

            def _dispatch(self) -> None:
                url = urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                headers = {name.lower(): value for name, value in self.headers.items()}
                try:
                    if url.path.startswith("/api/"):
                        args, parse_error = _parse_args(url.query, raw, headers.get("content-type", ""))
                        status, answer, extra = fake._api(url.path[len("/api/") :], args, headers, parse_error)
                        self._send(status, json.dumps(answer).encode(), "application/json; charset=utf-8", extra)
                    elif url.path.startswith("/upload/"):
                        status, text = fake._upload(url.path[len("/upload/") :], raw)
                        self._send(status, text.encode(), "text/plain; charset=utf-8", {})
                    elif url.path.startswith("/respond/"):
                        status, text = fake._respond(url.path[len("/respond/") :], raw)
                        self._send(status, text.encode(), "text/plain; charset=utf-8", {})
                    else:
                        self._send(404, b"not found", "text/plain; charset=utf-8", {})
                except Exception:
                    with fake._lock:
                        fake.errors.append(traceback.format_exc())
                    answer = {"ok": False, "error": "fake_slack_bug", "detail": fake.errors[-1]}
                    self._send(500, json.dumps(answer).encode(), "application/json; charset=utf-8", {})

            def _send(self, status: int, data: bytes, content_type: str, headers: dict[str, str]) -> None:
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", content_type)
                    self.send_header("Content-Length", str(len(data)))
                    for name, value in headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client stopped waiting (a `late` answer after its timeout), as clients do

            def log_message(self, *args: Any) -> None:
                pass

        return Handler

    def _api(
        self, method: str, args: dict[str, Any], headers: dict[str, str], parse_error: str | None
    ) -> tuple[int, Answer, dict[str, str]]:
        with self._changed:
            call = ApiCall(method, copy.deepcopy(args), headers, self._clock())
            self._calls.append(call)
            self._changed.notify_all()
            delay = self._delays.get(method, 0.0)
        if delay:
            self._closing.wait(delay)  # outside the lock, so other calls go on meanwhile; cut short by close()
        with self._changed:
            try:
                status, answer, extra, hold_s = self._answer(call, headers, parse_error)
            finally:
                self._changed.notify_all()
        if hold_s:
            self._closing.wait(hold_s)  # outside the lock: the call took effect, only its answer waits
        return status, answer, extra

    def _answer(
        self, call: ApiCall, headers: dict[str, str], parse_error: str | None
    ) -> tuple[int, Answer, dict[str, str], float]:
        """The answer, and how long to hold it back."""
        method, args = call.method, call.args
        authorization = headers.get("authorization", "")
        token = authorization.removeprefix("Bearer ") if authorization.startswith("Bearer ") else args.get("token")
        if token != self.token:
            return 200, {"ok": False, "error": "invalid_auth"}, {}, 0.0
        pace = self._paces.get(method)
        wait = pace.retry_after(str(args.get("channel")), self._clock()) if pace is not None else 0
        if wait:
            self.rate_limited.append(call)
            return 429, {"ok": False, "error": "ratelimited"}, {"Retry-After": str(wait)}, 0.0
        failure = self._take_failure(method)
        if isinstance(failure, _Failure) and not failure.after_effect:
            return *self._failure_answer(failure), 0.0
        answer = self._run(method, args, parse_error)
        if isinstance(failure, _Failure):
            return *self._failure_answer(failure), 0.0
        if isinstance(failure, _Late):
            self._hide(answer, failure.visible_after_s)
            return 200, answer, {}, failure.respond_after_s
        return 200, answer, {}, 0.0

    def _run(self, method: str, args: dict[str, Any], parse_error: str | None) -> Answer:
        handler = self._methods.get(method)
        try:
            if handler is None or (method in _STREAM_METHODS and not self.streams_supported):
                raise _ApiError("unknown_method")
            if parse_error is not None:
                raise _ApiError(parse_error)
            return handler(args)
        except _ApiError as error:
            return {"ok": False, "error": error.error}

    def _take_failure(self, method: str) -> _Failure | _Late | None:
        queue = self._failures.get(method)
        if not queue:
            flaky = self._flaky.get(method)
            return flaky.failure if flaky is not None and flaky.rng.random() < flaky.rate else None
        failure = queue[0]
        failure.times -= 1
        if failure.times <= 0:
            queue.pop(0)
        return failure

    def _hide(self, answer: Answer, seconds: float) -> None:
        """Keep what a late call posted out of reads for `seconds` on the fake's clock."""
        if seconds > 0 and answer.get("ok") and "ts" in answer:
            self._find(answer["channel"], answer["ts"])["visible_at"] = self._clock() + seconds

    def _visible(self, message: Message) -> bool:
        return bool(message.get("visible_at", -math.inf) <= self._clock())

    @staticmethod
    def _failure_answer(failure: _Failure) -> tuple[int, Answer, dict[str, str]]:
        headers = {"Retry-After": str(failure.retry_after)} if failure.status == 429 else {}
        return failure.status, {"ok": False, "error": failure.error}, headers

    def _upload(self, file_id: str, raw: bytes) -> tuple[int, str]:
        """The bytes of a file, to the URL files.getUploadURLExternal gave (Slack answers "OK - <length>")."""
        with self._changed:
            file = self._files.get(file_id)
            if file is None or file["content"] is not None:
                return 404, "no such upload"
            if len(raw) != file["length"]:
                return 400, "length does not match"
            file["content"] = raw
            self._changed.notify_all()
        return 200, f"OK - {len(raw)}"

    def _respond(self, key: str, raw: bytes) -> tuple[int, str]:
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            return 400, "invalid_payload"
        with self._changed:
            self._responses.setdefault(key, []).append(body)
            self._changed.notify_all()
        return 200, "ok"

    # The store. Callers hold the lock.

    def _store(self, channel: str, message: Message) -> None:
        stored = self._channels.setdefault(channel, [])
        if any(m["ts"] == message["ts"] for m in stored):
            raise ValueError(f"a message with ts {message['ts']} is already in {channel}")
        stored.append(message)
        stored.sort(key=_ts_key)

    def _find(self, channel: str, ts: Any) -> Message:
        for message in self._channels.get(channel, []):
            if message["ts"] == ts:
                return message
        raise _ApiError("message_not_found")

    def _is_bot(self, message: Message) -> bool:
        return message.get("bot_id") == self.bot_id or message.get("user") == self.bot_user_id

    def _channel(self, args: dict[str, Any], name: str = "channel") -> str:
        channel = args.get(name)
        if not channel:
            raise _ApiError("channel_not_found")
        if channel in self.not_in_channel:
            raise _ApiError("not_in_channel")
        return str(channel)

    def _bot_message(self, text: str, thread_ts: Any) -> Message:
        message: Message = {
            "type": "message",
            "ts": next_ts(),
            "text": text,
            "user": self.bot_user_id,
            "bot_id": self.bot_id,
            "app_id": self.app_id,
            "team": self.team_id,
        }
        if thread_ts:
            message["thread_ts"] = str(thread_ts)
        return message

    @staticmethod
    def _set_content(message: Message, args: dict[str, Any]) -> None:
        """Blocks, attachments and metadata from the call, all checked before any is set, as Slack checks them."""
        content: dict[str, Any] = {}
        if len(str(args.get("text") or "")) > TEXT_CHARS:
            raise _ApiError("msg_too_long")
        if "blocks" in args:
            if not isinstance(args["blocks"], list) or not _blocks_fit(args["blocks"]):
                raise _ApiError("invalid_blocks")
            content["blocks"] = args["blocks"]
        if "attachments" in args:
            if not isinstance(args["attachments"], list):
                raise _ApiError("invalid_attachments")
            content["attachments"] = args["attachments"]
        if "metadata" in args:
            metadata = args["metadata"]
            if not isinstance(metadata, dict) or not metadata.get("event_type"):
                raise _ApiError("invalid_metadata_format")
            content["metadata"] = {
                "event_type": metadata["event_type"],
                "event_payload": metadata.get("event_payload") or {},
            }
        message.update(content)

    # Methods.

    def _auth_test(self, args: dict[str, Any]) -> Answer:
        return {
            "ok": True,
            "url": "https://test.slack.com/",
            "team": "Test",
            "user": "opsbot",
            "team_id": self.team_id,
            "user_id": self.bot_user_id,
            "bot_id": self.bot_id,
            "is_enterprise_install": False,
        }

    def _conversations_open(self, args: dict[str, Any]) -> Answer:
        """docs.slack.dev/reference/methods/conversations.open: `users` (one user: their DM with the
        app), answering `channel.id`; needs im:write (or mpim:write)."""
        if self.no_im_write:
            raise _ApiError("missing_scope")
        users = str(args.get("users") or "")
        if not users or "," in users:
            raise _ApiError("users_list_not_supplied" if not users else "not_implemented")
        return {"ok": True, "channel": {"id": f"D{users}"}}

    def _post_message(self, args: dict[str, Any]) -> Answer:
        channel = self._channel(args)
        text = str(args.get("text") or args.get("markdown_text") or "")
        if not text and not args.get("blocks") and not args.get("attachments"):
            raise _ApiError("no_text")
        message = self._bot_message(text, args.get("thread_ts"))
        self._set_content(message, args)
        self._store(channel, message)
        return {"ok": True, "channel": channel, "ts": message["ts"], "message": _public(message)}

    def _update(self, args: dict[str, Any]) -> Answer:
        channel = self._channel(args)
        message = self._find(channel, args.get("ts"))
        if not self._is_bot(message):
            raise _ApiError("cant_update_message")
        self._set_content(message, args)
        if "text" in args or "markdown_text" in args:
            message["text"] = str(args.get("text") or args.get("markdown_text") or "")
        message["edited"] = {"user": self.bot_user_id, "ts": next_ts()}
        return {
            "ok": True,
            "channel": channel,
            "ts": message["ts"],
            "text": message["text"],
            "message": _public(message),
        }

    def _post_ephemeral(self, args: dict[str, Any]) -> Answer:
        channel = self._channel(args)
        if not args.get("user"):
            raise _ApiError("user_not_in_channel")
        ts = next_ts()
        message: Message = {"channel": channel, "user": str(args["user"]), "ts": ts, "text": args.get("text", "")}
        if args.get("thread_ts"):
            message["thread_ts"] = str(args["thread_ts"])
        self._set_content(message, args)
        self._ephemerals.append(message)
        return {"ok": True, "message_ts": ts}

    def _start_stream(self, args: dict[str, Any]) -> Answer:
        channel = self._channel(args)
        _check_stream_text(args)
        message = self._bot_message(_stream_text(args), args.get("thread_ts"))
        message["streaming"] = True
        self._store(channel, message)
        return {"ok": True, "channel": channel, "ts": message["ts"]}

    def _streaming(self, args: dict[str, Any]) -> tuple[str, Message]:
        channel = self._channel(args)
        message = self._find(channel, args.get("ts"))
        if not message.get("streaming"):
            raise _ApiError("message_not_in_streaming_state")
        return channel, message

    def _append_stream(self, args: dict[str, Any]) -> Answer:
        channel, message = self._streaming(args)
        _check_stream_text(args)
        message["text"] += _stream_text(args)
        return {"ok": True, "channel": channel, "ts": message["ts"]}

    def _stop_stream(self, args: dict[str, Any]) -> Answer:
        channel, message = self._streaming(args)
        _check_stream_text(args)
        self._set_content(message, args)  # first: invalid blocks leave the stream open and its text unchanged
        message["text"] += _stream_text(args)
        message["streaming"] = False
        return {"ok": True, "channel": channel, "ts": message["ts"], "message": _public(message)}

    def _set_status(self, args: dict[str, Any]) -> Answer:
        channel = self._channel(args, "channel_id")
        thread_ts = args.get("thread_ts")
        if not thread_ts:
            raise _ApiError("invalid_arguments")
        self._statuses.setdefault((channel, str(thread_ts)), []).append(str(args.get("status", "")))
        return {"ok": True}

    def _sessions_set_status(self, args: dict[str, Any]) -> Answer:
        """docs.slack.dev/reference/methods/agents.sessions.setStatus: required `status` (`active`,
        `processing`, `suspended` or `closed`); `channel_id`; `thread_ts` (the thread root a
        thread-based session is scoped to); `title` (at most 200 characters) only used when the
        call creates the session, ignored once it exists. Creates the session if needed. Answers
        `ok` with the session's `status` and `title`, and `warning:
        missing_agent_session_stopped_event_subscription` while the app is not subscribed to
        agent_session_stopped (docs.slack.dev/reference/events/agent_session_stopped)."""
        if self.sessions_error is not None:
            raise _ApiError(self.sessions_error)
        channel = self._channel(args, "channel_id")
        status, thread_ts, title = args.get("status"), args.get("thread_ts"), args.get("title")
        if status not in ("active", "processing", "suspended", "closed") or not thread_ts:
            raise _ApiError("invalid_arguments")
        if title is not None and not 0 < len(str(title)) <= 200:
            raise _ApiError("invalid_arguments")
        session = self._sessions.setdefault((channel, str(thread_ts)), {"title": title, "statuses": []})
        session["statuses"].append(str(status))
        answer: Answer = {"ok": True, "status": status, "title": session["title"]}
        if not self.stop_event_subscribed:
            answer["warning"] = "missing_agent_session_stopped_event_subscription"
        return answer

    def _conversations_replies(self, args: dict[str, Any]) -> Answer:
        channel = self._channel(args)
        ts = args.get("ts")
        try:
            root = self._find(channel, ts)
        except _ApiError:
            raise _ApiError("thread_not_found") from None
        if not self._visible(root):
            raise _ApiError("thread_not_found")
        later = [m for m in self._channels[channel] if m.get("thread_ts") == ts and m["ts"] != ts and self._visible(m)]
        with_metadata = _truthy(args.get("include_all_metadata"))
        shown = _public(root, metadata=with_metadata)
        if later:
            # A root with replies carries the thread's summary, as Slack returns it.
            shown.update(
                thread_ts=root["ts"],
                reply_count=len(later),
                reply_users=sorted({str(m.get("user")) for m in later if m.get("user")}),
                latest_reply=later[-1]["ts"],
            )
        thread = [shown] + [_public(m, metadata=with_metadata) for m in later]
        limit = int(args.get("limit") or _DEFAULT_LIMIT)
        start = int(args.get("cursor") or 0)  # the cursor is just an offset; clients only echo it back
        page = thread[start : start + limit]
        more = start + limit < len(thread)
        return {
            "ok": True,
            "messages": page,
            "has_more": more,
            "response_metadata": {"next_cursor": str(start + limit) if more else ""},
        }

    def _conversations_history(self, args: dict[str, Any]) -> Answer:
        """The channel's top-level messages, newest first (replies stay in their threads)."""
        channel = self._channel(args)
        with_metadata = _truthy(args.get("include_all_metadata"))
        top = [m for m in self._channels.get(channel, []) if m.get("thread_ts") in (None, m["ts"]) and self._visible(m)]
        limit = int(args.get("limit") or _DEFAULT_LIMIT)
        newest = sorted(top, key=_ts_key, reverse=True)[:limit]
        return {"ok": True, "messages": [_public(m, metadata=with_metadata) for m in newest], "has_more": False}

    def _get_upload_url(self, args: dict[str, Any]) -> Answer:
        name, length = str(args.get("filename") or ""), str(args.get("length") or "")
        if not name or not length.isdigit():
            raise _ApiError("invalid_arguments")
        file_id = f"F{len(self._files) + 1:08d}"
        self._files[file_id] = {
            "id": file_id,
            "name": name,
            "length": int(length),
            "alt_txt": args.get("alt_txt"),
            "content": None,
            "shares": [],
        }
        url = f"http://127.0.0.1:{self._http.server_address[1]}/upload/{file_id}"
        return {"ok": True, "upload_url": url, "file_id": file_id}

    def _complete_upload(self, args: dict[str, Any]) -> Answer:
        """Each file shares as a message of the bot's (in the thread), `files` naming it, as Slack's do."""
        items = args.get("files")
        if not isinstance(items, list) or not items:
            raise _ApiError("invalid_arguments")
        files = []
        for item in items:
            file = self._files.get(str(item.get("id")))
            if file is None or file["content"] is None or file["shares"]:
                raise _ApiError("file_not_found")
            file["title"] = str(item.get("title") or file["name"])
            files.append(file)
        shown = [{"id": f["id"], "name": f["name"], "title": f["title"], "size": f["length"]} for f in files]
        channel = args.get("channel_id")
        if channel:
            channel = self._channel(args, "channel_id")
            thread_ts = args.get("thread_ts")
            message = self._bot_message(str(args.get("initial_comment") or ""), thread_ts)
            message.update(files=shown, upload=True)
            self._store(channel, message)
            for file in files:
                file["shares"].append({"channel": channel, "thread_ts": thread_ts, "ts": message["ts"]})
        return {"ok": True, "files": shown}

    def _views_publish(self, args: dict[str, Any]) -> Answer:
        """docs.slack.dev/reference/methods/views.publish: `user_id` and `view` (a JSON object;
        form-encoded clients send it as a JSON string) required, `hash` optional. Answers `view`
        as Slack stored it (`id`, `team_id`, `type`, `blocks`, `hash`, `app_id`, `bot_id`, ...).
        Errors: `not_enabled` for a home view when the app's Home tab is off, `hash_conflict` for a
        `hash` that is not the stored view's, `view_too_large` past 250 KB, `invalid_arguments`
        for a view Block Kit refuses (Block Kit reference, Views: `type` home, at most 100 blocks,
        `private_metadata` 3,000 characters, `callback_id` 255; each text object within 3,000)."""
        user, view = args.get("user_id"), args.get("view")
        if isinstance(view, str):
            try:
                view = json.loads(view)
            except json.JSONDecodeError:
                raise _ApiError("invalid_arguments") from None
        if not user or not isinstance(view, dict):
            raise _ApiError("invalid_arguments")
        if len(json.dumps(view)) > 250_000:
            raise _ApiError("view_too_large")
        if view.get("type") == "home" and not self.home_tab_enabled:
            raise _ApiError("not_enabled")
        blocks = view.get("blocks")
        if (
            view.get("type") != "home"
            or not isinstance(blocks, list)
            or len(blocks) > MAX_VIEW_BLOCKS
            or len(str(view.get("private_metadata") or "")) > 3_000
            or len(str(view.get("callback_id") or "")) > 255
            or any(len(text) > TEXT_OBJECT_CHARS for text in _text_objects(blocks))
        ):
            raise _ApiError("invalid_arguments")
        published = self._views.setdefault(str(user), [])
        if args.get("hash") and (not published or published[-1]["hash"] != args["hash"]):
            raise _ApiError("hash_conflict")
        stored = {
            "id": published[-1]["id"] if published else f"V{len(self._views):08d}",
            "team_id": self.team_id,
            "type": "home",
            "blocks": blocks,
            "private_metadata": str(view.get("private_metadata") or ""),
            "callback_id": str(view.get("callback_id") or ""),
            "state": {"values": {}},
            "hash": f"{time.time():.6f}.{len(published)}",
            "clear_on_close": False,
            "notify_on_close": False,
            "root_view_id": None,
            "previous_view_id": None,
            "app_id": self.app_id,
            "external_id": str(view.get("external_id") or ""),
            "app_installed_team_id": self.team_id,
            "bot_id": self.bot_id,
        }
        stored["root_view_id"] = stored["id"]
        published.append(stored)
        return {"ok": True, "view": copy.deepcopy(stored)}

    def _set_suggested_prompts(self, args: dict[str, Any]) -> Answer:
        """docs.slack.dev/reference/methods/assistant.threads.setSuggestedPrompts: `channel_id` and
        `prompts` required ("up to four suggested prompts", each with its `title` and `message`),
        `title` and `thread_ts` optional; answers `{"ok": true}`. For an agent app (`agent_view` in
        its manifest, as opsbot's) a call with `thread_ts` "will silently fail": it answers ok and
        sets nothing, as here. Errors: `channel_not_found`, `invalid_arguments`."""
        channel = self._channel(args, "channel_id")
        prompts = args.get("prompts")
        if (
            not isinstance(prompts, list)
            or not 1 <= len(prompts) <= 4
            or not all(isinstance(p, dict) and p.get("title") and p.get("message") for p in prompts)
        ):
            raise _ApiError("invalid_arguments")
        if not args.get("thread_ts"):
            taken = {"prompts": copy.deepcopy(prompts), "title": args.get("title")}
            self._prompts.setdefault(channel, []).append(taken)
        return {"ok": True}

    def _usergroups_list(self, args: dict[str, Any]) -> Answer:
        with_users = _truthy(args.get("include_users"))
        groups = []
        for group_id, users in self.groups.items():
            group: dict[str, Any] = {
                "id": group_id,
                "team_id": self.team_id,
                "is_usergroup": True,
                "name": group_id,
                "handle": group_id.lower(),
                "user_count": len(users),
            }
            if with_users:
                group["users"] = list(users)
            groups.append(group)
        return {"ok": True, "usergroups": groups}
