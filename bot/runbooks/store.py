"""Where runbook runs live between steps, between processes and across restarts.

Two backends with one behaviour: `RedisRunStore` for a deployment (several processes, one Redis)
and `InProcessRunStore` for a laptop and tests. Three guarantees the engine builds on:

- `create` is atomic and refuses an existing id: the same alert delivered to two processes
  starts one run;
- `save` is a compare-and-set on `RunRecord.version`: it writes only over the version the record
  was made from, so a process that lost a run (its lease ran out while a step hung and another
  process took over) cannot overwrite what the other did, nor run on from a stale copy;
- a lease (`SET NX PX`, released and renewed only by its holder) says which process advances a
  run right now.

In Redis every key of a store shares one hash tag, so the scripts touching a record and the
index of unfinished runs work on Redis Cluster too (runbook runs are few; one slot holds them).
That holds for every script and pipeline here: each touches the record, its lease or the index.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from pydantic import ValidationError

from ..redis.client import REDIS_ERRORS, RedisClient, connect, describe_client
from ..telemetry import metrics
from .records import UNFINISHED, RunRecord

DEFAULT_TTL_S = 7 * 24 * 3600


class RunStoreUnavailable(Exception):
    """The run store cannot be used (Redis unreachable, or a record it cannot read)."""


class RunUnreadable(RunStoreUnavailable):
    """One stored run cannot be read (written by another version of opsbot)."""


class RunStore(Protocol):
    def create(self, record: RunRecord) -> bool:
        """Store a new run; False, changing nothing, when a run with its id exists."""

    def save(self, record: RunRecord) -> bool:
        """Store `record` if the stored run is at `record.version - 1`; False (nothing written) if
        it is not: another process saved it since this copy was loaded, or it expired."""

    def load(self, run_id: str) -> RunRecord | None:
        """The stored run, or None."""

    def lease(self, run_id: str, owner: str, ttl_s: float) -> bool:
        """Take the run's lease if nobody holds it (not even `owner`: a lease is not re-entrant)."""

    def renew(self, run_id: str, owner: str, ttl_s: float) -> bool:
        """Extend the lease `owner` holds; False if it ran out or another holds it."""

    def release(self, run_id: str, owner: str) -> None:
        """Give the lease back, if `owner` still holds it."""

    def unfinished(self) -> list[str]:
        """Ids of runs `running` or `waiting`, oldest first."""


def _dump(record: RunRecord) -> str:
    return record.model_dump_json()


def _parse(run_id: str, raw: str | bytes) -> RunRecord:
    try:
        return RunRecord.model_validate_json(raw)
    except ValidationError as exc:
        raise RunUnreadable(
            f"the stored record of run {run_id} cannot be read (written by another version of opsbot?)"
        ) from exc


# KEYS: record hash, unfinished index. ARGV: json, version, ttl s, unfinished (1/0), score, id.
_INDEX = """
if ARGV[4] == '1' then redis.call('zadd', KEYS[2], ARGV[5], ARGV[6]) else redis.call('zrem', KEYS[2], ARGV[6]) end
redis.call('expire', KEYS[2], ARGV[3])
"""
_CREATE = (
    """
if redis.call('exists', KEYS[1]) == 1 then return 0 end
redis.call('hset', KEYS[1], 'json', ARGV[1], 'version', ARGV[2])
redis.call('expire', KEYS[1], ARGV[3])
"""
    + _INDEX
    + "return 1"
)
_SAVE = (
    """
local stored = redis.call('hget', KEYS[1], 'version')
if not stored or tonumber(stored) + 1 ~= tonumber(ARGV[2]) then return 0 end
redis.call('hset', KEYS[1], 'json', ARGV[1], 'version', ARGV[2])
redis.call('expire', KEYS[1], ARGV[3])
"""
    + _INDEX
    + "return 1"
)
_RENEW = """
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) end
return 0
"""
_RELEASE = """
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end
return 0
"""


