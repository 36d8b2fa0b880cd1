"""The HTTP side of alerts: `POST /hooks/alertmanager` and `POST /hooks/pagerduty` as one WSGI app.

A webhook is a stranger knocking, so the order of checks is the point: nothing is read before the
method and endpoint make sense, nothing is parsed before the caller is authenticated (Alertmanager:
a bearer token or basic auth, since it cannot sign; PagerDuty: an HMAC over the raw body), and
nothing is accepted before the whole body has parsed, so a payload that is half valid starts no
work at all. Each alert is then offered to `take`, which queues a first delivery and drops a
repeated one in one step (bot/alerts/queue.py): senders time out (PagerDuty after 5 s) and retry,
so the hook answers 202 without waiting for any work.

Credentials are compared in constant time and never logged or echoed; errors name what is wrong
with a request, never what it contained.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
from collections.abc import Callable, Iterable
from http import HTTPStatus
from typing import TYPE_CHECKING, Any, NamedTuple

from pydantic import BaseModel, ConfigDict, SecretStr, field_validator, model_validator

from ..telemetry import metrics
from ..web.body import BodyRefused, read_body
from .alertmanager import parse_alertmanager
from .models import Alert, BadPayload
from .pagerduty import parse_pagerduty, verify_signature

if TYPE_CHECKING:
    from wsgiref.types import StartResponse, WSGIEnvironment

log = logging.getLogger("opsbot.alerts")

ALERTMANAGER_PATH = "/hooks/alertmanager"
PAGERDUTY_PATH = "/hooks/pagerduty"

Take = Callable[[list[str], Alert], bool]
"""Queues the alert unless one of the ids was seen before, marking them all, in one step (see
bot/alerts/queue.py): True when it was queued."""


class AlertAuth(BaseModel):
    """Who may post alerts. An endpoint with nothing configured refuses everything."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    alertmanager_token: SecretStr | None = None
    alertmanager_user: str | None = None
    alertmanager_password: SecretStr | None = None
    pagerduty_secrets: tuple[SecretStr, ...] = ()

    @field_validator("alertmanager_token", "alertmanager_password")
    @classmethod
    def _not_empty(cls, value: SecretStr | None) -> SecretStr | None:
        # An empty credential would match an empty header: refuse it loudly at startup instead.
        if value is not None and not value.get_secret_value():
            raise ValueError("must not be empty (leave it unset to turn the endpoint off)")
        return value

    @field_validator("pagerduty_secrets")
    @classmethod
    def _no_empty_secret(cls, value: tuple[SecretStr, ...]) -> tuple[SecretStr, ...]:
        if any(not secret.get_secret_value() for secret in value):
            raise ValueError("an empty PagerDuty secret would make signatures forgeable")
        return value

    @model_validator(mode="after")
    def _basic_pair(self) -> AlertAuth:
        if (self.alertmanager_user is None) != (self.alertmanager_password is None):
            raise ValueError("set both ALERTMANAGER_USER and ALERTMANAGER_PASSWORD, or neither")
        if self.alertmanager_user is not None and (not self.alertmanager_user or ":" in self.alertmanager_user):
            raise ValueError("ALERTMANAGER_USER must be non-empty and contain no ':' (basic auth)")
        return self

    @property
    def alertmanager_configured(self) -> bool:
        return self.alertmanager_token is not None or self.alertmanager_user is not None

    @property
    def pagerduty_configured(self) -> bool:
        return bool(self.pagerduty_secrets)


class _Answer(NamedTuple):
    """An accepted request's HTTP status and JSON body."""

    status: int
    body: dict[str, Any]


