"""Buttons: Approve/Deny on approval requests (on their message, or on the Home tab), feedback on
answers, Stop on a run's progress. Acked at once; deciding, and anything said to the clicker,
happens on other threads, since it calls Slack: through opsbot's own client (`requests.client`,
whose payloads pass bot/slack/outbound.py), never the plain one Bolt hands its listeners."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import Any, NamedTuple
from urllib.error import URLError

from slack_bolt import Ack, App

from ...approvals import ApprovalsUnavailable
from ...runbooks import RunStoreUnavailable
from ...telemetry import metrics
from ..approval_requests import SlackRequests
from ..blocks import APPROVE, DENY, FEEDBACK, STOP
from ..delivery import WorkerPool
from ..feedback import AnswerFeedback, FeedbackClick
from ..home import HomeTab
from ..jobs import ThreadRef
from ..outbound import GuardedWebhook, Outbound
from ..posting import tell
from ..principals import Directory
from ..sessions import Stopper

log = logging.getLogger("opsbot.feedback")

OLD_BUTTONS = (
    "These buttons are from an earlier opsbot and record nothing now; the feedback buttons of newer answers do."
)
REDIS_DOWN = "opsbot cannot reach its Redis; nothing was decided. Click again in a minute."
BUSY = "opsbot is busy right now; nothing was decided. Click again in a minute."


def register(
    app: App,
    requests: SlackRequests,
    pool: WorkerPool,
    directory: Directory,
    feedback: AnswerFeedback,
    outbound: Outbound,
    later: Callable[[Callable[[], object]], object],
    home: HomeTab,
) -> None:
    """`later` runs a short Slack call off the ack path (telling a clicker what became of a click);
    `outbound` guards what a click's response_url is told."""
    client = requests.client

    def decide(approve: bool, body: dict[str, Any], action: dict[str, Any]) -> None:
        if (body.get("view") or {}).get("type") == "home":
            decide_at_home(approve, body, action)
            return
        click = _click(body, action)
        if click is None:
            return

        def work() -> None:
            clicker = directory.principal(click.user, click.team, click.channel)
            try:
                requests.click(click.value, approve, clicker, click.channel, click.message_ts)
            except (ApprovalsUnavailable, RunStoreUnavailable) as exc:
                log.error("a click on request %s could not be decided: %s", click.value, exc)
                tell(client, click.channel, click.user, REDIS_DOWN)

        if not pool.submit(work):
            later(lambda: tell(client, click.channel, click.user, BUSY))

    def decide_at_home(approve: bool, body: dict[str, Any], action: dict[str, Any]) -> None:
        user, value = (body.get("user") or {}).get("id"), action.get("value")
        if not (user and isinstance(value, str)):
            log.info("ignored a click on the Home tab without user or value")
            return
        team = (body.get("user") or {}).get("team_id") or (body.get("team") or {}).get("id")

        def work() -> None:
            try:
                home.decide(value, approve, user, team)
            except (ApprovalsUnavailable, RunStoreUnavailable) as exc:
                log.error("a click on request %s could not be decided: %s", value, exc)
                home.publish(user, team, REDIS_DOWN)

        if not pool.submit(work):
            later(lambda: home.publish(user, team, BUSY))

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
    def on_old_feedback(ack: Ack, body: dict[str, Any], action: dict[str, Any]) -> None:
        """The 👍/👎 buttons answers had before Slack's own: still on old messages, where a click
        unanswered would show the clicker an error."""
        ack()
        metrics.ack("action")
        click = _click(body, action)
        if click is not None:
            later(lambda: tell(client, click.channel, click.user, OLD_BUTTONS, thread_ts=click.thread_ts))

    @app.action(FEEDBACK)
    def on_feedback(ack: Ack, body: dict[str, Any], action: dict[str, Any]) -> None:
        """Slack's feedback buttons: the action's `value` is the clicked button's
        (docs.slack.dev/reference/block-kit/block-elements/feedback-buttons-element). Taken before
        the ack, as a message is queued before its ack (Redis only, milliseconds, in click order);
        what the clicker is told goes through `later`."""
        ack()
        metrics.ack("action")
        click = _click(body, action)
        if click is None:
            return
        said = feedback.click(FeedbackClick(click.user, click.channel, click.thread_ts, click.value))
        if said is None:
            return
        if click.private_url is not None:
            # A reply only its asker sees (/ops), given there because opsbot may not post in the
            # channel: so the click's response_url answers, only the clicker seeing it.
            later(lambda: _respond(GuardedWebhook(str(click.private_url), outbound), said))
        else:
            later(lambda: tell(client, click.channel, click.user, said, thread_ts=click.thread_ts))


class Click(NamedTuple):
    user: str
    team: str | None
    channel: str
    message_ts: str
    thread_ts: str | None  # the thread of the message clicked on, if it is in one
    value: str
    private_url: str | None  # the response_url of a click on a message only the clicker sees


def _respond(webhook: GuardedWebhook, text: str) -> None:
    """Tell the clicker alone through a click's response_url, the message clicked left as it is; best effort."""
    try:
        response = webhook.send(text=text, response_type="ephemeral", replace_original=False)
    except (URLError, OSError) as exc:
        log.warning("could not answer a click through its response_url: %s", exc)
        return
    if response.status_code != 200:
        log.warning("a click's response_url refused the answer: %s %s", response.status_code, response.body)


def _click(body: dict[str, Any], action: dict[str, Any]) -> Click | None:
    """Who clicked what, where; None (and a log line) for a payload missing any of it."""
    user, channel = body.get("user") or {}, body.get("channel") or {}
    message_ts = (body.get("container") or {}).get("message_ts") or (body.get("message") or {}).get("ts")
    value = action.get("value")
    if not (user.get("id") and channel.get("id") and message_ts and isinstance(value, str)):
        log.info("ignored a click on %s without user, channel, message or value", action.get("action_id"))
        return None
    team = user.get("team_id") or (body.get("team") or {}).get("id")
    container = body.get("container") or {}
    thread_ts = container.get("thread_ts") or (body.get("message") or {}).get("thread_ts")
    private_url = body.get("response_url") if container.get("is_ephemeral") else None
    return Click(str(user["id"]), team, str(channel["id"]), str(message_ts), thread_ts, value, private_url)


def register_stop(app: App, stopper: Stopper) -> None:
    @app.action(STOP)
    def on_stop(ack: Ack, body: dict[str, Any], action: dict[str, Any]) -> None:
        """opsbot's own Stop button, on a run's progress message where the thread has no agent
        session; its value is the run's thread. Acked first; the mark is one Redis script
        (sessions/stopping.py), and a click delivered twice is seen by its action_ts."""
        ack()
        metrics.ack("action")
        click = _click(body, action)
        team = (body.get("team") or {}).get("id") or (click.team if click is not None else None)
        if click is None or not team:
            return
        thread = ThreadRef(team=team, channel=click.channel, thread_ts=click.value)
        delivery = f"click:{click.message_ts}:{click.user}:{action.get('action_ts')}"
        if not stopper.request(thread, click.user, click.team, delivery):
            down = "opsbot cannot reach its Redis; nothing was stopped. Click again in a moment."
            stopper.later(lambda: tell(stopper.client, click.channel, click.user, down, thread_ts=click.value))
