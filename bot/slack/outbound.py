"""The one way out to Slack: every payload opsbot sends passes `Outbound`, whichever path made it.

Guarding at each call site would last until the first call site that forgets. So the guard sits
where every message leaves: `GuardedClient.api_call`, under every Web API method the client has
(posts, ephemeral messages, updates, stream starts, appends and stops, thread statuses, and App
Home views should opsbot get any); `GuardedWebhook.send_dict`, under every `response_url` reply;
and `Outbound.response` for what a slash command's ack says. Listeners post through opsbot's
client, never the plain one Bolt hands them. Every text a payload shows (`text`, `markdown_text`, a status, and
every string in blocks, attachments, stream chunks and views but their ids) is made plain by
`Outside` (outside.py); `unfurl_links` and `unfurl_media` are false wherever Slack takes them
(chat.postMessage, chat.scheduleMessage, response_url replies and acks; chat.update, ephemeral
messages and streams have no such switch).

opsbot's own syntax survives because it is marked where it is written (`own()`: mentions of user
ids Slack gave opsbot, dates), not because the guard guesses: by the time a payload reaches the
client it is plain dicts and strings, so a marker in the string is what carries "opsbot wrote
this" that far, and a random per-process nonce in it makes it unforgeable. Everything unmarked is
outside text, opsbot's fixed sentences included: they hold no links, and their `<`, `>` and `&`
are shown as typed.

A stream has no unfurl switch, and Slack shows the appends joined while each is guarded alone: so
progress.py appends text up to its last whitespace only (a URL holds none, so none is split
between two appends), and what a construct spanning words or lines leaves in one append (`](`, a
lone `<`) is broken apart or escaped there.
"""

from __future__ import annotations

import json
from typing import Any

from slack_sdk.web.slack_response import SlackResponse
from slack_sdk.webhook import WebhookClient
from slack_sdk.webhook.webhook_response import WebhookResponse

from .outside import Outside
from .pacing import PacedClient

# Arguments whose value is text people see.
_TEXT_ARGS = frozenset({"text", "markdown_text", "status", "title", "initial_comment", "alt_text"})
# Arguments holding structures (blocks, attachments, chunks, a view, loading messages, prompts),
# every string of which is shown unless its key is one of _IDS.
_STRUCTURED_ARGS = frozenset({"blocks", "attachments", "chunks", "view", "loading_messages", "prompts"})
_IDS = frozenset(
    {"type", "block_id", "action_id", "value", "style", "callback_id", "external_id", "private_metadata", "id"}
)
# What Slack takes of shown text before it refuses a message (Block Kit reference: a text object
# 3,000 characters, a markdown block and a call's markdown text 12,000, a button 75, a header 150,
# a confirm dialog's title 100, text 300 and buttons 30). Made plain, text grows (`.` is `[.]`), so
# text opsbot cut to fit may no longer: it is cut again here, in its middle, rather than refused.
_TEXT_OBJECT_CHARS = 3_000
_MARKDOWN_CHARS = 12_000
_ARG_CHARS = {"markdown_text": _MARKDOWN_CHARS, "title": 200}  # a session's title: 200 (agents.sessions.*)
_CHILD_CHARS = {"button": {"text": 75}, "header": {"text": 150}}
_CONFIRM_CHARS = {"title": 100, "text": 300, "confirm": 30, "deny": 30}
# Methods that take unfurl_links and unfurl_media (docs.slack.dev, each method's arguments).
_UNFURLING = frozenset({"chat.postMessage", "chat.scheduleMessage"})
_NO_UNFURL = {"unfurl_links": False, "unfurl_media": False}


class Outbound:
    """What a payload may say in Slack: outside text made plain (links to `link_domains` kept)."""

    def __init__(self, link_domains: frozenset[str] = frozenset()) -> None:
        self.outside = Outside(link_domains)

    def args(self, method: str, body: dict[str, Any] | None) -> dict[str, Any] | None:
        """A Web API call's arguments (its JSON body, form or query) as they may be sent."""
        if body is None:
            return None
        guarded = self._shown(body)
        return {**guarded, **_NO_UNFURL} if method in _UNFURLING else guarded

    def response(self, body: dict[str, Any]) -> dict[str, Any]:
        """A message given back to Slack for a person: a response_url reply, a slash command's ack."""
        return {**self._shown(body), **_NO_UNFURL}

    def _shown(self, body: dict[str, Any]) -> dict[str, Any]:
        guarded = dict(body)
        for key, value in body.items():
            if key in _TEXT_ARGS and isinstance(value, str):
                guarded[key] = _fit(self.outside.text(value), _ARG_CHARS.get(key))
            elif key in _STRUCTURED_ARGS:
                guarded[key] = self._structure(value)
        return guarded

    def _structure(self, value: Any) -> Any:
        if isinstance(value, str):
            # A form-encoded call carries its blocks as a JSON string; one that is not JSON is text.
            try:
                return json.dumps(self._walk(json.loads(value), _TEXT_OBJECT_CHARS))
            except ValueError:
                return self.outside.text(value)
        return self._walk(value, _TEXT_OBJECT_CHARS)

    def _walk(self, value: Any, chars: int) -> Any:
        """`value` with every string shown made plain and cut to fit `chars` (or its field's cap)."""
        if isinstance(value, str):
            return _fit(self.outside.text(value), chars)
        if isinstance(value, list):
            return [self._walk(item, chars) for item in value]
        if not isinstance(value, dict):
            return value
        kind = value.get("type")
        if kind in ("markdown", "markdown_text"):
            chars = _MARKDOWN_CHARS
        caps = _CONFIRM_CHARS if "confirm" in value and "deny" in value else _CHILD_CHARS.get(str(kind), {})
        return {key: item if key in _IDS else self._walk(item, caps.get(key, chars)) for key, item in value.items()}


def _fit(text: str, chars: int | None) -> str:
    """`text` cut in the middle to `chars` characters when longer (None: no cap)."""
    if chars is None or len(text) <= chars:
        return text
    head = text[: (chars - 1) // 2]
    return f"{head}…{text[len(text) - (chars - 1 - len(head)) :]}"


class GuardedClient(PacedClient):
    """opsbot's Web API client: every call's arguments pass `outbound` before they are sent (and,
    for posts, before they wait for their channel's slot)."""

    outbound: Outbound = Outbound()

    def api_call(
        self,
        api_method: str,
        *,
        http_verb: str = "POST",
        files: dict[str, Any] | None = None,
        data: dict[str, Any] | None = None,
        params: dict[str, Any] | None = None,
        json: dict[str, Any] | None = None,
        headers: dict[str, Any] | None = None,
        auth: dict[str, Any] | None = None,
    ) -> SlackResponse:
        return super().api_call(
            api_method,
            http_verb=http_verb,
            files=files,
            data=self.outbound.args(api_method, data),
            params=self.outbound.args(api_method, params),
            json=self.outbound.args(api_method, json),
            headers=headers,
            auth=auth,
        )


class GuardedWebhook(WebhookClient):
    """A `response_url` reply: its body passes `outbound` before it is sent."""

    def __init__(self, url: str, outbound: Outbound) -> None:
        super().__init__(url)
        self.outbound = outbound

    def send_dict(self, body: dict[str, Any], headers: dict[str, str] | None = None) -> WebhookResponse:
        return super().send_dict(self.outbound.response(body), headers)
