"""The audit trail a security reviewer reads: every tool call (who asked, in which thread, the
tool, its arguments as redacted, the result's status), every approval request and decision, every
write command run, the alerts that fired and resolved (a handoff tells them all, in order), the
feedback people give on answers (who, positive or negative, the run, the thread), who stopped a
run in Slack (Stop, `stop`, `/ops stop`), and every run of the loop as it ended (who asked what,
where, and why it stopped: Slack's Home tab lists a person's own).
One JSON record each, on the `opsbot.audit` logger (wherever the deployment ships its logs), and,
with Redis, in one stream kept for `audit.ttl_s`, which `opsbot audit` reads back.

Arguments and argv are redacted before they are recorded: the trail must not become the place a
secret someone pasted is kept. Recording never fails the work it records: a Redis error is
logged (the record is in the log line already) and the work goes on.
"""

from __future__ import annotations

import json
import logging
import shlex
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal, Protocol, cast

from pydantic import BaseModel, ConfigDict, Field

from ...config.policy import Principal
from ...tools.redact import redact, redact_text

if TYPE_CHECKING:
    from ..redis.client import RedisClient

log = logging.getLogger("opsbot.audit")

Kind = Literal[
    "tool_call",
    "approval_requested",
    "approval_decided",
    "write_run",
    "alert_fired",
    "alert_resolved",
    "feedback",
    "run_finished",
    "run_stopped",
]
# What a run's record keeps of its question: enough to know it again.
QUESTION_CHARS = 300
STREAM = "opsbot:audit"


