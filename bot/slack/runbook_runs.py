"""Runbook runs shown in Slack threads: each step as it finishes, approval requests with buttons,
and the end. The engine (bot/runbooks/engine.py) decides; this only shows and forwards clicks.

Every post is marked (posting.py), so a step shown, then shown again after a restart, appears once.
"""

from __future__ import annotations

import json
import logging
import shlex
from typing import Any
from urllib.error import URLError

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from bot.runbooks.engine import RunbookEngine, RunRefused
from bot.runbooks.records import RunRecord, StepRecord
from bot.slack.blocks import Block, button, escape, mention, section
from bot.slack.jobs import ThreadRef
from bot.slack.posting import post_or_log, replace, tell
from config.policy import Gate, Principal
from tools.commands import ApprovalRequest
from tools.text import cut_middle

log = logging.getLogger("opsbot.slack")

RUN_APPROVE = "opsbot_run_approve"
RUN_DENY = "opsbot_run_deny"
_MARK = {"ok": "✓", "skipped": "–", "approved": "✅", "denied": "✋", "waiting": "⏸"}


def thread_of(run: RunRecord) -> ThreadRef:
    origin = run.origin
    return ThreadRef(team=origin["team"], channel=origin["channel"], thread_ts=origin["thread_ts"])


class ThreadReporter:
    """The engine's `Reporter`: what a run does, posted in the run's thread."""

    def __init__(self, client: WebClient, max_output_chars: int) -> None:
        self.client = client
        self.max_output_chars = max_output_chars

    def step_started(self, run: RunRecord, step: StepRecord) -> None:
        self._status(run, f"running step {step.id}…")

    def _status(self, run: RunRecord, text: str) -> None:
        thread = thread_of(run)
        try:
            self.client.assistant_threads_setStatus(channel_id=thread.channel, thread_ts=thread.thread_ts, status=text)
        except (SlackApiError, URLError, OSError):
            pass  # a status is a courtesy; channels without the assistant surface have none

    def step_finished(self, run: RunRecord, step: StepRecord) -> None:
        text = f"{_MARK.get(step.status, '✗')} `{step.id}` → {step.status}"
        if step.note:
            text += f" – {step.note}"
        shown = _output_text(step.output)
        blocks: list[Block] = [section(escape(text))]
        if shown:
            cut = cut_middle(escape(shown), self.max_output_chars)
            blocks.append(section(f"```{cut.text}```"))
        self._post(run, f"{run.id}:{step.id}:{step.attempts}:{step.status}", escape(text), blocks)

    def reshow(self, run: RunRecord) -> None:
        """Show a waiting run's question again unless it is in its thread already: after a
        restart, a request whose post was lost would otherwise wait with no buttons to click."""
        step = run.current_step
        if run.status != "waiting" or step is None:
            return
        request = run.pending_approval or (Gate.model_validate(step.output) if isinstance(step.output, dict) else None)
        if request is not None:
            self.approval_needed(run, step, request, check_first=True)

    def approval_needed(
        self, run: RunRecord, step: StepRecord, request: ApprovalRequest | Gate, check_first: bool = False
    ) -> None:
        if isinstance(request, ApprovalRequest):
            what = f"`{escape(shlex.join(request.argv))}` ({escape(request.command)}, changes things)"
        else:
            what = escape(request.text)  # the engine fills the gate's parameters in
        # The question's key rides in the button: a late click cannot answer a later question.
        value = f"{run.id} {run.decision_key or ''}".strip()
        confirm = {
            "title": {"type": "plain_text", "text": "Go on?"},
            "text": {"type": "mrkdwn", "text": f"Runbook {escape(run.runbook)}, step {escape(step.id)}."[:280]},
            "confirm": {"type": "plain_text", "text": "Approve"},
            "deny": {"type": "plain_text", "text": "Cancel"},
        }
        blocks: list[Block] = [
            section(
                f":warning: *Approval needed* – runbook `{escape(run.runbook)}`, step `{escape(step.id)}`:\n{what}"
            ),
            {
                "type": "actions",
                "block_id": "opsbot_run_approval",
                "elements": [
                    {**button("Approve", RUN_APPROVE, value), "style": "primary", "confirm": confirm},
                    {**button("Deny", RUN_DENY, value), "style": "danger"},
                ],
            },
        ]
        marker = f"{run.id}:{step.id}:approval:{run.executed}"
        self._post(run, marker, f"Approval needed: {run.runbook} {step.id}", blocks, check_first)

    def run_finished(self, run: RunRecord) -> None:
        done = sum(1 for step in run.steps if step.status not in ("pending",))
        text = f"Runbook `{run.runbook}` {run.status} after {done} step(s)."
        if run.note:
            text += f" {run.note}"
        self._post(run, f"{run.id}:end", escape(text), [section(escape(text))])
        self._status(run, "")

    def _post(self, run: RunRecord, marker: str, text: str, blocks: list[Block], check_first: bool = False) -> None:
        thread = thread_of(run)
        post_or_log(
            self.client,
            thread.channel,
            thread.thread_ts,
            marker,
            text,
            blocks,
            kind="opsbot_runbook",
            check_first=check_first,
        )


class RunDecisions:
    """Approve/Deny clicks on a run's approval request, forwarded to the engine."""

    def __init__(self, engine: RunbookEngine, client: WebClient, teams: frozenset[str]) -> None:
        self.engine = engine
        self.client = client
        self.teams = teams

    def decide(self, value: str, approved: bool, clicker: Principal, channel: str, message_ts: str) -> None:
        """`value` is the button's: the run id and the key of the question it answers."""
        if clicker.team not in self.teams:
            self._tell(clicker, channel, "Only members of opsbot's own workspace may decide on its requests.")
            return
        run_id, _, question = value.partition(" ")
        try:
            run = self.engine.decide(run_id, approved, clicker, waiting_for=question or None)
        except RunRefused as exc:
            self._tell(clicker, channel, f"Nothing was decided: {escape(str(exc))}")
            return
        verdict = "✅ Approved" if approved else "✋ Denied"
        text = f"{verdict} by {mention(clicker.user)}; the run is {run.status}."
        replace(self.client, channel, message_ts, text, [section(text)])

    def _tell(self, who: Principal, channel: str, text: str) -> None:
        tell(self.client, channel, who.user, text)


def _output_text(output: Any) -> str:
    if output is None:
        return ""
    if isinstance(output, str):
        return output
    if isinstance(output, dict) and "data" in output and isinstance(output.get("data"), dict):
        data = output["data"]
        for key in ("lines", "output", "value"):
            if key in data:
                return data[key] if isinstance(data[key], str) else json.dumps(data[key])
    return json.dumps(output, ensure_ascii=False)[:4000]
