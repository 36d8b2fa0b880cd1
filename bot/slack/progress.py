"""Showing a run in its thread as it happens, and ending it with exactly one answer.

The thread status says what opsbot is doing ("querying checkout logs…"). Steps appear as they
finish: streamed into the answer message where Slack's stream API is available (the answer then
completes that same message), else in one steps message updated per step, with the answer posted
below it. Slack failures here never stop a run: a status or a steps update that fails is skipped;
only the answer itself is retried (posting.py).
"""

from __future__ import annotations

import logging
from typing import Any
from urllib.error import URLError

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from bot.reply import Progress, Reply, Step
from bot.slack.blocks import answer_blocks, context_line, escape, status_text, step_lines, steps_message
from bot.slack.jobs import Job
from bot.slack.posting import marker, post_once

log = logging.getLogger("opsbot.slack")

_SLACK_FAILURES = (SlackApiError, URLError, OSError)


class SlackProgress(Progress):
    def __init__(self, client: WebClient, job: Job, stream: bool) -> None:
        self.client = client
        self.job = job
        self.channel = job.thread.channel
        self.thread_ts = job.thread.thread_ts
        self.stream_wanted = stream
        self.stream_ts: str | None = None
        self.steps_ts: str | None = None
        self.lines: list[str] = []
        self.status_works = True

    def on_model_call(self, step: int) -> None:
        self.status("thinking…" if step == 1 else "reading what came back…")

    def on_tool_start(self, step: int, tool: str, args: Any) -> None:
        self.status(status_text(tool, args))

    def on_step(self, step: Step) -> None:
        new = step_lines(step)
        if not new:
            return
        self.lines.extend(new)
        if self.stream_wanted and self._stream_append("\n".join(new) + "\n"):
            return
        self._show_steps(done=False)

    def status(self, text: str) -> None:
        """Set the thread status; an app or thread that cannot have one is not asked again."""
        if not self.status_works:
            return
        try:
            self.client.assistant_threads_setStatus(channel_id=self.channel, thread_ts=self.thread_ts, status=text)
        except _SLACK_FAILURES as exc:
            self.status_works = False
            log.info("thread status unavailable (%s); steps are shown as messages only", _error(exc))

    def finish(self, reply: Reply) -> str:
        """Post the answer exactly once; its ts. Raises `PostFailed` when Slack refuses it for good."""
        blocks = answer_blocks(reply, self.job.id)
        fallback = f"{reply.text}\n({context_line(reply)})"
        try:
            if self.stream_ts is not None and self._stream_stop(reply, blocks):
                return self.stream_ts
            if self.steps_ts is not None:
                self._show_steps(done=True)
            # A stop that took effect but whose response was lost already holds the answer.
            return post_once(
                self.client,
                self.channel,
                self.thread_ts,
                self.job.id,
                escape(fallback),
                blocks,
                check_first=self.stream_ts is not None or self.job.resumed,
            )
        finally:
            self.status("")

    def _stream_append(self, text: str) -> bool:
        try:
            if self.stream_ts is None:
                response = self.client.chat_startStream(
                    channel=self.channel,
                    thread_ts=self.thread_ts,
                    markdown_text=text,
                    recipient_user_id=self.job.user,
                    recipient_team_id=self.job.thread.team,
                )
                self.stream_ts = str(response["ts"])
            else:
                self.client.chat_appendStream(channel=self.channel, ts=self.stream_ts, markdown_text=text)
            return True
        except _SLACK_FAILURES as exc:
            log.info("streaming unavailable (%s); steps go to a steps message", _error(exc))
            self.stream_wanted = False
            return False

    def _stream_stop(self, reply: Reply, blocks: list[dict[str, Any]]) -> bool:
        """Complete the streamed message with the answer; False if it could not be, so it is posted."""
        assert self.stream_ts is not None
        try:
            self.client.chat_stopStream(
                channel=self.channel, ts=self.stream_ts, blocks=blocks, metadata=marker(self.job.id)
            )
            return True
        except _SLACK_FAILURES as exc:
            log.warning("could not complete the streamed answer (%s); posting it instead", _error(exc))
            return False

    def _show_steps(self, done: bool) -> None:
        text, blocks = steps_message(self.lines, done)
        try:
            if self.steps_ts is None:
                response = self.client.chat_postMessage(
                    channel=self.channel,
                    thread_ts=self.thread_ts,
                    text=text,
                    blocks=blocks,
                    metadata=marker(self.job.id, "opsbot_steps"),
                )
                self.steps_ts = str(response["ts"])
            else:
                self.client.chat_update(channel=self.channel, ts=self.steps_ts, text=text, blocks=blocks)
        except _SLACK_FAILURES as exc:
            log.info("steps message not updated: %s", _error(exc))


def _error(exc: Exception) -> str:
    if isinstance(exc, SlackApiError):
        return str(exc.response.get("error") or exc.response.status_code)
    return str(exc)
