"""Where a job's words go, decided once when a worker takes the job (Conversation.handle).

A message in a thread is answered in that thread, a direct message in its thread of the DM's
channel: both are a `ThreadTarget`, posting through opsbot's guarded client with `post_once`. A
`/ops` command is answered privately at its `response_url`: a `ResponseUrlTarget`, whose replies
pass the guard in `GuardedWebhook`. What others must see from a private job (an approval
request's buttons, a runbook's run) opens a thread of the channel instead.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Protocol
from urllib.error import URLError

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from ...config.settings import SlackSettings
from ...tools.redact import redact_text
from ..agent import Progress, Reply
from ..charts import Chart
from .blocks import ANSWER_EVENT, Block, answer_messages, escape, unattached_message
from .charts import share_charts
from .jobs import Job, ThreadRef
from .outbound import GuardedWebhook
from .posting import PostFailed, find_marked, post_once, tell
from .progress import SlackProgress
from .sessions import Sessions, SessionStatus

log = logging.getLogger("opsbot.slack")

_SLACK_FAILURES = (PostFailed, SlackApiError, URLError, OSError)
# The kind of a message that opens a thread of the channel for a person's request.
_OPENS_THREAD = "opsbot_question"
_NO_FILE = "a reply only you see cannot carry a file; ask where opsbot can post to get all of it"
_NO_CHART = "A reply only you see cannot carry a chart: `@opsbot metrics ...` in a thread opsbot is in shares it there."
_CHART_IN_DM = "The chart is in your direct messages with opsbot (a reply only you see cannot carry one)."


class Target(Protocol):
    """Where a job's answer, and everything else it says to the asker, goes."""

    def answered(self) -> bool:
        """Whether the job's answer is out already (a job taken over from a process that died)."""
        ...

    def earlier(self) -> str:
        """What was said before the job where it is answered, for the model (secrets redacted);
        empty when there is nothing to read."""
        ...

    def answer(self, run: Callable[[Progress], Reply], stop_button: bool = False) -> Reply:
        """The job's answer: what `run` replies, given the progress to show while it runs (with
        opsbot's own Stop button on it, where the place can show one)."""
        ...

    def session(self, status: SessionStatus, title: str | None = None) -> bool:
        """Set the agent session of the job's thread, if it has one: whether Slack took it."""
        ...

    def output(self, text: str, blocks: list[Block]) -> None:
        """A direct command's output, as the job's answer. Raises `PostFailed` when Slack refuses it."""
        ...

    def charts(self, charts: list[Chart]) -> str:
        """Share a direct command's charts, before its output; best effort (the output goes out
        regardless). What the output should say when they cannot be shown here, else nothing."""
        ...

    def say(
        self,
        text: str,
        *,
        marker: str | None = None,
        kind: str = ANSWER_EVENT,
        check_first: bool = False,
        written: bool = False,
    ) -> None:
        """Tell the asker `text`, best effort: as the job's answer unless `marker` and `kind` say
        otherwise (`check_first`: an earlier attempt may have said it already). `written`: `text`
        is mrkdwn opsbot wrote, its outside parts escaped and its own syntax marked (`own()`)."""
        ...

    def whisper(self, text: str) -> None:
        """Tell the asker `text` where nobody else can read it, best effort; never the job's answer."""
        ...

    def announce(self, said: str) -> ThreadRef | None:
        """Where a question is answered when not here: a thread of the channel that `said` opens,
        or None. Raises `PostFailed` when that thread cannot be opened."""
        ...

    def public_thread(self, marker: str, said: str, moved: str = "") -> ThreadRef:
        """A thread everyone in the channel sees, for what others act on; `said` opens one when the
        job has none, and the asker is told `moved` then. Raises `PostFailed`."""
        ...


