"""Alert webhooks end to end: `opsbot serve --http` processes, real Redis, the fake Slack API.

What on-call sees: the alert in its channel, the runbook's steps in its thread, nothing twice when
the same alert reaches two processes or is sent again, nothing at all for a forged request, and a
run that survives the death of the process that was running it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import shutil
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SAMPLE_DIR
from tests.fakes.redis_server import RedisServer
from tests.fakes.serve_process import ServeProcess, serving
from tests.fakes.slack_api import SlackApi
from tests.fakes.slack_stack import settled

TOKEN = "xoxb-test"
AM_TOKEN = "am-token-for-tests"
PD_SECRET = "pd-secret-for-tests"
FIXTURES = Path(__file__).parent / "fixtures" / "alerts"

SLOW_RUNBOOK = """\
id: slow
description: takes a nap, then looks at the load
triggers:
  - labels: {alertname: SlowThing}
steps:
  - id: nap
    tool: run_command
    args: {command: nap}
    timeout_s: 30
  - id: after
    tool: run_command
    args: {command: uptime}
"""
NAP_COMMAND = """
    nap:
      description: sleeps two seconds (a stand-in for a slow diagnostic)
      argv: [sleep, "2"]
      timeout_s: 20
"""


@pytest.fixture
def config(tmp_path: Path) -> Path:
    """The sample environment plus a slow runbook, in a directory of the test's own."""
    root = tmp_path / "env"
    shutil.copytree(SAMPLE_DIR, root)
    (root / "runbooks" / "slow.yaml").write_text(SLOW_RUNBOOK)
    text = (root / "opsbot.yaml").read_text()
    (root / "opsbot.yaml").write_text(text.replace("  commands:\n", "  commands:" + NAP_COMMAND, 1))
    return root / "opsbot.yaml"


@pytest.fixture
def slack() -> Iterator[SlackApi]:
    with SlackApi(token=TOKEN) as api:
        yield api


def env(slack: SlackApi, redis_url: str) -> dict[str, str]:
    return {
        "SLACK_BOT_TOKEN": TOKEN,
        "SLACK_SIGNING_SECRET": "secret",
        "SLACK_API_URL": slack.base_url,
        "REDIS_URL": redis_url,
        "ALERTMANAGER_TOKEN": AM_TOKEN,
        "PAGERDUTY_WEBHOOK_SECRETS": f"old-secret,{PD_SECRET}",
        "OPSBOT_ALERTS__CHANNEL": "CALERTS",
        "OPSBOT_RUNBOOKS__LEASE_TTL_S": "1",
        "OPSBOT_RUNBOOKS__RECOVER_EVERY_S": "0.5",
    }


def alertmanager(process: ServeProcess, body: str, token: str = AM_TOKEN) -> tuple[int, dict[str, Any]]:
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {token}"}
    status, text = process.post("/hooks/alertmanager", body, headers)
    return status, json.loads(text)


def slow_alert(fingerprint: str = "slow-1") -> str:
    document = json.loads((FIXTURES / "alertmanager_firing.json").read_text())
    document["alerts"][0]["labels"] = {"alertname": "SlowThing"}
    document["alerts"][0]["fingerprint"] = fingerprint
    return json.dumps(document)


def roots(slack: SlackApi) -> list[dict[str, Any]]:
    return [m for m in slack.messages("CALERTS") if "thread_ts" not in m or m["thread_ts"] == m["ts"]]


def thread_text(slack: SlackApi, root: dict[str, Any]) -> str:
    return json.dumps(slack.replies("CALERTS", root["ts"]), ensure_ascii=False)


def posted(slack: SlackApi, root: dict[str, Any], start: str) -> int:
    """How many of opsbot's messages in the thread start with `start`."""
    return sum(m["text"].startswith(start) for m in slack.replies("CALERTS", root["ts"]))


def test_an_alert_is_answered_at_once_and_its_runbook_runs_in_its_thread(
    own_redis: RedisServer, slack: SlackApi, config: Path
) -> None:
    body = (FIXTURES / "alertmanager_disk_filling.json").read_text()
    with ServeProcess(env(slack, own_redis.url), config=config) as process:
        started = time.monotonic()
        assert alertmanager(process, body) == (202, {"accepted": 1, "duplicates": 0})
        assert time.monotonic() - started < 1.0
        assert alertmanager(process, body) == (202, {"accepted": 0, "duplicates": 1}), "a re-send runs nothing"
        assert slack.wait_for(lambda: roots(slack) and "succeeded" in thread_text(slack, roots(slack)[0]), 20)
        [root] = roots(slack)
        assert "DiskFilling" in root["text"] and "Filesystem" in thread_text(slack, root)


