"""What this process accepted and is not yet known to be answered, kept in its own memory.

Redis holds every accepted job, but a Redis without persistence forgets them when it restarts,
and one that cannot be reached holds nothing new. The journal is this process's copy: after a
restart it puts back what Redis forgot; while Redis is unreachable it holds (parks) what was
delivered meanwhile, queued as soon as Redis answers again. Entries leave once their job is done,
here or in another process, so the journal holds what is in flight, not what was ever seen.

It also remembers the threads this process saw opsbot take part in (until their memory expires,
at most `active_limit` of them): replies there are for opsbot even when a restart made Redis
forget it, and every live process marks its threads in Redis again.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import NamedTuple

from pydantic import BaseModel, ConfigDict

from .jobs import Job

log = logging.getLogger("opsbot.slack")


class Entry(BaseModel):
    """One accepted job and how it was accepted, so it can be accepted again the same way."""

    model_config = ConfigDict(frozen=True)

    job: Job
    delivery: str
    active_ttl_s: int
    require_active: bool
    parked: bool  # never reached Redis: accepted again as a new delivery, not a replay
    acked: bool  # Slack was told it arrived: it will not deliver it again, to any process
    since: float


class ActiveThread(NamedTuple):
    """A thread known to be opsbot's, and the seconds it stays so."""

    thread: str
    ttl_s: int


class _Key(NamedTuple):
    """An entry's key: a job is one delivery in its thread."""

    thread: str
    job: str


class Journal:
    def __init__(
        self,
        limit: int = 50_000,
        max_age_s: float = 24 * 3600,
        active_limit: int = 100_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.limit = limit
        self.max_age_s = max_age_s
        self.active_limit = active_limit
        self.clock = clock
        self._entries: OrderedDict[_Key, Entry] = OrderedDict()
        self._active: OrderedDict[str, float] = OrderedDict()  # thread -> until, on `clock`
        self._lock = threading.Lock()

    def keep(
        self, job: Job, delivery: str, active_ttl_s: int, require_active: bool, parked: bool, acked: bool = True
    ) -> None:
        entry = Entry(
            job=job,
            delivery=delivery,
            active_ttl_s=active_ttl_s,
            require_active=require_active,
            parked=parked,
            acked=acked,
            since=self.clock(),
        )
        with self._lock:
            self._entries[_key(job)] = entry
            self._entries.move_to_end(_key(job))
            self._trim()
            if active_ttl_s > 0 and not (parked and require_active):
                self._active[job.thread.key] = entry.since + active_ttl_s
                self._active.move_to_end(job.thread.key)
                while len(self._active) > self.active_limit:
                    self._active.popitem(last=False)
            self._forget_lapsed(entry.since)

    def is_active(self, thread: str) -> bool:
        with self._lock:
            return self._active.get(thread, 0.0) > self.clock()

    def active(self) -> list[ActiveThread]:
        """The threads known to be opsbot's, with the seconds each has left."""
        now = self.clock()
        with self._lock:
            for thread in [t for t, until in self._active.items() if until <= now]:
                del self._active[thread]
            return [ActiveThread(thread, max(1, int(until - now))) for thread, until in self._active.items()]

    def _forget_lapsed(self, now: float) -> None:
        """Threads idle past their memory's time to live, oldest kept first: a process that serves
        for weeks holds the threads of the last day, not every thread it ever saw."""
        forgotten = 0
        while self._active:
            thread, until = next(iter(self._active.items()))
            if until > now:
                break
            del self._active[thread]
            forgotten += 1
        if forgotten > len(self._active):
            self._active = OrderedDict(self._active)  # a dict keeps its largest table until copied

    def done(self, job: Job) -> None:
        with self._lock:
            self._entries.pop(_key(job), None)

    def queued(self, job: Job) -> None:
        """A parked job reached Redis: from now on it is a replay like the others."""
        with self._lock:
            entry = self._entries.get(_key(job))
            if entry is not None and entry.parked:
                self._entries[_key(job)] = entry.model_copy(update={"parked": False})

    def entries(self, parked: bool | None = None) -> list[Entry]:
        with self._lock:
            self._trim()
            return [e for e in self._entries.values() if parked is None or e.parked == parked]

    def __len__(self) -> int:
        return len(self._entries)

    def _trim(self) -> None:
        """Past a day a job's queue has expired in Redis too; past `limit` the oldest go first."""
        now = self.clock()
        while self._entries:
            key, oldest = next(iter(self._entries.items()))
            if now - oldest.since <= self.max_age_s and len(self._entries) <= self.limit:
                return
            del self._entries[key]
            log.warning("journal: job %s was given up on (%s)", oldest.job.id, "parked" if oldest.parked else "queued")


def _key(job: Job) -> _Key:
    return _Key(job.thread.key, job.id)
