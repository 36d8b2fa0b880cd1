"""The MCP servers of one opsbot process: a Link each, on one event-loop thread, stopped with
opsbot (atexit, or `close` by whoever made the hub)."""

from __future__ import annotations

import atexit
import threading
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
        with _shared_lock:
            for key in [key for key, hub in _shared.items() if hub is self]:
                del _shared[key]
        for link in self.links.values():
            link.close()
        self._loop.stop()


_shared: dict[str, McpHub] = {}
_shared_lock = threading.Lock()


def shared_hub(servers: Mapping[str, McpServer]) -> McpHub:
    """The process's hub for these servers: the agent's tools and an approved write's call reach
    the same running servers (the approvals service knows the policy, not the agent)."""
    key = "\n".join(f"{name}={spec.model_dump_json()}" for name, spec in sorted(servers.items()))
    with _shared_lock:
        hub = _shared.get(key)
        if hub is None:
            hub = _shared[key] = McpHub(servers)
        return hub


def close_shared() -> None:
    """Stop every shared hub now rather than at exit (a test that is done with its servers)."""
    with _shared_lock:
        hubs = list(_shared.values())
    for hub in hubs:
        hub.close()
