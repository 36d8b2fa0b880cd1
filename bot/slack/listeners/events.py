"""Events API listeners: mentions and messages become queued jobs before the ack; opening the App
Home hands its work to another thread; every other event is acknowledged and ignored, so Slack
never sees a 404 and never disables the subscription."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from slack_bolt import App, BoltRequest, BoltResponse

from ...telemetry import metrics
from ..home import HomeTab
from ..intake import Intake
from ..jobs import ThreadRef
from ..sessions import Stopper

# Slack retries an event it got no 2xx for three times (at once, after a minute, after five);
# the third retry is its last.
LAST_RETRY = 3


def register(app: App, intake: Intake) -> None:
    @app.event("app_mention")
    def on_mention(event: dict[str, Any], body: dict[str, Any], request: BoltRequest) -> BoltResponse | None:
        return _answer(intake, event, body, request)

    @app.event("message")
    def on_message(event: dict[str, Any], body: dict[str, Any], request: BoltRequest) -> BoltResponse | None:
        return _answer(intake, event, body, request)

    @app.event(re.compile(".*"))
    def on_anything_else() -> None:
        """Subscribed or not, an event opsbot has no use for is acknowledged and dropped."""
        metrics.ack("event")


def register_home(app: App, home: HomeTab, later: Callable[[Callable[[], object]], object]) -> None:
    """`app_home_opened` (docs.slack.dev/reference/events/app_home_opened: `user`, `channel`, `tab`
    `home` or `messages`). Registered before `register`, whose catch-all would take it first.
    The prompts or the view are made and sent on `later`'s thread: they read Redis and call Slack."""

    @app.event("app_home_opened")
    def on_home_opened(event: dict[str, Any], body: dict[str, Any]) -> None:
        metrics.ack("event")
        user, tab, channel = event.get("user"), event.get("tab"), event.get("channel")
        if not isinstance(user, str) or not user:
            return
        team = body.get("team_id") or (event.get("view") or {}).get("team_id")
        later(lambda: home.opened(tab, user, team, channel))


def register_stops(app: App, stopper: Stopper) -> None:
    @app.event("agent_session_stopped")
    def on_session_stopped(event: dict[str, Any], body: dict[str, Any], request: BoltRequest) -> BoltResponse | None:
        """Slack's own Stop, clicked while the thread's session was `processing`
        (docs.slack.dev/reference/events/agent_session_stopped): `channel`, `thread_ts`, `user`,
        `event_ts`, and `streaming_message_ts`, the streams Slack stopped (maybe none); the team is
        the envelope's. Marked in Redis before the ack (sessions/stopping.py); a retry of the same
        event is seen there and changes nothing."""
        channel, thread_ts, user, team = (
            event.get("channel"),
            event.get("thread_ts"),
            event.get("user"),
            body.get("team_id"),
        )
        if not all(isinstance(value, str) and value for value in (channel, thread_ts, user, team)):
            metrics.ack("event")
            return None
        thread = ThreadRef(team=str(team), channel=str(channel), thread_ts=str(thread_ts))
        delivery = f"event:{body.get('event_id') or event.get('event_ts')}"
        if stopper.request(thread, str(user), None, delivery):
            metrics.ack("event")
            return None
        return _redeliver(request)


def _redeliver(request: BoltRequest) -> BoltResponse | None:
    """A 503 so Slack delivers the event again, unless this was its last try."""
    if _retry_num(request) >= LAST_RETRY:
        metrics.ack("event", "parked")
        return None
    metrics.ack("event", "redeliver")
    return BoltResponse(status=503, body="opsbot cannot reach its Redis; deliver this event again")


def _answer(intake: Intake, event: dict[str, Any], body: dict[str, Any], request: BoltRequest) -> BoltResponse | None:
    """The ack, or, when Redis could not take the event, a 503 so Slack delivers it again (unless
    this was its last try: then the job parked in this process is all there is)."""
    retry = _retry_num(request)
    last_try = retry >= LAST_RETRY
    if intake.message(event, body, acked_if_parked=last_try, again=retry > 0):
        metrics.ack("event")
        return None
    if last_try:
        metrics.ack("event", "parked")
        return None
    metrics.ack("event", "redeliver")
    return BoltResponse(status=503, body="opsbot cannot reach its Redis; deliver this event again")


def _retry_num(request: BoltRequest) -> int:
    values = request.headers.get("x-slack-retry-num") or ["0"]
    try:
        return int(values[0])
    except ValueError:
        return 0
