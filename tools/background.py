"""Work on a daemon thread that may be given up: a hung tool or a model server that never answers
costs a thread, never the caller. The thread runs in a copy of the caller's context, so what the
caller keeps in context variables (the cancel event, the span a trace is at) goes with it.

Threads are kept for the next job: a run asks for two per tool step (the model call, the tool),
and starting a thread costs about as much as a quick tool call. A job given up keeps its thread
busy; the next job gets another."""

from __future__ import annotations

import contextvars
import queue
import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

T = TypeVar("T")

IDLE_S = 30.0  # how long a kept thread waits for the next job before it ends


class _Workers:
    """Daemon threads that wait for work. `idle` counts threads waiting on `tasks`; a job handed
    out takes one of them (under the lock), so a thread that stops waiting finds its job queued."""

    def __init__(self, idle_s: float = IDLE_S) -> None:
        self.idle_s = idle_s
        self.tasks: queue.SimpleQueue[tuple[Callable[[], None], str]] = queue.SimpleQueue()
        self.idle = 0
        self.lock = threading.Lock()

    def start(self, task: Callable[[], None], name: str) -> None:
        with self.lock:
            if self.idle:
                self.idle -= 1
                self.tasks.put((task, name))
                return
        thread = threading.Thread(target=self._serve, args=(task,), name=name, daemon=True)
        thread.start()

    def _serve(self, task: Callable[[], None]) -> None:
        me = threading.current_thread()
        while True:
            task()
            me.name = "opsbot-idle"
            with self.lock:
                self.idle += 1
            try:
                task, me.name = self.tasks.get(timeout=self.idle_s)
            except queue.Empty:
                with self.lock:
                    if self.tasks.empty():
                        self.idle -= 1
                        return
                    task, me.name = self.tasks.get_nowait()


_workers = _Workers()


class Job(Generic[T]):
    """Its own `done` event says when the work has ended, not a thread's state: a Ctrl-C that
    interrupts a wait can leave a thread looking ended while it still runs (CPython gh-90882)."""

    def __init__(self, work: Callable[[], T], name: str) -> None:
        self.value: Any = None
        self.error: BaseException | None = None
        self.done = threading.Event()
        context = contextvars.copy_context()
        _workers.start(lambda: context.run(self._run, work), name)

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
