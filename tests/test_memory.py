"""Thread memory, through a real redis-server and the in-process store alike.

Tests taking the `memory` fixture run once per backend: in-process, and Redis as one server,
through Sentinel and as a 3-master Cluster; all must behave the same. The few that need Redis
itself (two processes on one server, an outage, counting round trips) say so.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
import redis

from opsbot.bot.agent import Agent
from opsbot.bot.llm import ModelClient
from opsbot.bot.memory import InProcessMemory, Memory, ThreadBusy
from opsbot.bot.memory.redis import RedisMemory
from opsbot.bot.messages import Block, Message, ToolCallSpec
from opsbot.bot.redis.client import connect
from opsbot.config.settings import LoopLimits, MemorySettings, Settings
from opsbot.tools.catalog import ops_tools
from tests.fakes.clock import SkippingClock
from tests.fakes.model_server import Call, ModelServer, Reply, is_summary_request, tool_results
from tests.fakes.redis_server import RedisServer
from tests.fakes.waiting import until


@pytest.fixture(params=["inprocess", "redis", "sentinel", "cluster"])
def memory(request: pytest.FixtureRequest) -> Memory:
    """conftest's `memory`, with Redis through Sentinel and as a Cluster besides (the Redis setups
    are shared by the session and flushed before each test)."""
    if request.param == "inprocess":
        return InProcessMemory()
    fixture = {"redis": "redis_server", "sentinel": "redis_sentinel", "cluster": "redis_cluster"}[request.param]
    setup = request.getfixturevalue(fixture)
    setup.flush()
    return RedisMemory(setup.url)


# Blocks as the loop stores them.


def user(text: str) -> Block:
    return Block(messages=[Message.user(text)])


def answer(text: str) -> Block:
    return Block(messages=[Message.assistant(text)])


def tool_step(*calls: tuple[str, str, str]) -> Block:
    """An assistant message calling (id, name, result) ... followed by exactly its results."""
    specs = [ToolCallSpec(id=call_id, name=name, arguments='{"service":"checkout"}') for call_id, name, _ in calls]
    results = [Message.tool(call_id, result) for call_id, _, result in calls]
    return Block.tool_step(Message.assistant("", specs), results)


def stored_blocks(memory: Memory, thread: str) -> list[Block]:
    """Everything the backend holds for `thread`, before `load` drops anything."""
    if isinstance(memory, RedisMemory):
        client = connect(memory.url)
        try:
            raw = client.lrange(f"{memory.prefix}:thread:{{{thread}}}:blocks", 0, -1)
        finally:
            client.close()
        return [Block.model_validate_json(item) for item in raw]
    assert isinstance(memory, InProcessMemory)
    entry = memory._threads.get(thread)
    return list(entry.blocks) if entry is not None else []


def assert_well_formed(messages: list[dict[str, Any]]) -> None:
    """Chat-completions messages (system messages first) as a provider accepts them: the
    conversation opens on a user message, every assistant tool call is followed by exactly its
    results in order, and no tool result stands without its call."""
    leading = next((i for i, m in enumerate(messages) if m["role"] != "system"), len(messages))
    body = messages[leading:]
    assert all(m["role"] != "system" for m in body), "a system message in the middle of the conversation"
    assert body and body[0]["role"] == "user", f"window opens on {body[0]['role'] if body else 'nothing'}"
    index = 0
    while index < len(body):
        message = body[index]
        assert message["role"] != "tool", f"orphan tool result at {index}: {message}"
        calls = message.get("tool_calls") or []
        if message["role"] == "assistant" and calls:
            following = body[index + 1 : index + 1 + len(calls)]
            assert [m["role"] for m in following] == ["tool"] * len(calls), f"calls at {index} not followed by results"
            assert [m.get("tool_call_id") for m in following] == [c["id"] for c in calls]
            after = body[index + 1 + len(calls)] if index + 1 + len(calls) < len(body) else None
            assert after is None or after["role"] != "tool", f"extra tool result after the calls at {index}"
            index += len(calls)
        index += 1


def assert_window_shape(blocks: list[Block]) -> None:
    assert blocks, "nothing stored"
    assert blocks[0].starts_turn, f"stored window opens on a {blocks[0].messages[0].role} block"
    for block in blocks:
        head = block.messages[0]
        if head.role == "assistant" and head.tool_calls:
            assert [m.tool_call_id for m in block.messages[1:]] == [c.id for c in head.tool_calls]
        else:
            assert len(block.messages) == 1, f"a {head.role} block holds {len(block.messages)} messages"
    assert_well_formed([m.to_api() for block in blocks for m in block.messages])


# Round trip, repeats, reset, fold.


def test_blocks_round_trip(memory: Memory) -> None:
    turn = [
        user('why is checkout returning 502s? — ünïcode, "quotes" and\nnewlines'),
        tool_step(("call_1", "query_logs", '{"ok":true,"data":"a\\nb"}'), ("call_2", "read_config", "{}")),
        answer("payments is down"),
    ]
    memory.append("t", turn[:1])
    memory.append("t", turn[1:])
    state = memory.load("t", new_turn=False)
    assert state.blocks == turn
    assert state.summary == "" and state.repeats == {}
    assert memory.load("t", new_turn=True).blocks == turn, "loading changes nothing but the repeats"
    assert memory.load("unknown", new_turn=True).blocks == []


def test_new_turn_clears_repeat_records_and_a_step_keeps_them(memory: Memory) -> None:
    memory.append("t", [user("q")], {"k1": "first"})
    memory.append("t", [], {"k2": "second"})
    memory.append("t", [], {"k1": "updated"})
    assert memory.load("t", new_turn=False).repeats == {"k1": "updated", "k2": "second"}
    assert memory.load("t", new_turn=False).repeats == {"k1": "updated", "k2": "second"}, "new_turn=False keeps them"
    assert memory.load("t", new_turn=True).repeats == {}
    state = memory.load("t", new_turn=False)
    assert state.repeats == {}, "the records are gone from the store, not only from one load"
    assert state.blocks == [user("q")], "clearing repeats keeps the window"


def test_forget_all_forgets_the_threads_under_a_prefix_and_no_other(memory: Memory) -> None:
    for thread in ("slack:T1:C1:1.1", "slack:T1:C1:2.2", "slack:T1:C10:3.3", "slack:T1:C*:4.4"):
        memory.append(thread, [user("hello"), answer("hi")])
    assert memory.forget_all("slack:T1:C1:") == ["slack:T1:C1:1.1", "slack:T1:C1:2.2"]
    assert memory.load("slack:T1:C1:1.1", new_turn=False).blocks == []
    assert memory.load("slack:T1:C10:3.3", new_turn=False).blocks, "a channel sharing a prefix keeps its threads"
    assert memory.forget_all("slack:T1:C*:") == ["slack:T1:C*:4.4"], "glob characters in a key are literal"
    assert memory.load("slack:T1:C10:3.3", new_turn=False).blocks


def test_threads_named_with_braces_or_percent_signs_keep_apart(memory: Memory) -> None:
    """A thread's name sits in its keys' hash tag, which a `}` would end early (bot/memory_redis.py)."""
    threads = ["a}b", "a%7Db", "a{b", "", "}", "%", "a}b}c", "{x}"]
    for n, thread in enumerate(threads):
        with memory.lock(thread, ttl_s=10, wait_s=0):  # the lock's refresh joins each append's MULTI/EXEC
            memory.append(thread, [user(f"q{n}"), answer(f"a{n}"), user(f"next {n}")], {"k": str(n)})
            memory.fold(thread, 2, f"summary {n}")
    for n, thread in enumerate(threads):
        state = memory.load(thread, new_turn=False)
        assert (state.blocks, state.summary, state.repeats) == ([user(f"next {n}")], f"summary {n}", {"k": str(n)})
    assert memory.forget_all("a}") == ["a}b", "a}b}c"], "not a%7Db"
    assert memory.load("a%7Db", new_turn=False).summary == "summary 1"
    assert memory.forget_all("") == sorted(set(threads) - {"a}b", "a}b}c"})


def test_reset_forgets_one_thread_only(memory: Memory) -> None:
    for thread in ("a", "b"):
        memory.append(thread, [user(f"{thread}1"), answer("x"), user(f"{thread}2")], {"k": thread})
        memory.fold(thread, 2, f"summary of {thread}")
    memory.reset("a")
    gone = memory.load("a", new_turn=False)
    assert (gone.blocks, gone.summary, gone.repeats) == ([], "", {})
    kept = memory.load("b", new_turn=False)
    assert (kept.blocks, kept.summary, kept.repeats) == ([user("b2")], "summary of b", {"k": "b"})
    memory.append("a", [user("again")])
    assert memory.load("a", new_turn=False).blocks == [user("again")], "a reset thread starts afresh"


def test_fold_replaces_the_oldest_blocks_by_the_summary(memory: Memory) -> None:
    first = [user("q1"), tool_step(("c1", "query_logs", "r1")), answer("a1")]
    second = [user("q2"), answer("a2")]
    memory.append("t", first + second)
    memory.fold("t", len(first), "- q1 was answered a1")
    state = memory.load("t", new_turn=False)
    assert state.blocks == second
    assert state.summary == "- q1 was answered a1"
    memory.fold("t", 0, "- replaced")
    assert memory.load("t", new_turn=False).summary == "- replaced"
    assert stored_blocks(memory, "t") == second


def test_a_window_never_opens_on_a_tool_step_or_an_answer(memory: Memory) -> None:
    memory.append("t", [tool_step(("c1", "query_logs", "r")), answer("stale"), user("q"), answer("a")])
    assert memory.load("t", new_turn=True).blocks == [user("q"), answer("a")]
    memory.append("orphans", [answer("only an answer"), tool_step(("c2", "query_logs", "r"))])
    assert memory.load("orphans", new_turn=True).blocks == []


def test_blocks_refuse_results_that_do_not_pair_with_their_calls() -> None:
    call = Message.assistant("", [ToolCallSpec(id="c1", name="query_logs", arguments="{}")])
    with pytest.raises(ValueError):
        Block.tool_step(call, [Message.tool("c2", "r")])
    with pytest.raises(ValueError):
        Block.tool_step(call, [])
    with pytest.raises(ValueError):
        Block.tool_step(call, [Message.tool("c1", "r"), Message.tool("c1", "r")])


# TTL.


@dataclass
class ShortLived:
    """A memory whose threads expire after one idle second, and how to let seconds pass for it:
    Redis keeps real time; the in-process store a clock that skips ahead."""

    memory: Memory
    wait: Callable[[float], None]


@pytest.fixture(params=["inprocess", "redis"])
def short_lived(request: pytest.FixtureRequest) -> ShortLived:
    if request.param == "inprocess":
        clock = SkippingClock()
        return ShortLived(InProcessMemory(ttl_s=1, clock=clock), clock.sleep)
    server: RedisServer = request.getfixturevalue("redis_server")
    server.flush()
    return ShortLived(RedisMemory(server.url, ttl_s=1), time.sleep)


def test_threads_expire_after_ttl_and_every_append_refreshes_it(short_lived: ShortLived) -> None:
    memory, wait = short_lived.memory, short_lived.wait
    memory.append("t", [user("q1"), answer("a1"), user("q2")], {"k": "v"})
    memory.fold("t", 2, "the summary")
    memory.append("other", [user("idle")])
    wait(0.6)
    memory.append("t", [answer("a2")])  # refreshes the whole thread, summary and repeats included
    wait(0.6)  # 1.2 s after the first writes: "other" is gone, "t" lives on
    state = memory.load("t", new_turn=False)
    assert (state.blocks, state.summary, state.repeats) == ([user("q2"), answer("a2")], "the summary", {"k": "v"})
    assert memory.load("other", new_turn=False).blocks == []
    wait(1.2)
    state = memory.load("t", new_turn=False)
    assert (state.blocks, state.summary, state.repeats) == ([], "", {})
    if isinstance(memory, RedisMemory):
        client = redis.Redis.from_url(memory.url)
        try:
            assert client.keys(f"{memory.prefix}:*") == [], "expired keys are gone from Redis"
        finally:
            client.close()


def test_a_fold_keeps_the_thread_alive_as_a_whole(short_lived: ShortLived) -> None:
    """A fold is a write like an append: the window left after it and the new summary live and
    expire together, never a summary whose window has already expired (or the reverse)."""
    memory, wait = short_lived.memory, short_lived.wait
    memory.append("t", [user("q1"), answer("a1"), user("q2"), answer("a2")], {"k": "v"})
    wait(0.6)
    memory.fold("t", 2, "- q1 answered a1")
    wait(0.6)  # 1.2 s after the append, 0.6 s after the fold
    state = memory.load("t", new_turn=False)
    assert (state.blocks, state.summary, state.repeats) == ([user("q2"), answer("a2")], "- q1 answered a1", {"k": "v"})


# The run lock.


def test_a_second_holder_waits_then_gets_thread_busy(memory: Memory) -> None:
    with memory.lock("t", ttl_s=10, wait_s=0):
        started = time.monotonic()
        with pytest.raises(ThreadBusy):
            with memory.lock("t", ttl_s=10, wait_s=0.3):
                pytest.fail("two holders of one thread's lock")
        waited = time.monotonic() - started
        assert 0.3 <= waited < 1.5, f"waited {waited:.2f}s for wait_s=0.3"
        with memory.lock("other-thread", ttl_s=10, wait_s=0):
            pass  # other threads are not blocked


def test_a_lock_expires_after_its_ttl(memory: Memory) -> None:
    first = memory.lock("t", ttl_s=0.3, wait_s=0)
    first.__enter__()  # a holder that never releases: a crashed process
    started = time.monotonic()
    with memory.lock("t", ttl_s=10, wait_s=3):
        waited = time.monotonic() - started
        assert 0.2 <= waited < 1.5, f"the expired lock was taken over after {waited:.2f}s"
        first.__exit__(None, None, None)  # the late first holder must not release the new one's lock
        with pytest.raises(ThreadBusy):
            with memory.lock("t", ttl_s=10, wait_s=0.1):
                pass


def test_releasing_lets_the_next_holder_in_at_once(memory: Memory) -> None:
    held = threading.Event()
    spans: list[tuple[str, float, float]] = []

    def first() -> None:
        with memory.lock("t", ttl_s=10, wait_s=0):
            begin = time.monotonic()
            held.set()
            time.sleep(0.3)
            spans.append(("first", begin, time.monotonic()))

    worker = threading.Thread(target=first)
    worker.start()
    assert held.wait(5)
    started = time.monotonic()
    with memory.lock("t", ttl_s=10, wait_s=5):
        acquired = time.monotonic()
    worker.join()
    assert spans and spans[0][2] <= acquired, "the second holder got in while the first held the lock"
    assert acquired - started < 1.0, f"took {acquired - started:.2f}s after release (ttl 10 s, wait 5 s)"
    with memory.lock("t", ttl_s=10, wait_s=0):
        pass  # released again


def test_the_lock_holds_across_processes_sharing_one_redis(redis_server: RedisServer) -> None:
    redis_server.flush()
    one, two = RedisMemory(redis_server.url), RedisMemory(redis_server.url)
    with one.lock("t", ttl_s=10, wait_s=0):
        with pytest.raises(ThreadBusy):
            with two.lock("t", ttl_s=10, wait_s=0.2):
                pass
    with two.lock("t", ttl_s=10, wait_s=0):
        with pytest.raises(ThreadBusy):
            with one.lock("t", ttl_s=10, wait_s=0):
                pass

    # Mutual exclusion under contention: an unprotected read-modify-write stays exact.
    counter = redis.Redis.from_url(redis_server.url, decode_responses=True)
    counter.set("counter", 0)
    errors: list[BaseException] = []

    def work(memory: RedisMemory) -> None:
        try:
            for _ in range(5):
                with memory.lock("shared", ttl_s=10, wait_s=10):
                    value = int(counter.get("counter") or 0)
                    time.sleep(0.005)
                    counter.set("counter", value + 1)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    workers = [threading.Thread(target=work, args=(RedisMemory(redis_server.url),)) for _ in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert errors == []
    assert int(counter.get("counter")) == 20
    counter.close()


# What the agent stores.


def investigating(body: dict[str, Any]) -> Reply:
    """A scripted model: two tools at once, then an answer; a short summary when asked."""
    if is_summary_request(body):
        return Reply(content="- earlier turns looked at checkout logs and config")
    if not tool_results(body):
        return Reply(
            calls=[
                Call("query_logs", {"service": "checkout", "level": "ERROR", "limit": 8}),
                Call("read_config", {"name": "checkout"}),
            ]
        )
    user_text = [m for m in body["messages"] if m["role"] == "user"][-1]["content"]
    return Reply(content=f"answer to {user_text}")


def test_stored_windows_keep_whole_turns_with_paired_results(memory: Memory, model_server, make_agent) -> None:
    server = model_server(investigating)
    agent = make_agent(server)
    for n in (1, 2):
        reply = agent.run(f"question {n}", thread="t")
        assert reply.stop_reason == "answered"
    blocks = stored_blocks(memory, "t")
    assert_window_shape(blocks)
    assert [b.messages[0].role for b in blocks] == ["user", "assistant", "assistant"] * 2
    assert [len(b.messages) for b in blocks] == [1, 3, 1] * 2, "each call block holds the call and both results"
    assert memory.load("t", new_turn=False).blocks == blocks
    for body in server.requests:
        assert_well_formed(body["messages"])


def test_folding_removes_whole_turns_only(memory: Memory, model_server, make_agent) -> None:
    server = model_server(investigating)
    agent = make_agent(server, memory_settings=MemorySettings(window_tokens=200, summary_tokens=60))
    for n in range(1, 5):
        assert agent.run(f"question {n}", thread="t").stop_reason == "answered"
        blocks = stored_blocks(memory, "t")
        assert_window_shape(blocks)
        if n > 1:
            # Each turn alone exceeds the window: everything but the newest turn is folded.
            assert [m.content for m in blocks[0].messages] == [f"question {n}"]
            assert len(blocks) == 3
            assert memory.load("t", new_turn=False).summary.startswith("- earlier turns")
    assert sum(is_summary_request(body) for body in server.requests) == 3
    for body in server.requests:
        if not is_summary_request(body):
            assert_well_formed(body["messages"])


def test_a_turn_cut_short_by_the_model_leaves_a_well_formed_window(memory: Memory, model_server, make_agent) -> None:
    calls = {"n": 0}

    def flaky(body: dict[str, Any]) -> Reply:
        calls["n"] += 1
        if calls["n"] == 2:  # after the first tool step of the first question
            return Reply(status=500)
        return investigating(body)

    server = model_server(flaky)
    agent = make_agent(server)
    assert agent.run("question 1", thread="t").stop_reason == "llm_unavailable"
    assert agent.run("question 2", thread="t").stop_reason == "answered"
    blocks = stored_blocks(memory, "t")
    assert_window_shape(blocks)
    # question 1 keeps its completed tool step (no answer); question 2 is whole
    assert [(b.messages[0].role, len(b.messages)) for b in blocks] == [
        ("user", 1),
        ("assistant", 3),
        ("user", 1),
        ("assistant", 3),
        ("assistant", 1),
    ]
    for body in server.requests:
        assert_well_formed(body["messages"])


# Redis itself: outages and round trips.


def redis_agent(server: ModelServer, memory: Memory, sample: Settings, **memory_settings: Any) -> Agent:
    return Agent(
        model=ModelClient(model="scripted", base_url=server.base_url, max_retries=0, timeout_s=5),
        memory=memory,
        tools=ops_tools(sample.policy),
        limits=LoopLimits(tool_retry_backoff_s=0.01),
        memory_settings=MemorySettings(**memory_settings),
    )


def test_redis_unreachable_gives_memory_unavailable_then_recovers(
    own_redis: RedisServer, model_server, sample: Settings
) -> None:
    server = model_server(investigating)
    memory = RedisMemory(own_redis.url)
    agent = redis_agent(server, memory, sample, lock_wait_s=1)
    assert agent.run("question 1", thread="t").stop_reason == "answered"  # the pool holds a live connection
    requests_before = len(server.requests)

    own_redis.stop()
    started = time.monotonic()
    reply = agent.run("question 2", thread="t")
    took = time.monotonic() - started
    assert reply.stop_reason == "memory_unavailable"
    assert "Redis" in reply.text and own_redis.url in reply.text, reply.text
    assert "ask again" in reply.text
    assert len(server.requests) == requests_before, "the model is not asked when memory is down"
    assert took < 3, f"an outage answer took {took:.1f}s"

    own_redis.start()  # the same port
    reply = agent.run("question 3", thread="t")
    assert reply.stop_reason == "answered", reply.text
    assert reply.text == "answer to question 3"
    blocks = memory.load("t", new_turn=False).blocks  # the restarted server kept nothing
    assert [b.messages[0].content for b in blocks if b.starts_turn] == ["question 3"]


@pytest.mark.usefixtures("quick_redis_retries")
def test_redis_dying_mid_run_ends_the_run_cleanly(own_redis: RedisServer, model_server, sample: Settings) -> None:
    """Redis goes away between two steps: the run ends with memory_unavailable, no exception."""

    def crash_redis() -> str:
        """Stops Redis, as an outage would."""
        own_redis.stop()
        return "stopped"

    def policy(body: dict[str, Any]) -> Reply:
        if not tool_results(body):
            return Reply(calls=[Call("crash_redis", {})])
        return Reply(content="done")

    server = model_server(policy)
    memory = RedisMemory(own_redis.url)
    agent = Agent(
        model=ModelClient(model="scripted", base_url=server.base_url, max_retries=0, timeout_s=5),
        memory=memory,
        tools=[crash_redis],
        memory_settings=MemorySettings(lock_wait_s=1),
    )
    reply = agent.run("q", thread="t")
    assert reply.stop_reason == "memory_unavailable"
    assert "Redis" in reply.text
    own_redis.start()
    again = redis_agent(model_server(investigating), memory, sample, lock_wait_s=1)
    assert again.run("q", thread="t").stop_reason == "answered", "works again once Redis is back"


@pytest.mark.usefixtures("quick_redis_retries")
def test_an_answer_found_while_redis_dies_is_still_given(own_redis: RedisServer, model_server) -> None:
    """The model has answered; only storing the answer fails: the engineer gets the answer, told
    that it may not be remembered, instead of "ask again"."""

    def policy(body: dict[str, Any]) -> Reply:
        own_redis.stop()
        return Reply(content="checkout is fine")

    server = model_server(policy)
    agent = Agent(
        model=ModelClient(model="scripted", base_url=server.base_url, max_retries=0, timeout_s=5),
        memory=RedisMemory(own_redis.url),
        tools=[],
        memory_settings=MemorySettings(lock_wait_s=1),
    )
    reply = agent.run("is checkout ok?", thread="t")
    assert reply.stop_reason == "answered"
    assert reply.text.startswith("checkout is fine") and "could not save this answer" in reply.text


def test_a_redis_refusing_writes_gives_memory_unavailable_not_an_exception(
    own_redis: RedisServer, model_server, sample: Settings
) -> None:
    """Redis reachable but refusing writes (maxmemory reached with noeviction; a read-only
    replica after a failover behaves alike): the run still ends in a reply, never an exception."""
    server = model_server(investigating)
    agent = redis_agent(server, RedisMemory(own_redis.url), sample, lock_wait_s=1)
    admin = redis.Redis.from_url(own_redis.url)
    admin.config_set("maxmemory-policy", "noeviction")
    admin.config_set("maxmemory", "1")
    try:
        reply = agent.run("question 1", thread="t")
    finally:
        admin.config_set("maxmemory", "0")
    assert reply.stop_reason == "memory_unavailable"
    assert "Redis" in reply.text
    assert agent.run("question 2", thread="t").stop_reason == "answered"
    admin.close()


class _Counting:
    """Network round trips: every packed command written to Redis (a pipeline is one)."""

    sends = 0


class CountingConnection(redis.Connection):
    def send_packed_command(self, command: Any, check_health: bool = True) -> None:
        _Counting.sends += 1
        super().send_packed_command(command, check_health)


def steps_then_answer(steps: int):
    """A scripted model making `steps` different single-call tool steps, then answering."""
    plan = [
        Call("list_services", {}),
        Call("query_logs", {"service": "checkout", "level": "ERROR", "limit": 3}),
        Call("read_config", {"name": "checkout"}),
        Call("query_logs", {"service": "payments", "level": "WARN", "limit": 3}),
        Call("read_config", {"name": "payments", "key": "db"}),
    ]

    def policy(body: dict[str, Any]) -> Reply:
        done = len(tool_results(body))
        return Reply(calls=[plan[done]]) if done < steps else Reply(content="found it")

    return policy


def test_each_step_costs_one_redis_round_trip(redis_server: RedisServer, model_server, sample: Settings) -> None:
    redis_server.flush()
    client = redis.Redis.from_url(
        redis_server.url, connection_class=CountingConnection, decode_responses=True, socket_connect_timeout=2
    )
    memory = RedisMemory(redis_server.url, client=client)
    counts: dict[int, tuple[int, int]] = {}
    for steps in (1, 4, 5):
        agent = redis_agent(model_server(steps_then_answer(steps)), memory, sample)
        agent.run("warm up: connect, load the release script", thread=f"warm{steps}")
        memory.round_trips, _Counting.sends = 0, 0
        reply = agent.run("why?", thread=f"t{steps}")
        assert reply.stop_reason == "answered" and len(reply.steps) == steps + 1, reply
        counts[steps] = (memory.round_trips, _Counting.sends)
    for steps, (trips, sends) in counts.items():
        # lock, load, user message, one per tool step, the answer, unlock
        assert trips <= steps + 5, f"{trips} round trips for {steps} tool steps"
        assert sends <= steps + 5, f"{sends} commands sent to Redis for {steps} tool steps"
    assert counts[4][0] - counts[1][0] == 3 and counts[5][0] - counts[4][0] == 1, counts
    assert counts[4][1] - counts[1][1] == 3 and counts[5][1] - counts[4][1] == 1, counts
    client.close()


def test_a_run_longer_than_the_lock_ttl_keeps_its_lock_while_it_works(model_server, make_agent, memory) -> None:
    ttl_s = 0.5
    seen = threading.Event()  # the second run has been turned away: the rest of the run may hurry
    steps_begun: list[float] = []
    third_step = threading.Event()

    def slow(n: int) -> str:
        """A slow step: each shorter than the lock's ttl, together longer."""
        steps_begun.append(time.monotonic())
        if len(steps_begun) == 3:
            third_step.set()
        seen.wait(0.3)
        return f"step {n}"

    numbers = iter(range(100))

    def policy(body: dict[str, Any]) -> Reply:
        if len(tool_results(body)) >= 4:
            return Reply(content="done")
        return Reply(calls=[Call("slow", {"n": next(numbers)})])

    settings = MemorySettings(lock_ttl_s=ttl_s, lock_wait_s=0)
    agent = make_agent(model_server(policy), tools=[slow], near_repeat_limit=50, memory_settings=settings)
    first: list[Any] = []
    worker = threading.Thread(target=lambda: first.append(agent.run("long", thread="t")))
    worker.start()
    try:
        # Two slow steps done since the run took its lock: past lock_ttl_s, only the per-step refresh keeps it.
        assert third_step.wait(10)
        assert steps_begun[2] - steps_begun[0] > ttl_s, steps_begun
        second = agent.run("meanwhile", thread="t")
    finally:
        seen.set()
        worker.join()
    assert first[0].stop_reason == "answered"
    assert second.stop_reason == "busy"


