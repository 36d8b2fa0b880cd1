"""The `/ops` slash command: acked at once, then handed to the intake."""

from __future__ import annotations

from typing import Any

from slack_bolt import Ack, App, Respond

from bot.slack.intake import Intake


def register(app: App, intake: Intake) -> None:
    @app.command("/ops")
    def on_ops(ack: Ack, command: dict[str, Any], respond: Respond) -> None:
        ack()
        intake.command(command, respond)
