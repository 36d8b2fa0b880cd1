"""Buttons: Approve/Deny on approval requests, feedback on answers. Acked at once; deciding, and
anything said to the clicker, happens on other threads, since it calls Slack: through opsbot's own
client (`requests.client`, whose payloads pass bot/slack/outbound.py), never the plain one Bolt
hands its listeners."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from typing import Any, NamedTuple

from slack_bolt import Ack, App

from ...approvals import ApprovalsUnavailable
from ...redis.client import REDIS_ERRORS
from ...runbooks import RunStoreUnavailable
from ...telemetry import metrics
from ..approval_requests import SlackRequests
from ..blocks import APPROVE, DENY, FEEDBACK
from ..delivery import WorkerPool
from ..posting import tell
from ..principals import Directory
from ..state import SlackState

log = logging.getLogger("opsbot.feedback")


def register(
    app: App,
    requests: SlackRequests,
    pool: WorkerPool,
    directory: Directory,
    state: SlackState,
    feedback_ttl_s: int,
    later: Callable[[Callable[[], object]], object],
) -> None:
    """`later` runs a short Slack call off the ack path (telling a clicker opsbot is busy)."""
    client = requests.client

    def decide(approve: bool, body: dict[str, Any], action: dict[str, Any]) -> None:
        click = _click(body, action)
        if click is None:
            return

        def work() -> None:
            clicker = directory.principal(click.user, click.team, click.channel)
            try:
                requests.click(click.value, approve, clicker, click.channel, click.message_ts)
            except (ApprovalsUnavailable, RunStoreUnavailable) as exc:
                log.error("a click on request %s could not be decided: %s", click.value, exc)
                tell(
                    client,
                    click.channel,
                    click.user,
                    "opsbot cannot reach its Redis; nothing was decided. Click again in a minute.",
                )

        if not pool.submit(work):
            busy = "opsbot is busy right now; nothing was decided. Click again in a minute."
            later(lambda: tell(client, click.channel, click.user, busy))

    @app.action(APPROVE)
    def on_approve(ack: Ack, body: dict[str, Any], action: dict[str, Any]) -> None:
        ack()
        metrics.ack("action")
        decide(True, body, action)

    @app.action(DENY)
    def on_deny(ack: Ack, body: dict[str, Any], action: dict[str, Any]) -> None:
        ack()
        metrics.ack("action")
        decide(False, body, action)

    @app.action(re.compile(f"^{FEEDBACK}_(good|bad)$"))
    def on_feedback(ack: Ack, body: dict[str, Any], action: dict[str, Any]) -> None:
        ack()
        metrics.ack("action")
        click = _click(body, action)
        if click is None:
            return
        value = action["action_id"].removeprefix(f"{FEEDBACK}_")
        log.info(json.dumps({"event": "feedback", "answer": click.value, "user": click.user, "value": value}))
        try:
            state.record_feedback(click.value, click.user, value, feedback_ttl_s)
            said = "Thanks: your feedback is recorded."
        except REDIS_ERRORS:
            metrics.redis_error("slack_feedback")
            said = "Thanks. opsbot could not store it just now (its Redis is unreachable); it is in the logs."
        later(lambda: tell(client, click.channel, click.user, said))


class Click(NamedTuple):
    user: str
    team: str | None
    channel: str
    message_ts: str
    value: str


def _click(body: dict[str, Any], action: dict[str, Any]) -> Click | None:
    """Who clicked what, where; None (and a log line) for a payload missing any of it."""
    user, channel = body.get("user") or {}, body.get("channel") or {}
    message_ts = (body.get("container") or {}).get("message_ts") or (body.get("message") or {}).get("ts")
    value = action.get("value")
    if not (user.get("id") and channel.get("id") and message_ts and isinstance(value, str)):
        log.info("ignored a click on %s without user, channel, message or value", action.get("action_id"))
        return None
    team = user.get("team_id") or (body.get("team") or {}).get("id")
    return Click(str(user["id"]), team, str(channel["id"]), str(message_ts), value)
