"""What Slack sends to an app, built by hand so the Slack front end can be driven without Slack.

Shapes follow Slack's Events API, slash command and interactivity docs, trimmed to what an app
reads and what Bolt's `slack_bolt.request.internals` extracts (team, user, channel, thread_ts,
response_url). Bodies are signed with the real `slack_sdk.signature.SignatureVerifier`, so a Bolt
app with a signing secret accepts them exactly as it would accept Slack's.

`ts` values come from one process-wide clock shared with the fake Web API (`slack_api.SlackApi`),
so a user's message built here and the bot's reply stored there sort in the order they happened.
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import threading
import time
import uuid
from typing import Any
from urllib.parse import urlencode

from slack_sdk.signature import SignatureVerifier

# Seconds start at a fixed epoch rather than now so ts values are readable and reproducible in failures.
_EPOCH = 1_700_000_000
_clock_lock = threading.Lock()
_clock = _EPOCH
_seq = 0
_ids = itertools.count(1)


def next_ts() -> str:
    """A unique ts, later than every ts handed out or noted so far: `"1700000001.000001"`."""
    global _clock, _seq
    with _clock_lock:
        # Whole seconds step on every call so that a ts noted by hand (any micros) is always overtaken.
        _clock += 1
        _seq += 1
        return f"{_clock}.{_seq % 1_000_000:06d}"


def note_ts(ts: str) -> None:
    """Keep `next_ts()` ahead of a ts chosen by hand, so generated ones still sort after it."""
    global _clock
    seconds = int(ts.split(".", 1)[0])
    with _clock_lock:
        _clock = max(_clock, seconds)


def _unique(prefix: str) -> str:
    return f"{prefix}{next(_ids):08d}"


def _ts(ts: str | None) -> str:
    if ts is None:
        return next_ts()
    note_ts(ts)
    return ts


# The Events API envelope.


def event_callback(
    event: dict[str, Any],
    *,
    team: str = "T1",
    api_app_id: str = "A1",
    bot_user_id: str = "UBOT",
    event_id: str | None = None,
    event_time: int | None = None,
) -> dict[str, Any]:
    """The outer `event_callback` body Slack POSTs to the Events API request URL."""
    return {
        "token": "legacy-verification-token",
        "team_id": team,
        "context_team_id": team,
        "context_enterprise_id": None,
        "api_app_id": api_app_id,
        "event": event,
        "type": "event_callback",
        "event_id": event_id or _unique("Ev"),
        "event_time": event_time if event_time is not None else int(time.time()),
        # Bolt takes team and enterprise from here before the top-level fields (for shared channels).
        "authorizations": [
            {
                "enterprise_id": None,
                "team_id": team,
                "user_id": bot_user_id,
                "is_bot": True,
                "is_enterprise_install": False,
            }
        ],
        "is_ext_shared_channel": False,
        "event_context": _unique("4-ec-"),
    }


# Events (the inner `event` object).


def _user_message(
    text: str, *, channel: str, user: str, ts: str | None, thread_ts: str | None, team: str
) -> dict[str, Any]:
    ts = _ts(ts)
    event: dict[str, Any] = {
        "type": "message",
        "user": user,
        "text": text,
        "ts": ts,
        "event_ts": ts,
        "client_msg_id": str(uuid.uuid4()),
        "team": team,
        "channel": channel,
    }
    if thread_ts is not None:
        event["thread_ts"] = thread_ts
    return event


def app_mention(
    text: str,
    *,
    channel: str = "C1",
    user: str = "U1",
    ts: str | None = None,
    thread_ts: str | None = None,
    team: str = "T1",
) -> dict[str, Any]:
    """An `app_mention` event; `text` is as Slack sends it, so include the mention (`"<@UBOT> status"`)."""
    event = _user_message(text, channel=channel, user=user, ts=ts, thread_ts=thread_ts, team=team)
    event["type"] = "app_mention"
    return event


def message(
    text: str,
    *,
    channel: str = "C1",
    user: str = "U1",
    ts: str | None = None,
    thread_ts: str | None = None,
    channel_type: str = "channel",
    team: str = "T1",
) -> dict[str, Any]:
    """A plain `message` event from a person (no subtype)."""
    event = _user_message(text, channel=channel, user=user, ts=ts, thread_ts=thread_ts, team=team)
    event["channel_type"] = channel_type
    return event


def im(
    text: str,
    *,
    channel: str = "D1",
    user: str = "U1",
    ts: str | None = None,
    thread_ts: str | None = None,
    team: str = "T1",
) -> dict[str, Any]:
    """A direct message to the bot: a `message` event with `channel_type: im`."""
    return message(text, channel=channel, user=user, ts=ts, thread_ts=thread_ts, channel_type="im", team=team)


def bot_message(
    text: str,
    bot_id: str = "B9",
    *,
    channel: str = "C1",
    ts: str | None = None,
    thread_ts: str | None = None,
    channel_type: str = "channel",
    team: str = "T1",
    user: str | None = None,
    subtype: str | None = "bot_message",
) -> dict[str, Any]:
    """A message from another bot.

    Integrations and webhooks post with `subtype: bot_message` and no user; an app posting with
    its bot token has no subtype but a `bot_id` and its bot `user` (pass `subtype=None, user=...`).
    A bot must ignore both kinds, so tests need both.
    """
    ts = _ts(ts)
    event: dict[str, Any] = {
        "type": "message",
        "text": text,
        "ts": ts,
        "event_ts": ts,
        "bot_id": bot_id,
        "channel": channel,
        "channel_type": channel_type,
        "team": team,
    }
    if subtype is not None:
        event["subtype"] = subtype
    if user is not None:
        event["user"] = user
    if thread_ts is not None:
        event["thread_ts"] = thread_ts
    return event


def message_changed(
    text: str,
    *,
    previous_text: str = "",
    message_ts: str | None = None,
    channel: str = "C1",
    user: str = "U1",
    thread_ts: str | None = None,
    ts: str | None = None,
    channel_type: str = "channel",
    team: str = "T1",
) -> dict[str, Any]:
    """An edit: `message` holds the new version, `previous_message` the old; `ts` is the edit's own."""
    original_ts = _ts(message_ts)
    ts = _ts(ts)
    new: dict[str, Any] = {
        "type": "message",
        "user": user,
        "text": text,
        "ts": original_ts,
        "team": team,
        "edited": {"user": user, "ts": ts},
    }
    old: dict[str, Any] = {"type": "message", "user": user, "text": previous_text, "ts": original_ts, "team": team}
    if thread_ts is not None:
        new["thread_ts"] = old["thread_ts"] = thread_ts
    return {
        "type": "message",
        "subtype": "message_changed",
        "hidden": True,
        "message": new,
        "previous_message": old,
        "channel": channel,
        "channel_type": channel_type,
        "ts": ts,
        "event_ts": ts,
    }


