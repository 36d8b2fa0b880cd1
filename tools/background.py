"""Work on a daemon thread that may be given up: a hung tool or a model server that never answers
costs a thread, never the caller. The thread runs in a copy of the caller's context, so what the
caller keeps in context variables (the cancel event, the span a trace is at) goes with it."""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class Job(Generic[T]):
    """Its own `done` event says when the work has ended, not the thread's state: a Ctrl-C that
    interrupts `Thread.join` can leave `is_alive()` False while the thread still runs (CPython
    gh-90882)."""

    def __init__(self, work: Callable[[], T], name: str) -> None:
        self.value: Any = None
        self.error: BaseException | None = None
        self.done = threading.Event()
        self.thread = threading.Thread(target=contextvars.copy_context().run, args=(self._run, work), name=name)
        self.thread.daemon = True
        self.thread.start()

    def _run(self, work: Callable[[], T]) -> None:
        try:
            self.value = work()
        except BaseException as exc:  # noqa: BLE001 - the caller decides what it means
            self.error = exc
        finally:
            self.done.set()

    @property
    def running(self) -> bool:
        return not self.done.is_set()

    def join(self, timeout: float | None = None) -> None:
        self.done.wait(timeout)

    def result(self) -> T:
        """What `work` returned, or its exception raised here; only once it has ended."""
        if self.error is not None:
            raise self.error
        value: T = self.value
        return value