class _Refused(Exception):
    def __init__(self, status: int, message: str, headers: list[tuple[str, str]] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or []


class AlertHooks:
    """WSGI app for the alert webhooks; mount it at /hooks/ beside the Slack endpoint."""

    def __init__(
        self,
        auth: AlertAuth,
        take: Take,
        max_body_bytes: int = 1_000_000,
    ) -> None:
        self.auth = auth
        self.take = take
        self.max_body_bytes = max_body_bytes

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        try:
            status, answer = self._handle(path, environ)
            headers: list[tuple[str, str]] = []
        except _Refused as refused:
            status, answer, headers = refused.status, {"error": refused.message}, refused.headers
            level = logging.WARNING if status == 401 else logging.INFO
            # The reason and the peer only: never a header value or the body.
            log.log(
                level,
                "alert hook %r refused %d: %s (from %s)",
                path[:80],
                status,
                refused.message,
                environ.get("REMOTE_ADDR", "?"),
            )
        except Exception:
            # Dedupe store down, or the queue refusing: 503 makes both senders retry later.
            log.exception("alert hook %r failed", path[:80])
            status, answer, headers = 503, {"error": "could not take the alert now; retry later"}, []
        data = json.dumps(answer).encode()
        start_response(
            f"{status} {HTTPStatus(status).phrase}",
            [("Content-Type", "application/json"), ("Content-Length", str(len(data))), *headers],
        )
        return [data]

    def _handle(self, path: str, environ: WSGIEnvironment) -> _Answer:
        if path not in (ALERTMANAGER_PATH, PAGERDUTY_PATH):
            raise _Refused(404, f"no alert hook here: POST to {ALERTMANAGER_PATH} or {PAGERDUTY_PATH}")
        if environ.get("REQUEST_METHOD") != "POST":
            raise _Refused(405, "alert hooks take POST only", [("Allow", "POST")])
        if path == ALERTMANAGER_PATH:
            return self._alertmanager(environ)
        return self._pagerduty(environ)

    def _alertmanager(self, environ: WSGIEnvironment) -> _Answer:
        if not self.auth.alertmanager_configured:
            raise _Refused(
                404,
                "Alertmanager hook not configured: set ALERTMANAGER_TOKEN "
                "(or ALERTMANAGER_USER and ALERTMANAGER_PASSWORD) and use it in the webhook's http_config",
            )
        # Headers only: an unauthenticated sender does not get its body read at all.
        if not self._alertmanager_authorized(environ.get("HTTP_AUTHORIZATION", "")):
            challenge = 'Bearer realm="opsbot"' if self.auth.alertmanager_token else 'Basic realm="opsbot"'
            raise _Refused(
                401, "missing or wrong Authorization for the Alertmanager hook", [("WWW-Authenticate", challenge)]
            )
        body = self._body(environ)
        alerts = _parsed(parse_alertmanager, body)
        return self._take(alerts, [])

    def _pagerduty(self, environ: WSGIEnvironment) -> _Answer:
        if not self.auth.pagerduty_configured:
            raise _Refused(
                404, "PagerDuty hook not configured: set PAGERDUTY_WEBHOOK_SECRETS to the subscription's secret(s)"
            )
        body = self._body(environ)
        secrets = [secret.get_secret_value() for secret in self.auth.pagerduty_secrets]
        if not verify_signature(body, environ.get("HTTP_X_PAGERDUTY_SIGNATURE"), secrets):
            raise _Refused(401, "missing or wrong X-PagerDuty-Signature")
        alerts = _parsed(parse_pagerduty, body)
        # The same webhook is re-sent with the same X-Webhook-Id on every retry; hashed because the
        # header is the sender's text and ends up in a Redis key. Shared by the notification's
        # alerts, which is right only because a v3 webhook carries exactly one event.
        webhook_id = environ.get("HTTP_X_WEBHOOK_ID", "").strip()
        extra = [f"pagerduty:webhook:{_digest(webhook_id)}"] if webhook_id else []
        return self._take(alerts, extra)

    def _alertmanager_authorized(self, header: str) -> bool:
        scheme, _, credentials = header.strip().partition(" ")
        scheme, credentials = scheme.lower(), credentials.strip()
        token = self.auth.alertmanager_token
        if scheme == "bearer" and token is not None:
            return _same(credentials, token.get_secret_value())
        user, password = self.auth.alertmanager_user, self.auth.alertmanager_password
        if scheme == "basic" and user is not None and password is not None:
            try:
                given = base64.b64decode(credentials, validate=True).decode("utf-8")
            except ValueError:  # bad base64 (binascii.Error) or bad UTF-8 alike
                return False
            given_user, colon, given_password = given.partition(":")
            # `&`, not `and`: both compares always run, so timing does not tell which one failed.
            return bool(colon) & _same(given_user, user) & _same(given_password, password.get_secret_value())
        return False

    def _body(self, environ: WSGIEnvironment) -> bytes:
        media_type = environ.get("CONTENT_TYPE", "").split(";", 1)[0].strip().lower()
        if media_type != "application/json":
            raise _Refused(415, "send the payload as Content-Type: application/json")
        try:
            return read_body(environ, self.max_body_bytes)
        except BodyRefused as refused:
            raise _Refused(refused.status, refused.message) from None

    def _take(self, alerts: list[Alert], extra_ids: list[str]) -> _Answer:
        # Reached only once every alert parsed: a malformed entry anywhere starts nothing.
        accepted = duplicates = 0
        for alert in alerts:
            # Marked and queued in one step: two processes given the same delivery never both take
            # it, and a failure leaves no mark, so the sender's retry is not taken for a duplicate.
            queued = self.take([alert.delivery, *extra_ids], alert)
            metrics.alert_received(alert.source, queued)
            if queued:
                accepted += 1
            else:
                duplicates += 1
        if alerts:
            log.info("alert hook: %s accepted %d, duplicates %d", alerts[0].source, accepted, duplicates)
        return _Answer(202, {"accepted": accepted, "duplicates": duplicates})


def _parsed(parse: Callable[[bytes], list[Alert]], body: bytes) -> list[Alert]:
    try:
        return parse(body)
    except BadPayload as bad:
        raise _Refused(400, bad.message) from None


def _same(given: str, expected: str) -> bool:
    # Digests first, so the compare takes as long for a 1-character guess as for the right length.
    return hmac.compare_digest(_sha256(given), _sha256(expected))


def _sha256(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).digest()


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:32]
