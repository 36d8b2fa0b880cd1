"""Runbook runs shown in Slack threads: each step as it finishes, approval requests with buttons
(approval_requests.py, like any other request), and the end. The engine and the approvals service
decide; this only shows.

Every post is marked (posting.py), so a step shown, then shown again after a restart, appears once.
"""

from __future__ import annotations

import json
import logging
from typing import Any
from urllib.error import URLError

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from ..agent import Recollection
from ..approvals import Approvals, Pending
from ..runbooks import RunRecord, StepRecord
from .approval_requests import SlackRequests
from .blocks import Block, escape, section, step_blocks
from .jobs import ThreadRef
from .posting import PostFailed, post_or_log

log = logging.getLogger("opsbot.slack")

_MARK = {"ok": "✓", "skipped": "–", "approved": "✅", "denied": "✋", "waiting": "⏸"}


def thread_of(run: RunRecord) -> ThreadRef:
    return ThreadRef.of(run.origin)


class ThreadReporter:
    """The engine's `Reporter`: what a run does, posted in the run's thread."""

    def __init__(
        self,
        client: WebClient,
        requests: SlackRequests,
        *,
        approvals: Approvals,
        max_output_chars: int,
        recollection: Recollection | None = None,
    ) -> None:
        self.recollection = recollection  # a finished run leaves its thread's incident record
        self.client = client
        self.requests = requests
        self.approvals = approvals
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
        blocks = step_blocks(text, _output_text(step.output), self.max_output_chars)
        self._post(run, f"{run.id}:{step.id}:{step.attempts}:{step.status}", escape(text), blocks)

    def reshow(self, run: RunRecord) -> None:
        """Show a waiting run's question again unless it is in its thread already: after a
        restart, a request whose post was lost would otherwise wait with no buttons to click."""
        step = run.current_step
        if run.status != "waiting" or step is None or step.approval is None:
            return
        pending = self.approvals.get(step.approval)
        if pending is not None:
            self.approval_needed(run, step, pending, check_first=True)

    def approval_needed(self, run: RunRecord, step: StepRecord, pending: Pending, check_first: bool = False) -> None:
        try:
            self.requests.post(thread_of(run), pending, check_first=check_first)
        except PostFailed as exc:
            log.error("approval request %s of run %s not posted: %s", pending.id, run.id, exc.error)

    def run_finished(self, run: RunRecord) -> None:
        done = sum(1 for step in run.steps if step.status not in ("pending",))
        text = f"Runbook `{run.runbook}` {run.status} after {done} step(s)."
        if run.note:
            text += f" {run.note}"
        self._post(run, f"{run.id}:end", escape(text), [section(escape(text))])
        self._status(run, "")
        if self.recollection is not None:
            thread = thread_of(run)
            self.recollection.remember_run(run, thread.channel, link=thread.link)

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
