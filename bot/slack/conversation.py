"""One job, worked on: a direct command or a run of the agent, answered exactly once where it
was asked (its delivery target, target.py, decided as the job starts).

Everything that calls Slack for a message happens here, on a worker, never before the ack:
looking up who asks (their user groups), opening the thread a `/ops` question is answered in,
refusing people of other teams."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable

from slack_sdk import WebClient

from ...config.settings import SlackSettings
from ...tools.cancel import cancellable
from ...tools.commands import ApprovalRequest
from ...tools.redact import redact_text
from ..agent import Agent, Reply, StopReason, recalled_text
from ..agent.prompts import plain_fault_text, with_thread_context
from ..approvals import KEEP_AFTER_EXPIRY_S, Approvals, ApprovalsUnavailable, HandBack
from ..charts import chart_of
from ..commands import Builtin, DirectCommand, Question, RunbookRequest, run_command
from ..faults import Fault
from ..redis.client import REDIS_ERRORS
from ..runbooks import RunbookEngine, RunRefused
from ..telemetry import metrics
from .approval_requests import SlackRequests
from .blocks import RECALLED, context_line, escape, mention, output_blocks
from .delivery import Deferred
from .feedback import AnswerFeedback
from .jobs import Job
from .outbound import GuardedWebhook, Outbound
from .posting import PostFailed
from .principals import Directory, approves_commands
from .sessions import STOP_NOTE_EVENT, Running, Sessions, SessionStatus, StopWatch, session_title, stopped_line
from .target import ResponseUrlTarget, Target, ThreadTarget

log = logging.getLogger("opsbot.slack")

_NOT_ASKED: tuple[type[Exception], ...] = (PostFailed, ApprovalsUnavailable, *REDIS_ERRORS)
# Slack errors meaning opsbot may not post in the channel, so it answers privately instead.
_CANNOT_POST = frozenset({"not_in_channel", "channel_not_found", "is_archived", "restricted_action"})
# What marks a note that is not the job's answer (a runbook refused, an approval request not posted).
_NOTE_EVENT = "opsbot_note"


class Conversation:
    def __init__(
        self,
        agent: Agent,
        client: WebClient,
        *,
        approvals: Approvals,
        requests: SlackRequests,
        settings: SlackSettings,
        engine: RunbookEngine,
        directory: Directory,
        requeue: Callable[[Job], object],
        outbound: Outbound,
        feedback: AnswerFeedback,
        sessions: Sessions,
        watch: StopWatch,
    ) -> None:
        """`requeue` queues a `/ops` question again, in the thread opened for it; `outbound` guards
        what is said through a job's `response_url`, as `client` guards its posts; `feedback` is
        told each run before its answer is shown, whose feedback buttons name it; `sessions`
        carries a thread's lifecycle to Slack; `watch` gives up a run someone stopped."""
        self.sessions = sessions
        self.watch = watch
        self.engine = engine
        self.agent = agent
        self.client = client
        self.approvals = approvals
        self.requests = requests
        self.settings = settings
        self.directory = directory
        self.requeue = requeue
        self.outbound = outbound
        self.feedback = feedback

    def handle(self, job: Job) -> None:
        """Work on `job`; whatever fails, the person hears about it once. Raises `Deferred` when
        it cannot be worked on before Redis answers again."""
        target = self._target(job)
        try:
            if job.resumed and target.answered():
                log.info("job %s was answered before its process died; not run again", job.id)
                return
            if job.principal is None:
                asker = self.directory.principal(job.user, job.user_team, job.thread.channel)
                job = job.model_copy(update={"principal": asker})
            self._handle(job, target)
        except Deferred:
            raise
        except PostFailed as exc:
            log.error("answer to %s could not be posted: %s", job.id, exc.error)
        except Exception:
            log.exception("job %s failed", job.id)
            target.say(f"Something went wrong inside opsbot on this message (logged as {job.id}).", check_first=True)

    def refuse(self, job: Job, text: str) -> None:
        """Say why the job was not worked on: its one answer (nothing, when it has one already)."""
        self._target(job).say(text, check_first=True)

    def _target(self, job: Job) -> Target:
        """Where everything `job` says goes: the one place this is decided."""
        if job.response_url:
            return ResponseUrlTarget(self.client, job, GuardedWebhook(job.response_url, self.outbound))
        return ThreadTarget(self.client, job, self.settings, self.sessions)

    def _handle(self, job: Job, target: Target) -> None:
        if job.kind == "refusal":
            target.say(job.text, check_first=True)
        elif not isinstance(job.decision, Question):
            self._direct(job, target, job.decision)
        else:
            self._question(job, target)

    def _question(self, job: Job, target: Target) -> None:
        """A question: answered where it was asked, or (`/ops`) in a thread of the channel it opens."""
        try:
            thread = target.announce(f"{mention(job.user)} asked: {escape(redact_text(job.text))}")
        except PostFailed as exc:
            if exc.error not in _CANNOT_POST:
                target.say(f"Slack refused opsbot's post ({exc.error}); nothing was run. Try again in a minute.")
                return
            target.say(
                "I cannot post in this channel (invite me with `/invite @opsbot` to answer in a thread here), "
                "so only you will see my answer."
            )
            thread = None
        if thread is None:
            self._ask(job, target)
            return
        moved = job.model_copy(
            update={"thread": thread, "ts": thread.thread_ts, "response_url": None, "resumed": False}
        )
        try:
            self.requeue(moved)
        except REDIS_ERRORS as exc:
            metrics.redis_error("slack_conversation")
            raise Deferred(f"cannot queue it in its thread: {exc}") from exc

    def _ask(self, job: Job, target: Target) -> None:
        """A run of the agent in its thread's session: `processing` (titled by the question that
        opens it), then `suspended` while its writes wait for a person, else `active`. Anyone may
        stop it meanwhile (sessions/stopping.py): it is given up as Ctrl-C gives it up in a terminal."""
        earlier = target.earlier()
        text = with_thread_context(earlier, job.text) if earlier else job.text
        title = session_title(job.text) if job.first_in_thread and job.kind == "question" else None
        in_session = target.session(SessionStatus.processing, title)
        with self.watch.watching(job.thread, job.id, job.user) as running:
            reply = target.answer(
                lambda progress: self._answering(
                    job,
                    _plain(_started(self.agent.run(text, job.thread.key, progress, job.principal, running.cancel))),
                ),
                stop_button=running.on_board and not in_session,
            )
        log.info("answered %s: %s", job.id, context_line(reply))
        self._remember(job, target, reply)
        if reply.fault is not None:
            self._tell_operators(job, target, reply.fault)
        # Stopped as it ended with writes to ask for: nobody is asked, and the confirmation says so.
        unasked = f" {len(reply.approvals)} write(s) it wanted were not asked for." if reply.approvals else ""
        stopped = self._confirm_stop(job, target, running, f"Nothing more was run.{unasked}")
        requests = [] if stopped else reply.approvals
        waiting = [request for request in requests if self._ask_for(job, target, request, continues_agent=True)]
        target.session(SessionStatus.suspended if waiting else SessionStatus.active)

    def _confirm_stop(self, job: Job, target: Target, running: Running, said: str) -> bool:
        """Whether someone stopped the job's work; if so, who, said once in its thread."""
        if running.stopped_by is None:
            return False
        text = f"{stopped_line(running.stopped_by)} {escape(said)}"
        target.say(text, marker=f"{job.id}:stopped", kind=STOP_NOTE_EVENT, check_first=job.resumed, written=True)
        return True

    def _answering(self, job: Job, reply: Reply) -> Reply:
        """`reply`, its run remembered where it answers before it is shown (its feedback buttons name it)."""
        self.feedback.answering(reply.run_id, job.thread)
        return reply

    def _remember(self, job: Job, target: Target, reply: Reply) -> None:
        """Past incidents recalled for the question, told in its thread; the thread's record written."""
        recollection = self.agent.recollection
        if recollection is None:
            return
        told = recalled_text(reply.recalled, recollection.store.clock(), RECALLED)
        if told:
            target.say(told, marker=f"{job.id}:recalled", kind=_NOTE_EVENT, check_first=job.resumed, written=True)
        recollection.remember(job.text, reply, job.principal, link=job.thread.link)

    def _direct(self, job: Job, target: Target, command: DirectCommand) -> None:
        if isinstance(command, RunbookRequest):
            self._run_runbook(job, target, command)
            return
        # A command (`run slow-diagnostic`) is stopped as a run is: its process group killed.
        with self.watch.watching(job.thread, job.id, job.user) as running, cancellable(running.cancel):
            output = run_command(self.agent, command, job.thread.key, job.principal)
        chart = chart_of(output.tool, output.result)
        unshown = target.charts([chart]) if chart is not None else ""
        said = output.text if output.fault is None else plain_fault_text(output.fault, [])
        blocks = output_blocks(job.text, said, output.ok, self.settings.max_output_chars, note=unshown)
        target.output(escape(said[:3000]), blocks)
        if output.fault is not None:
            self._tell_operators(job, target, output.fault)
        if self._confirm_stop(job, target, running, "The command was given up."):
            return
        if output.approval is not None:
            self._ask_for(job, target, output.approval, continues_agent=False)
        if command == Builtin.reset and output.ok:
            target.session(SessionStatus.closed)

    def _tell_operators(self, job: Job, target: Target, fault: Fault) -> None:
        """The details of what failed, which the channel was not told: in the operator's log, and
        privately to the asker when the policy names them an approver (someone who runs opsbot)."""
        detail = redact_text(fault.detail)
        needs = "needs fixing" if fault.lasting else "may pass"
        log.warning("job %s: opsbot's %s failed (%s): %s", job.id, fault.part, needs, detail)
        if approves_commands(self.engine.policy, job.principal):
            target.whisper(f"Only you see this, as an approver of opsbot's commands: its {fault.part} failed: {detail}")

    def _run_runbook(self, job: Job, target: Target, request: RunbookRequest) -> None:
        """Start a runbook in the job's thread (for /ops, in a new thread of the channel)."""
        try:
            self.engine.policy.runbooks[request.runbook].check_params(request.params)
        except ValueError as exc:
            target.say(f"Runbook {request.runbook} was not run: {exc}")
            return
        thread = target.public_thread(
            f"{job.id}:runbook",
            f"{mention(job.user)} runs runbook `{escape(request.runbook)}`",
            moved=f"Runbook {request.runbook} started in a thread of this channel.",
        )
        origin = {**thread.place(), "asked": job.id}
        run_id = "cmd-" + hashlib.sha256(job.id.encode()).hexdigest()[:24]
        try:
            self.engine.start(request.runbook, request.params, origin, run_id=run_id, requested_by=job.principal)
        except RunRefused as exc:
            target.say(f"Runbook {request.runbook} was not run: {exc}", marker=f"{job.id}:note", kind=_NOTE_EVENT)

    def _ask_for(self, job: Job, target: Target, request: ApprovalRequest, continues_agent: bool) -> bool:
        """Post an approval request; whether it was. The job's answer is out already, so a failure
        here gets a note of its own rather than a second answer. A run's request is noted under its
        thread: a stop there cancels it (sessions/stopping.py)."""
        try:
            # Approvers need a public message to click on, which a private answer is not.
            thread = target.public_thread(
                f"{job.id}:request", f"{mention(job.user)} asked to run `{escape(request.command)}`"
            )
            hand_back = HandBack.agent if continues_agent else HandBack.nobody
            pending = self.approvals.ask_command(request, thread.place(), hand_back, why=job.text)
            if continues_agent:
                waits_s = (pending.expires_at - self.approvals.clock()).total_seconds()
                self.watch.board.asked(job.thread, pending.id, waits_s + KEEP_AFTER_EXPIRY_S)
            self.requests.post(thread, pending)
            return True
        except _NOT_ASKED as exc:
            log.error("approval request %s not posted: %s", request.id, exc)
            # Slack's error code helps whoever reads it; Redis's words name hosts, and stay in the log.
            why = f" ({exc.error})" if isinstance(exc, PostFailed) else ""
            target.say(
                f"opsbot could not post the approval request for `{request.command}`{why}, so nothing will "
                "run. If opsbot is not in this channel, `/invite @opsbot`; then ask again.",
                marker=f"{job.id}:note",
                kind=_NOTE_EVENT,
            )
            return False


def _plain(reply: Reply) -> Reply:
    """`reply` as a channel may read it: a failure said without its details (`_tell_operators`)."""
    if reply.fault is None:
        return reply
    return reply.model_copy(update={"text": plain_fault_text(reply.fault, reply.steps)})


def _started(reply: Reply) -> Reply:
    """`reply`, unless the run could not even start for want of its memory: then the job waits
    for Redis rather than being answered "ask again" (nothing ran, so nothing is lost by waiting)."""
    if reply.stop_reason is StopReason.memory_unavailable and not reply.steps:
        raise Deferred(reply.text)
    return reply
