"""One job, worked on: a direct command or a run of the agent, answered exactly once in its thread."""

from __future__ import annotations

import logging
from urllib.error import URLError

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.webhook import WebhookClient

from bot.commands import CommandOutput, NotACommand, Parsed, parse_command, run_command
from bot.loop import Agent
from bot.prompts import with_thread_context
from bot.reply import Progress
from bot.slack.approvals import Approvals
from bot.slack.blocks import answer_blocks, context_line, escape, mention, output_blocks
from bot.slack.jobs import Job, ThreadRef
from bot.slack.posting import PostFailed, post_once
from bot.slack.progress import SlackProgress
from bot.slack.state import SlackState
from config.settings import SlackSettings
from tools.redact import redact_text

log = logging.getLogger("opsbot.slack")


class Conversation:
    def __init__(
        self, agent: Agent, client: WebClient, state: SlackState, approvals: Approvals, settings: SlackSettings
    ) -> None:
        self.agent = agent
        self.client = client
        self.state = state
        self.approvals = approvals
        self.settings = settings

    def handle(self, job: Job) -> None:
        """Work on `job`; whatever fails, the person hears about it once."""
        try:
            self._handle(job)
        except PostFailed as exc:
            log.error("answer to %s could not be posted: %s", job.id, exc.error)
        except Exception:
            log.exception("job %s failed", job.id)
            self.refuse(job, f"Something went wrong inside opsbot on this message (logged as {job.id}).")

    def refuse(self, job: Job, text: str) -> None:
        """Say why the job is not worked on: the job's one answer."""
        try:
            if job.response_url:
                WebhookClient(job.response_url).send(text=escape(text), response_type="ephemeral")
            else:
                post_once(self.client, job.thread.channel, job.thread.thread_ts, job.id, escape(text))
        except (PostFailed, SlackApiError, URLError, OSError) as exc:
            log.error("could not tell %s why job %s was refused: %s", job.user, job.id, exc)

    def _handle(self, job: Job) -> None:
        parsed = self._command(job.text) if job.kind == "question" else None
        if parsed is not None:
            self._direct(job, parsed)
        else:
            self._ask(job)

    def _command(self, text: str) -> Parsed | None:
        parsed = parse_command(self.approvals.policy, text)
        # Text that only starts like a command is a question when there is a model to ask.
        if isinstance(parsed, NotACommand) and self.agent.model is not None:
            return None
        return parsed

    def _ask(self, job: Job) -> None:
        text = job.text
        if job.first_in_thread and job.ts != job.thread.thread_ts:
            earlier = self._earlier(job)
            if earlier:
                text = with_thread_context(earlier, text)
        if job.response_url:
            reply = self.agent.run(text, job.thread.key, Progress(), job.principal)
            WebhookClient(job.response_url).send(
                text=escape(reply.text), blocks=answer_blocks(reply, job.id), response_type="ephemeral"
            )
        else:
            progress = SlackProgress(self.client, job, stream=self.settings.stream)
            reply = self.agent.run(text, job.thread.key, progress, job.principal)
            progress.finish(reply)
        log.info("answered %s: %s", job.id, context_line(reply))
        for request in reply.approvals:
            self.approvals.ask(job.thread, request, why=job.text, continues_agent=True)

    def _direct(self, job: Job, parsed: Parsed) -> None:
        output = run_command(self.agent, parsed, job.thread.key, job.principal)
        blocks = output_blocks(job.text, output.text, output.ok, self.settings.max_output_chars)
        if job.response_url:
            WebhookClient(job.response_url).send(
                text=escape(output.text[:3000]), blocks=blocks, response_type="ephemeral"
            )
        else:
            post_once(self.client, job.thread.channel, job.thread.thread_ts, job.id, escape(output.text[:3000]), blocks)
        if output.approval is not None:
            self._ask_approval(job, output)

    def _ask_approval(self, job: Job, output: CommandOutput) -> None:
        assert output.approval is not None
        thread = job.thread
        if job.response_url:
            # A private answer has no thread: approvers need a public message to click on.
            root = post_once(
                self.client,
                thread.channel,
                None,
                f"{job.id}:request",
                f"{mention(job.user)} asked to run `{escape(output.approval.command)}`",
            )
            thread = ThreadRef(team=thread.team, channel=thread.channel, thread_ts=root)
        self.approvals.ask(thread, output.approval, why=job.text, continues_agent=False)

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
