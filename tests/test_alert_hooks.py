"""The alert webhooks over real HTTP (waitress, as in production) with dedupe in a real Redis.

What is asserted is what reaches `accept`, since that is what starts runbooks in alert threads:
each documented payload shape once, nothing for a forged, unauthenticated or malformed request,
nothing twice for a re-sent notification, and a quick 202 however many alerts arrive at once.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import http.client
import json
import logging
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
import waitress.server
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import SecretStr, ValidationError
from waitress import wasyncore

from opsbot.bot.alerts import (
    Alert,
    AlertAuth,
    AlertHooks,
    AlertQueue,
    BadPayload,
    parse_alertmanager,
    parse_pagerduty,
    verify_signature,
)
from opsbot.bot.alerts.alertmanager import MAX_ALERTS
from opsbot.bot.alerts.models import MAX_ANNOTATION_CHARS, MAX_LABEL_VALUE_CHARS, MAX_LABELS
from tests.fakes.mutations import one_value_swapped
from tests.fakes.redis_server import RedisServer, free_port

FIXTURES = Path(__file__).parent / "fixtures" / "alerts"
TOKEN = "am-token-5f2c9d"
USER, PASSWORD = "alertmanager", "am-pass-81b7e0"
PD_NEW, PD_OLD = "pd-secret-new-3a9f", "pd-secret-old-77c1"
FULL_AUTH = AlertAuth(
    alertmanager_token=SecretStr(TOKEN),
    alertmanager_user=USER,
    alertmanager_password=SecretStr(PASSWORD),
    pagerduty_secrets=(SecretStr(PD_NEW), SecretStr(PD_OLD)),
)


def fixture(name: str) -> bytes:
    return (FIXTURES / f"{name}.json").read_bytes()


def document(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(fixture(name))
    return loaded


def sign(body: bytes, secret: str) -> str:
    return "v1=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def bearer(token: str = TOKEN) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def basic(user: str = USER, password: str = PASSWORD) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


class Swappable:
    """One server for the module, with each test's own `AlertHooks` behind it."""

    def __init__(self) -> None:
        self.app: AlertHooks | None = None

    def __call__(self, environ: Any, start_response: Any) -> Any:
        assert self.app is not None
        return self.app(environ, start_response)


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[Swappable, str]]:
    swappable = Swappable()
    port = free_port()
    sockets: dict[int, Any] = {}
    wsgi = waitress.server.create_server(swappable, map=sockets, host="127.0.0.1", port=port, threads=4)
    stopping = threading.Event()

    def serve() -> None:
        # Our own loop rather than `wsgi.run()`, so the sockets are closed by the thread that
        # polls them: closing them from the test thread races with select() (EBADF).
        while not stopping.is_set():
            wasyncore.loop(timeout=0.05, map=sockets, count=1)
        wsgi.close()
        wasyncore.close_all(sockets)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield swappable, f"http://127.0.0.1:{port}"
    stopping.set()
    thread.join(timeout=5)
    wsgi.task_dispatcher.shutdown()


class Hook:
    """A client for the hooks, and the alerts they accepted."""

    def __init__(self, swappable: Swappable, base_url: str, client: redis.Redis) -> None:
        self.swappable = swappable
        self.base_url = base_url
        self.client = client
        self.queue = AlertQueue(client, owner="test", prefix="test:alerts")
        self.use(FULL_AUTH)

    @property
    def accepted(self) -> list[Alert]:
        """What the real queue holds: the alerts the hooks took, in order."""
        raw = self.client.lrange("test:alerts:{alerts}:pending", 0, -1)
        return [Alert.model_validate_json(item) for item in raw]

    def use(self, auth: AlertAuth, **kwargs: Any) -> None:
        kwargs.setdefault("take", self.queue.take)
        self.swappable.app = AlertHooks(auth, **kwargs)

    def post(
        self, path: str, body: bytes, headers: dict[str, str], method: str = "POST"
    ) -> tuple[int, dict[str, Any], dict[str, str]]:
        headers = {"Content-Type": "application/json", **headers}
        request = urllib.request.Request(self.base_url + path, data=body, headers=headers, method=method)
        try:
            with urllib.request.urlopen(request, timeout=5) as response:
                return response.status, json.loads(response.read()), {k.lower(): v for k, v in response.headers.items()}
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read()), {k.lower(): v for k, v in error.headers.items()}

    def alertmanager(self, body: bytes, headers: dict[str, str] | None = None) -> tuple[int, dict[str, Any]]:
        status, answer, _ = self.post("/hooks/alertmanager", body, bearer() if headers is None else headers)
        return status, answer

    def pagerduty(
        self, body: bytes, signature: str | None = None, webhook_id: str | None = None, **headers: str
    ) -> tuple[int, dict[str, Any]]:
        sent = {"X-PagerDuty-Signature": sign(body, PD_NEW) if signature is None else signature, **headers}
        if webhook_id is not None:
            sent["X-Webhook-Id"] = webhook_id
        status, answer, _ = self.post("/hooks/pagerduty", body, sent)
        return status, answer


