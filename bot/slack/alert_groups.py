"""Alert groups in Redis: the alerts one Slack message stands for, the runbook runs they started,
and the alerts that started none, so the message can be drawn again from what is stored.

A group is Alertmanager's (its groupKey: what the route's `group_by` makes one notification) or
one PagerDuty incident. Its message is posted once per generation: when every alert of a group
has resolved the generation ends (its state is dropped and the counter in post markers and run
ids moves on), and the group's next firing alert starts a new message.

Runs are deduplicated by what they would do: one run per (runbook, parameters) in a generation,
whichever of the group's alerts asks for it, and at most `max_runs` distinct ones per group. Each
step that decides (`claim_run`) is one Lua script, so two processes handling alerts of one group
never start the same run twice or pass the bound between them.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from ..alerts import Alert
from ..redis.client import RedisClient
from .jobs import ThreadRef

GROUP_TTL_S = 7 * 24 * 3600

_CLAIM = """
if redis.call('sismember', KEYS[1], ARGV[1]) == 1 then
  redis.call('sadd', KEYS[2], ARGV[2])
  return 'known'
end
if redis.call('scard', KEYS[1]) >= tonumber(ARGV[3]) then return 'over' end
redis.call('sadd', KEYS[1], ARGV[1])
redis.call('sadd', KEYS[2], ARGV[2])
redis.call('hset', KEYS[3], ARGV[1], ARGV[4])
for i = 1, 3 do redis.call('expire', KEYS[i], ARGV[5]) end
return 'new'
"""


class Claim(Enum):
    new = "new"  # this alert starts the run
    known = "known"  # the run was started by another alert of the group: this one joins it
    over = "over"  # the group has started max_runs distinct runs already


@dataclass(frozen=True)
class Member:
    key: str
    labels: dict[str, str]
    status: str  # firing, resolved, or "resolved before it was handled"


@dataclass(frozen=True)
class RunView:
    id: str
    runbook: str
    params: dict[str, str]
    alerts: int


@dataclass(frozen=True, kw_only=True)
class GroupView:
    """What the group's message shows."""

    first: Alert  # the alert that opened the message: its title, annotations and link
    labels: dict[str, str]  # the group's labels (what group_by names)
    members: list[Member] = field(default_factory=list)
    runs: list[RunView] = field(default_factory=list)
    not_run: dict[str, str] = field(default_factory=dict)  # alert key -> why no run started for it

    @property
    def resolved(self) -> bool:
        return bool(self.members) and all(m.status != "firing" for m in self.members)


