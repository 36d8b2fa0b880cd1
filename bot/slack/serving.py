"""Running the Slack app until the process is told to stop: Socket Mode, or HTTP (which also
serves the alert webhooks).

SIGTERM (what Heroku, systemd and Kubernetes send) stops taking new work and lets runs in
flight finish before the process exits; a run cut short by a harder kill is taken over from
Redis by another process's janitor.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from types import FrameType
from wsgiref.simple_server import WSGIServer

from pydantic import SecretStr, ValidationError
from slack_bolt.adapter.socket_mode import SocketModeHandler
from slack_bolt.adapter.wsgi import SlackRequestHandler
from slack_sdk.errors import SlackApiError

from ...config.settings import Settings
from ..alerts import AlertAuth, AlertHooks
from ..telemetry import metrics, tracing
from ..web.server import WebApp, listen, port_problem
from .app import SlackApp, StartupError, app_token, build_slack_app
from .requests import SlackEvents


def serve_slack(settings: Settings, http: bool, port: int, started: Callable[[SlackApp], None]) -> None:
    """Serve until SIGTERM or SIGINT. Raises `StartupError` naming what to fix."""
    token = None if http else app_token(settings)
    slack = build_slack_app(settings, http=http)
    # With OTEL_EXPORTER_OTLP_ENDPOINT set, OpenTelemetry is imported now (~0.1 s), not in the
    # first run; without it this imports nothing.
    tracing.enabled()
    signal.signal(signal.SIGTERM, _exit)

    def ready() -> None:
        # Once nothing can stop the start: the model's state is a line in the log now, rather than
        # news to the first person who asks in Slack (it never stops the start).
        slack.model.check()
        started(slack)

    try:
        if http:
            events = SlackEvents(SlackRequestHandler(slack.app), settings.slack_signing_secret)
            try:
                server = listen(WebApp(events, slack.health, alert_hooks(settings, slack)), port, settings.http)
            except OSError as exc:
                raise StartupError(port_problem(port, exc, "--port or PORT")) from exc
            ready()
            server.run()
        else:
            serve_metrics(settings.metrics_port)  # before connecting: a port taken is a startup error
            handler = SocketModeHandler(slack.app, token)
            try:
                handler.connect()  # type: ignore[no-untyped-call]
            except SlackApiError as exc:
                raise StartupError(
                    f"SLACK_APP_TOKEN was refused by Slack ({exc.response.get('error')}); create an app-level "
                    "token with connections:write under Basic Information, and turn Socket Mode on"
                ) from exc
            ready()
            threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        slack.close()


def serve_metrics(port: int) -> WSGIServer | None:
    """Socket Mode has no HTTP server of its own: /metrics gets a port (OPSBOT_METRICS_PORT; 0: none),
    served on a daemon thread until the process ends. A port taken stops the start, as a wrong token
    does: a target that never answers is found out only when someone looks at the dashboards."""
    if port == 0:
        return None
    try:
        return metrics.serve(port)
    except OSError as exc:
        problem = port_problem(port, exc, "OPSBOT_METRICS_PORT (0: none)")
        raise StartupError(f"cannot serve /metrics: {problem}") from exc


def alert_hooks(settings: Settings, slack: SlackApp) -> AlertHooks:
    """The alert webhooks: an endpoint whose credentials are not set refuses everything (404)."""
    secrets = settings.pagerduty_webhook_secrets.get_secret_value() if settings.pagerduty_webhook_secrets else ""
    try:
        auth = AlertAuth(
            alertmanager_token=settings.alertmanager_token,
            alertmanager_user=settings.alertmanager_user,
            alertmanager_password=settings.alertmanager_password,
            pagerduty_secrets=tuple(SecretStr(s.strip()) for s in secrets.split(",") if s.strip()),
        )
    except ValidationError as exc:
        problems = "; ".join(error["msg"] for error in exc.errors())
        raise StartupError(
            f"alert webhook credentials (ALERTMANAGER_*, PAGERDUTY_WEBHOOK_SECRETS): {problems}"
        ) from exc
    return AlertHooks(auth, slack.alerts.queue.take)


def _exit(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(0)
