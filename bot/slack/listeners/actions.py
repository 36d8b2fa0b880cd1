"""Buttons: Approve/Deny on approval requests, feedback on answers. Acked first, decided after."""

from __future__ import annotations

import functools
import json
import logging
import re
from typing import Any

import redis
from slack_bolt import Ack, App
from slack_sdk import WebClient

from bot.slack.approvals import Approvals
from bot.slack.blocks import APPROVE, DENY, FEEDBACK
from bot.slack.delivery import WorkerPool
from bot.slack.posting import tell
from bot.slack.principals import Directory
from bot.slack.runbook_runs import RUN_APPROVE, RUN_DENY, RunDecisions
from bot.slack.state import SlackState

log = logging.getLogger("opsbot.feedback")


def register(
    app: App,
    approvals: Approvals,
    runs: RunDecisions,
    pool: WorkerPool,
    directory: Directory,
    state: SlackState,
    feedback_ttl_s: int,
) -> None:
    def decide(approve: bool, body: dict[str, Any], action: dict[str, Any], client: WebClient) -> None:
        user, channel = body["user"]["id"], body["channel"]["id"]
        team = body["user"].get("team_id") or body["team"]["id"]
        clicker = directory.principal(user, team, channel)
        message_ts = body["container"].get("message_ts") or body["message"]["ts"]
        decider = runs.decide if action["action_id"] in (RUN_APPROVE, RUN_DENY) else approvals.decide
        work = functools.partial(decider, action["value"], approve, clicker, channel, message_ts)
        if not pool.submit(work):
            tell(client, channel, user, "opsbot is busy right now; nothing was decided. Click again in a minute.")

    @app.action(re.compile(f"^({APPROVE}|{RUN_APPROVE})$"))
    def on_approve(ack: Ack, body: dict[str, Any], action: dict[str, Any], client: WebClient) -> None:
        ack()
        decide(True, body, action, client)

    @app.action(re.compile(f"^({DENY}|{RUN_DENY})$"))
    def on_deny(ack: Ack, body: dict[str, Any], action: dict[str, Any], client: WebClient) -> None:
        ack()
        decide(False, body, action, client)

    @app.action(re.compile(f"^{FEEDBACK}_(good|bad)$"))
    def on_feedback(ack: Ack, body: dict[str, Any], action: dict[str, Any], client: WebClient) -> None:
        ack()
        user, channel = body["user"]["id"], body["channel"]["id"]
        value = action["action_id"].removeprefix(f"{FEEDBACK}_")
        log.info(json.dumps({"event": "feedback", "answer": action["value"], "user": user, "value": value}))
        try:
            state.record_feedback(action["value"], user, value, feedback_ttl_s)
            said = "Thanks: your feedback is recorded."
        except redis.RedisError:
            said = "Thanks. opsbot could not store it just now (its Redis is unreachable); it is in the logs."
        tell(client, channel, user, said)