class AlertGroups:
    def __init__(self, client: RedisClient, prefix: str) -> None:
        self.redis = client
        self.prefix = prefix
        self._claim = client.register_script(_CLAIM)

    def generation(self, alert: Alert) -> str:
        """The group's current generation: a new one begins after every alert of it resolved."""
        return str(self.redis.get(self._key(alert, "generation")) or "0")

    def message(self, alert: Alert) -> ThreadRef | None:
        raw = self.redis.get(self._key(alert, "message"))
        return ThreadRef.model_validate_json(str(raw)) if raw else None

    def open(self, alert: Alert) -> None:
        """`alert` opens the group's message unless another alert of it did: its title,
        annotations and link are what the message shows."""
        self.redis.set(self._key(alert, "first"), alert.model_dump_json(), ex=GROUP_TTL_S, nx=True)

    def remember_message(self, alert: Alert, thread: ThreadRef) -> None:
        self.redis.set(self._key(alert, "message"), thread.model_dump_json(), ex=GROUP_TTL_S)

    def record(self, alert: Alert, status: str) -> None:
        member = json.dumps({"labels": alert.labels, "status": status})
        with self.redis.pipeline(transaction=False) as pipe:
            pipe.hset(self._key(alert, "members"), alert.key, member)
            pipe.expire(self._key(alert, "members"), GROUP_TTL_S)
            pipe.execute()

    def claim_run(self, alert: Alert, run_id: str, runbook: str, params: dict[str, str], max_runs: int) -> Claim:
        keys = [self._key(alert, "runs"), self._key(alert, f"covers:{run_id}"), self._key(alert, "run-params")]
        meta = json.dumps({"runbook": runbook, "params": params})
        return Claim(str(self._claim(keys=keys, args=[run_id, alert.key, max_runs, meta, GROUP_TTL_S])))

    def not_run(self, alert: Alert, why: str) -> bool:
        """Note that `alert` started no run, for `why`; True the first time the group meets `why`."""
        with self.redis.pipeline(transaction=False) as pipe:
            pipe.hset(self._key(alert, "not-run"), alert.key, why)
            pipe.sadd(self._key(alert, "reasons"), why)
            for name in ("not-run", "reasons"):
                pipe.expire(self._key(alert, name), GROUP_TTL_S)
            _, new, *_ = pipe.execute()
        return bool(new)

    def first_look(self, alert: Alert) -> bool:
        """True for the first alert of a generation that asks for the model's first look."""
        return bool(self.redis.set(self._key(alert, "first-look"), "1", ex=GROUP_TTL_S, nx=True))

    def runs_done_with(self, alert: Alert) -> list[str]:
        """The runs whose every alert has resolved, now that `alert` has."""
        members = self._members(alert)
        done = []
        for run_id in sorted(str(r) for r in self.redis.smembers(self._key(alert, "runs"))):
            covered = {str(k) for k in self.redis.smembers(self._key(alert, f"covers:{run_id}"))}
            if alert.key in covered and all(members.get(k, {}).get("status") != "firing" for k in covered):
                done.append(run_id)
        return done

    def view(self, alert: Alert) -> GroupView | None:
        raw = self.redis.get(self._key(alert, "first"))
        if not raw:
            return None
        first = Alert.model_validate_json(str(raw))
        members = sorted(
            (Member(key, entry["labels"], entry["status"]) for key, entry in self._members(alert).items()),
            key=lambda m: (m.status != "firing", sorted(m.labels.items())),  # firing first, then by labels
        )
        metas = {str(k): json.loads(v) for k, v in self.redis.hgetall(self._key(alert, "run-params")).items()}
        runs = [
            RunView(run_id, meta["runbook"], meta["params"], self.redis.scard(self._key(alert, f"covers:{run_id}")))
            for run_id, meta in sorted(metas.items())
        ]
        not_run = {str(k): str(v) for k, v in self.redis.hgetall(self._key(alert, "not-run")).items()}
        return GroupView(first=first, labels=first.group_labels, members=members, runs=runs, not_run=not_run)

    def end_generation(self, alert: Alert) -> None:
        """Every alert of the group resolved: its next firing alert opens a new message."""
        names = ("message", "first", "members", "runs", "run-params", "not-run", "reasons", "first-look")
        runs = [str(r) for r in self.redis.smembers(self._key(alert, "runs"))]
        keys = [self._key(alert, n) for n in names] + [self._key(alert, f"covers:{r}") for r in runs]
        generation = self._key(alert, "generation")
        with self.redis.pipeline(transaction=False) as pipe:
            pipe.incr(generation)
            pipe.expire(generation, GROUP_TTL_S)
            for key in keys:
                pipe.delete(key)
            pipe.execute()

    def _members(self, alert: Alert) -> dict[str, dict[str, Any]]:
        return {str(k): json.loads(v) for k, v in self.redis.hgetall(self._key(alert, "members")).items()}

    def _base(self, alert: Alert) -> str:
        # One hash tag per group: the script's keys are one group's, as Redis Cluster needs.
        digest = hashlib.sha256(alert.group_id.encode()).hexdigest()[:24]
        return f"{self.prefix}:group:{{{digest}}}"

    def _key(self, alert: Alert, name: str) -> str:
        return f"{self._base(alert)}:{name}"
