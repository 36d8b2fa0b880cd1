"""Showing a run in its thread as it happens, and ending it with exactly one answer.

The thread status says what opsbot is doing ("querying checkout logs…"). Where Slack's stream API
is available, steps and then the answer, as the model writes it, stream into one message
(slack_sdk's `chat_stream()` helper), and the stop completes it: the rest of the answer, the
context line and the feedback buttons, and the marker that makes it the answer. Elsewhere the
steps go to one steps message updated per step, and the answer is posted below it once complete.
Slack failures here never stop a run: a status or a steps update that fails is skipped; only the
answer itself is retried (posting.py).

A stream has no switch to turn unfurling off, and each append passes the outbound guard alone
(bot/slack/outbound.py) while Slack shows them joined: so answer text is appended up to its last
space or line end (a URL holds no whitespace, so none is split between two appends), and a word
still being written waits for the next append or the stop.

A stream only grows. Text that streamed as the answer and was not (thinking the model wrote
without its opening tag, a preview the final answer does not begin with) cannot be taken back
while it streams, so once the stream is stopped the message is rewritten as the steps and the
answer alone. What the model wrote beside a tool call streams too, before it is known to be that
step's preamble; it stays, just above the step's line, as the step's own first line.

An answer too long for one message (blocks.py `answer_messages`) is posted in messages of its
own, in order, or attached as a file: a stream then ends as the steps message. The run's charts
(metrics ranges, charts.py) are shared before the answer's own message.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from typing import Any, NamedTuple
from urllib.error import URLError

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.web.chat_stream import ChatStream

from ..agent import Progress, Reply, Step
from ..agent.answer_stream import AnswerPreview
from . import posting
from .blocks import (
    ANSWER_PART_EVENT,
    MARKDOWN_CHARS,
    STEPS_EVENT,
    THINKING_NOTE,
    AnswerMessages,
    Content,
    answer_footer,
    answer_messages,
    escape,
    preamble_lines,
    status_text,
    step_lines,
    steps_message,
    unattached_message,
    with_stop,
)
from .charts import share_charts
from .jobs import Job
from .posting import PostFailed, marker, may_have_landed, post_once, upload_once

log = logging.getLogger("opsbot.slack")

_SLACK_FAILURES = (SlackApiError, URLError, OSError)

# Slack takes about one update a second per message: answer lines wait and go together, at most
# this often (streamed steps, each a model call apart, go as they finish); so do the edits of a
# steps message, where a busy thread's quick steps would otherwise be an edit each.
APPEND_EVERY_S = 1.0


class _Stopped(NamedTuple):
    """How a stream's stop went: `done` (the streamed message is the answer), else the pacing
    clock's time the failed stop started if it may land all the same."""

    done: bool
    may_land_from: float | None = None


