"""Where requests wait: Redis for a deployment (any process may take the click), a dict for the
terminal and tests. One behaviour: a request is kept until a while after it expires, so a late
click gets a clear answer, and its decision is claimed once (`SET NX`): of two clicks, two
approvers or two processes, exactly one wins, before anything runs.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from ..telemetry import metrics
from .requests import Claim, Pending

if TYPE_CHECKING:
    from ..redis.client import RedisClient

T = TypeVar("T")


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
        self._call(lambda: self._redis.set(self._key(pending.id), pending.model_dump_json(), px=_ms(ttl_s)))

    def load(self, request_id: str) -> Pending | None:
        raw = self._call(lambda: self._redis.get(self._key(request_id)))
        return Pending.model_validate_json(raw) if raw else None

    def claim(self, request_id: str, claim: Claim, ttl_s: float) -> Claim | None:
        key = self._key(request_id) + ":decision"
        if self._call(lambda: self._redis.set(key, claim.model_dump_json(), nx=True, px=_ms(ttl_s))):
            return None
        # SET NX GET would be one round trip, but needs Redis 7; opsbot runs on 6.2.
        first = self._call(lambda: self._redis.get(key))
        return Claim.model_validate_json(first) if first else Claim(verdict=claim.verdict)

    def decision(self, request_id: str) -> Claim | None:
        raw = self._call(lambda: self._redis.get(self._key(request_id) + ":decision"))
        return Claim.model_validate_json(raw) if raw else None

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