def message_deleted(
    *,
    deleted_ts: str,
    previous_text: str = "",
    channel: str = "C1",
    user: str = "U1",
    thread_ts: str | None = None,
    ts: str | None = None,
    channel_type: str = "channel",
    team: str = "T1",
) -> dict[str, Any]:
    """A deletion: `deleted_ts` names the message gone, `previous_message` is what it said."""
    ts = _ts(ts)
    old: dict[str, Any] = {"type": "message", "user": user, "text": previous_text, "ts": deleted_ts, "team": team}
    if thread_ts is not None:
        old["thread_ts"] = thread_ts
    return {
        "type": "message",
        "subtype": "message_deleted",
        "hidden": True,
        "deleted_ts": deleted_ts,
        "previous_message": old,
        "channel": channel,
        "channel_type": channel_type,
        "ts": ts,
        "event_ts": ts,
    }


def channel_join(
    *,
    user: str = "U1",
    channel: str = "C1",
    inviter: str | None = None,
    ts: str | None = None,
    channel_type: str = "channel",
    team: str = "T1",
) -> dict[str, Any]:
    """The `channel_join` message Slack posts when someone (or the bot) joins a channel."""
    ts = _ts(ts)
    event: dict[str, Any] = {
        "type": "message",
        "subtype": "channel_join",
        "user": user,
        "text": f"<@{user}> has joined the channel",
        "ts": ts,
        "event_ts": ts,
        "channel": channel,
        "channel_type": channel_type,
        "team": team,
    }
    if inviter is not None:
        event["inviter"] = inviter
    return event


