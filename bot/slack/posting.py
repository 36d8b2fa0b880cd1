"""Posting to Slack so that a failure is retried, a retry is never a duplicate, and an answer is
never dropped without a word.

Slack's `chat.postMessage` has no idempotency key. Each answer carries message metadata naming
its job. After an attempt whose outcome is unknown (no answer within the client's timeout, a lost
connection, a 5xx) the post may still land: Slack can go on working on a request the client gave
up on, and a look made before it lands finds nothing. So opsbot keeps looking for the marker over
a window that outlasts the client's timeout before it posts again, and a look that fails is tried
again. Only when no look succeeds for the whole window is the message posted regardless, with a
warning: a possible duplicate (marked, so later looks find it) rather than a lost answer.

A file (a long answer attached, a chart) is shared the same way: it carries no metadata, so a look finds
it by its name, which names its job and its answer (`upload_once`).

429s are the client's: its `RateLimitErrorRetryHandler` waits `Retry-After` and retries. One that
outlasts those retries is a refusal like any other error Slack answers with: Slack did nothing, so
the message is posted again after a pause, without looking.
"""

from __future__ import annotations

import enum
import logging
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.client import HTTPException
from typing import Any, NamedTuple
from urllib.error import URLError

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackRequestError

from .blocks import ANSWER_EVENT, Attachment, Block

log = logging.getLogger("opsbot.slack")

# Errors after which the message certainly was not posted, and posting again cannot help.
_FINAL = frozenset(
    {
        "channel_not_found",
        "not_in_channel",
        "is_archived",
        "msg_too_long",
        "invalid_blocks",
        "invalid_auth",
        "not_authed",
        "account_inactive",
        "token_revoked",
        "no_permission",
        "missing_scope",
        "restricted_action",
    }
)
# Errors Slack documents with "it's possible some aspect of the operation succeeded", whatever
# the HTTP status: as unknown as a 5xx.
_MAYBE_DONE = frozenset({"internal_error", "fatal_error"})
# No answer at all: a timeout (TimeoutError), a reset or refused connection, a cut-off response.
_UNANSWERED = (URLError, OSError, HTTPException)


class PostFailed(Exception):
    """The message could not be posted; `error` is Slack's error code or the connection problem."""

    def __init__(self, error: str) -> None:
        super().__init__(error)
        self.error = error


@dataclass(frozen=True, kw_only=True)
class Pacing:
    """How long `post_once` waits, and with what; tests pass their own `sleep` and `clock`."""

    # How long past the client's timeout a post may still land. Slack documents no bound on how
    # long it goes on with a request, so this is a judgement: as long again as opsbot's client
    # itself waits (15 s), so 30 s from the attempt. Shorter lets a slower post land after the
    # retry, as a duplicate; longer makes the retry of every post that really failed that much later.
    grace_s: float = 15.0
    # The first look comes at once (a lost response's post is usually there already); then the
    # pauses double up to 4 s, so a late post is noticed at most 4 s after it lands and a 30 s
    # window takes 7 (after a timeout) to 11 (after a quick 5xx) looks: well inside the Tier 3
    # limit (50+ a minute) conversations.replies keeps for internal apps. A look's 429 waits in
    # the client's handler like any other.
    first_pause_s: float = 0.5
    max_pause_s: float = 4.0
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.monotonic

    def window(self, client: WebClient) -> float:
        """From an attempt's start, how long its post may still land."""
        return float(client.timeout) + self.grace_s

    def pauses(self) -> Iterator[float]:
        pause = self.first_pause_s
        while True:
            yield pause
            pause = min(2 * pause, self.max_pause_s)


# What `post_once` uses unless handed a pacing: real time.
PACING = Pacing()


class _Fate(enum.Enum):
    ABSENT = "absent"  # a look that counts found nothing: posting again cannot duplicate
    UNKNOWN = "unknown"  # no look that counts succeeded in the window


@dataclass(frozen=True, kw_only=True)
class _Once:
    """Something to be sent exactly once: how one attempt sends it, how a look finds it if it
    arrived, and what and where it is (for the logs)."""

    client: WebClient
    what: str
    where: str
    send: Callable[[], _Tried]
    find: Callable[[], Looked]


@dataclass(frozen=True)
class _Tried:
    """One attempt: what identifies the sent thing (a message's ts, a file's id) when it was sent,
    else the error and whether it may have been sent all the same."""

    ts: str | None
    error: str = ""
    unknown: bool = False


def marker(job_id: str, kind: str = ANSWER_EVENT) -> dict[str, Any]:
    return {"event_type": kind, "event_payload": {"job": job_id}}


