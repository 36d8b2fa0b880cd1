"""opsbot's Slack app wired to fakes: the fake Web API, the scripted model server, a real Redis.

Requests go through `App.dispatch` with Slack's signature headers, the path Bolt's WSGI and Socket
Mode adapters take, so signature checks, acks and listener matching are Bolt's own.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import redis
from slack_bolt.request import BoltRequest
from slack_bolt.response import BoltResponse

from opsbot.bot.agent import Agent
from opsbot.bot.build import build_audit, build_recollection, build_tools, subjects
from opsbot.bot.llm import ModelClient
from opsbot.bot.memory.redis import RedisMemory
from opsbot.bot.redis.client import RedisClient
from opsbot.bot.slack.app import SlackApp, build_slack_app
from opsbot.config.policy import Policy
from opsbot.config.settings import AlertSettings, LoopLimits, MemorySettings, Settings, SlackSettings
from tests.fakes import slack_payloads as payloads
from tests.fakes.model_server import ModelServer
from tests.fakes.slack_api import SlackApi
from tests.fakes.waiting import until

SECRET = "test-signing-secret"
TOKEN = "xoxb-test"
# The fake answers in milliseconds. Posting looks for a lost post for the client's timeout and
# then some (bot/slack/posting.py): production's 15 s would make each failed post wait that long.
CLIENT_TIMEOUT_S = 1


def stack_settings(
    slack: SlackApi,
    redis_url: str,
    policy: Policy,
    model: ModelServer | None,
    memory: MemorySettings | None = None,
    alerts: AlertSettings | None = None,
    **slack_settings: Any,
) -> Settings:
    return Settings(
        slack_bot_token=TOKEN,
        slack_signing_secret=SECRET,
        slack_api_url=slack.base_url,
        redis_url=redis_url,
        openai_base_url=model.base_url if model else None,
        model="scripted",
        policy=policy,
        loop=LoopLimits(tool_retry_backoff_s=0.01),
        memory=memory or MemorySettings(lock_wait_s=30),
        # Unpaced unless a test asks: pacing has tests of its own, and others post many messages.
        slack=SlackSettings(**{"post_interval_s": 0.0, **slack_settings}),
        alerts=alerts or AlertSettings(channel="CALERTS"),
    )


@dataclass
class Stack:
    slack: SlackApi
    settings: Settings
    model: ModelServer | None
    built: SlackApp = field(init=False)

    def __post_init__(self) -> None:
        memory = RedisMemory(self.settings.redis_url or "", ttl_s=self.settings.memory.ttl_s)
        client = (
            ModelClient(model="scripted", base_url=self.model.base_url, max_retries=0, timeout_s=10)
            if self.model
            else None
        )
        audit = build_audit(self.settings)
        agent = Agent(
            client,
            memory,
            tools=build_tools(self.settings),  # the policy's MCP servers' tools too, as `serve` has them
            limits=self.settings.loop,
            memory_settings=self.settings.memory,
            audit=audit,
            recollection=build_recollection(self.settings, audit),
            subjects=subjects(self.settings.policy),
        )
        self.built = build_slack_app(self.settings, http=True, agent=agent)
        self.built.app.client.timeout = CLIENT_TIMEOUT_S

    def close(self) -> None:
        self.built.close()

    def dispatch(self, body: str, headers: dict[str, str]) -> BoltResponse:
        return self.built.app.dispatch(BoltRequest(body=body, headers=headers))

    def event(self, event: dict[str, Any], retry: int | None = None, **envelope: Any) -> BoltResponse:
        self._seed(event)
        body = json.dumps(payloads.event_callback(event, **envelope))
        headers = payloads.signed_headers(SECRET, body)
        if retry is not None:
            headers.update(payloads.retry_headers(retry))
        return self.dispatch(body, headers)

    def _seed(self, event: dict[str, Any]) -> None:
        """A person's message exists in Slack before Slack tells opsbot about it."""
        if (
            event.get("type") not in ("message", "app_mention")
            or event.get("subtype")
            or not {"ts", "channel"} <= event.keys()
        ):
            return
        channel, ts = event["channel"], event["ts"]
        if any(m["ts"] == ts for m in self.slack.messages(channel)):
            return
        self.slack.add_message(
            channel, event.get("text", ""), user=event.get("user", "U1"), thread_ts=event.get("thread_ts"), ts=ts
        )

    def command(self, text: str, key: str = "cmd", **fields: Any) -> BoltResponse:
        body = payloads.form_body(payloads.slash_command(text, response_url=self.slack.response_url(key), **fields))
        return self.dispatch(body, payloads.signed_headers(SECRET, body))

    def click(self, action_id: str, value: str, **fields: Any) -> BoltResponse:
        body = payloads.interactive_body(payloads.block_action(action_id, value, **fields))
        return self.dispatch(body, payloads.signed_headers(SECRET, body))

    def answers(self, channel: str, thread_ts: str) -> list[dict[str, Any]]:
        """opsbot's answers in a thread: messages marked as answers, streamed or posted."""
        return [
            m
            for m in self.slack.messages(channel, thread_ts)
            if (m.get("metadata") or {}).get("event_type") == "opsbot_answer"
        ]

    def idle(self, timeout: float = 15) -> bool:
        """Wait until nothing is left to do: no job queued, in flight or being drained and no alert
        queued or being handled (by any process on this Redis), and no worker here busy. A post
        not made by then is one nobody is making."""
        return until(lambda: not self._work_in_redis() and self.built.pool.idle(), timeout)

    def _work_in_redis(self) -> bool:
        return work_in_redis(self.built.state.redis, self.built.state.prefix, self.built.alerts.queue.base)


class Stacks:
    """The stacks one test starts, each on its own fake Slack, all closed when the test ends."""

    def __init__(self) -> None:
        self.made: list[Stack] = []

    def start(self, slack: SlackApi, settings: Settings, model: ModelServer | None) -> Stack:
        stack = Stack(slack, settings, model)
        self.made.append(stack)
        return stack

    def close(self) -> None:
        for stack in self.made:
            stack.close()
            stack.slack.close()


def work_in_redis(
    client: RedisClient,
    slack_prefix: str = "opsbot:slack",
    alerts_base: str = "opsbot:alerts:{alerts}",
    runbook_tag: str = "{opsbot:runbook}",
) -> bool:
    """Whether any opsbot process on this Redis has a job queued, in flight or being drained, an
    alert queued or being handled, or a runbook run it is advancing (under its lease). The
    defaults are opsbot's own key prefixes."""
    patterns = [f"{slack_prefix}:{kind}:*" for kind in ("queue", "inflight", "drain")]
    patterns += [f"{alerts_base}:pending", f"{alerts_base}:processing:*", f"{runbook_tag}:lease:*"]
    return any(True for pattern in patterns for _ in client.scan_iter(pattern))


def settled(redis_url: str, timeout: float = 15) -> bool:
    """Wait until no opsbot process on this Redis has work left (`work_in_redis`), for tests of
    `opsbot serve` processes. Their listeners queue each job before the ack, so an answer not
    posted by then is none at all."""
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    try:
        return until(lambda: not work_in_redis(client), timeout, interval=0.02)
    finally:
        client.close()
