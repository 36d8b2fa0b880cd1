"""Posts paced per channel (bot/slack/pacing.py): never faster than Slack takes them, a 429 waited
out and tried again, nothing lost and nothing doubled. The fake Slack answers past its
per-channel limit as Slack does (429, Retry-After, nothing posted); rates are scaled up tenfold
so the tests take seconds, the shape is Slack's (one a second a channel, short bursts)."""

from __future__ import annotations

import threading
import time

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from opsbot.bot.slack.pacing import ChannelPacer, PacedClient, rate_limit_retries
from tests.fakes.slack_api import SlackApi
from tests.fakes.slack_stack import TOKEN


def paced_client(slack: SlackApi, pacer: ChannelPacer | None) -> PacedClient:
    client = PacedClient(token=TOKEN, base_url=slack.base_url, timeout=10)
    client.retry_handlers = [rate_limit_retries()]
    client.pacer = pacer
    return client


def post_from_threads(client: WebClient, channel: str, count: int, threads: int = 4) -> list[str]:
    """Post `count` messages from `threads` threads at once; the errors of posts refused."""
    refused: list[str] = []

    def post(n: int) -> None:
        try:
            client.chat_postMessage(channel=channel, text=f"post {n}")
        except SlackApiError as exc:
            refused.append(str(exc.response.get("error")))

    workers = [threading.Thread(target=lambda k=k: [post(n) for n in range(k, count, threads)]) for k in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(30)
    return refused


def test_slots_in_one_channel_are_an_interval_apart_and_channels_are_independent(redis_server) -> None:
    waits: list[float] = []
    pacer = ChannelPacer(redis_server.client(), "test", interval_s=1.0, sleep=waits.append)
    for _ in range(4):
        pacer.wait("CBUSY")
    pacer.wait("COTHER")
    assert waits[0] > 0.9 and 1.9 < waits[1] < 3.1 and 2.9 < waits[2] < 4.1, waits  # the first took no sleep
    assert len(waits) == 3, "the other channel's first post waits for nobody"


def test_a_hold_delays_every_later_slot_of_the_channel(redis_server) -> None:
    waits: list[float] = []
    pacer = ChannelPacer(redis_server.client(), "test", interval_s=0.1, sleep=waits.append)
    pacer.hold("CHELD", 5)
    pacer.wait("CHELD")
    assert 4.5 < waits[0] <= 5.0


def test_paced_posts_stay_within_slacks_limit_and_all_arrive_once(redis_server) -> None:
    with SlackApi() as slack:
        slack.rate_limit(per_s=10, burst=3)
        client = paced_client(slack, ChannelPacer(redis_server.client(), "test", interval_s=0.1))
        begun = time.monotonic()
        assert post_from_threads(client, "CSTORM", 20) == []
        took = time.monotonic() - begun
        assert slack.rate_limited == [], "never faster than the channel takes"
        assert sorted(m["text"] for m in slack.messages("CSTORM")) == sorted(f"post {n}" for n in range(20))
        assert 1.5 < took < 6, f"{took:.1f} s for 20 posts at 10 a second"


def test_unpaced_the_same_posts_meet_the_limit(redis_server) -> None:
    with SlackApi() as slack:
        slack.rate_limit(per_s=10, burst=3)
        plain = WebClient(token=TOKEN, base_url=slack.base_url, timeout=10)
        plain.retry_handlers = []  # no retries either: each 429 is a refusal
        refused = post_from_threads(plain, "CSTORM", 20)
        assert slack.rate_limited and set(refused) == {"ratelimited"}, "the fake limits as Slack does"
        assert len(slack.messages("CSTORM")) == 20 - len(refused), "a refused post posted nothing"


def test_a_429_is_waited_out_and_tried_again_never_lost_nor_doubled(redis_server) -> None:
    with SlackApi() as slack:
        slack.rate_limit(per_s=2, burst=1)  # stricter than the pacer: another app posting in the channel
        client = paced_client(slack, ChannelPacer(redis_server.client(), "test", interval_s=0.05))
        begun = time.monotonic()
        assert post_from_threads(client, "CSHARED", 6, threads=3) == []
        took = time.monotonic() - begun
        assert slack.rate_limited, "Slack said 429"
        assert all(call.args["channel"] == "CSHARED" for call in slack.rate_limited)
        texts = [m["text"] for m in slack.messages("CSHARED")]
        assert sorted(texts) == sorted(f"post {n}" for n in range(6)), "each post exactly once"
        assert took >= 1.0, "Retry-After (1 s) was waited out"


def test_only_posts_are_paced(redis_server) -> None:
    waits: list[float] = []
    with SlackApi() as slack:
        client = paced_client(slack, ChannelPacer(redis_server.client(), "test", interval_s=1.0, sleep=waits.append))
        client.chat_postMessage(channel="CONE", text="a post")
        [posted] = slack.messages("CONE")
        for _ in range(3):
            client.chat_update(channel="CONE", ts=posted["ts"], text="edited")
        client.chat_postMessage(channel="CONE", text="another")
        assert len(waits) == 1, "updates took no slot; the second post waited for its own"


def test_unpaced_posts_still_wait_out_a_429(redis_server) -> None:
    with SlackApi() as slack:
        slack.rate_limit(per_s=2, burst=1)
        client = paced_client(slack, None)  # post_interval_s: 0
        assert post_from_threads(client, "CSOLO", 3, threads=3) == []
        assert slack.rate_limited and len(slack.messages("CSOLO")) == 3
