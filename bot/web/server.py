"""opsbot's HTTP face: Slack's Events API at /slack/events, alert webhooks at /hooks/, /healthz and
/metrics (Prometheus), served by waitress.

A plain WSGI router over the endpoints' own apps: Slack's requests are checked before Bolt sees
them by bot/slack/requests.py, alert webhooks by bot/alerts/hooks.py. The health check says
whether Redis answers, so a load balancer stops sending to a process that cannot keep its promises.
"""

from __future__ import annotations

import errno
import json
import logging
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Protocol

import waitress

from ...config.settings import HttpSettings
from ..telemetry import metrics

if TYPE_CHECKING:
    from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment

log = logging.getLogger("opsbot.web")

Health = Callable[[], dict[str, Any]]

# waitress reads a whole body before the app sees it: this bounds what any request makes it buffer,
# above the endpoints' own caps (Slack's 1 MiB, the alert webhooks'), so their refusals are the
# ones answered and logged.
MAX_REQUEST_BYTES = 2 << 20


class WebApp:
    def __init__(self, slack: WSGIApplication, health: Health, hooks: WSGIApplication | None = None) -> None:
        self.slack = slack
        self.health = health
        self.hooks = hooks  # the alert webhooks, when any is configured

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        if path == "/healthz":
            report = self.health()
            status = "200 OK" if report.get("ok") else "503 Service Unavailable"
            return _json(start_response, status, report)
        if path == "/metrics":
            body, content_type = metrics.exposition()
            start_response("200 OK", [("Content-Type", content_type), ("Content-Length", str(len(body)))])
            return [body]
        if path == "/slack/events":
            return self.slack(environ, start_response)
        if path.startswith("/hooks/") and self.hooks is not None:
            return self.hooks(environ, start_response)
        return _json(start_response, "404 Not Found", {"ok": False, "error": f"nothing at {path}"})


def listen(app: WebApp, port: int, sizing: HttpSettings) -> Listening:
    """`app` bound to `port` on every address, not serving yet: binding first, a port that cannot
    be had stops the start before anything says it serves. Raises `OSError` (`port_problem`
    words it)."""
    server = waitress.create_server(
        app,
        host="0.0.0.0",
        port=port,
        threads=sizing.threads,
        backlog=sizing.backlog,
        connection_limit=sizing.connection_limit,
        ident="opsbot",
        max_request_body_size=MAX_REQUEST_BYTES,
    )
    # waitress logs "Task queue depth is N" for every request that waits for a thread: a burst of
    # webhooks is a line per request. How many wait is a gauge of /metrics instead.
    logging.getLogger("waitress.queue").setLevel(logging.ERROR)
    metrics.watch_http_waiting(lambda: len(server.task_dispatcher.queue))
    bound: Listening = server
    return bound


class Listening(Protocol):
    """A bound server: `run` serves until the process is stopped."""

    def run(self) -> None: ...


def port_problem(port: int, exc: OSError, setting: str) -> str:
    """Why `port` cannot be listened on, in one line naming `setting` (how to choose another)."""
    if exc.errno == errno.EADDRINUSE:
        return f"port {port} is already in use: stop what holds it, or choose another with {setting}"
    if exc.errno == errno.EACCES:
        return f"port {port} needs privileges this process lacks (ports below 1024 do): choose another with {setting}"
    return f"cannot listen on port {port} ({exc.strerror or exc}): choose another with {setting}"


def _json(start_response: StartResponse, status: str, body: dict[str, Any]) -> list[bytes]:
    data = json.dumps(body).encode()
    start_response(status, [("Content-Type", "application/json"), ("Content-Length", str(len(data)))])
    return [data]