def agent_session_stopped(
    *,
    thread_ts: str,
    channel: str = "C1",
    user: str = "U1",
    streaming_message_ts: list[str] | None = None,
    event_ts: str | None = None,
) -> dict[str, Any]:
    """Slack's Stop clicked on a thread's agent session, as docs.slack.dev/reference/events/
    agent_session_stopped shows it: `channel`, `thread_ts`, `user`, `event_ts`, and
    `streaming_message_ts`, the app's streams Slack stopped (an empty list when none was active).
    The team is the envelope's (`event_callback`'s `team_id`)."""
    return {
        "type": "agent_session_stopped",
        "channel": channel,
        "thread_ts": thread_ts,
        "user": user,
        "event_ts": _ts(event_ts),
        "streaming_message_ts": list(streaming_message_ts or []),
    }


# Slash commands and interactivity: form-encoded, not JSON.


def slash_command(
    text: str,
    *,
    command: str = "/ops",
    user: str = "U1",
    channel: str = "C1",
    team: str = "T1",
    response_url: str,
    trigger_id: str | None = None,
    api_app_id: str = "A1",
    user_name: str = "engineer",
    channel_name: str = "ops",
) -> dict[str, str]:
    """The fields of a slash command POST; encode them with `form_body`."""
    return {
        "token": "legacy-verification-token",
        "team_id": team,
        "team_domain": "test",
        "channel_id": channel,
        "channel_name": channel_name,
        "user_id": user,
        "user_name": user_name,
        "command": command,
        "text": text,
        "api_app_id": api_app_id,
        "is_enterprise_install": "false",
        "response_url": response_url,
        "trigger_id": trigger_id or _trigger_id(),
    }


def form_body(fields: dict[str, str]) -> str:
    return urlencode(fields)


def _trigger_id() -> str:
    return f"{next(_ids)}.{next(_ids)}.{uuid.uuid4().hex}"


def block_action(
    action_id: str,
    value: str,
    *,
    user: str = "U1",
    team: str = "T1",
    channel: str = "C1",
    message_ts: str,
    thread_ts: str | None = None,
    response_url: str | None = None,
    block_id: str = "actions",
    message_text: str = "",
    bot_user_id: str = "UBOT",
    bot_id: str = "BBOT",
    api_app_id: str = "A1",
    trigger_id: str | None = None,
) -> dict[str, Any]:
    """A `block_actions` payload: a button (`action_id`, `value`) clicked on the bot's message at `message_ts`."""
    # Bolt finds thread_ts only inside `message`, so that is where a threaded click carries it.
    clicked: dict[str, Any] = {
        "type": "message",
        "user": bot_user_id,
        "bot_id": bot_id,
        "app_id": api_app_id,
        "text": message_text,
        "ts": message_ts,
        "blocks": [],
    }
    container: dict[str, Any] = {
        "type": "message",
        "message_ts": message_ts,
        "channel_id": channel,
        "is_ephemeral": False,
    }
    if thread_ts is not None:
        clicked["thread_ts"] = container["thread_ts"] = thread_ts
    payload: dict[str, Any] = {
        "type": "block_actions",
        "user": {"id": user, "username": "engineer", "name": "engineer", "team_id": team},
        "api_app_id": api_app_id,
        "token": "legacy-verification-token",
        "container": container,
        "trigger_id": trigger_id or _trigger_id(),
        "team": {"id": team, "domain": "test"},
        "enterprise": None,
        "is_enterprise_install": False,
        "channel": {"id": channel, "name": "ops"},
        "message": clicked,
        "state": {"values": {}},
        "actions": [
            {
                "action_id": action_id,
                "block_id": block_id,
                "text": {"type": "plain_text", "text": value, "emoji": True},
                "value": value,
                "type": "button",
                "action_ts": f"{time.time():.6f}",
            }
        ],
    }
    if response_url is not None:
        payload["response_url"] = response_url
    return payload


