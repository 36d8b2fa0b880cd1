"""Thread memory: the window of blocks, the running summary, repeat counters and a run lock.

Two backends with one behaviour: `RedisMemory` (bot/memory_redis.py) when `REDIS_URL` is set,
`InProcessMemory` here otherwise. Each step of the loop costs one call here (one Redis round
trip); loading a thread costs one more.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Protocol

from ..faults import Fault, Part
from ..messages import Block


class MemoryUnavailable(Exception):
    """The store cannot be reached. Nothing was written; retrying later is safe. `lasting`: no
    retry will cure it (bot/redis/client.py `lasting`), an operator has to fix REDIS_URL or Redis."""

    def __init__(self, message: str, *, lasting: bool = False) -> None:
        super().__init__(message)
        self.lasting = lasting

    @property
    def fault(self) -> Fault:
        return Fault(part=Part.redis, lasting=self.lasting, detail=str(self))


class ThreadBusy(Exception):
    """Another run holds this thread's lock."""


@dataclass
class ThreadState:
    blocks: list[Block] = field(default_factory=list)
    summary: str = ""
    repeats: dict[str, str] = field(default_factory=dict)
    skipped: int = 0  # stored blocks before the first turn, left out of `blocks`; folded first


class Memory(Protocol):
    round_trips: int

    def load(self, thread: str, new_turn: bool) -> ThreadState:
        """The thread's window, summary and repeat records; a new turn starts with no repeats."""

    def append(self, thread: str, blocks: list[Block], repeats: dict[str, str] | None = None) -> None:
        """Store blocks (and updated repeat records) atomically, refreshing the thread's TTL."""

    def fold(self, thread: str, folded_blocks: int, summary: str) -> None:
        """Replace the oldest `folded_blocks` blocks by `summary`, atomically."""

    def reset(self, thread: str) -> None:
        """Forget the thread."""

    def forget_all(self, prefix: str) -> list[str]:
        """Forget every thread whose key starts with `prefix`; the threads forgotten."""

    @contextmanager
    def lock(self, thread: str, ttl_s: float, wait_s: float) -> Iterator[None]:
        """Hold the thread's run lock; raise `ThreadBusy` after waiting `wait_s`."""
        yield

    def break_lock(self, thread: str) -> None:
        """Free the thread's run lock, whoever holds it: only for a holder known to be gone (its
        process died, so the lease it drained the thread under lapsed)."""

    def describe(self) -> str:
        """Where the memory lives, for messages to people."""


def first_turn_start(blocks: list[Block]) -> list[Block]:
    """Blocks from the first user turn on: a window never opens on a tool result or an answer."""
    for index, block in enumerate(blocks):
        if block.starts_turn:
            return blocks[index:]
    return []


@dataclass
class _Thread:
    blocks: list[Block] = field(default_factory=list)
    summary: str = ""
    repeats: dict[str, str] = field(default_factory=dict)
    expires_at: float = 0.0


class InProcessMemory:
    """Memory inside this process: the laptop default. Same TTL and lock semantics as Redis."""

    def __init__(self, ttl_s: float = 7 * 24 * 3600, clock: Callable[[], float] = time.monotonic) -> None:
        """`clock`: monotonic seconds, for thread and lock expiry; tests pass one that skips ahead."""
        self.ttl_s = ttl_s
        self.clock = clock
        self.round_trips = 0
        self._threads: dict[str, _Thread] = {}
        self._locks: dict[str, tuple[str, float]] = {}  # thread -> (token, expires at)
        self._held: dict[str, tuple[str, float]] = {}  # thread -> (token, ttl) of the run holding it
        self._mutex = threading.Condition()

    def load(self, thread: str, new_turn: bool) -> ThreadState:
        with self._mutex:
            self.round_trips += 1
            entry = self._live(thread)
            if entry is None:
                return ThreadState()
            if new_turn:
                entry.repeats.clear()
            window = first_turn_start(list(entry.blocks))
            return ThreadState(window, entry.summary, dict(entry.repeats), len(entry.blocks) - len(window))

    def append(self, thread: str, blocks: list[Block], repeats: dict[str, str] | None = None) -> None:
        with self._mutex:
            self.round_trips += 1
            entry = self._live(thread) or self._threads.setdefault(thread, _Thread())
            entry.blocks.extend(blocks)
            entry.repeats.update(repeats or {})
            entry.expires_at = self.clock() + self.ttl_s
            self._refresh_lock(thread)

    def fold(self, thread: str, folded_blocks: int, summary: str) -> None:
        with self._mutex:
            self.round_trips += 1
            entry = self._live(thread) or self._threads.setdefault(thread, _Thread())
            del entry.blocks[:folded_blocks]
            entry.summary = summary
            entry.expires_at = self.clock() + self.ttl_s

    def reset(self, thread: str) -> None:
        with self._mutex:
            self.round_trips += 1
            self._threads.pop(thread, None)

    def forget_all(self, prefix: str) -> list[str]:
        with self._mutex:
            self.round_trips += 1
            gone = sorted(thread for thread in self._threads if thread.startswith(prefix))
            for thread in gone:
                del self._threads[thread]
            return gone

    @contextmanager
    def lock(self, thread: str, ttl_s: float, wait_s: float) -> Iterator[None]:
        token = uuid.uuid4().hex
        deadline = self.clock() + wait_s
        with self._mutex:
            while True:
                holder = self._locks.get(thread)
                now = self.clock()
                if holder is None or holder[1] <= now:
                    self._locks[thread] = (token, now + ttl_s)
                    self._held[thread] = (token, ttl_s)
                    break
                if now >= deadline:
                    raise ThreadBusy(thread)
                self._mutex.wait(min(deadline, holder[1]) - now)
        try:
            yield
        finally:
            with self._mutex:
                if self._held.get(thread, ("", 0))[0] == token:
                    del self._held[thread]
                if self._locks.get(thread, ("", 0))[0] == token:
                    del self._locks[thread]
                self._mutex.notify_all()

    def break_lock(self, thread: str) -> None:
        with self._mutex:
            self._locks.pop(thread, None)
            self._mutex.notify_all()

    def _refresh_lock(self, thread: str) -> None:
        """Each stored step proves the run is alive: its lock lasts another lock_ttl_s."""
        held = self._held.get(thread)
        if held is not None and self._locks.get(thread, ("", 0))[0] == held[0]:
            self._locks[thread] = (held[0], self.clock() + held[1])

    def describe(self) -> str:
        return "in-process memory"

    def _live(self, thread: str) -> _Thread | None:
        entry = self._threads.get(thread)
        if entry is not None and entry.expires_at <= self.clock():
            del self._threads[thread]
            return None
        return entry
