"""What one person's Home tab shows, read for them as it is published: the approval requests
they may decide now, their own recent runs, what they may use (usable.py), and whether the
model and Redis answer. Each part read from Redis that cannot be read says so, and the rest is
still shown: a Home tab is where someone looks when things are broken.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from itertools import islice
from typing import Protocol

from pydantic import BaseModel, ConfigDict

from ....config.policy import Policy, Principal
from ...approvals import Approvals, ApprovalsUnavailable, Pending
from ...llm import ModelHealth
from ...redis.client import REDIS_ERRORS
from ...runbooks import RunStoreUnavailable
from ...telemetry.audit import AuditRecord
from . import usable
from .usable import Usable

log = logging.getLogger("opsbot.slack")

RUNS_SHOWN = 10
RUNS_SINCE_S = 7 * 24 * 3600  # a week of a person's runs, the newest RUNS_SHOWN of them
# Records read looking for a person's runs: the newest of a busy trail, not all of it.
RECORDS_READ = 5_000
UNREADABLE = "cannot be read now: opsbot's Redis does not answer"


class Run(BaseModel):
    """One of the person's runs, as the audit trail recorded its end."""

    model_config = ConfigDict(frozen=True)

    at: datetime
    question: str
    stop_reason: str
    thread: str


class Health(BaseModel):
    model_config = ConfigDict(frozen=True)

    model: ModelHealth
    redis: bool


class HomeContents(BaseModel):
    model_config = ConfigDict(frozen=True)

    user: str
    waiting: list[Pending] | None  # None: the requests could not be read
    runs: list[Run] | None  # None: the trail could not be read
    services: list[Usable]
    commands: list[Usable]
    runbooks: list[Usable]
    health: Health
    notice: str = ""  # what the person's last click on this tab came to


class Trail(Protocol):
    """The audit trail read newest first (bot/telemetry/audit.py RedisAudit)."""

    def newest(self, since: float) -> Iterator[AuditRecord]: ...


class Contents:
    """Reads what a Home tab shows, for one person at a time."""

    def __init__(
        self,
        *,
        policy: Policy,
        approvals: Approvals,
        trail: Trail,
        model: Callable[[], ModelHealth],
        redis: Callable[[], bool],
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.policy = policy
        self.approvals = approvals
        self.trail = trail
        self.model = model
        self.redis = redis
        self.clock = clock

    def of(self, person: Principal, notice: str = "") -> HomeContents:
        """`person` as they are anywhere (no channel): what their Home tab shows."""
        return HomeContents(
            user=person.user,
            waiting=self._waiting(person),
            runs=self._runs(person),
            services=usable.services(self.policy, person),
            commands=usable.commands(self.policy, person),
            runbooks=usable.runbooks(self.policy, person),
            health=Health(model=self.model(), redis=self.redis()),
            notice=notice,
        )

    def _waiting(self, person: Principal) -> list[Pending] | None:
        """The requests `person` may approve now, judged as a click of theirs would be in the
        request's own channel (a policy may limit approvers to channels)."""
        try:
            return self.approvals.open_to(lambda p: where_asked(person, p))
        except (ApprovalsUnavailable, RunStoreUnavailable) as exc:  # a runbook's request asks its run
            log.warning("Home tab of %s: approval requests %s (%s)", person.user, UNREADABLE, exc)
            return None

    def _runs(self, person: Principal) -> list[Run] | None:
        asker = f"{person.platform}:{person.user}"
        try:
            records = islice(self.trail.newest(self.clock() - RUNS_SINCE_S), RECORDS_READ)
            mine = (r for r in records if r.kind == "run_finished" and r.who == asker and r.thread)
            return [_run(r) for r in islice(mine, RUNS_SHOWN)]
        except REDIS_ERRORS as exc:
            log.warning("Home tab of %s: runs %s (%s)", person.user, UNREADABLE, exc)
            return None


def where_asked(person: Principal, pending: Pending) -> Principal:
    """`person` as their click on `pending`'s own message would make them: in its channel."""
    return person.model_copy(update={"channel": pending.place.get("channel")})


def _run(record: AuditRecord) -> Run:
    asked = record.args.get("question") if isinstance(record.args, dict) else None
    return Run(at=record.at, question=str(asked or ""), stop_reason=record.status or "?", thread=record.thread or "")
