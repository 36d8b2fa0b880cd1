"""Issue 15's storm through a real Prometheus Alertmanager (Debian's `prometheus-alertmanager`,
installed by .ci/run): 120 alerts its route groups by alertname and service into 21
notifications, posted to the real `opsbot serve --http`, which talks to the fake Slack. The
fake limits posts per channel as Slack does, at ten times Slack's rate (10 a second, bursts of 3)
with opsbot paced to match (0.1 s), so the storm takes seconds, not half a minute."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.alertmanager_server import SINGLES, alertmanager, installed, opsbot_env, send_to_alertmanager, storm
from tests.fakes.model_server import ModelServer, Reply
from tests.fakes.redis_server import RedisServer
from tests.fakes.serve_process import ServeProcess
from tests.fakes.slack_api import SlackApi
from tests.fakes.slack_stack import TOKEN, settled

pytestmark = pytest.mark.skipif(
    installed() is None,
    reason="Debian's prometheus-alertmanager is not on PATH: apt-get install prometheus-alertmanager",
)


def quick(body: dict[str, Any]) -> Reply:
    return Reply(content="EXPLAINED: the steps were read")


def roots(slack: SlackApi) -> list[dict[str, Any]]:
    return [m for m in slack.messages("CALERTS") if m.get("thread_ts") in (None, m["ts"])]


def test_a_storm_through_a_real_alertmanager_is_a_message_per_group_within_slacks_limit(
    own_redis: RedisServer, tmp_path: Path
) -> None:
    with SlackApi(token=TOKEN) as slack, ModelServer(quick) as model:
        slack.rate_limit(per_s=10, burst=3)
        env = opsbot_env(slack, own_redis.url, model.base_url, TOKEN) | {"OPSBOT_SLACK__POST_INTERVAL_S": "0.1"}
        with ServeProcess(env) as process, alertmanager(f"{process.base_url}/hooks/alertmanager", tmp_path) as am:
            assert am is not None
            send_to_alertmanager(am, storm())
            assert slack.wait_for(lambda: len(roots(slack)) >= 1 + SINGLES, 30), len(roots(slack))
            assert settled(own_redis.url)
            posts = roots(slack)
            assert len(posts) == 1 + SINGLES, "one message per Alertmanager group"
            assert slack.rate_limited == [], "every post within the channel's limit"
            storm_ts = next(m["ts"] for m in posts if "HighErrorRate" in m["text"])

            def shown() -> str:
                return json.dumps(next(m for m in roots(slack) if m["ts"] == storm_ts)["blocks"])

            # The message is drawn again once the queue has run dry.
            assert slack.wait_for(lambda: "Alerts (100)" in shown(), 10), shown()
            assert "for 100 alert(s)" in shown(), "one run covers the 100"
            storm_post = next(m for m in roots(slack) if m["ts"] == storm_ts)
            runs = [m for m in slack.replies("CALERTS", storm_post["ts"]) if "`errors`" in json.dumps(m)]
            assert len(runs) == 1
            assert "Task queue depth" not in process.output()