@pytest.fixture
def hook(server: tuple[Swappable, str], redis_server: RedisServer) -> Iterator[Hook]:
    redis_server.flush()
    client = redis.Redis.from_url(redis_server.url, decode_responses=True)
    yield Hook(server[0], server[1], client)
    client.close()


def am_body(alerts: list[dict[str, Any]], **fields: Any) -> bytes:
    base = document("alertmanager_firing")
    base["alerts"] = alerts
    base.update(fields)
    return json.dumps(base).encode()


def am_alert(fingerprint: str = "abc123", starts_at: Any = "2024-05-14T09:21:37Z", **fields: Any) -> dict[str, Any]:
    entry = {
        "status": "firing",
        "labels": {"alertname": "HighErrorRate", "service": "checkout", "severity": "critical"},
        "annotations": {"summary": "errors"},
        "startsAt": starts_at,
        "endsAt": "0001-01-01T00:00:00Z",
        "generatorURL": "http://prometheus.example.com:9090/graph",
        "fingerprint": fingerprint,
    }
    entry.update(fields)
    return entry


# --- each documented shape, once -------------------------------------------------------------


def test_alertmanager_firing_alert_is_accepted_with_its_labels(hook: Hook) -> None:
    assert hook.alertmanager(fixture("alertmanager_firing")) == (202, {"accepted": 1, "duplicates": 0})
    [alert] = hook.accepted
    assert (alert.source, alert.status, alert.title) == ("alertmanager", "firing", "HighErrorRate")
    assert alert.labels["service"] == "checkout" and alert.labels["severity"] == "critical"
    assert alert.annotations["summary"] == "checkout is failing 7.3% of requests"
    assert alert.url is not None and alert.url.startswith("http://prometheus.example.com:9090/graph")
    assert alert.starts_at is not None and alert.starts_at.isoformat().startswith("2024-05-14T09:21:37")
    assert alert.notes == ()


def test_resolved_alert_has_the_firing_alerts_key_and_its_own_delivery(hook: Hook) -> None:
    assert hook.alertmanager(fixture("alertmanager_firing"))[1]["accepted"] == 1
    assert hook.alertmanager(fixture("alertmanager_resolved"))[1]["accepted"] == 1
    firing, resolved = hook.accepted
    assert resolved.status == "resolved"
    assert firing.key == resolved.key
    assert firing.delivery != resolved.delivery


def test_grouped_notification_gives_one_alert_per_fingerprint(hook: Hook) -> None:
    assert hook.alertmanager(fixture("alertmanager_grouped")) == (202, {"accepted": 3, "duplicates": 0})
    assert [a.labels["instance"] for a in hook.accepted] == [f"web-{n}.example.com:9100" for n in (1, 2, 3)]
    assert len({a.key for a in hook.accepted}) == 3


def test_truncated_notification_is_accepted_and_says_what_was_left_out(hook: Hook) -> None:
    assert hook.alertmanager(fixture("alertmanager_truncated")) == (202, {"accepted": 2, "duplicates": 0})
    for alert in hook.accepted:
        assert any("2 more alert(s)" in note for note in alert.notes)


