"""A thread's agent session, as Slack shows it: `processing` while a run works (Slack adds its own
Stop button then), `active` once it has answered, `suspended` while a write waits for a person,
`closed` after `reset` (docs.slack.dev/reference/methods/agents.sessions.setStatus).

Slack gives sessions only to apps declared as agents, on workspaces that have them. Elsewhere
the method fails (`unknown_method`, `not_allowed_token_type`, `missing_scope`, ...): the first
such error is remembered per team, in Redis so every process knows it, for `OFF_TTL_S`, and the
method is not called again for that team meanwhile; opsbot then works as before, with a Stop
button of its own on the progress message (progress.py). Errors that say nothing of the team
(Slack busy, this channel or thread) are not remembered. The human-readable progress line stays
where it was (the thread status and streamed steps); a session only carries the lifecycle.
"""

from __future__ import annotations

import logging
import re
from enum import StrEnum
from urllib.error import URLError

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from ....tools.redact import redact_text
from ...redis.client import REDIS_ERRORS, RedisClient
from ..jobs import ThreadRef

log = logging.getLogger("opsbot.slack")

SET_STATUS = "agents.sessions.setStatus"
TITLE_CHARS = 200  # Slack's limit on a session's title
# How long a team's refusal is believed: a workspace whose app is declared an agent later gets
# sessions back within a day, without a restart.
OFF_TTL_S = 24 * 3600
# Errors about this call rather than the team: Slack busy, this channel or thread, these arguments.
_PASSING = frozenset(
    {
        "invalid_arguments",
        "ratelimited",
        "internal_error",
        "fatal_error",
        "service_unavailable",
        "request_timeout",
        "channel_not_found",
        "not_in_channel",
        "is_archived",
        "thread_not_found",
        "message_not_found",
        "invalid_thread_ts",
    }
)
# setStatus's warning when the app does not subscribe to agent_session_stopped: users get no Stop.
NO_STOP_EVENT = "missing_agent_session_stopped_event_subscription"
_SPACE = re.compile(r"\s+")


class SessionStatus(StrEnum):
    processing = "processing"
    active = "active"
    suspended = "suspended"
    closed = "closed"


def session_title(question: str) -> str:
    """A session's title from the question that opened it: redacted, on one line, at most
    TITLE_CHARS (the outbound guard makes what is left plain text, bot/slack/outbound.py)."""
    line = _SPACE.sub(" ", redact_text(question)).strip() or "opsbot"
    return line if len(line) <= TITLE_CHARS else line[: TITLE_CHARS - 1].rstrip() + "…"


class Sessions:
    """agents.sessions.setStatus for opsbot's threads, never raising: a session is a courtesy,
    a run never fails for want of one."""

    def __init__(self, client: WebClient, redis: RedisClient, prefix: str = "opsbot:slack") -> None:
        self.client = client
        self.redis = redis
        self.prefix = prefix
        self._warned = False

    def available(self, team: str) -> bool:
        """Whether `team` may have sessions (no refusal remembered). Redis unreachable: assumed so."""
        try:
            return not self.redis.exists(self._off_key(team, SET_STATUS))
        except REDIS_ERRORS:
            return True

    def set(self, thread: ThreadRef, status: SessionStatus, title: str | None = None) -> bool:
        """Set the thread's session to `status` (created with `title` if it has none): whether
        Slack took it. Not asked at all for a team that refused before."""
        if not self.available(thread.team):
            return False
        try:
            response = self.client.agents_sessions_setStatus(
                channel_id=thread.channel, thread_ts=thread.thread_ts, status=status.value, title=title
            )
        except SlackApiError as exc:
            self._refused(thread, str(exc.response.get("error") or exc.response.status_code))
            return False
        except (URLError, OSError) as exc:
            log.info("session of %s not set to %s: %s", thread.key, status.value, exc)
            return False
        if NO_STOP_EVENT in str(response.get("warning") or "") and not self._warned:
            self._warned = True
            log.warning(
                "Slack says opsbot is not subscribed to agent_session_stopped: people get no Stop button. "
                "Add the event to the app's subscriptions (manifest.json has it)."
            )
        return True

    def _refused(self, thread: ThreadRef, error: str) -> None:
        if error in _PASSING:
            log.info("session of %s not set: %s", thread.key, error)
            return
        log.warning(
            "Slack refused %s for team %s (%s): opsbot shows its own Stop button there and asks again in %d h",
            SET_STATUS,
            thread.team,
            error,
            OFF_TTL_S // 3600,
        )
        try:
            self.redis.set(self._off_key(thread.team, SET_STATUS), error, ex=OFF_TTL_S, nx=True)
        except REDIS_ERRORS:
            pass  # asked again next time, and refused again

    def _off_key(self, team: str, method: str) -> str:
        return f"{self.prefix}:sessions-off:{team}:{method}"
