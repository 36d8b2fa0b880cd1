"""What listeners do before Bolt acks: decide whether a message is for opsbot and queue it in
Redis, deduplicated. Milliseconds: nothing here calls Slack, the model or a tool, so a process
killed at any moment after an ack has left the job in Redis for another."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ...config.policy import Policy
from ...config.settings import SlackSettings
from ...tools.redact import redact_text
from ..agent.prompts import plain_fault_text
from ..commands import USAGE, Builtin, Decision, NotACommand, Question, decide
from ..faults import Fault, Part
from ..memory import Memory, MemoryUnavailable
from ..redis.client import REDIS_ERRORS, lasting
from ..telemetry import metrics
from .delivery import Dispatcher
from .jobs import Job, ThreadRef
from .principals import OUTSIDER
from .sessions import Sessions, SessionStatus, Stopper

log = logging.getLogger("opsbot.slack")

SLASH_USAGE = (
    "`/ops <question>` asks opsbot in a new thread of this channel; mention @opsbot in any thread to ask "
    "there, and write `reset` in a thread to make opsbot forget it, `stop` to give up its run there. "
    "`/ops reset` forgets every opsbot conversation in this channel; `/ops stop` stops the runs you "
    "asked in it.\n```" + USAGE.replace("Anything else is a question for the model.", "").strip() + "```"
)

_STATE_DOWN: tuple[type[Exception], ...] = (*REDIS_ERRORS, MemoryUnavailable)
# Message subtypes that are people writing; every other subtype (edits, deletions, joins, bots) is not.
_WRITTEN = frozenset({None, "thread_broadcast", "file_share"})


@dataclass(frozen=True)
class BotIdentity:
    user_id: str
    bot_id: str
    team_id: str


class Intake:
    """Turns deliveries into queued jobs, durably, before Slack gets its ack: Redis work only.
    Each job carries what its text is, command or question (`can_ask`: there is a model)."""

    def __init__(
        self,
        memory: Memory,
        dispatcher: Dispatcher,
        *,
        identity: BotIdentity,
        settings: SlackSettings,
        thread_ttl_s: int,
        policy: Policy,
        can_ask: bool,
        stopper: Stopper,
        sessions: Sessions,
        later: Callable[[Callable[[], object]], object],
    ) -> None:
        """`stopper` takes `stop`, which cannot wait in the thread's queue behind the run it stops;
        `sessions` closes the sessions a channel's `reset` forgets, on `later`'s thread."""
        self.stopper = stopper
        self.sessions = sessions
        self.later = later
        self.memory = memory
        self.dispatcher = dispatcher
        self.identity = identity
        self.settings = settings
        self.thread_ttl_s = thread_ttl_s
        self.policy = policy
        self.can_ask = can_ask
        self._mention = re.compile(rf"<@{re.escape(identity.user_id)}(?:\|[^>]*)?>")

    def message(
        self, event: dict[str, Any], body: dict[str, Any], acked_if_parked: bool = False, again: bool = False
    ) -> bool:
        """An `app_mention` or `message` event: a queued job when it is addressed to opsbot.

        False when Redis could not take it: the job is parked here meanwhile, and Slack should
        deliver it again (a retry reaching any process is deduplicated against the parked one)
        unless `acked_if_parked` (its last try: this process is then the only one holding it).
        `again`: Slack's retry of a delivery whose ack it did not get in time. The first may have
        been taken and answered, and Redis may have lost its mark since (a restart without
        persistence): the answer is looked for in the thread before the job is worked on."""
        if not self._written_by_someone(event):
            return True
        channel, ts = event.get("channel"), event.get("ts")
        if not isinstance(channel, str) or not isinstance(ts, str):
            log.info("ignored a %s event without channel or ts", event.get("type"))
            return True
        # Threads are the installation's, whoever writes in them (Slack Connect users bring their own team).
        team = body.get("team_id") or self.identity.team_id
        user_team = event.get("user_team") or event.get("team") or team
        thread = ThreadRef(team=team, channel=channel, thread_ts=event.get("thread_ts") or ts)
        text = event.get("text") or ""
        addressed = (
            event.get("type") == "app_mention"
            or self._mention.search(text) is not None
            or event.get("channel_type") == "im"
        )
        if not addressed and not event.get("thread_ts"):
            return True  # channel chatter: not worth a Redis round trip
        said = self._mention.sub("", text).strip() or "help"
        decision = decide(self.policy, said, self.can_ask)
        if decision == Builtin.stop:
            return self.stopper.request(
                thread, event.get("user") or "unknown", user_team, f"message:{ts}", not addressed
            )
        job = Job(
            id=f"{team}:{channel}:{ts}",
            thread=thread,
            user=event.get("user") or event.get("bot_id") or "unknown",
            user_team=user_team,
            text=said,
            decision=decision,
            ts=ts,
            resumed=again,
        )
        active_ttl_s = self.thread_ttl_s
        if not self._member(user_team):
            if not addressed:
                return True
            job, active_ttl_s = job.model_copy(update={"kind": "refusal", "text": OUTSIDER}), 0
        # The mention and its `message` twin share the message's ts: whichever comes first is the one.
        delivery = f"message:{ts}"
        try:
            self.dispatcher.accept(job, delivery, active_ttl_s, require_active=not addressed)
        except REDIS_ERRORS as exc:
            metrics.redis_error("slack_intake")
            log.warning("Redis cannot take message %s (%s); held here until it can", job.id, exc)
            self.dispatcher.park(job, delivery, active_ttl_s, require_active=not addressed, acked=acked_if_parked)
            return False
        return True

    def command(self, command: dict[str, Any]) -> str | None:
        """`/ops ...`: what the ack says (privately), or None when the job is queued and says the rest."""
        text = (command.get("text") or "").strip()
        team, channel, user = command.get("team_id"), command.get("channel_id"), command.get("user_id")
        if not (isinstance(team, str) and isinstance(channel, str) and isinstance(user, str)):
            log.info("ignored a slash command without team, channel or user")
            return None
        trigger = command.get("trigger_id") or f"{team}:{channel}:{user}:{text}"
        decision = decide(self.policy, text or "help", self.can_ask)
        slip = _slip(decision)
        if slip is not None:
            return f"{slip.why}\n{SLASH_USAGE}"
        # Help needs nothing, not even Redis: it answers every time, replays included.
        if decision == Builtin.help:
            return SLASH_USAGE
        user_team = command.get("user_team_id") or team
        if decision == Builtin.stop:
            try:
                return self.stopper.request_channel(team, channel, user, user_team, f"command:{trigger}")
            except REDIS_ERRORS as exc:
                metrics.redis_error("slack_intake")
                return _redis_down(exc)
        if not self._member(user_team):
            return OUTSIDER
        job = Job(
            id=f"command:{trigger}",
            thread=ThreadRef(team=team, channel=channel, thread_ts=f"command-{trigger}"),
            user=user,
            user_team=user_team,
            text=text,
            decision=decision,
            response_url=command.get("response_url"),
        )
        try:
            if decision == Builtin.reset:
                forgotten = self.memory.forget_all(f"slack:{team}:{channel}:")
                self.later(lambda: self._close_sessions(forgotten))
                return f"Forgot {len(forgotten)} opsbot conversation(s) in this channel."
            self.dispatcher.accept(job, "command")
        except _STATE_DOWN as exc:
            metrics.redis_error("slack_intake")
            return _redis_down(exc)
        return None

    def _close_sessions(self, threads: list[str]) -> None:
        """The agent sessions of the threads a channel's `reset` forgot, closed as a thread's own
        `reset` closes its (a `/ops` question's thread without a Slack thread has none)."""
        for key in threads:
            thread = ThreadRef.from_key(key)
            if thread is not None:
                self.sessions.set(thread, SessionStatus.closed)

    def _member(self, team: str) -> bool:
        """Whether people of `team` may use opsbot: its own workspace's, and `slack.allowed_teams`."""
        return team == self.identity.team_id or team in self.settings.allowed_teams

    def _written_by_someone(self, event: dict[str, Any]) -> bool:
        """A person's new message, or an allowed bot's; never opsbot's own, an edit or a join."""
        if event.get("subtype") not in _WRITTEN:
            if not (event.get("subtype") == "bot_message" and event.get("bot_id") in self.settings.allowed_bots):
                return False
        if event.get("user") == self.identity.user_id or event.get("bot_id") == self.identity.bot_id:
            return False
        bot = event.get("bot_id")
        return bot is None or bot in self.settings.allowed_bots


def _slip(decision: Decision) -> NotACommand | None:
    """`help`, `reset` or `stop` with more words after it. /ops answers them in the ack (its reset
    forgets the whole channel, its stop gives runs up), so one written with more words is refused
    there, never asked as a question."""
    near = decision.almost if isinstance(decision, Question) else decision
    return near if isinstance(near, NotACommand) and near.name in (Builtin.help, Builtin.reset, Builtin.stop) else None


def _redis_down(exc: Exception) -> str:
    """What the /ops ack says when Redis failed: plainly, the details in the log. This process
    reached Redis when it started, so a refused connection now is a restart, worth trying again."""
    if isinstance(exc, MemoryUnavailable):
        fault = exc.fault
    else:
        fault = Fault(part=Part.redis, lasting=lasting(exc, answered_before=True), detail=str(exc))
    log.warning("a /ops command could not be queued: %s", redact_text(fault.detail))
    return plain_fault_text(fault, [])