def feedback_action(
    value: str,
    *,
    text: str = "Not helpful",
    action_id: str = "opsbot_feedback",
    ephemeral: bool = False,
    **fields: Any,
) -> dict[str, Any]:
    """A `block_actions` payload for a click on Slack's feedback buttons (a `feedback_buttons`
    element in a `context_actions` block, docs.slack.dev/reference/block-kit/block-elements/
    feedback-buttons-element): the action is `{"type": "feedback_buttons", "action_id", "block_id",
    "action_ts", "value", "text"}`, `value` and `text` the clicked button's (docs.slack.dev/
    reference/interaction-payloads/block_actions-payload; bolt-js's `FeedbackButtonsAction`,
    docs.slack.dev/tools/bolt-js/reference/interfaces/FeedbackButtonsAction). A click on an
    ephemeral message (a `/ops` reply) says so in its `container` and carries no `message`."""
    payload = block_action(action_id, value, block_id=_unique("cab"), **fields)
    [action] = payload["actions"]
    action.update(type="feedback_buttons", text={"type": "plain_text", "text": text, "emoji": True})
    if ephemeral:
        del payload["message"]
        payload["container"]["is_ephemeral"] = True
    return payload


def interactive_body(payload: dict[str, Any]) -> str:
    """Interactivity arrives as one form field, `payload`, holding the JSON."""
    return urlencode({"payload": json.dumps(payload)})


# Request signing and Slack's retry headers.


def signed_headers(
    secret: str, body: str, timestamp: int | None = None, content_type: str | None = None
) -> dict[str, str]:
    """Headers Slack signs a request with. `content_type` defaults to JSON for `{...}` bodies, else a form."""
    stamp = str(timestamp if timestamp is not None else int(time.time()))
    signature = SignatureVerifier(secret).generate_signature(timestamp=stamp, body=body)
    if signature is None:  # only when the timestamp is None, which it never is here
        raise ValueError("slack_sdk produced no signature")
    if content_type is None:
        content_type = "application/json" if body.lstrip().startswith("{") else "application/x-www-form-urlencoded"
    return {
        "Content-Type": content_type,
        "X-Slack-Request-Timestamp": stamp,
        "X-Slack-Signature": signature,
    }


def raw_signed_headers(secret: str, body: bytes, content_type: str, timestamp: int | None = None) -> dict[str, str]:
    """Slack's signature over any bytes, computed as Slack does: the SDK's helper signs UTF-8 text only,
    and tests also send bodies that are not."""
    stamp = str(timestamp if timestamp is not None else int(time.time()))
    digest = hmac.new(secret.encode(), b"v0:" + stamp.encode() + b":" + body, hashlib.sha256).hexdigest()
    return {"Content-Type": content_type, "X-Slack-Request-Timestamp": stamp, "X-Slack-Signature": f"v0={digest}"}


def retry_headers(num: int, reason: str = "http_timeout") -> dict[str, str]:
    """Headers on Slack's redelivery of an event the app did not acknowledge in time."""
    return {"X-Slack-Retry-Num": str(num), "X-Slack-Retry-Reason": reason}