def test_disk_filling_alert_keeps_the_root_mountpoint(hook: Hook) -> None:
    assert hook.alertmanager(fixture("alertmanager_disk_filling"))[0] == 202
    [alert] = hook.accepted
    assert alert.title == "DiskFilling"
    assert alert.labels["mountpoint"] == "/"
    assert alert.labels["instance"] == "db-1.example.com:9100"


def test_pagerduty_triggered_incident_is_a_firing_alert(hook: Hook) -> None:
    assert hook.pagerduty(fixture("pagerduty_triggered")) == (202, {"accepted": 1, "duplicates": 0})
    [alert] = hook.accepted
    assert (alert.source, alert.status, alert.key) == ("pagerduty", "firing", "pagerduty:Q2LGJ8N4W1XKBO")
    assert alert.labels == {
        "service": "checkout-api",
        "urgency": "high",
        "priority": "P1",
        "incident": "4182",
        "event_type": "incident.triggered",
    }
    assert alert.title == alert.annotations["title"] == "[FIRING:1] HighErrorRate checkout (critical)"
    assert alert.url == "https://acme.pagerduty.com/incidents/Q2LGJ8N4W1XKBO"


def test_pagerduty_resolved_incident_closes_the_same_key(hook: Hook) -> None:
    hook.pagerduty(fixture("pagerduty_triggered"))
    assert hook.pagerduty(fixture("pagerduty_resolved")) == (202, {"accepted": 1, "duplicates": 0})
    triggered, resolved = hook.accepted
    assert resolved.status == "resolved" and resolved.key == triggered.key


def test_pagerduty_acknowledgement_is_taken_and_ignored(hook: Hook) -> None:
    # A 2xx, or PagerDuty counts a failed delivery and eventually disables the subscription.
    assert hook.pagerduty(fixture("pagerduty_acknowledged")) == (202, {"accepted": 0, "duplicates": 0})
    assert hook.accepted == []


# --- who may post ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "headers",
    [
        {},
        bearer("wrong-token"),
        bearer(TOKEN + "x"),
        bearer(""),
        {"Authorization": f"Token {TOKEN}"},
        {"Authorization": TOKEN},
        basic(password="wrong"),
        basic(user="someone-else"),
        {"Authorization": "Basic not-base64!!"},
        {"Authorization": "Basic " + base64.b64encode(PASSWORD.encode()).decode()},
    ],
    ids=["none", "wrong", "longer", "empty", "scheme", "bare", "basic-pass", "basic-user", "basic-junk", "no-colon"],
)
def test_alertmanager_without_the_right_credentials_gets_401_and_nothing_runs(
    hook: Hook, headers: dict[str, str]
) -> None:
    status, answer, response_headers = hook.post("/hooks/alertmanager", fixture("alertmanager_firing"), headers)
    assert status == 401 and "Authorization" in answer["error"]
    assert "www-authenticate" in response_headers
    assert TOKEN not in json.dumps(answer) and PASSWORD not in json.dumps(answer)
    assert hook.accepted == []


def test_alertmanager_takes_basic_auth_when_configured(hook: Hook) -> None:
    assert hook.alertmanager(fixture("alertmanager_firing"), basic())[0] == 202
    assert len(hook.accepted) == 1


def test_only_the_configured_kind_of_credential_is_accepted(hook: Hook) -> None:
    hook.use(AlertAuth(alertmanager_token=SecretStr(TOKEN)))
    assert hook.alertmanager(fixture("alertmanager_firing"), basic())[0] == 401
    hook.use(AlertAuth(alertmanager_user=USER, alertmanager_password=SecretStr(PASSWORD)))
    assert hook.alertmanager(fixture("alertmanager_firing"), bearer())[0] == 401
    assert hook.accepted == []


def test_unconfigured_endpoints_refuse_everything_and_say_how_to_configure(hook: Hook) -> None:
    hook.use(AlertAuth())
    status, answer = hook.alertmanager(fixture("alertmanager_firing"))
    assert status == 404 and "not configured" in answer["error"] and "ALERTMANAGER_TOKEN" in answer["error"]
    body = fixture("pagerduty_triggered")
    status, answer = hook.pagerduty(body, signature=sign(body, PD_NEW))
    assert status == 404 and "not configured" in answer["error"]
    assert hook.accepted == []


