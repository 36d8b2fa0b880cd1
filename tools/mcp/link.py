"""One MCP server as opsbot keeps it: a session started when first needed (or at startup), its
tools as the server listed them, calls, and a crash noticed and answered.

The session lives in one task on the SDK's event-loop thread (loop.py): the transport and the
`ClientSession` are entered and left by that task, as anyio requires, and it waits for its stop
event in between; calls are other coroutines on the same loop using the session. A server that
dies (a closed connection, a broken pipe) is `Down` with what happened (its last words on stderr
when it said any); until its backoff has passed its tools answer `unavailable`, then the next
call starts it again. Backoff doubles with each failure in a row, from BACKOFF_S to MAX_BACKOFF_S.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from typing import IO, Any, Literal

from pydantic import BaseModel, ConfigDict

from ...config.policy import McpServer
from ..environment import named_values
from .loop import LoopThread, LoopTimeout

BACKOFF_S = 1.0
MAX_BACKOFF_S = 60.0
STDERR_TAIL = 400
STOP_GRACE_S = 5.0


class Listed(BaseModel):
    """A tool as the server lists it."""

    model_config = ConfigDict(frozen=True)

    name: str
    description: str
    input_schema: Any


class Down(BaseModel):
    """A server that is not running, what happened, and when it may be started again."""

    model_config = ConfigDict(frozen=True)

    reason: str
    retry_at: float
    failures: int


class Started:
    """A running session: the SDK's session, the tools listed, and how to end it."""

    def __init__(self, session: Any, tools: dict[str, Listed], stop: asyncio.Event, owner: asyncio.Task[None]) -> None:
        self.session = session
        self.tools = tools
        self.stop = stop
        self.owner = owner


class CallFailed(Exception):
    """A call that did not get an answer, in words for people and the model: the server is down
    (`down`), did not answer in time (`slow`), or answered the request with a protocol error
    (`refused`: an unknown tool, arguments it rejects)."""

    def __init__(self, message: str, *, kind: Literal["down", "slow", "refused"]) -> None:
        super().__init__(message)
        self.kind = kind


