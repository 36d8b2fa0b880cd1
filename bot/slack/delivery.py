"""Getting each Slack message to exactly one run: durable queues in Redis, a bounded worker pool.

Listeners only accept work: one Redis script marks the delivery seen and queues the job, then
Bolt acks. Agent runs happen on `WorkerPool`, never on Bolt's listener threads, so a slow model
can never delay an ack. A thread's messages go through its queue: the process that finds the
thread idle drains it under a lease, one job after another, so runs in one thread never overlap
across processes, and a message arriving during a run is answered after it. A job stays in Redis
until it is answered; a process that dies leaves its lease to lapse, and another takes over.
"""

from __future__ import annotations

import functools
import logging
import queue
import threading
import time
import uuid
import weakref
from collections.abc import Callable
from dataclasses import dataclass

from ..redis.client import REDIS_ERRORS
from ..telemetry import metrics
from .jobs import Job
from .journal import Journal
from .state import Accepted, SlackState

log = logging.getLogger("opsbot.slack")

HOLD_POLL_S = 0.2  # how often a held drain asks whether the queues are whole again


class Deferred(Exception):
    """Raised by a handler: the job cannot be worked on now (its memory is unreachable); it stays
    queued, and is worked on once Redis answers again, here or elsewhere."""


class WorkerPool:
    """`workers` runs at once and `backlog` more waiting here; beyond that `reserve` says no and
    the work waits in Redis for any process with a free worker.

    Its threads start with the pool, not with the work (as a ThreadPoolExecutor's do): work is
    handed over on the ack path, and starting a thread there waits for the new thread to get the
    GIL, which a burst of runs starting at once makes slow (the event ack p99 tripled)."""

    def __init__(self, workers: int, backlog: int) -> None:
        self._work: queue.SimpleQueue[Callable[[], object] | None] = queue.SimpleQueue()
        self._slots = threading.BoundedSemaphore(workers + backlog)
        self._taken = 0
        self._count = threading.Lock()
        self._threads = [
            threading.Thread(target=self._serve, name=f"opsbot-run-{n}", daemon=True) for n in range(workers)
        ]
        for thread in self._threads:
            thread.start()

    def reserve(self) -> bool:
        if not self._slots.acquire(blocking=False):
            return False
        with self._count:
            self._taken += 1
        return True

    def release(self) -> None:
        with self._count:
            self._taken -= 1
        self._slots.release()

    def idle(self) -> bool:
        """Nothing running or waiting here (for health checks and tests)."""
        return self._taken == 0

    def run_reserved(self, work: Callable[[], object]) -> None:
        """Run `work` on a slot taken with `reserve`; the slot is given back when it ends."""
        self._work.put(work)

    def submit(self, work: Callable[[], object]) -> bool:
        if not self.reserve():
            return False
        self.run_reserved(work)
        return True

    def shutdown(self) -> None:
        """Let the work handed over so far finish, then stop the threads."""
        for _ in self._threads:
            self._work.put(None)
        for thread in self._threads:
            thread.join()

    def _serve(self) -> None:
        while (work := self._work.get()) is not None:
            try:
                work()
            except Exception:
                log.exception("opsbot worker failed")
            finally:
                self.release()


@dataclass
class _Drain:
    token: str
    job: Job | None = None  # the job being worked on


