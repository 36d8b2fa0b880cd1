"""Events API listeners: mentions and messages become queued jobs before the ack; every other
event is acknowledged and ignored, so Slack never sees a 404 and never disables the subscription."""

from __future__ import annotations

import re
from typing import Any

from slack_bolt import App, BoltRequest, BoltResponse

from ...telemetry import metrics
from ..intake import Intake

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
