"""A clock for tests that wait on time: real monotonic time, plus every pause slept on it."""

from __future__ import annotations

import threading
import time


class SkippingClock:
    """Monotonic time plus every pause slept on it, which passes at once: waiting costs nothing,
    and what compares times (a TTL, a window) sees them pass."""

    def __init__(self) -> None:
        self.skipped = 0.0
        self._lock = threading.Lock()

    def __call__(self) -> float:
        return time.monotonic() + self.skipped

    def sleep(self, seconds: float) -> None:
        with self._lock:
            self.skipped += max(seconds, 0.0)
