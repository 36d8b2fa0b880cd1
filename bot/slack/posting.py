"""Posting to Slack so that a failure is retried and a retry is never a duplicate.

Slack's `chat.postMessage` has no idempotency key. Each answer carries message metadata naming
its job; before posting again after a failure whose outcome is unknown (a 5xx, a lost
connection), opsbot looks for that metadata in the thread. 429s never reach here: the client's
`RateLimitErrorRetryHandler` waits `Retry-After` and retries (Slack did nothing with a 429).
"""

from __future__ import annotations

import logging
import time
from typing import Any
from urllib.error import URLError

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from bot.slack.blocks import ANSWER_EVENT, Block

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


class PostFailed(Exception):
    """The message could not be posted; `error` is Slack's error code or the connection problem."""

    def __init__(self, error: str) -> None:
        super().__init__(error)
        self.error = error


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
    backoff_s: float = 0.5,
    kind: str = ANSWER_EVENT,
    check_first: bool = False,
) -> str:
    """Post one message marked with `job_id` and return its ts; raise `PostFailed`.

    `check_first` looks for the marked message before the first attempt too: for a message an
    earlier attempt (a stream that was stopped, a run before a restart) may have posted already."""
    error = "not tried"
    for attempt in range(attempts):
        if attempt or check_first:
            if attempt:
                time.sleep(backoff_s * 2 ** (attempt - 1))
            checked, found = find_marked(client, channel, thread_ts, job_id, kind)
            if found is not None:
                return found
            if not checked:
                error = "could not check whether the last post arrived"
                continue  # posting blind could duplicate: check again after the next pause
        try:
            response = client.chat_postMessage(
                channel=channel,
                thread_ts=thread_ts,
                text=text,
                blocks=blocks,
                metadata=marker(job_id, kind),
                unfurl_links=False,
                unfurl_media=False,
            )
            return str(response["ts"])
        except SlackApiError as exc:
            error = str(exc.response.get("error") or exc.response.status_code)
            if error in _FINAL:
                raise PostFailed(error) from exc
        except (URLError, OSError) as exc:
            error = str(exc)
        log.warning("posting to %s failed (%s), attempt %d of %d", channel, error, attempt + 1, attempts)
    raise PostFailed(error)


def post_or_log(
    client: WebClient,
    channel: str,
    thread_ts: str | None,
    job_id: str,
    text: str,
    blocks: list[Block] | None = None,
    kind: str = ANSWER_EVENT,
    check_first: bool = False,
) -> str | None:
    """`post_once` for messages nobody waits on as an answer (notes, step results): a failure is
    logged, not raised, and the work goes on."""
    try:
        return post_once(client, channel, thread_ts, job_id, text, blocks, kind=kind, check_first=check_first)
    except PostFailed as exc:
        log.error("could not post %s in %s: %s", job_id, thread_ts or channel, exc.error)
        return None


def find_marked(
    client: WebClient, channel: str, thread_ts: str | None, job_id: str, kind: str
) -> tuple[bool, str | None]:
    """Whether Slack could be asked, and the ts of a message carrying `job_id`'s marker: in the
    thread, or among the channel's newest messages for a post that starts a thread."""
    try:
        if thread_ts is None:
            response = client.conversations_history(channel=channel, limit=100, include_all_metadata=True)
        else:
            response = client.conversations_replies(
                channel=channel, ts=thread_ts, limit=1000, include_all_metadata=True
            )
    except (SlackApiError, URLError, OSError) as exc:
        log.warning("cannot check %s for an earlier post: %s", thread_ts or channel, exc)
        return False, None
    for message in response.get("messages") or []:
        metadata = message.get("metadata") or {}
        if metadata.get("event_type") == kind and (metadata.get("event_payload") or {}).get("job") == job_id:
            return True, str(message["ts"])
    return True, None


def tell(client: WebClient, channel: str, user: str, text: str) -> None:
    """A message only `user` sees; best effort (the person may have left the channel)."""
    try:
        client.chat_postEphemeral(channel=channel, user=user, text=text)
    except (SlackApiError, URLError, OSError) as exc:
        log.warning("could not tell %s: %s", user, exc)


def replace(client: WebClient, channel: str, ts: str, text: str, blocks: list[Block]) -> None:
    """Replace a message's text and blocks (a decision replacing buttons); best effort."""
    try:
        client.chat_update(channel=channel, ts=ts, text=text, blocks=blocks)
    except (SlackApiError, URLError, OSError) as exc:
        log.warning("message %s not updated: %s", ts, exc)
