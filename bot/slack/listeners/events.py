"""Events API listeners: mentions and messages become jobs; every other event is acknowledged and
ignored, so Slack never sees a 404 and never disables the subscription."""

from __future__ import annotations

import re
from typing import Any

from slack_bolt import App

from bot.slack.intake import Intake


def register(app: App, intake: Intake) -> None:
    @app.event("app_mention")
    def on_mention(event: dict[str, Any], body: dict[str, Any]) -> None:
        intake.message(event, body)

    @app.event("message")
    def on_message(event: dict[str, Any], body: dict[str, Any]) -> None:
        intake.message(event, body)

    @app.event(re.compile(".*"))
    def on_anything_else() -> None:
        """Subscribed or not, an event opsbot has no use for is acknowledged and dropped."""
