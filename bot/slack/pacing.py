"""Posting no faster than Slack allows in one channel.

Slack's chat.postMessage has a special limit: about one message per second per channel, short
bursts allowed (api.slack.com/methods/chat.postMessage, Rate limiting); past it, Slack answers 429
with Retry-After and posts nothing. An alert storm or a busy incident channel would meet it, and
every post past it waits out its Retry-After and comes late. So each post to a channel takes the
channel's next slot first: one Redis script per post hands out slots INTERVAL apart, on Redis's
clock, so every opsbot process on that Redis shares one pace per channel. A 429 all the same
(another app posting in the channel, a burst from elsewhere) moves the channel's next slot past
its Retry-After for every process, and the post is tried again then: Slack did nothing, so a
retry cannot double it. Nothing is dropped: a post that has waited its turn is sent.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from typing import Any

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry import RateLimitErrorRetryHandler
from slack_sdk.http_retry.request import HttpRequest
from slack_sdk.http_retry.response import HttpResponse
from slack_sdk.http_retry.state import RetryState
from slack_sdk.web.slack_response import SlackResponse

from ..redis.client import RedisClient
from ..telemetry import metrics

log = logging.getLogger("opsbot.slack")

PACED_METHODS = frozenset({"chat.postMessage"})
# A 429 that outlasts this many waits is an error like any other (posting.py decides what then).
RATE_LIMIT_RETRIES = 5

# Returns how many ms the caller waits for its slot (ARGV[1]: the interval in ms; ARGV[2]: a hold
# in ms, which moves the next slot to at least now + hold and takes none).
_SLOT = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local free = tonumber(redis.call('get', KEYS[1]) or '0')
local hold = tonumber(ARGV[2])
if hold > 0 then
  if free < now + hold then redis.call('set', KEYS[1], now + hold, 'PX', hold + 60000) end
  return 0
end
local at = math.max(now, free)
local gap = tonumber(ARGV[1])
redis.call('set', KEYS[1], at + gap, 'PX', at + gap - now + 60000)
return at - now
"""


class ChannelPacer:
    """Slots for posting in a channel, `interval_s` apart, shared by every process on the Redis."""

    def __init__(
        self,
        client: RedisClient,
        prefix: str,
        interval_s: float,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.redis = client
        self.prefix = prefix
        self.interval_ms = max(0, round(interval_s * 1000))
        self.sleep = sleep
        self._slot = client.register_script(_SLOT)

    def wait(self, channel: str) -> float:
        """Block until this caller's slot in `channel`; returns how long it waited."""
        waited = int(self._slot(keys=[self._key(channel)], args=[self.interval_ms, 0])) / 1000
        metrics.post_waited(waited)
        if waited > 0:
            metrics.post_waiting(1)
            try:
                self.sleep(waited)
            finally:
                metrics.post_waiting(-1)
        return waited

    def hold(self, channel: str, seconds: float) -> None:
        """Slack said to wait `seconds` in `channel`: no slot there starts sooner, for anyone."""
        self._slot(keys=[self._key(channel)], args=[self.interval_ms, max(1, math.ceil(seconds * 1000))])

    def _key(self, channel: str) -> str:
        return f"{self.prefix}:pace:{channel}"


class _OthersOnly(RateLimitErrorRetryHandler):
    """The client's own 429 retries, for every method but the paced ones: those wait in the pacer."""

    def _can_retry(
        self,
        *,
        state: RetryState,
        request: HttpRequest,
        response: HttpResponse | None = None,
        error: Exception | None = None,
    ) -> bool:
        if request.url.rsplit("/", 1)[-1] in PACED_METHODS:
            return False
        return super()._can_retry(state=state, request=request, response=response, error=error)


def rate_limit_retries() -> RateLimitErrorRetryHandler:
    return _OthersOnly(max_retry_count=RATE_LIMIT_RETRIES)


class PacedClient(WebClient):
    """The Web API client whose posts take their channel's slot first (`pacer`; None: unpaced)."""

    pacer: ChannelPacer | None = None

    def api_call(
        self,
        api_method: str,
        *,
        http_verb: str = "POST",
        files: dict[str, Any] | None = None,
        data: dict[str, Any] | None = None,
        params: dict[str, Any] | None = None,
        json: dict[str, Any] | None = None,
        headers: dict[str, Any] | None = None,
        auth: dict[str, Any] | None = None,
    ) -> SlackResponse:
        def call() -> SlackResponse:
            return super(PacedClient, self).api_call(
                api_method,
                http_verb=http_verb,
                files=files,
                data=data,
                params=params,
                json=json,
                headers=headers,
                auth=auth,
            )

        channel = _channel(json, data, params) if api_method in PACED_METHODS else None
        if channel is None:
            return call()
        for attempt in range(RATE_LIMIT_RETRIES + 1):
            if self.pacer is not None:
                self.pacer.wait(channel)
            try:
                return call()
            except SlackApiError as exc:
                if exc.response.status_code != 429 or attempt == RATE_LIMIT_RETRIES:
                    raise
                seconds = _retry_after(exc.response)
                metrics.rate_limited(api_method)
                log.info("Slack rate-limited %s in %s: waiting %g s", api_method, channel, seconds)
                if self.pacer is not None:
                    self.pacer.hold(channel, seconds)
                else:
                    time.sleep(seconds)
        raise AssertionError("unreachable: the last attempt returns or raises")


def _channel(*bodies: dict[str, Any] | None) -> str | None:
    for body in bodies:
        if body and isinstance(body.get("channel"), str):
            return str(body["channel"])
    return None


def _retry_after(response: SlackResponse) -> float:
    headers = {k.lower(): v for k, v in (response.headers or {}).items()}
    value = headers.get("retry-after")
    if isinstance(value, list):
        value = value[0] if value else None
    try:
        return max(1.0, float(value)) if value is not None else 1.0
    except ValueError:
        return 1.0
