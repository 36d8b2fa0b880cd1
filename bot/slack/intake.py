"""What listeners do before Bolt acks: decide whether a message is for opsbot, drop duplicates,
and hand a job to the dispatcher. Milliseconds; nothing here waits for the model or a tool."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import redis
from slack_bolt import Respond
from slack_sdk import WebClient

from bot.commands import USAGE, NotACommand, parse_command
from bot.loop import Agent
from bot.memory import MemoryUnavailable
from bot.slack.blocks import escape, mention
from bot.slack.delivery import Dispatcher
from bot.slack.jobs import Job, ThreadRef
from bot.slack.posting import PostFailed, post_once
from bot.slack.principals import Directory
from bot.slack.state import SlackState
from config.policy import Policy
from config.settings import SlackSettings
from tools.redact import redact_text

SLASH_USAGE = (
    "`/ops <question>` asks opsbot in a new thread of this channel; mention @opsbot in any thread to ask "
    "there, and write `reset` in a thread to make opsbot forget it. `/ops reset` forgets every opsbot "
    "conversation in this channel.\n```"
    + USAGE.replace("Anything else is a question for the model.", "").strip()
    + "```"
)

# Message subtypes that are people writing; every other subtype (edits, deletions, joins, bots) is not.
_WRITTEN = frozenset({None, "thread_broadcast", "file_share"})
# Slack errors meaning opsbot may not post in the channel, so it answers privately instead.
_CANNOT_POST = frozenset({"not_in_channel", "channel_not_found", "is_archived", "restricted_action"})


@dataclass(frozen=True)
class BotIdentity:
    user_id: str
    bot_id: str
    team_id: str


class Intake:
    def __init__(
        self,
        agent: Agent,
        client: WebClient,
        policy: Policy,
        state: SlackState,
        dispatcher: Dispatcher,
        directory: Directory,
        identity: BotIdentity,
        settings: SlackSettings,
        thread_ttl_s: int,
    ) -> None:
        self.agent = agent
        self.client = client
        self.policy = policy
        self.state = state
        self.dispatcher = dispatcher
        self.directory = directory
        self.identity = identity
        self.settings = settings
        self.thread_ttl_s = thread_ttl_s
        self._mention = re.compile(rf"<@{re.escape(identity.user_id)}(?:\|[^>]*)?>")

    def message(self, event: dict[str, Any], body: dict[str, Any]) -> None:
        """An `app_mention` or `message` event: a job when it is addressed to opsbot."""
        if not self._written_by_someone(event):
            return
        # Threads are the installation's, whoever writes in them (Slack Connect users bring their own team).
        team = body.get("team_id") or self.identity.team_id
        user_team = event.get("user_team") or event.get("team") or team
        channel, ts = event["channel"], event["ts"]
        thread = ThreadRef(team=team, channel=channel, thread_ts=event.get("thread_ts") or ts)
        text = event.get("text") or ""
        addressed = (
            event.get("type") == "app_mention"
            or self._mention.search(text) is not None
            or event.get("channel_type") == "im"
        )
        if not addressed and not event.get("thread_ts"):
            return  # channel chatter: not worth a Redis round trip
        user = event.get("user") or event.get("bot_id") or "unknown"
        job = Job(
            id=f"{team}:{channel}:{ts}",
            thread=thread,
            user=user,
            text=self._mention.sub("", text).strip() or "help",
            principal=self.directory.principal(user, user_team, channel),
            ts=ts,
        )
        keys = [f"message:{team}:{channel}:{ts}", *([f"event:{body['event_id']}"] if body.get("event_id") else [])]
        try:
            if not (addressed or (event.get("thread_ts") and self.state.is_active(thread))):
                return
            if not self.state.first_delivery(keys, self.settings.dedupe_ttl_s):
                return
            if not self._member(user_team):
                if addressed:
                    self.dispatcher.refuse(job, self._outsider())
                return
            first = not self.state.is_active(thread)
            self.state.mark_active(thread, self.thread_ttl_s)
            self.dispatcher.submit(job.model_copy(update={"first_in_thread": first}))
        except redis.RedisError as exc:
            if addressed:
                self.dispatcher.refuse(job, _redis_down(exc))

    def command(self, command: dict[str, Any], respond: Respond) -> None:
        """`/ops ...`: help and reset at once; everything else as a job."""
        text = (command.get("text") or "").strip()
        team, channel, user = command["team_id"], command["channel_id"], command["user_id"]
        trigger = command.get("trigger_id") or f"{team}:{channel}:{user}:{text}"
        word = text.split()[0].lower() if text else "help"
        # Help needs nothing, not even Redis: it answers every time, replays included.
        if word in ("help", "reset") and len(text.split()) > 1:
            respond(f"`{word}` takes no arguments.\n{SLASH_USAGE}", response_type="ephemeral")
            return
        if word == "help":
            respond(SLASH_USAGE, response_type="ephemeral")
            return
        if not self._member(command.get("user_team_id") or team):
            respond(self._outsider(), response_type="ephemeral")
            return
        try:
            if not self.state.first_delivery([f"command:{trigger}"], self.settings.dedupe_ttl_s):
                return
            if word == "reset":
                forgotten = self.agent.memory.forget_all(f"slack:{team}:{channel}:")
                respond(f"Forgot {forgotten} opsbot conversation(s) in this channel.", response_type="ephemeral")
            else:
                self._command_job(team, channel, user, text, trigger, command.get("response_url"), respond)
        except (redis.RedisError, MemoryUnavailable) as exc:
            respond(_redis_down(exc), response_type="ephemeral")

    def _command_job(
        self, team: str, channel: str, user: str, text: str, trigger: str, response_url: str | None, respond: Respond
    ) -> None:
        principal = self.directory.principal(user, team, channel)
        private = Job(
            id=f"command:{trigger}",
            thread=ThreadRef(team=team, channel=channel, thread_ts=f"command-{trigger}"),
            user=user,
            text=text,
            principal=principal,
            response_url=response_url,
        )
        if self._is_direct_command(text):
            self.dispatcher.submit(private)
            return
        try:
            root = post_once(
                self.client,
                channel,
                None,
                f"command:{trigger}:question",
                f"{mention(user)} asked: {escape(redact_text(text))}",
                kind="opsbot_question",
            )
        except PostFailed as exc:
            if exc.error not in _CANNOT_POST:
                respond(
                    f"Slack refused opsbot's post ({exc.error}); nothing was run. Try again in a minute.",
                    response_type="ephemeral",
                )
                return
            respond(
                "I cannot post in this channel (invite me with `/invite @opsbot` to answer in a thread here), "
                "so only you will see my answer.",
                response_type="ephemeral",
            )
            self.dispatcher.submit(private)
            return
        thread = ThreadRef(team=team, channel=channel, thread_ts=root)
        self.state.mark_active(thread, self.thread_ttl_s)
        self.dispatcher.submit(private.model_copy(update={"thread": thread, "ts": root, "response_url": None}))

    def _is_direct_command(self, text: str) -> bool:
        parsed = parse_command(self.policy, text)
        return parsed is not None and not (isinstance(parsed, NotACommand) and self.agent.model is not None)

    def _member(self, team: str) -> bool:
        """Whether people of `team` may use opsbot: its own workspace's, and `slack.allowed_teams`."""
        return team == self.identity.team_id or team in self.settings.allowed_teams

    def _outsider(self) -> str:
        return (
            "opsbot only works for members of its own workspace; ask its maintainers to add your team "
            "to `slack.allowed_teams`."
        )

    def _written_by_someone(self, event: dict[str, Any]) -> bool:
        """A person's new message, or an allowed bot's; never opsbot's own, an edit or a join."""
        if event.get("subtype") not in _WRITTEN:
            if not (event.get("subtype") == "bot_message" and event.get("bot_id") in self.settings.allowed_bots):
                return False
        if event.get("user") == self.identity.user_id or event.get("bot_id") == self.identity.bot_id:
            return False
        bot = event.get("bot_id")
        return bot is None or bot in self.settings.allowed_bots


def _redis_down(exc: Exception) -> str:
    return f"opsbot cannot reach its Redis ({exc}); nothing was run. Try again in a minute."