class Link:
    def __init__(
        self,
        name: str,
        spec: McpServer,
        *,
        loop: LoopThread,
        clock: Callable[[], float] = time.monotonic,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.name = name
        self.spec = spec
        self._loop = loop
        self._clock = clock
        self._environ = os.environ if environ is None else environ
        self._lock = threading.Lock()
        self._started: Started | None = None
        self._down: Down | None = None
        self._failures = 0
        self._stderr: IO[str] | None = None
        self._heard = 0  # how much of stderr was written before the last answer
        self._closed = False

    # ------------------------------------------------------------------ what the tools ask

    def tools(self) -> dict[str, Listed] | Down:
        """The server's tools, the server started if it is not; or why it is down."""
        started = self._ensure()
        return started if isinstance(started, Down) else started.tools

    def call(self, tool: str, arguments: dict[str, Any]) -> Any:
        """The server's CallToolResult; raises CallFailed when none came (the server is then Down,
        unless only this call was slow)."""
        started = self._ensure()
        if isinstance(started, Down):
            raise CallFailed(self.said(started), kind="down")
        import anyio
        from mcp import MCPError
        from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT

        coroutine = started.session.call_tool(tool, arguments, read_timeout_seconds=self.spec.timeout_s)
        try:
            # A moment beyond the SDK's own deadline, so that it answers first and says so.
            result = self._loop.run(coroutine, self.spec.timeout_s + 1)
        except LoopTimeout:
            raise CallFailed(self._slow(tool), kind="slow") from None
        except MCPError as exc:
            if exc.code == REQUEST_TIMEOUT:
                raise CallFailed(self._slow(tool), kind="slow") from None
            if exc.code != CONNECTION_CLOSED:
                raise CallFailed(f"MCP server {self.name} refused the call: {exc.message}", kind="refused") from None
            what = f"it stopped during a call of {tool}"
            raise CallFailed(self.said(self._crashed(started, what)), kind="down") from None
        except (OSError, anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream) as exc:
            what = f"its connection broke during a call of {tool} ({type(exc).__name__})"
            raise CallFailed(self.said(self._crashed(started, what)), kind="down") from None
        # An answer: the server works, and its next failure starts the backoff afresh; what it
        # wrote on stderr so far is not why it might stop later.
        self._failures = 0
        self._heard = self._stderr_size()
        return result

    def known(self) -> dict[str, Listed] | Down | None:
        """What is known of the server without starting it: its tools while it runs, why it is
        down, or None when it was never started. Read without the lock, which a start in progress
        holds for as long as starting takes."""
        started, down = self._started, self._down
        if started is not None and not started.owner.done():
            return started.tools
        if started is not None:
            return Down(reason="the server exited", retry_at=self._clock(), failures=self._failures)
        return down

    def said(self, down: Down) -> str:
        wait = down.retry_at - self._clock()
        again = f"opsbot starts it again in {wait:.1f}s" if wait > 0 else "opsbot starts it again on the next call"
        return f"MCP server {self.name} is not running: {down.reason}; {again}"

    def start_soon(self) -> None:
        """Start the server on another thread, without waiting (start: at_startup)."""
        threading.Thread(target=self._ensure, name=f"mcp-start-{self.name}", daemon=True).start()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            started, self._started = self._started, None
        if started is not None and self._loop.alive:
            with contextlib.suppress(Exception):
                self._loop.run(_ended(started), STOP_GRACE_S)

    # ------------------------------------------------------------------ starting and stopping

    def _ensure(self) -> Started | Down:
        with self._lock:
            if self._closed:
                return Down(reason="opsbot is stopping", retry_at=math.inf, failures=self._failures)
            if self._started is not None and not self._started.owner.done():
                return self._started
            if self._started is not None:
                # The owner task ended by itself: the transport closed under it.
                self._note_down(self._started, "the server exited")
            if self._down is not None and self._clock() < self._down.retry_at:
                return self._down
            try:
                self._started = self._loop.run(self._start(), self.spec.start_timeout_s)
            except LoopTimeout:
                return self._fail(f"it did not finish starting within {self.spec.start_timeout_s:g}s")
            except Missing as exc:
                return self._fail(str(exc))
            except Exception as exc:  # the SDK, the process or the network: all said the same way
                return self._fail(f"it could not be started: {_reason(exc)}{self._last_words()}")
            self._down = None
            return self._started

    def _fail(self, reason: str) -> Down:
        """Down until the backoff has passed: failures in a row (starts or crashes, until a call
        succeeds) double it, so a server that dies on every call is not started in a loop."""
        self._failures += 1
        delay = min(MAX_BACKOFF_S, BACKOFF_S * 2 ** (self._failures - 1))
        self._down = Down(reason=reason, retry_at=self._clock() + delay, failures=self._failures)
        return self._down

    def _crashed(self, started: Started, what: str) -> Down:
        with self._lock:
            if self._started is started:
                self._note_down(started, what)
            return self._down or self._fail(what)

    def _note_down(self, started: Started, what: str) -> None:
        """The session is dead: its owner is told to stop (the SDK reaps the process)."""
        self._started = None
        started.stop.set()
        self._fail(what + self._last_words())

    async def _start(self) -> Started:
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[Started] = loop.create_future()
        stop = asyncio.Event()
        transport = self._transport()
        owner = asyncio.create_task(self._own(transport, ready, stop))
        try:
            return await asyncio.shield(ready)
        except asyncio.CancelledError:
            stop.set()
            owner.cancel()
            raise

    async def _own(self, transport: Any, ready: asyncio.Future[Started], stop: asyncio.Event) -> None:
        from mcp import ClientSession

        try:
            async with contextlib.AsyncExitStack() as stack:
                read, write = await stack.enter_async_context(transport)
                session = await stack.enter_async_context(ClientSession(read, write))
                await session.initialize()
                tools = await _listed(session)
                owner = asyncio.current_task()
                assert owner is not None
                if not ready.done():
                    ready.set_result(Started(session, tools, stop, owner))
                await stop.wait()
        except BaseException as exc:  # noqa: BLE001 - the owner's end is reported through `ready`
            if not ready.done():
                ready.set_exception(exc if isinstance(exc, Exception) else RuntimeError(repr(exc)))
            if isinstance(exc, asyncio.CancelledError):
                raise

    def _transport(self) -> Any:
        """The SDK's transport context for this server (imported here: only a policy with MCP
        servers pays for the SDK's imports)."""
        if self.spec.command is not None:
            from mcp import StdioServerParameters, stdio_client

            env = self._named(self.spec.env, "its environment")
            params = StdioServerParameters(command=self.spec.command[0], args=self.spec.command[1:], env=env)
            if self._stderr is not None:
                self._stderr.close()
            self._heard = 0
            self._stderr = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")  # noqa: SIM115
            return stdio_client(params, errlog=self._stderr)
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        assert self.spec.url is not None
        headers = self._named(dict(self.spec.headers), "a header")
        # The SDK's advice for headers: a client of our own, with its timeouts (a long read, as a
        # server may hold a response stream open).
        client = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30.0, read=300.0))
        return streamable_http_client(self.spec.url, http_client=client)

    def _named(self, names: list[str] | dict[str, str], what: str) -> dict[str, str]:
        """Values of the environment variables the policy names (as given, or keyed by header)."""
        named = named_values({name: name for name in names} if isinstance(names, list) else names, self._environ)
        if named.unset is not None:
            raise Missing(
                f"it needs the environment variable {named.unset.variable} ({what}), which is not set where opsbot runs"
            )
        return named.values

    def _last_words(self) -> str:
        """The end of what the server wrote on stderr since its last answer, for saying why it stopped."""
        if self._stderr is None:
            return ""
        with contextlib.suppress(OSError, ValueError):
            self._stderr.flush()
            self._stderr.seek(max(self._heard, self._stderr_size() - STDERR_TAIL * 4))
            tail = " ".join(self._stderr.read().split())[-STDERR_TAIL:]
            if tail:
                return f" (its last words on stderr: {tail})"
        return ""

    def _stderr_size(self) -> int:
        if self._stderr is None:
            return 0
        self._stderr.flush()
        return self._stderr.seek(0, os.SEEK_END)

    def _slow(self, tool: str) -> str:
        return f"MCP server {self.name} did not answer the call of {tool} within {self.spec.timeout_s:g}s"


class Missing(Exception):
    """A variable the policy names is not set: the server is not started."""


async def _listed(session: Any) -> dict[str, Listed]:
    from mcp_types import PaginatedRequestParams

    tools: dict[str, Listed] = {}
    cursor: str | None = None
    while True:
        page = await session.list_tools(params=PaginatedRequestParams(cursor=cursor) if cursor else None)
        for tool in page.tools:
            tools[tool.name] = Listed(
                name=tool.name, description=tool.description or "", input_schema=tool.input_schema
            )
        cursor = page.next_cursor
        if not cursor or len(tools) > 10_000:
            return tools


async def _ended(started: Started) -> None:
    started.stop.set()
    with contextlib.suppress(Exception, asyncio.CancelledError):
        await asyncio.wait_for(started.owner, STOP_GRACE_S - 1)


def _reason(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_reason(inner) for inner in exc.exceptions)
    if isinstance(exc, FileNotFoundError):
        return f"program not found: {exc.filename}"
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