class SlackProgress(Progress):
    def __init__(
        self,
        client: WebClient,
        job: Job,
        *,
        stream: bool,
        clock: Callable[[], float] = time.monotonic,
        stop_button: bool = False,
    ) -> None:
        """`stop_button`: the thread has no agent session, so no Stop of Slack's: the steps go to a
        steps message, shown from the first model call with opsbot's own Stop button until the
        run ends (a stream cannot carry a button while it streams)."""
        self.client = client
        self.stop_button = stop_button
        self.job = job
        self.channel = job.thread.channel
        self.thread_ts = job.thread.thread_ts
        self.clock = clock
        self.stream_wanted = stream and not stop_button
        self.streamer: ChatStream | None = None
        self.stream_ends_line = True  # what streamed so far ends with a newline (or is nothing)
        self.last_append_s = -math.inf
        self.preview = AnswerPreview()
        self.sent = 0  # characters of `preview.text` given to the stream
        self.misled = False  # the stream holds text given as the answer that was not
        self.steps_ts: str | None = None
        self.steps_shown_s = -math.inf
        self.lines: list[str] = []
        self.status_works = True

    def on_model_call(self, step: int) -> None:
        self.status("thinking…" if step == 1 else "reading what came back…")
        if self.stop_button and self.steps_ts is None:
            self._show_steps(done=False)

    def on_tool_start(self, step: int, tool: str, args: Any) -> None:
        self.status(status_text(tool, args))

    def on_step(self, step: Step) -> None:
        said, new = preamble_lines(step.preamble), step_lines(step)
        self.lines += [*said, *new]
        shown = bool(said or new) and self.stream_wanted and self._append(self._streamed_step(step, said, new))
        if not step.wrote_answer:
            # What the model wrote in this step was its preamble, shown with the step; the answer is still to come.
            self.preview.clear()
            self.sent = 0
        if (said or new) and not shown:
            self._show_steps(done=False)

    def on_answer_text(self, step: int, text: str) -> None:
        if not self.stream_wanted:
            return  # without a stream the answer is shown once complete
        self.preview.add(step, text)
        if self.clock() - self.last_append_s >= APPEND_EVERY_S:
            self._append(self._unsent())

    def on_answer_reset(self, step: int) -> None:
        self.preview.drop(step)
        if self.sent > len(self.preview.text):
            self.misled = True
            self.sent = len(self.preview.text)
            if self.stream_wanted:
                self._append(self._then("", f"{THINKING_NOTE}\n"))

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
        """Give the answer exactly once; the ts of its (last) message. Raises `PostFailed` when
        Slack refuses it for good."""
        try:
            if self.steps_ts is not None:
                self._show_steps(done=True)
            # Before the answer's own message, which marks the job answered (charts.py).
            share_charts(self.client, self.channel, self.thread_ts, self.job.id, reply.charts, self.job.resumed)
            answer = answer_messages(reply, self.job.id)
            if len(answer.messages) > 1 or answer.attachment is not None:
                return self._post_long(reply, answer)
            [message] = answer.messages
            stop_may_land = None
            if self.streamer is not None and self.streamer.ts is not None:
                stopped = self._stop(reply, message, self.streamer)
                if stopped.done:
                    return self.streamer.ts
                stop_may_land = stopped.may_land_from
            # A stop that took effect but whose response was lost or late holds the answer.
            return post_once(
                self.client,
                self.channel,
                self.thread_ts,
                self.job.id,
                message.text,
                message.blocks,
                check_first=self.streamer is not None or self.job.resumed,
                may_land_from=stop_may_land,
            )
        finally:
            self.status("")

    def _post_long(self, reply: Reply, answer: AnswerMessages) -> str:
        """An answer too long for one message: a stream ends as the steps message, then each
        message goes in order, exactly once (a part is marked with the answer's key and its place),
        the file before the last; a file Slack refuses is said so in the last."""
        if self.streamer is not None and self.streamer.ts is not None:
            self._end_as_steps(self.streamer)
        earlier = self.job.resumed  # a run before a restart may have posted some of them
        *parts, last = answer.messages
        for n, part in enumerate(parts, 1):
            marked = f"{self.job.id}:{answer.key}:{n}"
            post_once(
                self.client,
                self.channel,
                self.thread_ts,
                marked,
                part.text,
                part.blocks,
                kind=ANSWER_PART_EVENT,
                check_first=earlier,
            )
        if answer.attachment is not None:
            try:
                upload_once(self.client, self.channel, self.thread_ts, answer.attachment, check_first=earlier)
            except PostFailed as exc:
                log.warning(
                    "could not attach the answer to %s as a file (%s); its beginning is posted", self.job.id, exc
                )
                last = unattached_message(reply, exc.error)
        return post_once(
            self.client, self.channel, self.thread_ts, self.job.id, last.text, last.blocks, check_first=earlier
        )

    def _end_as_steps(self, streamer: ChatStream) -> None:
        """Stop the stream as the steps message (the answer follows in messages of its own), and
        take out the answer text that streamed into it."""
        try:
            streamer.stop(metadata=marker(self.job.id, STEPS_EVENT))
            if self.preview.text:
                text, blocks = steps_message(self.lines, done=True)
                self.client.chat_update(channel=self.channel, ts=str(streamer.ts), text=text, blocks=blocks)
        except _SLACK_FAILURES as exc:
            log.warning("the steps message still shows what streamed of the answer (%s)", _error(exc))

    def _streamed_step(self, step: Step, said: list[str], new: list[str]) -> str:
        """What the stream gets for a step: the text still waiting, then the step's lines. A
        preamble that streamed goes on to its end; one that did not goes as the step's first lines.
        (Answer text without step lines waits for the next append or the stop, its last word kept
        back: a cut answer continues.)"""
        if not said and not new:
            return ""
        lead = self._unsent(whole_words=step.wrote_answer)
        if said and not self.preview.text:
            lead = self._then("", "".join(f"{line}\n" for line in said))
        return self._then(lead, "".join(f"{line}\n" for line in new))

    def _unsent(self, whole_words: bool = True) -> str:
        """The answer text not yet streamed, as markdown, now counted as streamed: up to its last
        whitespace, unless `whole_words` is False (the text is complete)."""
        text = self.preview.text
        end = max(self.sent, _words_end(text)) if whole_words else len(text)
        if end == self.sent or len(escape(text)) > MARKDOWN_CHARS:
            return ""  # nothing new, or more than a message holds: the end rewrites it, cut
        gap = "" if self.sent or self.streamer is None else "\n" if self.stream_ends_line else "\n\n"
        unsent, self.sent = text[self.sent : end], end
        return gap + escape(unsent)

    def _then(self, text: str, more: str) -> str:
        """`more` streamed after `text`, from the start of a line."""
        ends_line = text.endswith("\n") if text else self.stream_ends_line
        return text + more if ends_line or not more else f"{text}\n{more}"

    def _append(self, text: str) -> bool:
        """Stream `text`, starting the stream if need be; False when Slack will not stream here."""
        if not text:
            return True
        try:
            if self.streamer is None:
                self.streamer = self.client.chat_stream(
                    channel=self.channel,
                    thread_ts=self.thread_ts,
                    recipient_user_id=self.job.user,
                    recipient_team_id=self.job.thread.team,
                    # Sent as given: lines are coalesced here, by time, not by the helper's size.
                    buffer_size=1,
                )
            self.streamer.append(markdown_text=text)
        except _SLACK_FAILURES as exc:
            log.info("streaming unavailable (%s); steps go to a steps message", _error(exc))
            self.stream_wanted = False
            if self.streamer is not None and self.streamer.ts is None:
                self.streamer = None  # never started: there is nothing to stop
            return False
        self.last_append_s = self.clock()
        self.stream_ends_line = text.endswith("\n")
        return True

    def _stop(self, reply: Reply, message: Content, streamer: ChatStream) -> _Stopped:
        """Complete the streamed message as the answer: whether it was, else (so it is posted) when
        the stop that failed started if it may land all the same.

        Slack renders the stop's blocks below the streamed text: when the answer streamed, what it
        still adds (a cut note) and the footer complete it; else the whole answer does."""
        rest = self.preview.rest(reply.text) if self.preview.text else None
        if rest is not None:
            markdown, blocks = self._unsent(whole_words=False) + escape(rest), answer_footer(reply)
        else:
            markdown, blocks = "", message.blocks
        started = posting.PACING.clock()
        try:
            streamer.stop(markdown_text=markdown or None, blocks=blocks, metadata=marker(self.job.id))
        except _SLACK_FAILURES as exc:
            log.warning("could not complete the streamed answer (%s); posting it instead", _error(exc))
            return _Stopped(done=False, may_land_from=started if may_have_landed(exc) else None)
        if self.misled or (self.preview.text and rest is None):
            self._rewrite(message, streamer)
        return _Stopped(done=True)

    def _rewrite(self, message: Content, streamer: ChatStream) -> None:
        """Make the stopped message the steps and the answer alone (see the module's docstring)."""
        steps = steps_message(self.lines, done=True).blocks if self.lines else []
        try:
            self.client.chat_update(
                channel=self.channel,
                ts=str(streamer.ts),
                text=message.text,
                blocks=[*steps, *message.blocks],
                metadata=marker(self.job.id),
            )
        except _SLACK_FAILURES as exc:
            log.warning("the answer message still shows what streamed before the answer (%s)", _error(exc))

    def _show_steps(self, done: bool) -> None:
        """Post or edit the steps message; an edit within APPEND_EVERY_S of the last waits for the
        next step or the end, which shows every line."""
        if not done and self.steps_ts is not None and self.clock() - self.steps_shown_s < APPEND_EVERY_S:
            return
        self.steps_shown_s = self.clock()
        shown = steps_message(self.lines, done)
        text, blocks = with_stop(shown, self.thread_ts) if self.stop_button and not done else shown
        try:
            if self.steps_ts is None:
                response = self.client.chat_postMessage(
                    channel=self.channel,
                    thread_ts=self.thread_ts,
                    text=text,
                    blocks=blocks,
                    metadata=marker(self.job.id, STEPS_EVENT),
                )
                self.steps_ts = str(response["ts"])
            else:
                self.client.chat_update(channel=self.channel, ts=self.steps_ts, text=text, blocks=blocks)
        except _SLACK_FAILURES as exc:
            log.info("steps message not updated: %s", _error(exc))


def _words_end(text: str) -> int:
    """Where the word `text` ends with begins: just after its last whitespace."""
    for index in range(len(text) - 1, -1, -1):
        if text[index].isspace():
            return index + 1
    return 0


def _error(exc: Exception) -> str:
    if isinstance(exc, SlackApiError):
        return str(exc.response.get("error") or exc.response.status_code)
    return str(exc)