def post_once(
    client: WebClient,
    channel: str,
    thread_ts: str | None,
    job_id: str,
    text: str,
    blocks: list[Block] | None = None,
    attempts: int = 4,
    kind: str = ANSWER_EVENT,
    check_first: bool = False,
    pacing: Pacing | None = None,
    may_land_from: float | None = None,
) -> str:
    """Post one message marked with `job_id` and return its ts; raise `PostFailed` for an error
    that posting again cannot cure, or once `attempts` posts failed and none of them arrived.

    `check_first` looks for the marked message before the first attempt too: for a message an
    earlier attempt (a stream that was stopped, a run before a restart) may have posted already.
    That earlier attempt is taken to be over, so one look that succeeds settles it. An earlier
    attempt that may still land (a stream stop with no answer) gives instead `may_land_from`, the
    pacing clock's time it started: the looks then go on over its window, as after a post."""
    once = _Once(
        client=client,
        what=job_id,
        where=thread_ts or channel,
        send=lambda: _try_post(client, channel, thread_ts, marker(job_id, kind), text, blocks),
        find=lambda: find_marked(client, channel, thread_ts, job_id, kind),
    )
    return _send_once(once, attempts, check_first, pacing or PACING, may_land_from)


def upload_once(
    client: WebClient,
    channel: str,
    thread_ts: str | None,
    file: Attachment,
    attempts: int = 4,
    check_first: bool = False,
    pacing: Pacing | None = None,
) -> str:
    """Share `file` in the thread exactly once, as `post_once` posts a message (a file carries no
    metadata: its name is what a look finds it by); its id. Raises `PostFailed` as `post_once` does."""
    once = _Once(
        client=client,
        what=file.name,
        where=thread_ts or channel,
        send=lambda: _try_upload(client, channel, thread_ts, file),
        find=lambda: find_file(client, channel, thread_ts, file.name),
    )
    return _send_once(once, attempts, check_first, pacing or PACING)


def _send_once(
    once: _Once, attempts: int, check_first: bool, pacing: Pacing, may_land_from: float | None = None
) -> str:
    """`post_once`'s attempts and looks, for whatever `once` sends."""
    window = pacing.window(once.client)
    if check_first or may_land_from is not None:
        settled = -math.inf if may_land_from is None else may_land_from + window
        until = max(settled, pacing.clock() + window)
        earlier = _look(once, pacing, until=until, counts_from=settled)
        if isinstance(earlier, str):
            return earlier
        if earlier is _Fate.UNKNOWN:
            _warn_blind(once, pacing, "an earlier post")
    error = "not tried"
    pauses = pacing.pauses()
    for attempt in range(1, attempts + 1):
        started = pacing.clock()
        tried = once.send()
        if tried.ts is not None:
            return tried.ts
        error = tried.error
        log.warning("posting %s to %s failed (%s), attempt %d of %d", once.what, once.where, error, attempt, attempts)
        if not tried.unknown:
            if attempt < attempts:
                pacing.sleep(next(pauses))
            continue
        settled = started + window
        fate = _look(once, pacing, until=settled, counts_from=settled)
        if isinstance(fate, str):
            return fate
        if fate is _Fate.UNKNOWN:
            if attempt == attempts:
                error = f"{error}; whether it arrived is unknown"
            else:
                _warn_blind(once, pacing, "the last attempt")
    raise PostFailed(error)


def _try_post(
    client: WebClient,
    channel: str,
    thread_ts: str | None,
    metadata: dict[str, Any],
    text: str,
    blocks: list[Block] | None,
) -> _Tried:
    def post() -> str:
        response = client.chat_postMessage(
            channel=channel,
            thread_ts=thread_ts,
            text=text,
            blocks=blocks,
            metadata=metadata,
            unfurl_links=False,
            unfurl_media=False,
        )
        return str(response["ts"])

    return _attempt(post)


def _try_upload(client: WebClient, channel: str, thread_ts: str | None, file: Attachment) -> _Tried:
    def upload() -> str:
        # files.getUploadURLExternal, the bytes to the URL it gives, files.completeUploadExternal:
        # only the last shares the file, so only its failure leaves the outcome unknown.
        response = client.files_upload_v2(
            channel=channel,
            thread_ts=thread_ts,
            filename=file.name,
            title=file.title,
            content=file.content,
            alt_txt=file.alt_text or None,
        )
        return str(response["file"]["id"])

    try:
        return _attempt(upload)
    except SlackRequestError as exc:  # the bytes were refused: nothing was shared
        return _Tried(None, str(exc))


def _attempt(send: Callable[[], str]) -> _Tried:
    """One attempt of `send`, whose result identifies what it sent; raises `PostFailed` for an
    error that trying again cannot cure."""
    try:
        return _Tried(send())
    except SlackApiError as exc:
        error = str(exc.response.get("error") or exc.response.status_code)
        if error in _FINAL:
            raise PostFailed(error) from exc
        return _Tried(None, error, unknown=may_have_landed(exc))
    except _UNANSWERED as exc:
        return _Tried(None, str(exc) or type(exc).__name__, unknown=True)


