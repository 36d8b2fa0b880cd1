"""Alert storms: one message per alert group, updated in place, and one runbook run per distinct
set of parameters (issue 15's storm: one group of 100 instances of HighErrorRate for checkout and
20 single alerts). The payloads are Alertmanager's webhook (version 4) as its docs describe it
and as tests/fixtures/alerts/ holds real ones; they go through the real parser, the Redis queue,
the router and the fake Slack over HTTP."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from opsbot.bot.alerts import Alert, parse_alertmanager
from opsbot.bot.slack.blocks import LISTED_ALERTS
from opsbot.config.settings import AlertSettings
from tests.fakes import slack_payloads as payloads
from tests.fakes.model_server import Reply
from tests.fakes.slack_api import SlackApi
from tests.fakes.slack_stack import Stack, Stacks, stack_settings
from tests.fakes.waiting import until

Make = Callable[..., Stack]


def notification(group_labels: dict[str, str], alerts: list[dict[str, str]], status: str = "firing") -> list[Alert]:
    """One Alertmanager notification of a group, parsed as the webhook parses it."""
    key = "{}:{" + ", ".join(f'{k}="{v}"' for k, v in sorted(group_labels.items())) + "}"
    body = {
        "version": "4",
        "groupKey": key,
        "truncatedAlerts": 0,
        "status": status,
        "receiver": "opsbot",
        "groupLabels": group_labels,
        "commonLabels": group_labels,
        "commonAnnotations": {},
        "externalURL": "http://alertmanager.example.com:9093",
        "alerts": [
            {
                "status": status,
                "labels": labels,
                "annotations": {"summary": f"{labels.get('service', '?')} is failing"},
                "startsAt": "2026-12-01T09:21:37.804Z",
                "endsAt": "0001-01-01T00:00:00Z",
                "generatorURL": "http://prometheus.example.com:9090/graph",
                "fingerprint": f"{abs(hash(json.dumps(labels, sort_keys=True))):016x}",
            }
            for labels in alerts
        ],
    }
    return parse_alertmanager(json.dumps(body).encode())


def checkout_storm(count: int = 100, status: str = "firing") -> list[Alert]:
    group = {"alertname": "HighErrorRate", "service": "checkout"}
    return notification(group, [{**group, "instance": f"checkout-{n:03d}:8080"} for n in range(count)], status)


def singles(count: int = 20) -> list[Alert]:
    alerts: list[Alert] = []
    for n in range(count):
        labels = {"alertname": f"NodeClockSkew{n}", "instance": f"node-{n}"}
        alerts += notification(labels, [labels])
    return alerts


def quick(body: dict[str, Any]) -> Reply:
    return Reply(content="EXPLAINED: the steps were read")


@pytest.fixture
def make_stack(redis_server, model_server, sample) -> Iterator[Make]:
    stacks = Stacks()

    def make(alerts: AlertSettings | None = None, **slack_settings: Any) -> Stack:
        redis_server.flush()
        slack = SlackApi()
        server = model_server(quick)
        settings = stack_settings(slack, redis_server.url, sample.policy, server, alerts=alerts, **slack_settings)
        return stacks.start(slack, settings, server)

    yield make
    stacks.close()


def deliver(stack: Stack, alerts: list[Alert]) -> None:
    for alert in alerts:
        stack.built.alerts.queue.take([f"test:{time.monotonic_ns()}"], alert)


def top_level(stack: Stack) -> list[dict[str, Any]]:
    return [m for m in stack.slack.messages("CALERTS") if m.get("thread_ts") in (None, m["ts"])]


def shown(message: dict[str, Any]) -> str:
    return json.dumps(message.get("blocks") or message["text"], ensure_ascii=False)


def settled(stack: Stack, expected_posts: int) -> None:
    assert stack.slack.wait_for(lambda: len(top_level(stack)) >= expected_posts, 30)
    assert stack.idle(30)
    # The worker draws changed messages once the queue has been dry for a moment.
    assert until(lambda: not stack.built.alerts.redraw_pending, 5)


def runs_started(stack: Stack) -> list[str]:
    """The runbook runs the alerts started, by their first step's line in a thread."""
    return [
        shown(m)
        for root in top_level(stack)
        for m in stack.slack.replies("CALERTS", root["ts"])
        if "`errors`" in shown(m)
    ]


