"""The MCP SDK's own event loop: one daemon thread running asyncio, so the agent loop, the
executor and the tools stay synchronous. A sync caller hands a coroutine over and waits for it
with a deadline; a coroutine not done by then is cancelled on the loop."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class LoopTimeout(Exception):
    """The coroutine did not finish within its deadline, and was cancelled."""


class LoopThread:
    def __init__(self, name: str = "mcp-loop") -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def run(self, coroutine: Coroutine[Any, Any, T], timeout_s: float) -> T:
        """The coroutine's result, or its exception; LoopTimeout after `timeout_s`."""
        future = asyncio.run_coroutine_threadsafe(coroutine, self.loop)
        try:
            return future.result(timeout_s)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise LoopTimeout(f"no answer within {timeout_s:g}s") from None

    def submit(self, coroutine: Coroutine[Any, Any, Any]) -> None:
        """Start a coroutine without waiting for it (a server started in the background)."""
        asyncio.run_coroutine_threadsafe(coroutine, self.loop)

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def stop(self, timeout_s: float = 2.0) -> None:
        if self._thread.is_alive():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(timeout_s)