def test_secrets_never_reach_the_logs(hook: Hook, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    hook.alertmanager(fixture("alertmanager_firing"), bearer("a-guess"))
    hook.alertmanager(fixture("alertmanager_firing"), bearer())
    hook.alertmanager(fixture("alertmanager_firing"), basic())
    hook.pagerduty(fixture("pagerduty_triggered"), signature="v1=00")
    assert "refused 401" in caplog.text
    for secret in (TOKEN, PASSWORD, PD_NEW, PD_OLD, "a-guess", "Bearer"):
        assert secret not in caplog.text
    assert TOKEN not in repr(FULL_AUTH) and PD_NEW not in repr(FULL_AUTH)


@pytest.mark.parametrize(
    "make_signature",
    [
        lambda body: None,
        lambda body: "",
        lambda body: sign(body, "not-our-secret"),
        lambda body: sign(body + b" ", PD_NEW),
        lambda body: sign(body, PD_NEW).replace("v1=", "v0="),
        lambda body: sign(body, PD_NEW)[:-2],
        lambda body: "v1=" + "0" * 64 + "," + sign(body, "also-not-ours"),
    ],
    ids=["missing", "empty", "other-secret", "other-body", "other-version", "cut", "several-none-valid"],
)
def test_pagerduty_without_a_valid_signature_gets_401_and_nothing_runs(
    hook: Hook, make_signature: Callable[[bytes], str | None]
) -> None:
    body = fixture("pagerduty_triggered")
    signature = make_signature(body)
    headers = {} if signature is None else {"X-PagerDuty-Signature": signature}
    status, answer, _ = hook.post("/hooks/pagerduty", body, headers)
    assert status == 401 and "X-PagerDuty-Signature" in answer["error"]
    assert hook.accepted == []


def test_pagerduty_signature_over_a_different_body_is_refused(hook: Hook) -> None:
    signed_for = fixture("pagerduty_acknowledged")
    assert hook.pagerduty(fixture("pagerduty_triggered"), signature=sign(signed_for, PD_NEW))[0] == 401
    assert hook.accepted == []


def test_pagerduty_one_valid_signature_among_several_is_enough(hook: Hook) -> None:
    body = fixture("pagerduty_triggered")
    header = f"v1={'ab' * 32}, {sign(body, 'retired-secret')},{sign(body, PD_NEW)}"
    assert hook.pagerduty(body, signature=header)[0] == 202
    assert len(hook.accepted) == 1


def test_pagerduty_secret_rotation_accepts_the_old_secret_while_it_is_configured(hook: Hook) -> None:
    body = fixture("pagerduty_triggered")
    assert hook.pagerduty(body, signature=sign(body, PD_OLD))[0] == 202
    hook.use(AlertAuth(pagerduty_secrets=(SecretStr(PD_NEW),)))
    resolved = fixture("pagerduty_resolved")
    assert hook.pagerduty(resolved, signature=sign(resolved, PD_OLD))[0] == 401
    assert [a.status for a in hook.accepted] == ["firing"]


def test_verify_signature_handles_odd_headers_without_raising() -> None:
    body = b'{"event": {}}'
    assert verify_signature(body, sign(body, "s"), ["s"])
    assert verify_signature(body, sign(body, "s").upper().replace("V1=", "v1="), ["s"])
    assert not verify_signature(body, None, ["s"])
    assert not verify_signature(body, sign(body, "s"), [])
    assert not verify_signature(body, sign(body, ""), [""])
    assert not verify_signature(body, "v1=é" + "0" * 63, ["s"])
    assert not verify_signature(body, ",,,v1=,v1", ["s"])


def test_auth_settings_refuse_forgeable_or_half_configurations() -> None:
    for bad in (
        {"alertmanager_token": ""},
        {"alertmanager_user": USER},
        {"alertmanager_password": PASSWORD},
        {"alertmanager_user": "a:b", "alertmanager_password": PASSWORD},
        {"pagerduty_secrets": ("",)},
    ):
        with pytest.raises(ValidationError):
            AlertAuth.model_validate(bad)


# --- the same notification twice -------------------------------------------------------------


def test_alertmanager_resend_of_the_same_notification_is_a_duplicate(hook: Hook) -> None:
    assert hook.alertmanager(fixture("alertmanager_grouped")) == (202, {"accepted": 3, "duplicates": 0})
    assert hook.alertmanager(fixture("alertmanager_grouped")) == (202, {"accepted": 0, "duplicates": 3})
    assert len(hook.accepted) == 3


def test_repeat_interval_resend_with_one_new_alert_accepts_only_the_new_one(hook: Hook) -> None:
    first = am_alert("fp-1", "2024-05-14T09:00:00Z")
    hook.alertmanager(am_body([first]))
    # repeat_interval: the same alert (same startsAt), now grouped with a newcomer.
    assert hook.alertmanager(am_body([first, am_alert("fp-2")])) == (202, {"accepted": 1, "duplicates": 1})
    original, newcomer = hook.accepted
    assert newcomer.key != original.key
    assert hook.alertmanager(am_body([first, am_alert("fp-2")])) == (202, {"accepted": 0, "duplicates": 2})


def test_a_new_firing_after_resolve_is_new_work(hook: Hook) -> None:
    hook.alertmanager(am_body([am_alert("fp-1", "2024-05-14T09:00:00Z")]))
    hook.alertmanager(am_body([am_alert("fp-1", "2024-05-14T09:00:00Z", status="resolved")], status="resolved"))
    assert hook.alertmanager(am_body([am_alert("fp-1", "2024-05-14T11:30:00Z")]))[1]["accepted"] == 1
    assert hook.alertmanager(am_body([am_alert("fp-1", "2024-05-14T09:00:00Z")]))[1]["duplicates"] == 1
    assert [a.status for a in hook.accepted] == ["firing", "resolved", "firing"]
    assert len({a.key for a in hook.accepted}) == 1


def test_pagerduty_retries_are_duplicates_by_webhook_id_or_event_id(hook: Hook) -> None:
    triggered = fixture("pagerduty_triggered")
    assert hook.pagerduty(triggered, webhook_id="wh-1") == (202, {"accepted": 1, "duplicates": 0})
    assert hook.pagerduty(triggered, webhook_id="wh-1") == (202, {"accepted": 0, "duplicates": 1})
    # Another delivery of the same event (e.g. a second subscription): the event id catches it.
    assert hook.pagerduty(triggered, webhook_id="wh-2") == (202, {"accepted": 0, "duplicates": 1})
    assert hook.pagerduty(triggered) == (202, {"accepted": 0, "duplicates": 1})
    # The same webhook id again cannot smuggle a different event through either.
    assert hook.pagerduty(fixture("pagerduty_resolved"), webhook_id="wh-1")[1]["duplicates"] == 1
    assert [a.status for a in hook.accepted] == ["firing"]


# --- malformed, oversize, wrong method -------------------------------------------------------


def _without_fingerprint() -> bytes:
    entry = am_alert()
    del entry["fingerprint"]
    return am_body([entry])


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (b"{not json", "not valid JSON"),
        (b"", "not valid JSON"),
        (b"[]", "JSON object"),
        (am_body([am_alert()], version="3"), "version '3'"),
        (am_body([am_alert()], version=4), "version 4"),
        (json.dumps({"version": "4", "groupKey": "g", "status": "firing"}).encode(), "alerts"),
        (_without_fingerprint(), "alerts.0.fingerprint"),
        (am_body([am_alert(labels={"severity": 2})]), "alerts.0.labels.severity"),
        (am_body([am_alert(starts_at="yesterday")]), "startsAt"),
        (am_body([am_alert(starts_at=1715678497)]), "startsAt"),
        (am_body([am_alert(status="pending")]), "alerts.0.status"),
        (am_body([am_alert()], truncatedAlerts=-1), "truncatedAlerts"),
        (am_body([am_alert("ok"), am_alert(labels=None)]), "alerts.1.labels"),
    ],
    ids=[
        "syntax",
        "empty",
        "array",
        "version3",
        "version-int",
        "no-alerts",
        "no-fingerprint",
        "label-int",
        "bad-time",
        "time-number",
        "bad-status",
        "negative",
        "half-valid",
    ],
)
def test_malformed_alertmanager_payloads_get_400_saying_why_and_start_nothing(
    hook: Hook, body: bytes, says: str
) -> None:
    status, answer = hook.alertmanager(body)
    assert status == 400 and says in answer["error"], answer
    assert hook.accepted == []