def test_a_storm_of_120_alerts_in_21_groups_is_21_messages_and_one_run_per_parameter_set(make_stack) -> None:
    stack = make_stack(AlertSettings(channel="CALERTS", first_look=False))
    deliver(stack, checkout_storm() + singles())
    settled(stack, 21)
    posts = top_level(stack)
    assert len(posts) == 21, "one message per group"
    assert len(stack.slack.calls("chat.postMessage")) < 60, "posts: 21 roots and the one run's steps"
    storm = next(m for m in posts if "HighErrorRate" in m["text"])
    text = shown(storm)
    assert "100 firing, 0 resolved" in text and "Alerts (100)" in text
    assert "instance=checkout-000:8080" in text and f"and {100 - LISTED_ALERTS} more" in text
    assert "service=checkout" in text.split("Alerts (100)")[0], "what all share is said once"
    assert "for 100 alert(s)" in text, "the one run says which alerts it covers"
    assert len(runs_started(stack)) == 1, "one run for 100 alerts with the same parameters"
    updates = stack.slack.calls("chat.update")
    assert len(updates) <= 10, f"drawn again {len(updates)} times: changes are drawn together"


def test_alerts_of_a_group_with_other_parameters_start_other_runs_up_to_the_bound(make_stack) -> None:
    stack = make_stack(AlertSettings(channel="CALERTS", first_look=False, max_runs_per_group=2))
    group = {"alertname": "HighErrorRate"}  # grouped by alertname only: services differ inside
    services = ["checkout", "payments", "auth", "checkout", "payments", "auth"]
    deliver(stack, notification(group, [{**group, "service": s, "instance": f"i{n}"} for n, s in enumerate(services)]))
    settled(stack, 1)
    [post] = top_level(stack)
    text = shown(post)
    assert text.count("*Runbook* `service-erroring`") == 2
    assert "(service=checkout) for 2 alert(s)" in text and "(service=payments) for 2 alert(s)" in text
    assert "*Not run* for 2 alert(s)" in text and "alerts.max_runs_per_group" in text
    assert len(runs_started(stack)) == 2
    notes = [shown(m) for m in stack.slack.replies("CALERTS", post["ts"]) if "max_runs_per_group" in shown(m)]
    assert len(notes) == 1, "said once in the thread, not once per alert"


def test_a_group_resolving_says_so_once_and_its_next_firing_opens_a_new_message(make_stack) -> None:
    stack = make_stack(AlertSettings(channel="CALERTS", first_look=False))
    deliver(stack, checkout_storm(30))
    settled(stack, 1)
    deliver(stack, checkout_storm(29, status="resolved"))
    assert stack.idle(30)
    assert until(lambda: not stack.built.alerts.redraw_pending, 5)
    [post] = top_level(stack)
    assert "1 firing, 29 resolved" in shown(stack.slack.messages("CALERTS")[0])
    deliver(stack, checkout_storm(30, status="resolved")[29:])
    assert stack.slack.wait_for(lambda: "all 30 resolved" in shown(stack.slack.messages("CALERTS")[0]), 15)
    notes = [m["text"] for m in stack.slack.replies("CALERTS", post["ts"]) if "Resolved" in m["text"]]
    assert notes == ["✅ Resolved: HighErrorRate (all 30 alerts). What its runbook still waited for is cancelled."]
    later = notification(
        {"alertname": "HighErrorRate", "service": "checkout"},
        [{"alertname": "HighErrorRate", "service": "checkout", "instance": "checkout-new:8080"}],
    )
    deliver(stack, [later[0].model_copy(update={"delivery": "refire-1"})])
    settled(stack, 2)
    assert len(top_level(stack)) == 2


def test_the_storm_drains_within_slacks_limit_while_other_threads_are_answered(make_stack) -> None:
    """At ten times Slack's pace (posts 0.1 s apart in a channel, the fake taking 10 a second with
    bursts of 3, as Slack takes 1 with short bursts): no post meets a 429, the channel is drained in
    a tenth of 60 s, and a question asked in the channel meanwhile is answered."""
    stack = make_stack(AlertSettings(channel="CALERTS", first_look=False), post_interval_s=0.1)
    stack.slack.rate_limit(per_s=10, burst=3)
    begun = time.monotonic()
    deliver(stack, checkout_storm() + singles())
    mention = payloads.app_mention("<@UBOT> logs checkout ERROR", channel="CALERTS")
    stack.event(mention)
    assert stack.slack.wait_for(lambda: len(top_level(stack)) >= 22 and stack.answers("CALERTS", mention["ts"]), 30)
    assert stack.idle(30)
    drained = time.monotonic() - begun
    assert stack.slack.rate_limited == [], "every post within the channel's limit"
    assert drained < 6, f"drained in {drained:.1f} s"
    assert len([m for m in top_level(stack) if m["ts"] != mention["ts"]]) == 21
    assert stack.answers("CALERTS", mention["ts"]), "the question in the same channel was answered"
