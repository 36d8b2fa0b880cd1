"""The `/ops` slash command: queued (or answered, for help and reset) before the ack."""

from __future__ import annotations

from typing import Any

from slack_bolt import Ack, App

from bot import metrics
from bot.slack.intake import Intake


def register(app: App, intake: Intake) -> None:
    @app.command("/ops")
    def on_ops(ack: Ack, command: dict[str, Any]) -> None:
        said = intake.command(command)
        metrics.ack("command")
        if said is None:
            ack()
        else:
            ack(text=said, response_type="ephemeral")
