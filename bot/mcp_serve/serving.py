"""`opsbot mcp-serve` put together from settings: the door (the tools bot/build.py builds, the
audit sink, the approval desk), then the SDK's server over stdio or Streamable HTTP."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import NamedTuple

from ...config.settings import Settings
from ..build import build_audit, build_tools
from ..telemetry.audit import Audit
from .callers import CallersError, Tokens, stdio_caller
from .desk import Desk
from .door import Door

DEFAULT_HTTP = "127.0.0.1:8765"


class ServeError(Exception):
    """mcp-serve cannot start as configured; the message says what to set."""


class Address(NamedTuple):
    host: str
    port: int


def address(text: str) -> Address:
    """host:port (or :port, or a port alone: on 127.0.0.1; nothing: DEFAULT_HTTP). Raises ValueError."""
    host, _, port = (text or DEFAULT_HTTP).rpartition(":")
    number = int(port)
    if not 0 < number < 65536:
        raise ValueError(f"port {number} is out of range")
    return Address(host.strip("[]") or "127.0.0.1", number)


def build_desk(settings: Settings, audit: Audit, at_terminal: bool) -> Desk | None:
    """Slack when `mcp_serve.approvals_channel` is set; else the terminal serving --http, if any."""
    if settings.mcp_serve.approvals_channel is not None:
        from .slack_desk import DeskError, slack_desk  # slack_sdk: only when Slack decides

        try:
            return slack_desk(settings, audit)
        except DeskError as exc:
            raise ServeError(str(exc)) from exc
    if at_terminal:
        from .terminal_desk import terminal_desk

        return terminal_desk(settings.policy, audit)
    return None


def open_door(settings: Settings, at_terminal: bool) -> Door:
    audit = build_audit(settings)
    desk = build_desk(settings, audit, at_terminal)
    return Door(settings.policy, build_tools(settings), limits=settings.loop, audit=audit, desk=desk)


def serve(settings: Settings, http: Address | None, started: Callable[[str], None]) -> None:
    """Serve until stdin closes (stdio) or SIGINT/SIGTERM (HTTP). Raises ServeError."""
    import anyio

    from .server import mcp_server, serve_stdio

    if http is None:
        caller = stdio_caller(settings.mcp_serve)
        door = open_door(settings, at_terminal=False)  # stdin and stdout are the protocol's
        started(f"over stdio, the caller mcp:{caller.user}{_writes(door)}")
        anyio.run(serve_stdio, mcp_server(door, lambda ctx: caller))
        return
    from .http import PATH, http_caller, listening, serve_http

    try:
        tokens = Tokens.of(settings.mcp_serve)
        sock = listening(http.host, http.port)
    except CallersError as exc:
        raise ServeError(str(exc)) from exc
    except OSError as exc:
        raise ServeError(f"cannot listen on {http.host}:{http.port}: {exc.strerror or exc}") from exc
    door = open_door(settings, at_terminal=sys.stdin.isatty())
    started(f"at http://{http.host}:{http.port}{PATH}, {len(tokens.accepted)} caller token(s){_writes(door)}")
    serve_http(mcp_server(door, http_caller(tokens)), tokens, sock, http.host)


def _writes(door: Door) -> str:
    desk = door.desk
    return f"; writes wait for approval {desk.showing.where}" if desk is not None else "; writes are refused"