class Dispatcher:
    """Accepts jobs and runs each exactly once, in order per thread, whichever process runs it."""

    def __init__(
        self,
        state: SlackState,
        pool: WorkerPool,
        *,
        handle: Callable[[Job], None],
        journal: Journal,
        dedupe_ttl_s: int,
        on_takeover: Callable[[str], None],
        hold_s: float | None = None,
    ) -> None:
        """`hold_s`: how long a thread's next job may wait after Redis lost its data for the jobs
        it forgot to be queued again (by default a lease and five seconds: they are queued a lease
        after the restart)."""
        self.state = state
        self.hold_s = state.lease_s + 5.0 if hold_s is None else hold_s
        self.process = uuid.uuid4().hex  # this process, among those marking threads to replay
        self._marked: set[str] = set()
        self.pool = pool
        self.handle = handle
        self.journal = journal
        self.dedupe_ttl_s = dedupe_ttl_s
        self.on_takeover = on_takeover
        self._stopping = threading.Event()
        self._drains: dict[str, _Drain] = {}  # thread -> this process's lease on it
        self._drains_lock = threading.Lock()
        # Read at each scrape; weakly, so a dispatcher closed (a test's) is not kept alive by it.
        waiting = weakref.WeakMethod(self.waiting)
        metrics.watch_jobs_waiting(lambda: method() if (method := waiting()) is not None else 0)

    def accept(self, job: Job, delivery: str, active_ttl_s: int = 0, require_active: bool = False) -> Accepted:
        """Queue `job` durably (see `SlackState.accept`); raises `redis.RedisError` when Redis cannot
        take it, and then nothing is queued."""
        accepted = self.state.accept(
            job, delivery, self.dedupe_ttl_s, active_ttl_s, self._ask_redis(job, require_active)
        )
        if accepted.outcome == "queued":
            self.journal.keep(job, delivery, active_ttl_s, require_active, parked=False)
        elif accepted.outcome == "duplicate":
            metrics.duplicate_delivery()
        elif accepted.outcome == "ignored" and not self.state.marks_whole():
            # The thread's mark may be one a Redis restart lost: held until every process marked its own.
            self.journal.keep(job, delivery, active_ttl_s, require_active, parked=True)
        self._start(job.thread.key, accepted)
        return accepted

    def park(
        self, job: Job, delivery: str, active_ttl_s: int = 0, require_active: bool = False, acked: bool = True
    ) -> None:
        """Hold `job` here while Redis is unreachable; the janitor queues it once Redis answers.
        `acked`: Slack was told it arrived, so it sends it to no other process again."""
        self.journal.keep(job, delivery, active_ttl_s, require_active, parked=True, acked=acked)

    def submit(self, job: Job, here_when_full: bool = False) -> None:
        """Queue work opsbot gives itself (an approval's outcome, an alert's first look). With
        `here_when_full` and every worker busy, its thread is drained in the calling thread."""
        accepted = self.state.accept(job, f"job:{job.id}", self.dedupe_ttl_s)
        if accepted.outcome == "queued":
            self.journal.keep(job, f"job:{job.id}", 0, False, parked=False)
        self._start(job.thread.key, accepted, here_when_full)

    def sweep(self) -> int:
        """Drain queues whose drainer died with its process; how many were taken over."""
        taken = 0
        with self._drains_lock:
            mine = set(self._drains)
        for thread in self.state.orphaned_queues():
            if thread in mine:
                continue  # its lease lapsed while this process still works on it
            if self._stopping.is_set() or not self.pool.reserve():
                break
            accepted = self.state.claim_idle(thread)
            if accepted is None:
                self.pool.release()
                continue
            taken += 1
            self.pool.run_reserved(functools.partial(self._drain, thread, accepted))
        return taken

    def keep_leases(self) -> list[str]:
        """Renew this process's leases; the threads whose lease lapsed and went to another process."""
        with self._drains_lock:
            drains = list(self._drains.items())
        lost = []
        for thread, drain in drains:
            if not self.state.extend(thread, drain.token) and not self.state.reassert(thread, drain.token, drain.job):
                log.warning("lost the lease of %s to another process (Redis was out of reach for a lease)", thread)
                lost.append(thread)
        return lost

    def reassert(self) -> None:
        """After Redis lost its data: hold this process's leases and in-flight jobs again, and mark
        the threads whose other jobs it will queue again (`replay`): their next job waits for them."""
        with self._drains_lock:
            drains = list(self._drains.items())
        for thread, drain in drains:
            if not self.state.reassert(thread, drain.token, drain.job):
                log.warning("after the Redis restart another process holds %s", thread)
        self.state.mark_active(self.journal.active())
        self.state.replaying(self.process, self._to_replay(), self.hold_s)

    def replay(self) -> int:
        """Queue again what this process accepted and Redis may have forgotten; how many were new
        to Redis. Jobs Redis still has, or did, are left as they are."""
        running = self._running()
        whole = self.state.marks_whole()
        again = 0
        for entry in self.journal.entries():
            key = (entry.job.thread.key, entry.job.id)
            if key in running:
                continue
            accepted = self.state.accept(
                entry.job,
                entry.delivery,
                self.dedupe_ttl_s,
                entry.active_ttl_s,
                require_active=entry.parked and self._ask_redis(entry.job, entry.require_active),
                replay=not entry.parked,
            )
            again += self._settle(entry.job, entry.parked, accepted, whole)
        self.state.replayed(self.process, self._marked)
        self._marked = set()
        return again

    def _to_replay(self) -> set[str]:
        """The threads of the jobs `replay` will queue again (parked ones are queued as they come)."""
        running = self._running()
        self._marked = {
            e.job.thread.key for e in self.journal.entries(parked=False) if (e.job.thread.key, e.job.id) not in running
        }
        return self._marked

    def queue_parked(self) -> int:
        """Queue what was parked while Redis was unreachable; how many reached it."""
        entries = self.journal.entries(parked=True)
        if not entries:
            return 0
        whole = self.state.marks_whole()
        reached = 0
        for entry in entries:
            accepted = self.state.accept(
                entry.job,
                entry.delivery,
                self.dedupe_ttl_s,
                entry.active_ttl_s,
                self._ask_redis(entry.job, entry.require_active),
            )
            reached += self._settle(entry.job, True, accepted, whole)
        return reached

    def forget_done(self) -> None:
        """Drop journal entries another process answered."""
        entries = self.journal.entries(parked=False)
        if entries:
            for entry, done in zip(entries, self.state.done_among([e.job for e in entries]), strict=True):
                if done:
                    self.journal.done(entry.job)

    def waiting(self) -> int:
        """Jobs accepted here that no worker here works on and nobody is known to have answered:
        queued in Redis (for whichever process drains their thread) or parked here."""
        running = self._running()
        return sum(1 for e in self.journal.entries() if (e.job.thread.key, e.job.id) not in running)

    def stop(self) -> None:
        """Take no new thread; each drain stops after its current job and leaves the rest to others."""
        self._stopping.set()

    def _ask_redis(self, job: Job, require_active: bool) -> bool:
        """Whether Redis must say the job's thread is opsbot's: not when this process knows it is."""
        return require_active and not self.journal.is_active(job.thread.key)

    def _settle(self, job: Job, parked: bool, accepted: Accepted, marks_whole: bool) -> int:
        if accepted.outcome == "queued":
            if parked:
                self.journal.queued(job)
            self._start(job.thread.key, accepted)
            return 1
        if accepted.outcome == "ignored" and not marks_whole:
            return 0  # asked again once Redis knows every thread opsbot is in (see `accept`)
        if parked or accepted.outcome == "ignored":
            self.journal.done(job)  # a retry queued it elsewhere, or it was never for opsbot
        return 0

    def _start(self, thread: str, accepted: Accepted, here_when_full: bool = False) -> None:
        if accepted.token is None:
            return  # this thread's drainer, here or in another process, will take it
        if self.pool.reserve():
            self.pool.run_reserved(lambda: self._drain(thread, accepted))
        elif here_when_full:
            self._drain(thread, accepted)
        else:
            # Every worker here is busy: the job waits in Redis for a process with a free one.
            self.state.abandon(thread, accepted.token)

    def _running(self) -> set[tuple[str, str]]:
        with self._drains_lock:
            return {(thread, d.job.id) for thread, d in self._drains.items() if d.job is not None}

    def _drain(self, thread: str, accepted: Accepted) -> None:
        token = str(accepted.token)
        drain = _Drain(token)
        with self._drains_lock:
            # A second lease on a thread this process drains: Redis lost the first (a restart)
            # before the janitor held it again. Two drains would run the thread's jobs side by
            # side and lose track of the first's job (run again by the replay); the first goes on,
            # under its lease again at the janitor's next tick.
            mine = self._drains.get(thread)
            if mine is None:
                self._drains[thread] = drain
        if mine is not None:
            self._give_up(thread, token)
            return
        try:
            if accepted.took_over:
                self.on_takeover(thread)
            while not self._stopping.is_set():
                self._wait_for_whole_queues(thread)
                job = self.state.next_job(thread, token)
                if job is None:
                    if self._released(thread, token, drain):
                        return
                    continue
                drain.job = job
                try:
                    self.handle(job)
                except Deferred as exc:
                    log.warning("job %s waits for Redis (%s); it stays queued", job.id, exc)
                    self._give_up(thread, token)
                    return
                self.journal.done(job)
                drain.job = None
                self.state.finish(thread, job.id)
            self._give_up(thread, token)
        except REDIS_ERRORS as exc:
            metrics.redis_error("slack_delivery")
            log.error("draining %s stopped (%s); a janitor takes over what is left", thread, exc)
            self._give_up(thread, token)
        finally:
            with self._drains_lock:
                if self._drains.get(thread) is drain:
                    del self._drains[thread]

    def _released(self, thread: str, token: str, drain: _Drain) -> bool:
        """Give the thread's lease back, its queue empty; False when a job came meanwhile (the
        lease is kept and the drain goes on). The drain leaves this process's drains first: a
        question arriving once the lease is back starts a drain of its own, which must not take
        this one for a drain still at work and give its new lease up."""
        with self._drains_lock:
            if self._drains.get(thread) is drain:
                del self._drains[thread]
        if self.state.release(thread, token):
            return True
        with self._drains_lock:
            holder = self._drains.setdefault(thread, drain)
        if holder is not drain:  # Redis lost the lease meanwhile and another drain here took it
            self._give_up(thread, token)
            return True
        return False

    def _wait_for_whole_queues(self, thread: str) -> None:
        """After Redis lost its data, each process queues again what it holds; a thread's next job
        waits for that (`SlackState.may_take`), at most `hold_s`: past that a process is gone, and
        answering later would help no one."""
        deadline = time.monotonic() + self.hold_s
        while not self.state.may_take(thread):
            if time.monotonic() >= deadline:
                log.warning("%s: forgotten jobs not queued again in %.0f s; answering on", thread, self.hold_s)
                return
            if self._stopping.wait(HOLD_POLL_S):
                return

    def _give_up(self, thread: str, token: str) -> None:
        try:
            self.state.abandon(thread, token)
        except REDIS_ERRORS:
            pass  # the lease lapses by itself
