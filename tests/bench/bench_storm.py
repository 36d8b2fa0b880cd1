"""An alert storm end to end (`.venv/bin/python tests/bench/bench_storm.py`): issue 15's storm.

A script, not a test. One `opsbot serve --http` (the sample environment, default pacing) with a
real Redis, the fake Slack Web API limiting chat.postMessage as Slack documents it (about one a
second per channel, short bursts: here 1 a second with bursts of 3, 429 with Retry-After past it)
and a scripted model. The storm is 120 firing alerts: one group of 100 instances of
`HighErrorRate service=checkout` and 20 single alerts of other names (none with a runbook).

With Debian's `prometheus-alertmanager` on PATH, the alerts go to a real Alertmanager (its API,
`POST /api/v2/alerts`), whose route groups by `alertname` and `service` and sends each group to
opsbot's webhook with a bearer token; without it, a fake sender posts the 21 notifications an
Alertmanager would send. The bench prints alerts, groups, top-level posts, all posts, updates,
runbook runs, 429s, the most posts in one second of the channel, and the drain time (from the
first Slack call of the storm to the last).
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.fakes.alertmanager_server import (  # noqa: E402
    SINGLES,
    alertmanager,
    opsbot_env,
    send_as_alertmanager_would,
    send_to_alertmanager,
    storm,
)
from tests.fakes.model_server import ModelServer, Reply  # noqa: E402
from tests.fakes.redis_server import RedisServer  # noqa: E402
from tests.fakes.serve_process import ServeProcess  # noqa: E402
from tests.fakes.slack_api import SlackApi  # noqa: E402

TOKEN = "xoxb-bench"
CHANNEL = "CALERTS"
QUIET_S = 5.0  # the storm is over once Slack has heard nothing for this long
TIMEOUT_S = 180.0


def quick(body: dict[str, Any]) -> Reply:
    return Reply(content="EXPLAINED: the steps were read")


def settle(slack: SlackApi) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while time.monotonic() < deadline:
        calls = slack.calls()
        if calls and time.monotonic() - calls[-1].at > QUIET_S and len(top_level(slack)) >= 1 + SINGLES:
            return
        time.sleep(0.5)
    print(f"  (gave up waiting after {TIMEOUT_S:g} s)")


def top_level(slack: SlackApi) -> list[dict[str, Any]]:
    return [m for m in slack.messages(CHANNEL) if m.get("thread_ts") in (None, m["ts"])]


def busiest_second(times: list[float]) -> int:
    return max((sum(1 for t in times if start <= t < start + 1) for start in times), default=0)


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="opsbot-storm-") as tmp:
        workdir = Path(tmp)
        redis = RedisServer(workdir / "redis")
        redis.start()
        try:
            with SlackApi(token=TOKEN) as slack, ModelServer(quick) as model:
                slack.rate_limit(per_s=1.0, burst=3)
                env = opsbot_env(slack, redis.url, model.base_url, TOKEN)
                with ServeProcess(env) as process:
                    webhook = f"{process.base_url}/hooks/alertmanager"
                    alerts = storm()
                    with alertmanager(webhook, workdir) as am:
                        sender = "a real Alertmanager (group_by: [alertname, service])" if am else "the fake sender"
                        print(f"alert storm: {len(alerts)} alerts sent through {sender}")
                        begun = time.monotonic()
                        if am is not None:
                            send_to_alertmanager(am, alerts)
                        else:
                            send_as_alertmanager_would(webhook, alerts)
                        settle(slack)
                        report(slack, begun)
        finally:
            redis.stop()


def report(slack: SlackApi, sent_at: float) -> None:
    calls = [c for c in slack.calls() if c.at >= sent_at]
    posts = [c for c in calls if c.method == "chat.postMessage"]
    limited = {id(c) for c in slack.rate_limited}
    accepted = [c.at for c in posts if c.args.get("channel") == CHANNEL and id(c) not in limited]
    updates = [c for c in calls if c.method == "chat.update"]
    roots = top_level(slack)
    runs = sum(
        1
        for root in roots
        for message in slack.replies(CHANNEL, root["ts"])
        if "`errors`" in json.dumps(message.get("blocks") or message["text"])
    )
    first, last = (calls[0].at, calls[-1].at) if calls else (sent_at, sent_at)
    print(f"  groups (top-level posts): {len(roots)}")
    print(f"  chat.postMessage: {len(accepted)} posted, {len(slack.rate_limited)} answered 429")
    print(f"  chat.update: {len(updates)}")
    print(f"  runbook runs: {runs}")
    print(f"  most posts in one second of {CHANNEL}: {busiest_second(sorted(accepted))} (Slack: about 1, short bursts)")
    print(f"  drained in {last - first:.1f} s (first Slack call to last); {first - sent_at:.1f} s before the first")


if __name__ == "__main__":
    main()
