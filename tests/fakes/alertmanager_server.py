"""A real Prometheus Alertmanager (Debian's `prometheus-alertmanager`) for tests and benches,
routing to opsbot's webhook; and the storm of issue 15, sent through it or, where it is not
installed, as the notifications it would send.

Alertmanager groups by the route's `group_by` (here alertname and service), waits `group_wait`
(1 s here: its default is 30 s) and posts each group to the webhook with the bearer token."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from tests.fakes.redis_server import free_port
from tests.fakes.slack_api import SlackApi

AM_TOKEN = "alertmanager-test-token"
STORM_INSTANCES = 100
SINGLES = 20


def opsbot_env(slack: SlackApi, redis_url: str, model_url: str, token: str) -> dict[str, str]:
    """`opsbot serve --http` taking the storm: its alerts in CALERTS, no model first looks."""
    return {
        "SLACK_BOT_TOKEN": token,
        "SLACK_SIGNING_SECRET": "storm-secret",
        "SLACK_API_URL": slack.base_url,
        "REDIS_URL": redis_url,
        "OPENAI_BASE_URL": model_url,
        "OPSBOT_MODEL": "scripted",
        "ALERTMANAGER_TOKEN": AM_TOKEN,
        "OPSBOT_ALERTS__CHANNEL": "CALERTS",
        "OPSBOT_ALERTS__FIRST_LOOK": "false",
    }


def installed() -> str | None:
    return shutil.which("prometheus-alertmanager") or shutil.which("alertmanager")


def storm() -> list[dict[str, str]]:
    group = {"alertname": "HighErrorRate", "service": "checkout", "severity": "critical"}
    alerts = [{**group, "instance": f"checkout-{n:03d}:8080"} for n in range(STORM_INSTANCES)]
    return alerts + [{"alertname": f"NodeClockSkew{n}", "instance": f"node-{n}"} for n in range(SINGLES)]


@contextmanager
def alertmanager(webhook: str | None, workdir: Path) -> Iterator[str | None]:
    """A real Alertmanager routing to `webhook` (None: notifying nobody), or None when it is not installed."""
    binary = installed()
    if binary is None:
        yield None
        return
    config = workdir / "alertmanager.yml"
    receiver = (
        "    webhook_configs:\n"
        f"      - url: {webhook}\n"
        "        send_resolved: true\n"
        "        http_config:\n"
        f"          authorization: {{credentials: {AM_TOKEN}}}\n"
        if webhook
        else ""
    )
    config.write_text(
        "route:\n"
        "  receiver: opsbot\n"
        "  group_by: [alertname, service]\n"
        "  group_wait: 1s\n"
        "  group_interval: 30s\n"
        "  repeat_interval: 4h\n"
        "receivers:\n"
        "  - name: opsbot\n" + receiver
    )
    port = free_port()
    process = subprocess.Popen(
        [
            binary,
            f"--config.file={config}",
            f"--storage.path={workdir / 'am-data'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--cluster.listen-address=",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(f"{url}/-/ready", timeout=1).close()
                break
            except OSError:
                time.sleep(0.2)
        yield url
    finally:
        process.terminate()
        process.wait(10)


def post(url: str, body: Any, headers: dict[str, str]) -> int:
    request = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json", **headers})
    with urllib.request.urlopen(request, timeout=10) as response:
        return int(response.status)


def send_to_alertmanager(url: str, alerts: list[dict[str, str]]) -> None:
    now = datetime.now(UTC)
    body = [
        {
            "labels": labels,
            "annotations": {"summary": f"{labels['alertname']} on {labels['instance']}"},
            "startsAt": now.isoformat(),
            "endsAt": (now + timedelta(hours=1)).isoformat(),
            "generatorURL": "http://prometheus.example.com:9090/graph",
        }
        for labels in alerts
    ]
    post(f"{url}/api/v2/alerts", body, {})


def send_as_alertmanager_would(webhook: str, alerts: list[dict[str, str]]) -> None:
    """The notifications a route grouping by alertname and service sends: one per group."""
    groups: dict[tuple[str, str], list[dict[str, str]]] = {}
    for labels in alerts:
        groups.setdefault((labels["alertname"], labels.get("service", "")), []).append(labels)
    starts = datetime.now(UTC).isoformat()
    for (name, service), members in groups.items():
        grouped = {"alertname": name, **({"service": service} if service else {})}
        body = {
            "version": "4",
            "groupKey": "{}:{" + ", ".join(f'{k}="{v}"' for k, v in sorted(grouped.items())) + "}",
            "truncatedAlerts": 0,
            "status": "firing",
            "receiver": "opsbot",
            "groupLabels": grouped,
            "commonLabels": grouped,
            "commonAnnotations": {},
            "externalURL": "http://alertmanager.example.com:9093",
            "alerts": [
                {
                    "status": "firing",
                    "labels": labels,
                    "annotations": {"summary": f"{name} on {labels['instance']}"},
                    "startsAt": starts,
                    "endsAt": "0001-01-01T00:00:00Z",
                    "generatorURL": "http://prometheus.example.com:9090/graph",
                    "fingerprint": f"{n:016x}",
                }
                for n, labels in enumerate(members)
            ],
        }
        post(webhook, body, {"Authorization": f"Bearer {AM_TOKEN}"})
