"""The MCP servers of one opsbot process: a Link each, on one event-loop thread, stopped with
opsbot (atexit, or `close` by whoever made the hub)."""

from __future__ import annotations

import atexit
import time
from collections.abc import Callable, Mapping

from ...config.policy import McpServer
from .link import Link
from .loop import LoopThread


class McpHub:
    def __init__(
        self,
        servers: Mapping[str, McpServer],
        *,
        clock: Callable[[], float] = time.monotonic,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self._loop = LoopThread()
        self.links = {
            name: Link(name, spec, loop=self._loop, clock=clock, environ=environ) for name, spec in servers.items()
        }
        atexit.register(self.close)

    def start_eager(self) -> None:
        """Start the servers whose policy says `start: at_startup`, in the background."""
        for link in self.links.values():
            if link.spec.start == "at_startup":
                link.start_soon()

    def close(self) -> None:
        """Stop every server and the loop; safe to call twice."""
        atexit.unregister(self.close)
        for link in self.links.values():
            link.close()
        self._loop.stop()