def _pd(mutate: Callable[[dict[str, Any]], None]) -> bytes:
    base = document("pagerduty_triggered")
    mutate(base)
    return json.dumps(base).encode()


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (b"\xff\xfe", "not valid JSON"),
        (b'{"messages": []}', "event"),
        (_pd(lambda d: d["event"].pop("id")), "event.id"),
        (_pd(lambda d: d["event"].update(id=42)), "event.id"),
        (_pd(lambda d: d["event"]["data"].pop("title")), "title"),
        (_pd(lambda d: d["event"]["data"].update(type="incident_note")), "type"),
        (_pd(lambda d: d["event"]["data"].update(number="4182")), "number"),
    ],
    ids=["bytes", "v2-shape", "no-id", "int-id", "no-title", "not-incident", "string-number"],
)
def test_malformed_pagerduty_payloads_get_400_saying_why(hook: Hook, body: bytes, says: str) -> None:
    status, answer = hook.pagerduty(body)
    assert status == 400 and says in answer["error"], answer
    assert hook.accepted == []


def test_wrong_method_path_content_type_and_size_are_refused_before_parsing(hook: Hook) -> None:
    body = fixture("alertmanager_firing")
    status, _, headers = hook.post("/hooks/alertmanager", b"", bearer(), method="GET")
    assert status == 405 and headers["allow"] == "POST"
    assert hook.post("/hooks/elsewhere", body, bearer())[0] == 404
    assert hook.post("/hooks/alertmanager", body, {**bearer(), "Content-Type": "text/plain"})[0] == 415
    assert (
        hook.post("/hooks/alertmanager", body, {**bearer(), "Content-Type": "application/json; charset=utf-8"})[0]
        == 202
    )
    hook.use(FULL_AUTH, max_body_bytes=len(body) - 1)
    status, answer = hook.alertmanager(body)
    assert status == 413 and "bytes" in answer["error"]
    pd_body = fixture("pagerduty_triggered")
    hook.use(FULL_AUTH, max_body_bytes=len(pd_body) - 1)
    assert hook.pagerduty(pd_body)[0] == 413
    assert len(hook.accepted) == 1


