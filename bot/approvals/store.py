"""Where requests wait: Redis for a deployment (any process may take the click), a dict for the
terminal and tests. One behaviour: a request is kept until a while after it expires, so a late
click gets a clear answer, and its decision is claimed once (`SET NX`): of two clicks, two
approvers or two processes, exactly one wins, before anything runs. The undecided ones can be
listed (`undecided`), for a front end that shows people what waits for them (Slack's Home tab).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast

from ..telemetry import metrics
from .requests import Claim, Pending

if TYPE_CHECKING:
    from ..redis.client import RedisClient

T = TypeVar("T")

# The most requests `undecided` reads: more than anyone could decide from one screen.
MAX_LISTED = 200


class ApprovalsUnavailable(Exception):
    """The request store cannot be used (its Redis is unreachable)."""


class ApprovalStore(Protocol):
    def save(self, pending: Pending, ttl_s: float) -> None:
        """Store (or store again, e.g. with `shown_at`) a request for `ttl_s`."""

    def load(self, request_id: str) -> Pending | None:
        """The stored request, or None."""

    def claim(self, request_id: str, claim: Claim, ttl_s: float) -> Claim | None:
        """Store the one decision on a request: None when this claim won, else the one that did."""

    def decision(self, request_id: str) -> Claim | None:
        """The decision claimed on a request, or None while it waits (or is long gone)."""

    def undecided(self) -> list[Pending]:
        """The requests kept and not decided (expired ones too, until they are dropped), oldest
        first, at most MAX_LISTED."""


class InProcessApprovalStore:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._lock = threading.Lock()
        self._clock = clock
        self._requests: dict[str, tuple[float, Pending]] = {}
        self._claims: dict[str, tuple[float, Claim]] = {}

    def save(self, pending: Pending, ttl_s: float) -> None:
        with self._lock:
            self._requests[pending.id] = (self._clock() + ttl_s, pending)

    def load(self, request_id: str) -> Pending | None:
        with self._lock:
            return _alive(self._requests, request_id, self._clock())

    def claim(self, request_id: str, claim: Claim, ttl_s: float) -> Claim | None:
        with self._lock:
            first = _alive(self._claims, request_id, self._clock())
            if first is None:
                self._claims[request_id] = (self._clock() + ttl_s, claim)
            return first

    def decision(self, request_id: str) -> Claim | None:
        with self._lock:
            return _alive(self._claims, request_id, self._clock())

    def undecided(self) -> list[Pending]:
        with self._lock:
            now = self._clock()
            kept = [_alive(self._requests, key, now) for key in list(self._requests)]
            waiting = [p for p in kept if p is not None and _alive(self._claims, p.id, now) is None]
        return sorted(waiting, key=lambda p: p.created_at)[:MAX_LISTED]


def _alive(table: dict[str, tuple[float, T]], key: str, now: float) -> T | None:
    entry = table.get(key)
    if entry is None or entry[0] <= now:
        table.pop(key, None)
        return None
    return entry[1]


class RedisApprovalStore:
    def __init__(self, redis: RedisClient | str, prefix: str = "opsbot:approval") -> None:
        # redis-py only where Redis is used: the terminal's in-process store never imports it.
        from ..redis.client import connect

        self._redis = connect(redis) if isinstance(redis, str) else redis
        self.prefix = prefix

    def save(self, pending: Pending, ttl_s: float) -> None:
        def store() -> None:
            now = time.time()
            self._redis.set(self._key(pending.id), pending.model_dump_json(), px=_ms(ttl_s))
            # The index of undecided requests, scored by when each is dropped; a key of its own
            # (its own Cluster slot): a request and its index entry are written one after the other.
            # Those dropped undecided leave it here, so it stays small whether or not it is read.
            self._redis.zadd(self._undecided, {pending.id: now + ttl_s})
            self._redis.zremrangebyscore(self._undecided, "-inf", now)

        self._call(store)

    def load(self, request_id: str) -> Pending | None:
        raw = self._call(lambda: self._redis.get(self._key(request_id)))
        return Pending.model_validate_json(raw) if raw else None

    def claim(self, request_id: str, claim: Claim, ttl_s: float) -> Claim | None:
        key = self._key(request_id) + ":decision"
        if self._call(lambda: self._redis.set(key, claim.model_dump_json(), nx=True, px=_ms(ttl_s))):
            self._call(lambda: self._redis.zrem(self._undecided, request_id))
            return None
        # SET NX GET would be one round trip, but needs Redis 7; opsbot runs on 6.2.
        first = self._call(lambda: self._redis.get(key))
        return Claim.model_validate_json(first) if first else Claim(verdict=claim.verdict)

    def decision(self, request_id: str) -> Claim | None:
        raw = self._call(lambda: self._redis.get(self._key(request_id) + ":decision"))
        return Claim.model_validate_json(raw) if raw else None

    def undecided(self) -> list[Pending]:
        def read() -> list[Any]:
            now = time.time()
            self._redis.zremrangebyscore(self._undecided, "-inf", now)
            ids = cast(list[str], self._redis.zrange(self._undecided, 0, MAX_LISTED - 1))
            # One GET each: in a Cluster the requests live in slots of their own.
            return [(self._redis.get(self._key(i)), self._redis.exists(self._key(i) + ":decision")) for i in ids]

        found = [Pending.model_validate_json(raw) for raw, decided in self._call(read) if raw and not decided]
        return sorted(found, key=lambda p: p.created_at)

    @property
    def _undecided(self) -> str:
        return f"{self.prefix}:undecided"

    def _key(self, request_id: str) -> str:
        # Hash-tagged: a request and its decision live in one Redis Cluster slot.
        return f"{self.prefix}:{{{request_id}}}"

    def _call(self, func: Callable[[], Any]) -> Any:
        from ..redis.client import REDIS_ERRORS, describe_client

        try:
            return func()
        except REDIS_ERRORS as exc:
            metrics.redis_error("approval_store")
            where = describe_client(self._redis)
            raise ApprovalsUnavailable(f"cannot reach the approval requests' Redis ({where}): {exc}") from exc


def _ms(seconds: float) -> int:
    return max(1, int(seconds * 1000))
