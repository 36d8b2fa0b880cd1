"""Getting each Slack message to exactly one run: a bounded worker pool and per-thread queues.

Listeners only accept work (a few milliseconds, then Bolt's ack); agent runs happen on
`WorkerPool`, never on Bolt's listener pool, so a slow model can never keep a slash command from
being acked. A thread's messages go through its queue in Redis: the process that finds the
thread idle drains it, one job after another, so runs in one thread never overlap or interleave
across processes, and a message arriving during a run is answered after it.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import redis

from bot.slack.jobs import Job
from bot.slack.state import SlackState

log = logging.getLogger("opsbot.slack")


class WorkerPool:
    """`workers` runs at once and `backlog` more waiting; beyond that `reserve` says no."""

    def __init__(self, workers: int, backlog: int) -> None:
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="opsbot-run")
        self._slots = threading.BoundedSemaphore(workers + backlog)
        self._taken = 0
        self._count = threading.Lock()

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

        def wrapped() -> None:
            try:
                work()
            except Exception:
                log.exception("opsbot worker failed")
            finally:
                self.release()

        self._executor.submit(wrapped)

    def submit(self, work: Callable[[], object]) -> bool:
        if not self.reserve():
            return False
        self.run_reserved(work)
        return True

    def shutdown(self) -> None:
        self._executor.shutdown(wait=True, cancel_futures=False)


class Dispatcher:
    """Accepts jobs from listeners and runs each exactly once, in order per thread."""

    def __init__(
        self,
        state: SlackState,
        pool: WorkerPool,
        handle: Callable[[Job], None],
        refuse: Callable[[Job, str], None],
    ) -> None:
        self.state = state
        self.pool = pool
        self.handle = handle
        self.refuse = refuse
        self._stop = threading.Event()
        self._active: dict[str, str] = {}  # thread -> drain token, for the heartbeat
        self._active_lock = threading.Lock()

    def submit(self, job: Job, here_when_full: bool = False) -> None:
        """Queue `job` for its thread. With every worker busy it is refused ("busy"), or, with
        `here_when_full` (work nobody is waiting on an ack for, like an alert's first look), its
        thread is drained in the calling thread instead."""
        reserved = self.pool.reserve()
        if not reserved and not here_when_full:
            self.refuse(job, "opsbot is busy with other questions right now; nothing was run. Ask again in a minute.")
            return
        try:
            token = self.state.enqueue(job.thread.key, job)
        except BaseException:
            if reserved:
                self.pool.release()
            raise
        if token is None:
            if reserved:
                self.pool.release()  # this thread's drainer, here or in another process, will take it
            return
        if reserved:
            self.pool.run_reserved(lambda: self._drain(job.thread.key, token))
        else:
            self._drain(job.thread.key, token)

    def sweep(self) -> int:
        """Drain queues whose drainer died with its process; how many were taken over."""
        taken = 0
        for thread in self.state.orphaned_queues():
            if not self.pool.reserve():
                break
            token = self.state.claim_idle(thread)
            if token is None:
                self.pool.release()
                continue
            taken += 1
            self.pool.run_reserved(functools.partial(self._drain, thread, token))
        return taken

    def start_janitor(self, sweep_every_s: float = 30.0) -> None:
        """Keep this process's drain locks alive while their runs last, and take over orphans."""
        heartbeat_s = min(10.0, self.state.drain_ttl_ms / 3000)

        def loop() -> None:
            last_sweep = time.monotonic()
            while not self._stop.wait(heartbeat_s):
                try:
                    self._keep_alive()
                    if time.monotonic() - last_sweep >= sweep_every_s:
                        last_sweep = time.monotonic()
                        self.sweep()
                except Exception:
                    log.exception("opsbot janitor: will try again")

        threading.Thread(target=loop, name="opsbot-janitor", daemon=True).start()

    def stop(self) -> None:
        self._stop.set()

    def _keep_alive(self) -> None:
        with self._active_lock:
            active = list(self._active.items())
        for thread, token in active:
            self.state.extend(thread, token)

    def _drain(self, thread: str, token: str) -> None:
        with self._active_lock:
            self._active[thread] = token
        try:
            while True:
                job = self.state.next_job(thread, token)
                if job is None:
                    if self.state.release(thread, token):
                        return
                    continue
                self.handle(job)
        except redis.RedisError as exc:
            log.error("draining %s stopped (%s); a janitor takes over what is left", thread, exc)
            try:
                self.state.abandon(thread, token)
            except redis.RedisError:
                pass  # the lock lapses by itself
        finally:
            with self._active_lock:
                self._active.pop(thread, None)
