"""opsbot's HTTP face: Slack's Events API at /slack/events, alert webhooks at /hooks/, and /healthz,
served by waitress.

A plain WSGI router: Bolt's own WSGI adapter answers Slack (signature checks included), and the
health check says whether Redis answers, so a load balancer stops sending to a process that
cannot keep its promises.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import waitress
from slack_bolt.adapter.wsgi import SlackRequestHandler

if TYPE_CHECKING:
    from wsgiref.types import StartResponse, WSGIApplication, WSGIEnvironment

Health = Callable[[], dict[str, Any]]


class WebApp:
    def __init__(self, slack: SlackRequestHandler, health: Health, hooks: WSGIApplication | None = None) -> None:
        self.slack = slack
        self.health = health
        self.hooks = hooks  # the alert webhooks, when any is configured

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        if path == "/healthz":
            report = self.health()
            status = "200 OK" if report.get("ok") else "503 Service Unavailable"
            return _json(start_response, status, report)
        if path == "/slack/events":
            return self.slack(environ, start_response)
        if path.startswith("/hooks/") and self.hooks is not None:
            return self.hooks(environ, start_response)
        return _json(start_response, "404 Not Found", {"ok": False, "error": f"nothing at {path}"})


def serve(app: WebApp, port: int, threads: int = 16) -> None:
    waitress.serve(app, host="0.0.0.0", port=port, threads=threads, ident="opsbot")


def _json(start_response: StartResponse, status: str, body: dict[str, Any]) -> list[bytes]:
    data = json.dumps(body).encode()
    start_response(status, [("Content-Type", "application/json"), ("Content-Length", str(len(data)))])
    return [data]
