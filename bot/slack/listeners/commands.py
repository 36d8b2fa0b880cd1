"""The `/ops` slash command: queued (or answered, for help and reset) before the ack. What the ack
says passes bot/slack/outbound.py like every other message (it may echo what was typed)."""

from __future__ import annotations

from typing import Any

from slack_bolt import Ack, App

from ...telemetry import metrics
from ..intake import Intake
from ..outbound import Outbound


def register(app: App, intake: Intake, outbound: Outbound) -> None:
    @app.command("/ops")
    def on_ops(ack: Ack, command: dict[str, Any]) -> None:
        said = intake.command(command)
        metrics.ack("command")
        if said is None:
            ack()
        else:
            ack(outbound.response({"text": said, "response_type": "ephemeral"}))
