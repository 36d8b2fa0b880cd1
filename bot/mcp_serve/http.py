"""`opsbot mcp-serve --http`: the SDK's Streamable HTTP app at /mcp, behind a bearer token.

Every request must carry `Authorization: Bearer <token>` with a token of `mcp_serve.tokens`; any
other is answered 401 with what to do, before the SDK sees it. Each tool call maps the request's
token to its caller again (callers.py), so a session cannot outlive its token's meaning.
"""

from __future__ import annotations

import json
import socket
from typing import Any

from mcp.server import Server, ServerRequestContext
from starlette.types import ASGIApp, Receive, Scope, Send

from ...config.policy import Principal
from .callers import Tokens
from .server import CallerOf

PATH = "/mcp"
UNAUTHORIZED = (
    "opsbot mcp-serve needs a bearer token: send 'Authorization: Bearer <token>' with a token its "
    "mcp_serve.tokens list (ask whoever runs it for one)"
)


class BearerOnly:
    """An ASGI app that passes on only requests whose bearer token is accepted."""

    def __init__(self, app: ASGIApp, tokens: Tokens) -> None:
        self.app = app
        self.tokens = tokens

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and self.tokens.caller(_authorization(scope)) is None:
            body = json.dumps({"error": "unauthorized", "message": UNAUTHORIZED}).encode()
            headers = [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"www-authenticate", b'Bearer realm="opsbot"'),
            ]
            await send({"type": "http.response.start", "status": 401, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, send)


def _authorization(scope: Scope) -> str | None:
    for name, value in scope.get("headers", ()):
        if name.lower() == b"authorization":
            return bytes(value).decode("latin-1")
    return None


def http_caller(tokens: Tokens) -> CallerOf:
    """The caller of a request over HTTP: its token's."""

    def caller(ctx: ServerRequestContext[Any]) -> Principal | None:
        request = ctx.request
        headers = getattr(request, "headers", None)
        return tokens.caller(headers.get("authorization") if headers is not None else None)

    return caller


def listening(host: str, port: int) -> socket.socket:
    """The server's socket, bound before anything is said: a port in use is an OSError here."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    return sock


def serve_http(server: Server[Any], tokens: Tokens, sock: socket.socket, host: str) -> None:
    """Serve on `sock` until SIGINT or SIGTERM (uvicorn's handlers). `host` is what the server was
    asked to bind: on a loopback address the SDK refuses requests naming another host (DNS rebinding)."""
    import uvicorn

    app = BearerOnly(server.streamable_http_app(streamable_http_path=PATH, host=host), tokens)
    uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on")).run(sockets=[sock])
