"""What crosses from a Slack listener to a worker: one job per message, stored in Redis while it waits."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ...config.policy import Principal
from ..commands import Decision, Question

_TS = re.compile(r"\d+\.\d+")  # a Slack message's ts


class ThreadRef(BaseModel):
    """A Slack thread: where a conversation lives and where its answers go."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    team: str
    channel: str
    thread_ts: str = Field(description="ts of the thread's root message")

    @classmethod
    def of(cls, place: Mapping[str, str]) -> ThreadRef:
        """The thread named in a place (a run's origin, an approval request's place), which may
        say more than where it is."""
        return cls(team=place["team"], channel=place["channel"], thread_ts=place["thread_ts"])

    @classmethod
    def from_key(cls, key: str) -> ThreadRef | None:
        """The Slack thread a memory key names (`key` undone), or None for one that is no Slack
        thread's (a `/ops` question's, whose `thread_ts` is no message's ts)."""
        platform, _, rest = key.partition(":")
        team, _, rest = rest.partition(":")
        channel, _, thread_ts = rest.partition(":")
        if platform != "slack" or not (team and channel and _TS.fullmatch(thread_ts)):
            return None
        return cls(team=team, channel=channel, thread_ts=thread_ts)

    def place(self) -> dict[str, str]:
        """The thread as a place (a run's origin, an approval request's): where it is, and its key,
        which audit records name."""
        return {"team": self.team, "channel": self.channel, "thread_ts": self.thread_ts, "thread": self.key}

    @property
    def has_root(self) -> bool:
        """Whether the thread is one of the channel's: a `/ops` reply only its asker sees has none
        (its thread_ts names the command, intake.py)."""
        return bool(_TS.fullmatch(self.thread_ts))

    @property
    def link(self) -> str:
        """The thread for people (the channel, for a thread that has no root message): Slack opens
        it in the workspace of whoever follows the link."""
        channel = f"https://slack.com/archives/{self.channel}"
        return f"{channel}/p{self.thread_ts.replace('.', '')}" if self.has_root else channel

    @property
    def key(self) -> str:
        """The thread key memory uses: team + channel + thread root."""
        return f"slack:{self.team}:{self.channel}:{self.thread_ts}"


class Job(BaseModel):
    """One piece of work for a thread, answered exactly once.

    `question`: a person's message (direct command or question for the model, as `decision` says).
    `continuation`: the outcome of an approval, told to the model so the conversation goes on from
    it. `refusal`: why a message is not worked on, posted in its turn so it never comes before
    answers to earlier ones."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(description="unique per delivery; marks the answer so a retried post is found, not repeated")
    kind: Literal["question", "continuation", "refusal"] = "question"
    thread: ThreadRef
    user: str
    text: str
    decision: Decision = Field(
        default_factory=Question, description="command or question, decided once where the text came in"
    )
    principal: Principal | None = Field(
        default=None, description="who asks; None for a Slack user, looked up when the job is worked on"
    )
    user_team: str | None = Field(default=None, description="the user's own team (Slack Connect brings others)")
    ts: str = Field(default="", description="the message's own ts (the thread root's for a new thread)")
    first_in_thread: bool = Field(default=False, description="opsbot's first message here: read the thread first")
    resumed: bool = Field(
        default=False,
        description="an earlier attempt may have answered it (taken over from a process that died while working "
        "on it, or delivered again by Slack): looked for before it is answered",
    )
    response_url: str | None = Field(
        default=None, description="answer privately here: opsbot cannot post in the channel"
    )
