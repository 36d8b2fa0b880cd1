"""A run's changes made lasting: saved as a compare-and-set on the record's version
(bot/runbooks/store.py), then told to the front end, in that order."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from .errors import RunLost
from .records import RunRecord
from .reporting import Event, Reporter, RunFinished, tell
from .store import RunStore


class Commits:
    def __init__(self, store: RunStore, reporter: Reporter, clock: Callable[[], datetime]) -> None:
        self.store = store
        self.reporter = reporter
        self.clock = clock

    def save(self, run: RunRecord) -> None:
        """Raises `RunLost` if the stored run changed since this process loaded it."""
        run.version += 1
        run.updated_at = self.clock()
        if not self.store.save(run):
            raise RunLost(run.id)

    def commit(self, run: RunRecord, event: Event | None = None) -> None:
        """Save, then tell: `event`, and the end of the run if it ended."""
        self.save(run)
        if event is not None:
            tell(self.reporter, run, event)
        if run.finished:
            tell(self.reporter, run, RunFinished())
