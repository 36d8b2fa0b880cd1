"""Runs a stopped process left behind, taken over: now, and every `every_s`, so a crash while the
other processes keep running is noticed too (each run waits out its lease first, see engine.py
`recover`). Waiting runs it touched are handed to `show`, so their question is in their thread.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from .engine import RunbookEngine
from .records import RunRecord

log = logging.getLogger(__name__)


class Recovery:
    def __init__(self, engine: RunbookEngine, show: Callable[[RunRecord], None], every_s: float) -> None:
        self.engine = engine
        self.show = show
        self.every_s = every_s
        self._stop = threading.Event()

    def start(self) -> None:
        threading.Thread(target=self._loop, name="opsbot-runbook-recovery", daemon=True).start()

    def stop(self) -> None:
        self._stop.set()

    def _loop(self) -> None:
        while True:
            try:
                for run in self.engine.recover():
                    self.show(run)
            except Exception:  # noqa: BLE001 - a failed pass (Redis down) is tried again next time
                log.exception("runbook recovery failed; trying again later")
            if self._stop.wait(self.every_s):
                return