def may_have_landed(exc: Exception) -> bool:
    """Whether a Slack call that raised `exc` may still have done what it was asked."""
    if isinstance(exc, SlackApiError):
        return exc.response.status_code >= 500 or exc.response.get("error") in _MAYBE_DONE
    return isinstance(exc, _UNANSWERED)


def _look(once: _Once, pacing: Pacing, until: float, counts_from: float) -> str | _Fate:
    """Look for what `once` sends, again after each pause, until a look settles its fate or
    `until` passes. Finding it settles it (its ts); finding nothing settles it only for a look
    that started at `counts_from` or later, when the post can no longer land (`ABSENT`). A look
    that fails is tried again; `UNKNOWN` when no look settled it by `until`."""
    pauses = pacing.pauses()
    while True:
        started = pacing.clock()
        looked = once.find()
        if looked.ts is not None:
            return looked.ts
        if looked.checked and started >= counts_from:
            return _Fate.ABSENT
        left = until - pacing.clock()
        if left <= 0:
            return _Fate.UNKNOWN
        # Never past `until`: the look that counts comes as soon as the post can no longer land.
        pacing.sleep(min(next(pauses), left))


def _warn_blind(once: _Once, pacing: Pacing, what: str) -> None:
    log.warning(
        "could not learn whether %s of %s arrived in %s (no look succeeded for %.0f s); posting it anyway "
        "rather than lose it: it is marked, so a later look finds it, but it may show twice",
        what,
        once.what,
        once.where,
        pacing.window(once.client),
    )


def post_or_log(
    client: WebClient,
    channel: str,
    thread_ts: str | None,
    job_id: str,
    text: str,
    blocks: list[Block] | None = None,
    kind: str = ANSWER_EVENT,
    check_first: bool = False,
    pacing: Pacing | None = None,
) -> str | None:
    """`post_once` for messages nobody waits on as an answer (notes, step results): a failure is
    logged, not raised, and the work goes on."""
    try:
        return post_once(
            client, channel, thread_ts, job_id, text, blocks, kind=kind, check_first=check_first, pacing=pacing
        )
    except PostFailed as exc:
        log.error("could not post %s in %s: %s", job_id, thread_ts or channel, exc.error)
        return None


class Looked(NamedTuple):
    """A look for a marked message (a named file): whether Slack could be asked, and the message's
    ts (the file's id) if found."""

    checked: bool
    ts: str | None


def find_marked(client: WebClient, channel: str, thread_ts: str | None, job_id: str, kind: str) -> Looked:
    """Whether Slack could be asked, and the ts of a message carrying `job_id`'s marker: in the
    thread, or among the channel's newest messages for a post that starts a thread."""
    messages = _read(client, channel, thread_ts)
    if messages is None:
        return Looked(checked=False, ts=None)
    for message in messages:
        metadata = message.get("metadata") or {}
        if metadata.get("event_type") == kind and (metadata.get("event_payload") or {}).get("job") == job_id:
            return Looked(checked=True, ts=str(message["ts"]))
    return Looked(checked=True, ts=None)


def find_file(client: WebClient, channel: str, thread_ts: str | None, name: str) -> Looked:
    """Whether Slack could be asked, and the id of a file named `name` shared where `find_marked` looks."""
    messages = _read(client, channel, thread_ts)
    if messages is None:
        return Looked(checked=False, ts=None)
    for message in messages:
        for file in message.get("files") or []:
            if file.get("name") == name:
                return Looked(checked=True, ts=str(file["id"]))
    return Looked(checked=True, ts=None)


def _read(client: WebClient, channel: str, thread_ts: str | None) -> list[dict[str, Any]] | None:
    """The thread's messages, or the channel's newest; None when Slack could not be asked."""
    try:
        if thread_ts is None:
            response = client.conversations_history(channel=channel, limit=100, include_all_metadata=True)
        else:
            response = client.conversations_replies(
                channel=channel, ts=thread_ts, limit=1000, include_all_metadata=True
            )
    except (SlackApiError, *_UNANSWERED) as exc:
        log.warning("cannot check %s for an earlier post: %s", thread_ts or channel, exc)
        return None
    return list(response.get("messages") or [])


def tell(client: WebClient, channel: str, user: str, text: str, thread_ts: str | None = None) -> None:
    """A message only `user` sees (in `thread_ts`, if given); best effort (the person may have left the channel)."""
    try:
        client.chat_postEphemeral(channel=channel, user=user, text=text, thread_ts=thread_ts)
    except (SlackApiError, URLError, OSError) as exc:
        log.warning("could not tell %s: %s", user, exc)


def replace(client: WebClient, channel: str, ts: str, text: str, blocks: list[Block]) -> None:
    """Replace a message's text and blocks (a decision replacing buttons); best effort."""
    try:
        client.chat_update(channel=channel, ts=ts, text=text, blocks=blocks)
    except (SlackApiError, URLError, OSError) as exc:
        log.warning("message %s not updated: %s", ts, exc)
