"""A question being given up (Ctrl-C in `opsbot chat`): what the loop, the model client and every
running tool watch, so a cancel stops them all the way a timeout stops one.

    with cancellable(event):      # the front end's threading.Event, set when the user cancels
        agent.run(...)            # tools started inside see it; a process is killed, as on timeout

The event travels in a context variable: the executor hands its context to the threads it runs
tools on, so a tool two threads down sees the same event. Nothing outside a `cancellable` block
is ever cancelled.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TypeVar

from .background import Job

# How often a waiting runner or executor looks at the event: a cancel is obeyed within this.
POLL_S = 0.1

T = TypeVar("T")

_current: ContextVar[threading.Event | None] = ContextVar("opsbot_cancel", default=None)


class Cancelled(Exception):
    """Raised where work can simply stop (between model chunks); tools return a result instead."""


@contextmanager
def cancellable(event: threading.Event | None) -> Iterator[None]:
    token = _current.set(event)
    try:
        yield
    finally:
        _current.reset(token)


def watched() -> bool:
    """Whether anything here can be cancelled (a waiting loop then wakes every POLL_S to look)."""
    return _current.get() is not None


def requested() -> bool:
    event = _current.get()
    return event is not None and event.is_set()


def check() -> None:
    """Raise `Cancelled` if the user has cancelled."""
    if requested():
        raise Cancelled


def abandonable(work: Callable[[], T]) -> T:
    """`work()`, or `Cancelled` as soon as the user cancels, whatever `work` is waiting for: it
    is then left to end on its own daemon thread (a model server that has not begun to answer
    cannot be interrupted, only no longer waited for), as a hung tool is."""
    if not watched():
        return work()
    job = Job(work, "opsbot-abandonable")
    while job.running:
        check()
        job.join(POLL_S)
    return job.result()
