"""The runs this process works on, watched for stop marks (runs.py): each round renews their
leases and gives up every run someone stopped, by setting its cancel event: the one Agent.run
watches, as Ctrl-C does in the terminal (tools/cancel.py): the model's stream abandoned, a
running command's process group killed, nothing more run, the run ended `cancelled`."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from ...redis.client import REDIS_ERRORS
from ...telemetry import metrics
from ..jobs import ThreadRef
from .runs import RunBoard, RunEntry

log = logging.getLogger("opsbot.slack")

EVERY_S = 0.2  # how often the marks are read: a stop is obeyed within this (and a command's kill)


@dataclass
class Running:
    """A run of this process: its cancel event, and who stopped it."""

    entry: RunEntry
    cancel: threading.Event = field(default_factory=threading.Event)
    stopped_by: str | None = None
    on_board: bool = True  # False: Redis did not take it, so no stop can reach it

    def stop(self, by: str) -> None:
        if self.stopped_by is None:
            self.stopped_by = by
        self.cancel.set()


class StopWatch:
    def __init__(self, board: RunBoard, every_s: float = EVERY_S) -> None:
        self.board = board
        self.every_s = every_s
        self._runs: dict[str, Running] = {}
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="opsbot-stops", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        self._closing.set()
        if self._thread.is_alive():
            self._thread.join()

    @contextmanager
    def watching(self, thread: ThreadRef, run: str, user: str) -> Iterator[Running]:
        """`run` (a job's work) on the board for as long as the block lasts, so a stop reaching any
        process finds it; off the board, and unstoppable from Slack, while Redis cannot take it."""
        try:
            running = self.begin(thread, run, user)
        except REDIS_ERRORS as exc:
            metrics.redis_error("slack_stops")
            log.warning("%s cannot be stopped from Slack: Redis did not take it (%s)", run, exc)
            running = Running(RunEntry(thread, run, user), on_board=False)
        try:
            yield running
        finally:
            if running.on_board:
                self.end(running)

    def begin(self, thread: ThreadRef, run: str, user: str) -> Running:
        """`run` works in `thread` from now: on the board for every process, watched here. Raises
        one of REDIS_ERRORS when it cannot be put on the board (nobody could stop it)."""
        running = Running(RunEntry(thread, run, user))
        self.board.begin(thread, run, user)
        with self._lock:
            self._runs[run] = running
        return running

    def end(self, running: Running) -> None:
        with self._lock:
            self._runs.pop(running.entry.run, None)
        try:
            self.board.end(running.entry.thread, running.entry.run)
        except REDIS_ERRORS:
            pass  # its lease lapses: the run reads as ended to everyone

    def stopped(self, run: str, by: str) -> bool:
        """Give `run` up now if it is this process's (the stop reached the process running it)."""
        with self._lock:
            running = self._runs.get(run)
        if running is not None:
            running.stop(by)
        return running is not None

    def look(self) -> None:
        """One round: every run's lease renewed, every stopped one given up."""
        with self._lock:
            runs = list(self._runs.values())
        for running, by in zip(runs, self.board.renew([r.entry for r in runs]), strict=True):
            if by is not None:
                running.stop(by)

    def _watch(self) -> None:
        while not self._closing.wait(self.every_s):
            try:
                self.look()
            except REDIS_ERRORS as exc:
                metrics.redis_error("slack_stops")
                log.warning("stop marks not read (%s); read again in %.1f s", exc, self.every_s)