class ThreadTarget:
    """The job's thread: in a channel, or in a direct message's channel."""

    def __init__(self, client: WebClient, job: Job, settings: SlackSettings, sessions: Sessions) -> None:
        self.client = client
        self.job = job
        self.thread = job.thread
        self.settings = settings
        self.sessions = sessions

    def answered(self) -> bool:
        looked = find_marked(self.client, self.thread.channel, self.thread.thread_ts, self.job.id, ANSWER_EVENT)
        return looked.ts is not None

    def earlier(self) -> str:
        """At most `thread_context_messages` messages and `thread_context_chars` characters, for
        opsbot's first message in a thread someone else started (else nothing came before it)."""
        job, messages, chars = self.job, self.settings.thread_context_messages, self.settings.thread_context_chars
        if messages == 0 or not job.first_in_thread or job.ts == self.thread.thread_ts:
            return ""
        try:
            response = self.client.conversations_replies(
                channel=self.thread.channel, ts=self.thread.thread_ts, limit=messages + 1
            )
        except (SlackApiError, URLError, OSError) as exc:
            log.info("could not read thread %s for context: %s", self.thread.key, exc)
            return ""
        lines = [
            f"{message.get('user') or message.get('bot_id') or 'someone'}: {message.get('text', '')}"
            for message in (response.get("messages") or [])[: messages + 1]
            if message.get("ts") != job.ts
        ]
        text = "\n".join(lines)
        return redact_text(text if len(text) <= chars else "…" + text[-chars:])

    def answer(self, run: Callable[[Progress], Reply], stop_button: bool = False) -> Reply:
        progress = SlackProgress(self.client, self.job, stream=self.settings.stream, stop_button=stop_button)
        reply = run(progress)
        progress.finish(reply)
        return reply

    def session(self, status: SessionStatus, title: str | None = None) -> bool:
        return self.sessions.set(self.thread, status, title)

    def output(self, text: str, blocks: list[Block]) -> None:
        self._post(self.job.id, text, blocks, check_first=self.job.resumed)

    def charts(self, charts: list[Chart]) -> str:
        share_charts(self.client, self.thread.channel, self.thread.thread_ts, self.job.id, charts, self.job.resumed)
        return ""

    def say(
        self,
        text: str,
        *,
        marker: str | None = None,
        kind: str = ANSWER_EVENT,
        check_first: bool = False,
        written: bool = False,
    ) -> None:
        try:
            said = text if written else escape(text)
            self._post(marker or self.job.id, said, kind=kind, check_first=check_first)
        except _SLACK_FAILURES as exc:
            log.error("could not tell %s about job %s: %s", self.job.user, self.job.id, exc)

    def whisper(self, text: str) -> None:
        tell(self.client, self.thread.channel, self.job.user, escape(text), thread_ts=self.thread.thread_ts)

    def announce(self, said: str) -> ThreadRef | None:
        return None  # asked in its thread: answered there

    def public_thread(self, marker: str, said: str, moved: str = "") -> ThreadRef:
        return self.thread

    def _post(
        self,
        marker: str,
        text: str,
        blocks: list[Block] | None = None,
        kind: str = ANSWER_EVENT,
        check_first: bool = False,
    ) -> None:
        post_once(
            self.client,
            self.thread.channel,
            self.thread.thread_ts,
            marker,
            text,
            blocks,
            kind=kind,
            check_first=check_first,
        )


class ResponseUrlTarget:
    """A `/ops` command's `response_url`: replies only the asker sees, and no thread to read."""

    def __init__(self, client: WebClient, job: Job, webhook: GuardedWebhook) -> None:
        """`client` opens threads of the job's channel; `webhook` is the job's `response_url`."""
        self.client = client
        self.job = job
        self.webhook = webhook

    def answered(self) -> bool:
        return False  # a private reply cannot be looked for: a job taken over is answered again

    def earlier(self) -> str:
        return ""

    def session(self, status: SessionStatus, title: str | None = None) -> bool:
        return False  # a private reply has no thread, so no session

    def answer(self, run: Callable[[Progress], Reply], stop_button: bool = False) -> Reply:
        reply = run(Progress())
        answer = answer_messages(reply, self.job.id)
        # A response_url takes five replies (ANSWER_MESSAGES is fewer), and a private reply no file.
        messages = answer.messages if answer.attachment is None else [unattached_message(reply, _NO_FILE)]
        for message in messages:
            self.webhook.send(text=message.text, blocks=message.blocks, response_type="ephemeral")
        if reply.charts:
            self.say(self.charts(reply.charts))
        return reply

    def output(self, text: str, blocks: list[Block]) -> None:
        self.webhook.send(text=text, blocks=blocks, response_type="ephemeral")

    def charts(self, charts: list[Chart]) -> str:
        """A private reply carries no file: the charts go to the asker's direct messages with
        opsbot instead (scope `im:write`); where opsbot may not open one, the reply says how to get them."""
        if not charts:
            return ""
        try:
            opened = self.client.conversations_open(users=self.job.user)
            dm = str(opened["channel"]["id"])
        except _SLACK_FAILURES as exc:
            log.warning("no direct message to %s for job %s's charts: %s", self.job.user, self.job.id, exc)
            return _NO_CHART
        shared = share_charts(self.client, dm, None, self.job.id, charts, self.job.resumed)
        return _CHART_IN_DM if shared else _NO_CHART

    def say(
        self,
        text: str,
        *,
        marker: str | None = None,
        kind: str = ANSWER_EVENT,
        check_first: bool = False,
        written: bool = False,
    ) -> None:
        try:
            self.webhook.send(text=text if written else escape(text), response_type="ephemeral")
        except _SLACK_FAILURES as exc:
            log.error("could not tell %s about job %s: %s", self.job.user, self.job.id, exc)

    def whisper(self, text: str) -> None:
        self.say(text)  # a response_url's replies are the asker's alone

    def announce(self, said: str) -> ThreadRef | None:
        return self._open(f"{self.job.id}:question", said, check_first=self.job.resumed)

    def public_thread(self, marker: str, said: str, moved: str = "") -> ThreadRef:
        thread = self._open(marker, said)
        if moved:
            self.webhook.send(text=escape(moved), response_type="ephemeral")
        return thread

    def _open(self, marker: str, said: str, check_first: bool = False) -> ThreadRef:
        channel = self.job.thread
        root = post_once(self.client, channel.channel, None, marker, said, kind=_OPENS_THREAD, check_first=check_first)
        return ThreadRef(team=channel.team, channel=channel.channel, thread_ts=root)