def test_reset_waits_for_a_running_turn(model_server, make_agent, memory) -> None:
    server = model_server(lambda body: Reply(content="slow answer", delay_s=0.5))
    agent = make_agent(server)
    replies: list[Any] = []
    worker = threading.Thread(target=lambda: replies.append(agent.run("question", thread="t")))
    worker.start()
    assert until(lambda: server.requests)  # the run asks the model only once it holds the thread's lock
    agent.reset("t")
    worker.join()
    assert replies[0].stop_reason == "answered"
    assert memory.load("t", new_turn=False).blocks == [], "the reset came after the run, not in its middle"


def test_an_unreadable_stored_thread_says_reset_and_reset_fixes_it(redis_server, model_server, make_agent) -> None:
    redis_server.flush()
    memory = RedisMemory(redis_server.url)
    client = redis.Redis.from_url(redis_server.url)
    client.rpush("opsbot:thread:{t}:blocks", '{"not": "a block"}')
    agent = make_agent(model_server(lambda body: Reply(content="fine")))
    agent.memory = memory
    reply = agent.run("status?", thread="t")
    assert reply.stop_reason == "memory_unavailable" and "`reset` the thread" in reply.text
    agent.reset("t")
    assert agent.run("status?", thread="t").stop_reason == "answered"
