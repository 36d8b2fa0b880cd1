"""`post_once` posts every message exactly once when Slack is slow or failing, and never drops one.

Through the WebClient as production configures it (`configure_client`: only `RateLimitErrorRetryHandler`) against
the fake Slack Web API over real HTTP. The client's timeout is cut to a fraction of a second, so a
post Slack answers late costs that much real time; every wait of `post_once` itself is virtual
(`VirtualTime`), shared with the fake, so a message Slack shows 15 s late shows 15 virtual seconds
late, and production's window and pauses are what is tested, in milliseconds.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from slack_sdk import WebClient

from opsbot.bot.slack.app import configure_client
from opsbot.bot.slack.posting import Pacing, PostFailed, marker, post_once, post_or_log
from opsbot.config.settings import Settings
from tests.fakes.slack_api import Message, SlackApi

TOKEN = "xoxb-test"
TIMEOUT_S = 0.2
WINDOW_S = TIMEOUT_S + Pacing().grace_s  # how long after an attempt's start its post may still land
BLIND = "posting it anyway"  # what the warning says when no look succeeded for a whole window
# A call reaches the fake a moment after `post_once` read the clock to start it.
ARRIVAL_S = 0.05


class VirtualTime:
    """Real monotonic time plus what `post_once` slept: its waits cost nothing, and the time real
    calls take (a client waiting out its timeout) still counts."""

    def __init__(self) -> None:
        self.pauses: list[float] = []

    def __call__(self) -> float:
        return time.monotonic() + sum(self.pauses)

    def sleep(self, seconds: float) -> None:
        assert seconds >= 0, seconds
        self.pauses.append(seconds)


@dataclass
class World:
    slack: SlackApi
    client: WebClient
    time: VirtualTime
    root: str

    def post(self, job: str = "job-1", **options: Any) -> str:
        pacing = Pacing(sleep=self.time.sleep, clock=self.time)
        return post_once(self.client, "C1", self.root, job, f"answer to {job}", pacing=pacing, **options)

    def marked(self, job: str = "job-1") -> list[Message]:
        return [m for m in self.slack.messages("C1", self.root) if m.get("metadata") == marker(job)]

    def calls(self, method: str) -> list[float]:
        """When each call of `method` arrived, in virtual seconds."""
        return [call.at for call in self.slack.calls(method)]


def production_client(slack: SlackApi, timeout_s: float) -> WebClient:
    client = configure_client(WebClient(token=TOKEN), Settings(slack_api_url=slack.base_url))
    client.timeout = timeout_s  # type: ignore[assignment]  # the SDK types it int; urllib takes any number
    return client


def open_world(timeout_s: float = TIMEOUT_S) -> World:
    clock = VirtualTime()
    slack = SlackApi(token=TOKEN, clock=clock)
    root = slack.add_message("C1", "is checkout down?")
    return World(slack, production_client(slack, timeout_s), clock, root)


@pytest.fixture
def world() -> Iterator[World]:
    made = open_world()
    yield made
    made.slack.close()


def a_window_apart(earlier: float, later: float) -> bool:
    return later - earlier >= WINDOW_S - ARRIVAL_S


def blind_warnings(records: list[logging.LogRecord]) -> list[str]:
    return [r.getMessage() for r in records if r.levelno == logging.WARNING and BLIND in r.getMessage()]


# A post answered after the client's timeout.


@pytest.mark.parametrize(
    ("respond_after_s", "visible_after_s"),
    [
        (0.05, 0.0),  # answered inside the timeout: nothing to find out
        (0.5, 0.0),  # posted at once, the answer lost to the timeout
        (0.5, 0.1),  # visible before the client gives up
        (0.5, 0.7),  # visible just after the single look the old code made
        (1.0, 5.0),
        (0.5, WINDOW_S - 0.3),  # visible near the end of the window: the last look finds it
    ],
)
def test_a_post_answered_after_the_clients_timeout_is_posted_once(
    world: World, respond_after_s: float, visible_after_s: float
) -> None:
    world.slack.late("chat.postMessage", respond_after_s=respond_after_s, visible_after_s=visible_after_s)

    ts = world.post()

    assert [m["ts"] for m in world.marked()] == [ts]
    assert len(world.calls("chat.postMessage")) == 1, "posted again although the first post landed"


def test_looks_pause_longer_each_time_up_to_four_seconds(world: World) -> None:
    world.slack.late("chat.postMessage", respond_after_s=0.5, visible_after_s=11.0)

    world.post()

    # Looks at 0.2 s (the timeout), 0.7, 1.7, 3.7, 7.7 and 11.7, which finds it.
    assert world.time.pauses == [0.5, 1.0, 2.0, 4.0, 4.0]
    assert len(world.calls("conversations.replies")) == 6


# Looks that fail.


@pytest.mark.parametrize("look_fails", ["5xx", "timeout"])
def test_a_failing_look_is_retried_and_the_answer_posted_once(world: World, look_fails: str) -> None:
    world.slack.fail("chat.postMessage", status=500, after_effect=True)  # posted, the answer lost
    if look_fails == "5xx":
        world.slack.fail("conversations.replies", status=503, times=3)
    else:
        world.slack.late("conversations.replies", respond_after_s=0.5, times=3)

    ts = world.post()

    assert [m["ts"] for m in world.marked()] == [ts]
    assert len(world.calls("chat.postMessage")) == 1
    assert len(world.calls("conversations.replies")) == 4 and world.time.pauses == [0.5, 1.0, 2.0]


def test_a_post_that_did_not_land_is_posted_again_only_after_the_window(world: World) -> None:
    world.slack.fail("chat.postMessage", status=500)  # Slack did nothing, but opsbot cannot know
    world.slack.fail("conversations.replies", status=500, times=2)

    ts = world.post()

    first, second = world.calls("chat.postMessage")
    assert a_window_apart(first, second), "posted again while the first post could still land"
    assert [m["ts"] for m in world.marked()] == [ts]
    assert a_window_apart(first, world.calls("conversations.replies")[-1]), "the look that counted came too early"


def test_when_every_look_fails_for_the_window_the_answer_is_posted_and_a_warning_logged(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    world.slack.fail("chat.postMessage", status=502)
    world.slack.flaky("conversations.replies", rate=1.0)

    with caplog.at_level(logging.WARNING, logger="opsbot.slack"):
        ts = world.post()

    assert [m["ts"] for m in world.marked()] == [ts], "the answer was dropped"
    first, second = world.calls("chat.postMessage")
    assert a_window_apart(first, second), "gave up looking before the window was over"
    assert len(blind_warnings(caplog.records)) == 1 and "job-1" in blind_warnings(caplog.records)[0]


def test_a_check_first_whose_looks_all_fail_still_posts(world: World, caplog: pytest.LogCaptureFixture) -> None:
    world.slack.fail("conversations.replies", status=500, times=100)

    with caplog.at_level(logging.WARNING, logger="opsbot.slack"):
        ts = world.post(check_first=True)

    assert [m["ts"] for m in world.marked()] == [ts]
    assert a_window_apart(world.calls("conversations.replies")[0], world.calls("chat.postMessage")[0])
    assert len(blind_warnings(caplog.records)) == 1


def test_a_check_first_that_finds_nothing_posts_at_once(world: World) -> None:
    ts = world.post(check_first=True)

    assert [m["ts"] for m in world.marked()] == [ts]
    assert len(world.calls("conversations.replies")) == 1 and world.time.pauses == []


def test_a_check_first_finds_an_earlier_post(world: World) -> None:
    earlier = world.post()

    assert world.post(check_first=True) == earlier
    assert len(world.marked()) == 1


# What does raise, and what is left to the client.


@pytest.mark.parametrize("error", ["is_archived", "invalid_blocks", "token_revoked"])
def test_final_errors_raise_at_once(world: World, error: str) -> None:
    world.slack.fail("chat.postMessage", status=200, error=error)

    with pytest.raises(PostFailed) as failed:
        world.post()

    assert failed.value.error == error
    assert len(world.calls("chat.postMessage")) == 1 and world.calls("conversations.replies") == []
    assert world.time.pauses == []


def test_not_in_channel_from_slack_itself_is_final(world: World) -> None:
    world.slack.not_in_channel.add("C1")

    with pytest.raises(PostFailed, match="not_in_channel"):
        world.post()


def test_spent_attempts_raise_and_post_or_log_logs_it(world: World, caplog: pytest.LogCaptureFixture) -> None:
    world.slack.fail("chat.postMessage", status=500, times=8)
    pacing = Pacing(sleep=world.time.sleep, clock=world.time)

    with pytest.raises(PostFailed, match="internal_error"):
        world.post()
    with caplog.at_level(logging.ERROR, logger="opsbot.slack"):
        assert post_or_log(world.client, "C1", world.root, "note-1", "a note", pacing=pacing) is None

    assert len(world.calls("chat.postMessage")) == 8 and world.marked() == []
    assert any("could not post note-1" in r.getMessage() for r in caplog.records)


def test_a_refusal_is_posted_again_after_a_pause_without_looking(world: World) -> None:
    # Slack answered that it did not take the post (not a 5xx, not "may have partly succeeded").
    world.slack.fail("chat.postMessage", status=200, error="request_timeout")

    ts = world.post()

    assert [m["ts"] for m in world.marked()] == [ts]
    assert world.calls("conversations.replies") == [] and world.time.pauses == [0.5]


def test_a_429_is_left_to_the_clients_rate_limit_handler(world: World) -> None:
    world.slack.fail("chat.postMessage", status=429, retry_after=0)

    ts = world.post()

    assert [m["ts"] for m in world.marked()] == [ts]
    assert len(world.calls("chat.postMessage")) == 2, "the client retried it"
    assert world.calls("conversations.replies") == [] and world.time.pauses == [], "post_once saw nothing"


def test_a_root_post_answered_late_is_found_in_the_channels_history(world: World) -> None:
    world.slack.late("chat.postMessage", respond_after_s=0.5, visible_after_s=3.0)
    pacing = Pacing(sleep=world.time.sleep, clock=world.time)

    ts = post_once(world.client, "C1", None, "question-1", "asked", kind="opsbot_question", pacing=pacing)

    roots = [m for m in world.slack.messages("C1") if m.get("metadata") == marker("question-1", "opsbot_question")]
    assert [m["ts"] for m in roots] == [ts] and world.calls("conversations.history")


# Any sequence of outcomes.

# What a post attempt meets: Slack posts and answers (ok), posts and the answer is lost (lost),
# posts and answers after the client's timeout, the post showing `visible_after_s` later (late),
# does nothing and answers 5xx (5xx), or refuses for good (final).
Outcome = tuple[str, float]
OUTCOMES = st.one_of(
    st.sampled_from([("lost", 0.0), ("5xx", 0.0), ("final", 0.0)]),
    st.tuples(st.just("late"), st.sampled_from([0.0, 0.05, 0.7, 4.0, 14.0])),
)
PROPERTY_TIMEOUT_S = 0.1
ATTEMPTS = 4


def script(slack: SlackApi, outcomes: list[Outcome], failing_looks: int) -> None:
    for kind, visible_after_s in outcomes:
        if kind == "late":
            slack.late("chat.postMessage", respond_after_s=0.15, visible_after_s=visible_after_s)
        elif kind == "final":
            slack.fail("chat.postMessage", status=200, error="msg_too_long")
        else:
            slack.fail("chat.postMessage", status=500, after_effect=kind == "lost")
    if failing_looks:
        slack.fail("conversations.replies", status=500, times=failing_looks)


@settings(max_examples=30, deadline=None)
@given(
    outcomes=st.lists(OUTCOMES, max_size=ATTEMPTS),
    failing_looks=st.integers(min_value=0, max_value=16),
    check_first=st.booleans(),
)
def test_any_sequence_of_outcomes_leaves_one_message_or_says_why_not(
    outcomes: list[Outcome], failing_looks: int, check_first: bool
) -> None:
    """At most one marked message, unless opsbot warned that it posted without knowing; at least
    one, unless Slack refused it for good or every attempt failed."""
    world = open_world(PROPERTY_TIMEOUT_S)
    records: list[logging.LogRecord] = []
    handler = logging.Handler(logging.WARNING)
    handler.emit = records.append  # type: ignore[method-assign]
    logger = logging.getLogger("opsbot.slack")
    logger.addHandler(handler)
    ts: str | None = None
    error = ""
    try:
        script(world.slack, outcomes, failing_looks)
        try:
            ts = world.post(check_first=check_first, attempts=ATTEMPTS)
        except PostFailed as exc:
            error = exc.error
        marked = [m["ts"] for m in world.marked()]
    finally:
        logger.removeHandler(handler)
        world.slack.close()

    if len(marked) > 1:
        assert blind_warnings(records), f"{len(marked)} messages and no warning"
    if ts is not None:
        assert ts in marked
        return
    posts = len(world.slack.calls("chat.postMessage"))
    if error == "msg_too_long":
        assert outcomes[posts - 1][0] == "final", "refused for good only when Slack said so"
    else:
        assert posts == ATTEMPTS, f"gave up after {posts} attempts ({error})"