class AuditRecord(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    kind: Kind
    who: str | None = Field(default=None, description="platform:user of whoever asked or decided")
    thread: str | None = Field(default=None, description="the conversation's thread key, or the run's origin")
    run: str | None = Field(
        default=None,
        description="the run: a runbook's, for its steps and requests; the loop's, for its tool calls, its end "
        "and the feedback on its answer",
    )
    tool: str | None = None
    args: Any = Field(default=None, description="as redacted")
    status: str | None = Field(
        default=None, description="a call's status; a decision's verdict; feedback's value (positive, negative)"
    )
    request: str | None = Field(default=None, description="the approval request")
    argv: list[str] | None = Field(default=None, description="a write command's argv, as redacted")
    link: str | None = Field(default=None, description="where it happened, for people: the thread of an answer")

    def line(self) -> str:
        """The record as one line for people: when, what, who, where, and how it went."""
        parts = [self.at.strftime("%Y-%m-%dT%H:%M:%SZ"), self.kind, self.who or "-"]
        parts += [f"{name}={value}" for name, value in (("thread", self.thread), ("run", self.run)) if value]
        if self.tool:
            args = "" if self.args is None else f"({json.dumps(self.args, ensure_ascii=False, sort_keys=True)})"
            parts.append(self.tool + args)
        if self.argv:
            parts.append(shlex.join(self.argv))
        if self.request:
            parts.append(f"request={self.request}")
        if self.status:
            parts.append(f"-> {self.status}")
        if self.link:
            parts.append(self.link)
        return " ".join(parts)

    @classmethod
    def made(cls, kind: Kind, **fields: Any) -> AuditRecord:
        """A record with its arguments and argv redacted."""
        for name in ("args", "argv"):
            if fields.get(name) is not None:
                fields[name] = redact(fields[name])
        return cls(kind=kind, **fields)


def run_finished(principal: Principal | None, thread: str, run: str, question: str, stop_reason: str) -> AuditRecord:
    """The record of one run of the loop as it ended: its question kept redacted and cut (after
    redaction, so a secret cut in half is still found by its shape)."""
    asked = redact_text(question)
    if len(asked) > QUESTION_CHARS:
        asked = asked[: QUESTION_CHARS - 1] + "…"
    return AuditRecord.made(
        "run_finished", who=who(principal), thread=thread, run=run, status=stop_reason, args={"question": asked}
    )


def who(principal: Principal | None) -> str | None:
    """platform:user, as records name people (None: nobody in particular asked)."""
    return f"{principal.platform}:{principal.user}" if principal is not None else None


def negative_feedback(records: Iterable[AuditRecord]) -> list[AuditRecord]:
    """The feedback that stands negative, newest first: of each person's feedback records on each
    run's answer (read oldest first), the last, if it is negative (a change of mind replaces it)."""
    latest: dict[tuple[str | None, str | None], AuditRecord] = {}
    for record in records:
        if record.kind == "feedback":
            latest.pop((record.who, record.run), None)  # re-added: the dict keeps the order of the last
            latest[(record.who, record.run)] = record
    return [record for record in reversed(latest.values()) if record.status == "negative"]


class Audit(Protocol):
    def record(self, entry: AuditRecord) -> None: ...


class LoggedAudit:
    """Records on the `opsbot.audit` logger only (the terminal, and where there is no Redis)."""

    def record(self, entry: AuditRecord) -> None:
        if log.isEnabledFor(logging.INFO):
            log.info(entry.model_dump_json(exclude_none=True))


class AuditReader(Protocol):
    """A trail that can be read back: the handoff and incident records are built from it."""

    def read(self, since: float | None = None, thread: str | None = None) -> Iterator[AuditRecord]: ...


class InProcessAudit(LoggedAudit):
    """Records logged and also kept in this process, the newest `keep`: the terminal's trail,
    which `handoff` and incident records read as they read Redis's."""

    def __init__(self, keep: int = 10_000) -> None:
        self.kept: deque[AuditRecord] = deque(maxlen=keep)

    def record(self, entry: AuditRecord) -> None:
        super().record(entry)
        self.kept.append(entry)

    def read(self, since: float | None = None, thread: str | None = None) -> Iterator[AuditRecord]:
        for entry in list(self.kept):
            if (since is None or entry.at.timestamp() >= since) and (thread is None or entry.thread == thread):
                yield entry

    def newest(self, since: float) -> Iterator[AuditRecord]:
        """Records since `since` (epoch seconds), newest first."""
        for entry in reversed(list(self.kept)):
            if entry.at.timestamp() < since:
                return
            yield entry


class RedisAudit(LoggedAudit):
    """Records logged and also kept in one Redis stream, trimmed to `ttl_s` as each is added."""

    def __init__(self, redis: RedisClient, ttl_s: float, clock: Callable[[], float] = time.time) -> None:
        self.redis = redis
        self.ttl_s = ttl_s
        self.clock = clock

    def record(self, entry: AuditRecord) -> None:
        from ..redis.client import REDIS_ERRORS

        super().record(entry)
        oldest = int((self.clock() - self.ttl_s) * 1000)
        try:
            # MINID trims what is older than the ttl (Redis 6.2): the stream never outlives it.
            self.redis.xadd(STREAM, {"json": entry.model_dump_json(exclude_none=True)}, minid=oldest, approximate=False)
            self.redis.pexpire(STREAM, int(self.ttl_s * 1000))
        except REDIS_ERRORS as exc:
            log.warning("audit record not kept in Redis (it is in this log): %s", exc)

    def read(self, since: float | None = None, thread: str | None = None) -> Iterator[AuditRecord]:
        """Records kept, oldest first: those since `since` (epoch seconds), of `thread` only."""
        start = "-" if since is None else str(int(since * 1000))
        # redis-py's stub allows None for a stream read; XRANGE always answers a list.
        kept = cast(list[tuple[Any, dict[Any, Any]]], self.redis.xrange(STREAM, min=start))
        for _id, fields in kept:
            entry = _entry(fields)
            if thread is None or entry.thread == thread:
                yield entry

    def newest(self, since: float, page: int = 200) -> Iterator[AuditRecord]:
        """Records since `since` (epoch seconds), newest first, read a page at a time: a reader
        after the latest few reads a few pages, however long the trail."""
        end, oldest = "+", str(int(since * 1000))
        while True:
            kept = cast(list[tuple[Any, dict[Any, Any]]], self.redis.xrevrange(STREAM, max=end, min=oldest, count=page))
            for _id, fields in kept:
                yield _entry(fields)
            if len(kept) < page:
                return
            end = f"({_text(kept[-1][0])}"  # exclusive: the next page starts below the last id read


def _entry(fields: dict[Any, Any]) -> AuditRecord:
    # A client passed in may or may not decode responses.
    return AuditRecord.model_validate_json(fields.get(b"json") or fields["json"])


def _text(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else value
