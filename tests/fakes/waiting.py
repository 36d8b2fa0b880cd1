"""The suite's one polling wait, for what no event or condition announces: a process that comes up
or goes away, a log line, a key in Redis, a request a fake server received.

Where a fake does announce a change (`SlackApi.wait_for`), wait on that instead; where a test
waits for time itself to pass (a TTL, a lease), inject the clock the product code accepts.
"""

from __future__ import annotations

import time
from collections.abc import Callable


def until(
    condition: Callable[[], object],
    timeout: float = 5,
    interval: float = 0.01,
    ignore: tuple[type[BaseException], ...] = (),
) -> bool:
    """Whether `condition()` became true within `timeout` seconds, looking at once and then every
    `interval`. An exception of an `ignore` type counts as "not yet" (a server not listening yet);
    any other propagates. A negative check is `assert not until(happened, window)`: it waits the
    whole window only while nothing happens, and fails as soon as something does."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if condition():
                return True
        except ignore:
            pass
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)
