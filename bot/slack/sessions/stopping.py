"""A person stopping opsbot's work in a thread, however they asked: Slack's own Stop button
(`agent_session_stopped`), opsbot's Stop button on its progress message, `stop` written in the
thread, or `/ops stop` in the channel (the runs they asked there: Slack sends no slash command
from a thread).

`request` runs where the request arrives, before Slack's ack: one Redis script (runs.py) marks
the run stopped, once, whichever process runs it; the process running it gives it up (watch.py)
and its answer says who stopped it. The rest happens off the ack path (`settle`): the thread's
pending approval requests are cancelled through the approvals service, their buttons replaced;
and when nothing was running, the person is told so (and the session moved out of `processing`,
where Slack may still show it).

Who may stop: anyone of opsbot's own workspace (and `slack.allowed_teams`), as anyone there may
read the thread. Stopping runs nothing; the stopper is named where the run's answer confirms it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from ....config.policy import Principal
from ...approvals import ApprovalsUnavailable
from ...redis.client import REDIS_ERRORS
from ...telemetry import metrics
from ...telemetry.audit import Audit, AuditRecord
from ..approval_requests import SlackRequests
from ..blocks import mention
from ..jobs import ThreadRef
from ..posting import PostFailed, post_once, tell
from .runs import RunBoard, Stop, StopRequest
from .status import Sessions, SessionStatus
from .watch import StopWatch

log = logging.getLogger("opsbot.slack")

_NOT_CANCELLED: tuple[type[Exception], ...] = (ApprovalsUnavailable, *REDIS_ERRORS)

STOP_NOTE_EVENT = "opsbot_stopped"  # the message confirming a stop that found no run working
NOT_A_MEMBER = "Only members of opsbot's own workspace may stop its work."
ALREADY_STOPPING = "opsbot is stopping this run already."
NOTHING_RUNNING = "Nothing to stop here: opsbot's last run in this thread had already ended."


def cancelled_line(user: str) -> str:
    """What a request's message says once a stop cancelled it."""
    return f"⏹ Cancelled: {mention(user)} stopped the run that asked for it; nothing was run."


def stopped_line(user: str) -> str:
    """The first words of a stopped run's answer: who stopped it."""
    return f"⏹ Stopped by {mention(user)}."


class Stopper:
    def __init__(
        self,
        board: RunBoard,
        watch: StopWatch,
        *,
        requests: SlackRequests,
        sessions: Sessions,
        teams: frozenset[str],
        later: Callable[[Callable[[], object]], object],
        audit: Audit,
    ) -> None:
        """`requests` shows (and cancels) approval requests; `later` runs work off the ack path
        (Slack calls); `teams`: whose people may stop; `audit` records who stopped a run."""
        self.board = board
        self.watch = watch
        self.requests = requests
        self.client = requests.client
        self.sessions = sessions
        self.teams = teams
        self.later = later
        self.audit = audit

    def request(self, thread: ThreadRef, user: str, user_team: str | None, delivery: str, quiet: bool = False) -> bool:
        """Stop whatever opsbot works on in `thread`, for `user`. Redis only: fit for the ack
        path. False when Redis cannot take it (Slack should deliver it again). `quiet`: the person
        did not address opsbot (`stop` in a thread, unmentioned), so finding nothing says nothing."""
        if (user_team or thread.team) not in self.teams:
            self.later(lambda: tell(self.client, thread.channel, user, NOT_A_MEMBER, thread_ts=thread.thread_ts))
            return True
        try:
            found = self.board.stop(thread, user, delivery)
        except REDIS_ERRORS as exc:
            metrics.redis_error("slack_stops")
            log.warning("a stop in %s could not be marked: %s", thread.key, exc)
            return False
        log.info("stop in %s by %s: %s %s", thread.key, user, found.outcome.value, found.run)
        if found.outcome is Stop.seen:
            return True
        metrics.stop(found.outcome.value)
        if found.outcome is Stop.first:
            self.watch.stopped(found.run, user)  # at once, when the run is this process's
            stopped = AuditRecord.made("run_stopped", who=f"slack:{user}", thread=thread.key, args={"job": found.run})
            self.audit.record(stopped)
        self.later(lambda: self.settle(thread, user, delivery, found, quiet))
        return True

    def request_channel(self, team: str, channel: str, user: str, user_team: str | None, delivery: str) -> str:
        """`/ops stop`: stop the runs `user` asked that work in the channel now; what the ack says.
        Raises one of REDIS_ERRORS."""
        if (user_team or team) not in self.teams:
            return NOT_A_MEMBER
        theirs = [entry for entry in self.board.working(team, channel) if entry.user == user]
        stopped = [e for e in theirs if self.request(e.thread, user, user_team, f"{delivery}:{e.thread.thread_ts}")]
        if not stopped:
            return "Nothing you asked is running in this channel. To stop a run in a thread, write `stop` there."
        return f"Stopping {len(stopped)} run(s) you asked in this channel; each says so in its thread."

    def settle(self, thread: ThreadRef, user: str, delivery: str, found: StopRequest, quiet: bool = False) -> None:
        """Off the ack path: the thread's pending requests cancelled, and the person told what the
        stop found when its run's answer will not say it."""
        cancelled = self._cancel_requests(thread, user)
        if found.outcome is Stop.first:
            return  # the run's answer says who stopped it, and its session moves on then
        if found.outcome is Stop.again:
            tell(self.client, thread.channel, user, ALREADY_STOPPING, thread_ts=thread.thread_ts)
            return
        if quiet and not cancelled:
            return
        self.sessions.set(thread, SessionStatus.active)
        if not cancelled:
            tell(self.client, thread.channel, user, NOTHING_RUNNING, thread_ts=thread.thread_ts)
            return
        said = f"{stopped_line(user)} {cancelled} approval request(s) cancelled; nothing was running."
        try:
            post_once(self.client, thread.channel, thread.thread_ts, f"stop:{delivery}", said, kind=STOP_NOTE_EVENT)
        except PostFailed as exc:
            log.error("the stop in %s was not confirmed: %s", thread.key, exc.error)

    def _cancel_requests(self, thread: ThreadRef, user: str) -> int:
        """Cancel the thread's requests nobody decided yet, each message's buttons replaced; how many."""
        by = Principal(platform="slack", user=user, team=thread.team, channel=thread.channel)
        try:
            asked = self.board.take_asked(thread)
            return sum(self.requests.cancel(request, by, cancelled_line(user)) for request in asked)
        except _NOT_CANCELLED as exc:
            log.error("approval requests in %s not cancelled: %s", thread.key, exc)
            return 0
