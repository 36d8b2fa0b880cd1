"""The background round that keeps "exactly once, nothing lost" true between messages.

Every `tick_s` (one second) it notices a Redis that restarted or failed over, and queues what
was parked while Redis was unreachable; every third of a lease it renews this process's leases,
drops journal entries other processes answered, and takes over threads whose drainer died. A
restart that lost data is repaired in two moves: at once each process holds its leases and
in-flight jobs again and marks its threads as opsbot's, then, one lease later (every live
process has noticed by then), it queues again what it accepted and Redis forgot, and vouches
that Redis's marks are whole again. Until then a reply in a thread Redis does not know is held,
not dropped: its mark may be one the restart lost. At the restart each process also marks the
threads whose jobs it will queue again, and two ticks later (every process has noticed and marked
by then) vouches for the marks: until then no thread's next job is taken, and a marked thread's
not until its jobs are back, so a question asked before the restart is answered before one
asked after it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from ..redis.client import REDIS_ERRORS
from ..redis.watch import Persistence, persistence, server_ids
from ..telemetry import metrics
from .delivery import Dispatcher

log = logging.getLogger("opsbot.slack")


class Janitor:
    def __init__(
        self,
        dispatcher: Dispatcher,
        tick_s: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.dispatcher = dispatcher
        self.state = dispatcher.state
        self.tick_s = tick_s
        self.clock = clock
        self.every_s = self.state.lease_s / 3
        self.servers: frozenset[str] = frozenset()
        self._servers_since = clock()  # when this process first saw the servers it sees now
        self.persistence = Persistence(known=False)
        self.restarts = 0
        self._replay_at: float | None = None
        self._next_round = 0.0
        self._unreachable = False
        self._stop = threading.Event()

    def look(self) -> Persistence:
        """Learn which Redis answers and what it keeps over a restart (at startup, and after each restart)."""
        first = not self.servers
        self.servers = server_ids(self.state.redis)
        self._servers_since = self.clock()
        if first:
            self.state.vouch_queues()  # no restart seen: what Redis holds is what was accepted
        self.persistence = persistence(self.state.redis)
        if not self.persistence.keeps_data:
            log.warning(
                "Redis persistence: %s. opsbot re-queues what each process holds after a restart, but a "
                "process that stops meanwhile takes its jobs with it; turn on appendonly (docs/operations.md)",
                self.persistence.describe(),
            )
        return self.persistence

    def tick(self) -> None:
        """One round; Redis being unreachable is logged once per outage, not every second."""
        try:
            self._tick()
        except REDIS_ERRORS as exc:
            metrics.redis_error("slack_janitor")
            if not self._unreachable:
                log.error("Redis is unreachable (%s); messages meanwhile are held here until it answers", exc)
            self._unreachable = True
            return
        if self._unreachable:
            log.info("Redis answers again")
        self._unreachable = False

    def start(self) -> None:
        def loop() -> None:
            while not self._stop.wait(self.tick_s):
                try:
                    self.tick()
                except Exception:
                    log.exception("opsbot janitor: will try again")

        threading.Thread(target=loop, name="opsbot-janitor", daemon=True).start()

    def stop(self) -> None:
        self._stop.set()

    def _tick(self) -> None:
        now = self.clock()
        servers = server_ids(self.state.redis)
        if self.servers and servers != self.servers:
            self.restarts += 1
            log.warning("Redis restarted or failed over; holding this process's threads and re-queuing its jobs")
            self.dispatcher.reassert()
            self._replay_at = now + self.state.lease_s
            self.look()
        if not self.servers:
            self._servers_since = now  # Redis answers for the first time since this process started
            self.state.vouch_queues()  # as in `look`, which could not reach it
        self.servers = servers
        if now - self._servers_since >= 2 * self.tick_s:
            # Every live process noticed these servers within a tick and marked what it will queue again.
            self.state.vouch_queues()
        self.dispatcher.queue_parked()
        if self._replay_at is not None and now >= self._replay_at:
            self._replay_at = None
            again = self.dispatcher.replay()
            log.info("re-queued %d job(s) Redis had forgotten", again)
        if now >= self._next_round:
            self._next_round = now + self.every_s
            self.dispatcher.keep_leases()
            self.dispatcher.forget_done()
            self.dispatcher.sweep()
            if now - self._servers_since >= self.state.lease_s:
                # Every live process noticed these servers within a tick or two, and marked its
                # threads again then: a thread Redis does not know now is not opsbot's.
                self.state.vouch_marks()