def test_forged_and_malformed_alerts_start_nothing(own_redis: RedisServer, slack: SlackApi, config: Path) -> None:
    body = (FIXTURES / "alertmanager_disk_filling.json").read_text()
    pagerduty = (FIXTURES / "pagerduty_triggered.json").read_text()
    with ServeProcess(env(slack, own_redis.url), config=config) as process:
        assert alertmanager(process, body, token="wrong")[0] == 401
        assert process.post("/hooks/alertmanager", body, {"Content-Type": "application/json"})[0] == 401
        assert alertmanager(process, "{not json")[0] == 400
        forged = {"Content-Type": "application/json", "X-PagerDuty-Signature": "v1=" + "0" * 64}
        assert process.post("/hooks/pagerduty", pagerduty, forged)[0] == 401
        signature = hmac.new(PD_SECRET.encode(), pagerduty.encode(), hashlib.sha256).hexdigest()
        signed = {"Content-Type": "application/json", "X-PagerDuty-Signature": f"v1=deadbeef,v1={signature}"}
        assert process.post("/hooks/pagerduty", pagerduty, signed)[0] == 202
        assert slack.wait_for(lambda: len(roots(slack)) == 1, 10)
        assert settled(own_redis.url)
        assert len(roots(slack)) == 1, "only the signed PagerDuty incident was posted"


def test_two_processes_given_the_same_alert_run_it_once(own_redis: RedisServer, slack: SlackApi, config: Path) -> None:
    body = (FIXTURES / "alertmanager_disk_filling.json").read_text()
    with serving(
        ServeProcess(env(slack, own_redis.url), config=config), ServeProcess(env(slack, own_redis.url), config=config)
    ) as (one, two):
        answers = [alertmanager(one, body)[1], alertmanager(two, body)[1]]
        assert sorted(a["accepted"] for a in answers) == [0, 1]
        assert slack.wait_for(lambda: roots(slack) and "succeeded" in thread_text(slack, roots(slack)[0]), 20)
        assert settled(own_redis.url)
        [root] = roots(slack)
        assert posted(slack, root, "✓ `mount`") == 1


def test_a_run_whose_process_dies_goes_on_in_the_next_one(
    own_redis: RedisServer, slack: SlackApi, config: Path
) -> None:
    first = ServeProcess(env(slack, own_redis.url), config=config)
    first.start()
    try:
        assert alertmanager(first, slow_alert())[0] == 202
        assert slack.wait_for(lambda: roots(slack) and slack.statuses("CALERTS", roots(slack)[0]["ts"]), 10)
        assert "running step nap…" in slack.statuses("CALERTS", roots(slack)[0]["ts"])
    finally:
        first.kill()  # mid-step: the nap was running
    with ServeProcess(env(slack, own_redis.url), config=config):
        root = roots(slack)[0]
        assert slack.wait_for(lambda: "succeeded" in thread_text(slack, root), 30), thread_text(slack, root)
        assert posted(slack, root, "✓ `after` → ok") == 1 and posted(slack, root, "✓ `nap` → ok") == 1


def test_a_burst_of_webhooks_is_taken_whole_by_a_small_server_without_log_noise(
    own_redis: RedisServer, slack: SlackApi, config: Path
) -> None:
    """60 notifications at once, 30 connections at a time, against 2 server threads: every one
    accepted, no "Task queue depth" line per request, and /metrics shows the queues instead."""
    document = json.loads((FIXTURES / "alertmanager_firing.json").read_text())

    def notification(n: int) -> str:
        document["alerts"][0]["fingerprint"] = f"burst-{n:04d}"
        document["alerts"][0]["labels"] = {**document["alerts"][0]["labels"], "instance": f"checkout-{n}"}
        return json.dumps(document)

    bodies = [notification(n) for n in range(60)]
    sized = env(slack, own_redis.url) | {"OPSBOT_HTTP__THREADS": "2", "OPSBOT_HTTP__BACKLOG": "64"}
    with ServeProcess(sized, config=config) as process:
        with ThreadPoolExecutor(30) as pool:
            answers = list(pool.map(lambda body: alertmanager(process, body), bodies))
        assert answers == [(202, {"accepted": 1, "duplicates": 0})] * 60
        assert slack.wait_for(lambda: bool(roots(slack)), 10)
        status, exposition = process.get("/metrics")
        assert status == 200
        assert "opsbot_http_requests_waiting" in exposition and "opsbot_slack_posts_waiting" in exposition
        assert settled(own_redis.url)
        assert len(roots(slack)) == 1, "one group, one message"
        assert "Task queue depth" not in process.output()
