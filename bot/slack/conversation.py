"""One job, worked on: a direct command or a run of the agent, answered exactly once in its thread.

Everything that calls Slack for a message happens here, on a worker, never before the ack:
looking up who asks (their user groups), opening the thread a `/ops` question is answered in,
refusing people of other teams."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from urllib.error import URLError

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from ...config.settings import SlackSettings
from ...tools.commands import ApprovalRequest
from ...tools.redact import redact_text
from ..agent import Agent, Progress, Reply, StopReason
from ..agent.prompts import with_thread_context
from ..approvals import Approvals, ApprovalsUnavailable, HandBack
from ..commands import DirectCommand, Question, RunbookRequest, run_command
from ..redis.client import REDIS_ERRORS
from ..runbooks import RunbookEngine, RunRefused
from ..telemetry import metrics
from .approval_requests import SlackRequests
from .blocks import ANSWER_EVENT, answer_blocks, context_line, escape, mention, output_blocks
from .delivery import Deferred
from .jobs import Job, ThreadRef
from .outbound import GuardedWebhook, Outbound
from .posting import PostFailed, find_marked, post_once
from .principals import Directory
from .progress import SlackProgress

log = logging.getLogger("opsbot.slack")

_SLACK_FAILURES = (PostFailed, SlackApiError, URLError, OSError)
_NOT_ASKED: tuple[type[Exception], ...] = (PostFailed, ApprovalsUnavailable, *REDIS_ERRORS)
# Slack errors meaning opsbot may not post in the channel, so it answers privately instead.
_CANNOT_POST = frozenset({"not_in_channel", "channel_not_found", "is_archived", "restricted_action"})


class Conversation:
    def __init__(
        self,
        agent: Agent,
        client: WebClient,
        approvals: Approvals,
        requests: SlackRequests,
        settings: SlackSettings,
        engine: RunbookEngine,
        directory: Directory,
        requeue: Callable[[Job], object],
        outbound: Outbound,
    ) -> None:
        """`requeue` queues a `/ops` question again, in the thread opened for it; `outbound` guards
        what is said through a job's `response_url`, as `client` guards its posts."""
        self.engine = engine
        self.agent = agent
        self.client = client
        self.approvals = approvals
        self.requests = requests
        self.settings = settings
        self.directory = directory
        self.requeue = requeue
        self.outbound = outbound

    def handle(self, job: Job) -> None:
        """Work on `job`; whatever fails, the person hears about it once. Raises `Deferred` when
        it cannot be worked on before Redis answers again."""
        try:
            if job.resumed and self._answered(job):
                log.info("job %s was answered before its process died; not run again", job.id)
                return
            if job.principal is None:
                asker = self.directory.principal(job.user, job.user_team, job.thread.channel)
                job = job.model_copy(update={"principal": asker})
            self._handle(job)
        except Deferred:
            raise
        except PostFailed as exc:
            log.error("answer to %s could not be posted: %s", job.id, exc.error)
        except Exception:
            log.exception("job %s failed", job.id)
            self.refuse(job, f"Something went wrong inside opsbot on this message (logged as {job.id}).")

    def refuse(self, job: Job, text: str) -> None:
        """Say why the job was not worked on: its one answer (nothing, when it has one already)."""
        self._say(job, text, check_first=True)

    def _handle(self, job: Job) -> None:
        if job.kind == "refusal":
            self.refuse(job, job.text)
            return
        if not isinstance(job.decision, Question):
            self._direct(job, job.decision)
        elif job.response_url and job.kind == "question":
            self._open_thread(job)
        else:
            self._ask(job)

    def _open_thread(self, job: Job) -> None:
        """A `/ops` question: posted in the channel, and answered in that message's thread."""
        channel = job.thread.channel
        try:
            root = post_once(
                self.client,
                channel,
                None,
                f"{job.id}:question",
                f"{mention(job.user)} asked: {escape(redact_text(job.text))}",
                kind="opsbot_question",
                check_first=job.resumed,
            )
        except PostFailed as exc:
            if exc.error not in _CANNOT_POST:
                self._say(job, f"Slack refused opsbot's post ({exc.error}); nothing was run. Try again in a minute.")
                return
            self._say(
                job,
                "I cannot post in this channel (invite me with `/invite @opsbot` to answer in a thread here), "
                "so only you will see my answer.",
            )
            self._ask(job)
            return
        thread = ThreadRef(team=job.thread.team, channel=channel, thread_ts=root)
        try:
            self.requeue(job.model_copy(update={"thread": thread, "ts": root, "response_url": None, "resumed": False}))
        except REDIS_ERRORS as exc:
            metrics.redis_error("slack_conversation")
            raise Deferred(f"cannot queue it in its thread: {exc}") from exc

    def _ask(self, job: Job) -> None:
        text = job.text
        if job.first_in_thread and not job.response_url and job.ts != job.thread.thread_ts:
            earlier = self._earlier(job)
            if earlier:
                text = with_thread_context(earlier, text)
        if job.response_url:
            reply = _started(self.agent.run(text, job.thread.key, Progress(), job.principal))
            self._respond(job.response_url).send(
                text=escape(reply.text), blocks=answer_blocks(reply, job.id), response_type="ephemeral"
            )
        else:
            progress = SlackProgress(self.client, job, stream=self.settings.stream)
            reply = _started(self.agent.run(text, job.thread.key, progress, job.principal))
            progress.finish(reply)
        log.info("answered %s: %s", job.id, context_line(reply))
        for request in reply.approvals:
            self._ask_for(job, request, continues_agent=True)

    def _direct(self, job: Job, command: DirectCommand) -> None:
        if isinstance(command, RunbookRequest):
            self._run_runbook(job, command)
            return
        output = run_command(self.agent, command, job.thread.key, job.principal)
        blocks = output_blocks(job.text, output.text, output.ok, self.settings.max_output_chars)
        fallback = escape(output.text[:3000])
        if job.response_url:
            self._respond(job.response_url).send(text=fallback, blocks=blocks, response_type="ephemeral")
        else:
            thread = job.thread
            post_once(self.client, thread.channel, thread.thread_ts, job.id, fallback, blocks, check_first=job.resumed)
        if output.approval is not None:
            self._ask_for(job, output.approval, continues_agent=False)

    def _run_runbook(self, job: Job, request: RunbookRequest) -> None:
        """Start a runbook in the job's thread (for /ops, in a new thread of the channel)."""
        try:
            self.engine.policy.runbooks[request.runbook].check_params(request.params)
        except ValueError as exc:
            self._say(job, f"Runbook {request.runbook} was not run: {exc}")
            return
        thread = job.thread
        if job.response_url:
            said = f"{mention(job.user)} runs runbook `{escape(request.runbook)}`"
            root = post_once(self.client, thread.channel, None, f"{job.id}:runbook", said, kind="opsbot_question")
            thread = ThreadRef(team=thread.team, channel=thread.channel, thread_ts=root)
            self._respond(job.response_url).send(
                text=f"Runbook {request.runbook} started in a thread of this channel.", response_type="ephemeral"
            )
        origin = {**thread.place(), "asked": job.id}
        run_id = "cmd-" + hashlib.sha256(job.id.encode()).hexdigest()[:24]
        try:
            self.engine.start(request.runbook, request.params, origin, run_id=run_id, requested_by=job.principal)
        except RunRefused as exc:
            self._say(job, f"Runbook {request.runbook} was not run: {exc}", f"{job.id}:note", "opsbot_note")

    def _ask_for(self, job: Job, request: ApprovalRequest, continues_agent: bool) -> None:
        """Post an approval request. The job's answer is out already, so a failure here gets a note
        of its own rather than a second answer."""
        thread = job.thread
        try:
            if job.response_url:
                # A private answer has no thread: approvers need a public message to click on.
                root = post_once(
                    self.client,
                    thread.channel,
                    None,
                    f"{job.id}:request",
                    f"{mention(job.user)} asked to run `{escape(request.command)}`",
                    kind="opsbot_question",
                )
                thread = ThreadRef(team=thread.team, channel=thread.channel, thread_ts=root)
            hand_back = HandBack.agent if continues_agent else HandBack.nobody
            pending = self.approvals.ask_command(request, thread.place(), hand_back, why=job.text)
            self.requests.post(thread, pending)
        except _NOT_ASKED as exc:
            log.error("approval request %s not posted: %s", request.id, exc)
            self._say(
                job,
                f"opsbot could not post the approval request for `{request.command}` ({exc}), so nothing will "
                "run. If opsbot is not in this channel, `/invite @opsbot`; then ask again.",
                f"{job.id}:note",
                "opsbot_note",
            )

    def _say(
        self, job: Job, text: str, marker: str | None = None, kind: str = ANSWER_EVENT, check_first: bool = False
    ) -> None:
        """Tell the asker `text`: in the thread (as the job's answer unless `marker` says otherwise),
        or privately for a job answered through its `response_url`."""
        try:
            if job.response_url:
                self._respond(job.response_url).send(text=escape(text), response_type="ephemeral")
            else:
                thread = job.thread
                post_once(
                    self.client,
                    thread.channel,
                    thread.thread_ts,
                    marker or job.id,
                    escape(text),
                    kind=kind,
                    check_first=check_first,
                )
        except _SLACK_FAILURES as exc:
            log.error("could not tell %s about job %s: %s", job.user, job.id, exc)

    def _respond(self, response_url: str) -> GuardedWebhook:
        return GuardedWebhook(response_url, self.outbound)

    def _answered(self, job: Job) -> bool:
        _, found = find_marked(self.client, job.thread.channel, job.thread.thread_ts, job.id, ANSWER_EVENT)
        return found is not None

    def _earlier(self, job: Job) -> str:
        """The thread before opsbot was mentioned in it: at most `thread_context_messages` messages
        and `thread_context_chars` characters, secrets redacted."""
        limit = self.settings.thread_context_messages
        if limit == 0:
            return ""
        try:
            response = self.client.conversations_replies(
                channel=job.thread.channel, ts=job.thread.thread_ts, limit=limit + 1
            )
        except (SlackApiError, URLError, OSError) as exc:
            log.info("could not read thread %s for context: %s", job.thread.key, exc)
            return ""
        lines = [
            f"{message.get('user') or message.get('bot_id') or 'someone'}: {message.get('text', '')}"
            for message in (response.get("messages") or [])[: limit + 1]
            if message.get("ts") != job.ts
        ]
        text = "\n".join(lines)
        cap = self.settings.thread_context_chars
        return redact_text(text if len(text) <= cap else "…" + text[-cap:])


def _started(reply: Reply) -> Reply:
    """`reply`, unless the run could not even start for want of its memory: then the job waits
    for Redis rather than being answered "ask again" (nothing ran, so nothing is lost by waiting)."""
    if reply.stop_reason is StopReason.memory_unavailable and not reply.steps:
        raise Deferred(reply.text)
    return reply