def test_oversize_body_at_the_default_limit_is_refused(hook: Hook) -> None:
    huge = am_body([am_alert(annotations={"description": "x" * 1_000_001})])
    assert hook.alertmanager(huge)[0] == 413
    assert hook.accepted == []


def test_chunked_bodies_are_read_and_size_checked_too(hook: Hook) -> None:
    # No Content-Length from the sender: waitress de-chunks, and the limit must still hold.
    def post_chunked(body: bytes) -> int:
        host, port = hook.base_url.removeprefix("http://").split(":")
        connection = http.client.HTTPConnection(host, int(port), timeout=5)
        try:
            chunks = (body[i : i + 1000] for i in range(0, len(body), 1000))
            headers = {"Content-Type": "application/json", **bearer()}
            connection.request("POST", "/hooks/alertmanager", body=chunks, headers=headers, encode_chunked=True)
            return connection.getresponse().status
        finally:
            connection.close()

    body = fixture("alertmanager_firing")
    assert post_chunked(body) == 202
    hook.use(FULL_AUTH, max_body_bytes=len(body) - 1)
    assert post_chunked(body) == 413
    assert len(hook.accepted) == 1


def test_a_dedupe_store_outage_answers_503_and_the_retry_is_taken(hook: Hook) -> None:
    def down(ids: list[str], alert: Alert) -> bool:
        raise redis.ConnectionError("redis is down")

    hook.use(FULL_AUTH, take=down)
    status, answer = hook.alertmanager(fixture("alertmanager_firing"))
    assert status == 503 and "retry" in answer["error"]
    assert hook.accepted == []
    hook.use(FULL_AUTH)
    assert hook.alertmanager(fixture("alertmanager_firing")) == (202, {"accepted": 1, "duplicates": 0})


