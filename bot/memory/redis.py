"""Thread memory in Redis: a list of JSON blocks, a summary string, a repeats hash, a lock key.

Every method is one round trip (a pipeline); writes are MULTI/EXEC so a crash never leaves half
a step behind. Any connection failure becomes `MemoryUnavailable`; redis-py reconnects on the
next call, so opsbot recovers on its own when Redis returns.

A thread's keys share one hash tag, `opsbot:thread:{<thread>}:blocks` (`:summary`, `:repeats`,
`:lock`): on Redis Cluster they are in one slot, as its MULTI/EXEC and scripts require.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from pydantic import ValidationError

from ..messages import Block
from ..redis.client import REDIS_ERRORS, RedisClient, connect, describe, lasting
from ..telemetry import metrics
from .base import MemoryUnavailable, ThreadBusy, ThreadState, first_turn_start

_RELEASE = """
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end
return 0
"""
_REFRESH = """
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) end
return 0
"""


class RedisMemory:
    def __init__(
        self, url: str, ttl_s: int = 7 * 24 * 3600, prefix: str = "opsbot", client: RedisClient | None = None
    ) -> None:
        self.url = url
        self.ttl_s = ttl_s
        self.prefix = prefix
        self.round_trips = 0
        self._client = client
        self._held: dict[str, tuple[str, int]] = {}  # thread -> (lock token, ttl ms) held by this process
        self._answered = False  # whether Redis ever answered this process: a refusal after is a restart

    @property
    def _redis(self) -> RedisClient:
        # Made on first use: a Cluster client reads the slot map as it is made, and a cluster down
        # at startup is then "not now" like any other outage rather than a failed start.
        if self._client is None:
            self._client = connect(self.url)
        return self._client

    def _base(self, thread: str) -> str:
        # An empty tag would hash the whole key: the empty thread is `%`, which no other encodes to.
        return f"{self.prefix}:thread:{{{_tag_text(thread) or '%'}}}"

    def _keys(self, thread: str) -> dict[str, str]:
        base = self._base(thread)
        return {"blocks": f"{base}:blocks", "summary": f"{base}:summary", "repeats": f"{base}:repeats"}

    def _lock_key(self, thread: str) -> str:
        return f"{self._base(thread)}:lock"

    def load(self, thread: str, new_turn: bool) -> ThreadState:
        keys = self._keys(thread)
        with self._pipeline(transaction=False) as pipe:
            pipe.lrange(keys["blocks"], 0, -1)
            pipe.get(keys["summary"])
            if new_turn:
                pipe.delete(keys["repeats"])
            else:
                pipe.hgetall(keys["repeats"])
            raw_blocks, summary, repeats = self._execute(pipe)
        try:
            blocks = [Block.model_validate_json(raw) for raw in raw_blocks]
        except ValidationError as exc:
            raise MemoryUnavailable(
                f"the stored conversation of thread {thread} cannot be read (written by another version?); "
                "`reset` the thread to start afresh"
            ) from exc
        window = first_turn_start(blocks)
        return ThreadState(window, summary or "", {} if new_turn else dict(repeats), len(blocks) - len(window))

    def append(self, thread: str, blocks: list[Block], repeats: dict[str, str] | None = None) -> None:
        keys = self._keys(thread)
        with self._pipeline(transaction=True) as pipe:
            if blocks:
                pipe.rpush(keys["blocks"], *(b.model_dump_json() for b in blocks))
            if repeats:
                pipe.hset(keys["repeats"], mapping=repeats)
            for key in keys.values():
                pipe.expire(key, self.ttl_s)
            if thread in self._held:
                # Each stored step proves the run is alive: its lock lasts another lock_ttl_s.
                token, ttl_ms = self._held[thread]
                # Script text rather than EVALSHA: no SCRIPT EXISTS round trip, no NOSCRIPT after a restart.
                # As a plain command: a Cluster pipeline has no eval() (redis-py), but queues EVAL.
                pipe.execute_command("EVAL", _REFRESH, 1, self._lock_key(thread), token, ttl_ms)
            self._execute(pipe)

    def fold(self, thread: str, folded_blocks: int, summary: str) -> None:
        keys = self._keys(thread)
        with self._pipeline(transaction=True) as pipe:
            pipe.ltrim(keys["blocks"], folded_blocks, -1)
            pipe.set(keys["summary"], summary)
            for key in keys.values():
                pipe.expire(key, self.ttl_s)
            self._execute(pipe)

    def reset(self, thread: str) -> None:
        keys = self._keys(thread).values()
        self._call(lambda: self._redis.delete(*keys))

    def forget_all(self, prefix: str) -> list[str]:
        # Every master's keys on a cluster: RedisCluster.scan_iter asks each in turn.
        base = f"{self.prefix}:thread:{{"
        pattern = f"{base}{_glob_escape(_tag_text(prefix))}*"

        def forget() -> list[str]:
            threads = set()
            for key in self._redis.scan_iter(pattern, count=500):
                name = str(key)
                if name.endswith((":blocks", ":summary", ":repeats")):
                    threads.add(_untagged(name[len(base) : name.rindex("}")]))
                    self._redis.delete(name)
            return sorted(threads)

        result: list[str] = self._call(forget)
        return result

    @contextmanager
    def lock(self, thread: str, ttl_s: float, wait_s: float) -> Iterator[None]:
        key = self._lock_key(thread)
        token = uuid.uuid4().hex
        deadline = time.monotonic() + wait_s
        while not self._call(lambda: self._redis.set(key, token, nx=True, px=int(ttl_s * 1000))):
            if time.monotonic() >= deadline:
                raise ThreadBusy(thread)
            time.sleep(0.05)
        self._held[thread] = (token, int(ttl_s * 1000))
        try:
            yield
        finally:
            self._held.pop(thread, None)
            try:
                self._call(lambda: self._redis.eval(_RELEASE, 1, key, token))
            except MemoryUnavailable:
                pass  # the lock expires by itself after ttl_s

    def break_lock(self, thread: str) -> None:
        key = self._lock_key(thread)
        self._call(lambda: self._redis.delete(key))

    def describe(self) -> str:
        return describe(self.url)

    @contextmanager
    def _pipeline(self, transaction: bool) -> Iterator[Any]:
        try:
            client = self._redis
        except REDIS_ERRORS as exc:
            raise self._unavailable(exc) from exc
        with client.pipeline(transaction=transaction) as pipe:
            yield pipe

    def _execute(self, pipe: Any) -> list[Any]:
        results: list[Any] = self._call(pipe.execute)
        return results

    def _call(self, func: Any) -> Any:
        self.round_trips += 1
        try:
            result = func()
        except REDIS_ERRORS as exc:
            # Unreachable, out of memory, or a read-only replica after failover: "not now", unless
            # REDIS_URL itself is wrong (bot/redis/client.py `lasting`).
            raise self._unavailable(exc) from exc
        self._answered = True
        return result

    def _unavailable(self, exc: Exception) -> MemoryUnavailable:
        metrics.redis_error("memory")
        return MemoryUnavailable(f"cannot use {self.describe()}: {exc}", lasting=lasting(exc, self._answered))


def _tag_text(thread: str) -> str:
    """The thread as written inside its keys' hash tag. A tag ends at the first `}`, so `}` is
    percent-encoded (and `%` with it, so two threads never share keys); encoded, a prefix of a
    thread is still a prefix of its tag, which `forget_all` looks keys up by."""
    return thread.replace("%", "%25").replace("}", "%7D")


def _untagged(tag: str) -> str:
    """The thread a hash tag names (`_tag_text` undone; a lone `%`, which no thread encodes to, is
    the empty thread's)."""
    return "" if tag == "%" else tag.replace("%7D", "}").replace("%25", "%")


def _glob_escape(text: str) -> str:
    return "".join(f"\\{c}" if c in "*?[]\\" else c for c in text)