class RedisRunStore:
    def __init__(
        self, client_or_url: RedisClient | str, prefix: str = "opsbot:runbook", ttl_s: int = DEFAULT_TTL_S
    ) -> None:
        self._redis = connect(client_or_url) if isinstance(client_or_url, str) else client_or_url
        self.prefix = prefix
        self.ttl_s = ttl_s
        self._tag = "{" + prefix + "}"

    def _record_key(self, run_id: str) -> str:
        return f"{self._tag}:run:{run_id}"

    def _lease_key(self, run_id: str) -> str:
        return f"{self._tag}:lease:{run_id}"

    @property
    def _index_key(self) -> str:
        return f"{self._tag}:unfinished"

    def _write(self, script: str, record: RunRecord) -> bool:
        args: list[str | int | float] = [
            _dump(record),
            record.version,
            self.ttl_s,
            "1" if record.status in UNFINISHED else "0",
            record.created_at.timestamp(),
            record.id,
        ]
        keys = [self._record_key(record.id), self._index_key]
        # Script text rather than EVALSHA: no SCRIPT EXISTS round trip, no NOSCRIPT after a restart.
        return bool(self._call(lambda: self._redis.eval(script, 2, *keys, *args)))

    def create(self, record: RunRecord) -> bool:
        return self._write(_CREATE, record)

    def save(self, record: RunRecord) -> bool:
        return self._write(_SAVE, record)

    def load(self, run_id: str) -> RunRecord | None:
        raw = self._call(lambda: self._redis.hget(self._record_key(run_id), "json"))
        return None if raw is None else _parse(run_id, raw)

    def lease(self, run_id: str, owner: str, ttl_s: float) -> bool:
        key = self._lease_key(run_id)
        return bool(self._call(lambda: self._redis.set(key, owner, nx=True, px=_ms(ttl_s))))

    def renew(self, run_id: str, owner: str, ttl_s: float) -> bool:
        key = self._lease_key(run_id)
        return bool(self._call(lambda: self._redis.eval(_RENEW, 1, key, owner, _ms(ttl_s))))

    def release(self, run_id: str, owner: str) -> None:
        key = self._lease_key(run_id)
        self._call(lambda: self._redis.eval(_RELEASE, 1, key, owner))

    def unfinished(self) -> list[str]:
        ids = [_text(i) for i in self._call(lambda: self._redis.zrange(self._index_key, 0, -1))]
        if not ids:
            return []
        with self._redis.pipeline(transaction=False) as pipe:
            for run_id in ids:
                pipe.exists(self._record_key(run_id))
            exists = self._call(pipe.execute)
        # A record that expired leaves its id behind in the index: dropped here, lazily.
        gone = [run_id for run_id, there in zip(ids, exists, strict=True) if not there]
        if gone:
            self._call(lambda: self._redis.zrem(self._index_key, *gone))
        return [run_id for run_id in ids if run_id not in gone]

    def describe(self) -> str:
        return f"{describe_client(self._redis)} (runs under {self.prefix})"

    def _call(self, func: Any) -> Any:
        try:
            return func()
        except REDIS_ERRORS as exc:
            metrics.redis_error("runbook_store")
            raise RunStoreUnavailable(f"cannot use the runbook run store ({self.describe()}): {exc}") from exc


def _text(value: str | bytes) -> str:
    # A client passed in may not decode responses.
    return value.decode() if isinstance(value, bytes) else value


def _ms(seconds: float) -> int:
    return max(1, int(seconds * 1000))


@dataclass
class _Stored:
    json: str
    version: int
    unfinished: bool
    created: float
    expires_at: float


class InProcessRunStore:
    """The same behaviour in one process: records kept as JSON, so what comes back is a copy
    that went through the same validation as a record read from Redis."""

    def __init__(self, ttl_s: float = DEFAULT_TTL_S, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl_s = ttl_s
        self._clock = clock  # records and leases expire by it
        self._records: dict[str, _Stored] = {}
        self._leases: dict[str, tuple[str, float]] = {}
        self._lock = threading.Lock()

    def _live(self, run_id: str) -> _Stored | None:
        stored = self._records.get(run_id)
        if stored is not None and stored.expires_at <= self._clock():
            del self._records[run_id]
            return None
        return stored

    def _put(self, record: RunRecord) -> None:
        self._records[record.id] = _Stored(
            _dump(record),
            record.version,
            record.status in UNFINISHED,
            record.created_at.timestamp(),
            self._clock() + self.ttl_s,
        )

    def create(self, record: RunRecord) -> bool:
        with self._lock:
            if self._live(record.id) is not None:
                return False
            self._put(record)
            return True

    def save(self, record: RunRecord) -> bool:
        with self._lock:
            stored = self._live(record.id)
            if stored is None or stored.version + 1 != record.version:
                return False
            self._put(record)
            return True

    def load(self, run_id: str) -> RunRecord | None:
        with self._lock:
            stored = self._live(run_id)
        return None if stored is None else _parse(run_id, stored.json)

    def _holder(self, run_id: str) -> str | None:
        held = self._leases.get(run_id)
        if held is None or held[1] <= self._clock():
            self._leases.pop(run_id, None)
            return None
        return held[0]

    def lease(self, run_id: str, owner: str, ttl_s: float) -> bool:
        with self._lock:
            if self._holder(run_id) is not None:
                return False
            self._leases[run_id] = (owner, self._clock() + ttl_s)
            return True

    def renew(self, run_id: str, owner: str, ttl_s: float) -> bool:
        with self._lock:
            if self._holder(run_id) != owner:
                return False
            self._leases[run_id] = (owner, self._clock() + ttl_s)
            return True

    def release(self, run_id: str, owner: str) -> None:
        with self._lock:
            if self._holder(run_id) == owner:
                del self._leases[run_id]

    def unfinished(self) -> list[str]:
        with self._lock:
            live = [(run_id, self._live(run_id)) for run_id in list(self._records)]
        return [run_id for run_id, stored in sorted(live, key=_created) if stored is not None and stored.unfinished]

    def describe(self) -> str:
        return "this process's memory"


def _created(item: tuple[str, _Stored | None]) -> float:
    return item[1].created if item[1] is not None else 0.0