# --- hostile sizes and timing ----------------------------------------------------------------


def test_hostile_label_and_annotation_sizes_are_capped_and_said(hook: Hook) -> None:
    labels = {"alertname": "Flood", "host": "h" * 100_000, "x" * 1000: "long name"}
    labels.update({f"l{n:05d}": "v" for n in range(5000)})
    entry = am_alert(
        labels=labels,
        annotations={"description": "d" * 200_000, **{f"a{n}": "text" for n in range(500)}},
        generatorURL="javascript:alert(1)",
    )
    body = am_body([entry])
    assert len(body) < 1_000_000
    assert hook.alertmanager(body) == (202, {"accepted": 1, "duplicates": 0})
    [alert] = hook.accepted
    assert len(alert.labels) == MAX_LABELS and alert.labels["alertname"] == alert.title == "Flood"
    assert "host" not in alert.labels  # dropped, never cut into a different value
    assert all(len(value) <= MAX_LABEL_VALUE_CHARS for value in alert.labels.values())
    assert len(alert.annotations["description"]) <= MAX_ANNOTATION_CHARS
    assert alert.annotations["description"].endswith("characters]")
    assert alert.url is None
    notes = " ".join(alert.notes)
    assert "'host'" in notes and "dropped" in notes and "cut to" in notes and "link left out" in notes
    assert len(notes) < 2000
    # Queued as JSON and read back by a worker: capping again changes nothing.
    assert Alert.model_validate_json(alert.model_dump_json()) == alert


def test_many_alerts_at_once_are_answered_within_a_second(hook: Hook) -> None:
    body = am_body([am_alert(f"fp-{n}", labels={"alertname": "Flood", "n": str(n)}) for n in range(MAX_ALERTS)])
    started = time.monotonic()
    status, answer = hook.alertmanager(body)
    elapsed = time.monotonic() - started
    assert (status, answer) == (202, {"accepted": MAX_ALERTS, "duplicates": 0})
    assert len(hook.accepted) == MAX_ALERTS
    assert elapsed < 1.0, f"took {elapsed:.2f} s"


def test_alerts_beyond_the_cap_are_left_out_and_said() -> None:
    alerts = parse_alertmanager(am_body([am_alert(f"fp-{n}") for n in range(MAX_ALERTS + 5)]))
    assert len(alerts) == MAX_ALERTS
    assert any("5 more alert(s)" in note for note in alerts[0].notes)


def test_alerts_are_frozen() -> None:
    [alert] = parse_alertmanager(fixture("alertmanager_firing"))
    with pytest.raises(ValidationError):
        alert.status = "resolved"


# --- whatever arrives, the parsers answer alerts or BadPayload -------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4),
    max_leaves=20,
)
SHAPES = [document(p.stem) for p in sorted(FIXTURES.glob("*.json"))]


@st.composite
def near_valid(draw: st.DrawFn) -> Any:
    """A real payload with one value somewhere swapped for arbitrary JSON, to reach the deep checks."""
    return one_value_swapped(draw, draw(st.sampled_from(SHAPES)), json_values)


bodies = (
    st.binary(max_size=200)
    | json_values.map(lambda value: json.dumps(value).encode())
    | near_valid().map(lambda value: json.dumps(value).encode())
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=bodies)
def test_parsers_return_alerts_or_raise_bad_payload_never_anything_else(body: bytes) -> None:
    for parse in (parse_alertmanager, parse_pagerduty):
        try:
            alerts = parse(body)
        except BadPayload as bad:
            assert bad.message and len(bad.message) <= 500
        else:
            for alert in alerts:
                assert isinstance(alert, Alert)
                assert Alert.model_validate_json(alert.model_dump_json()) == alert
