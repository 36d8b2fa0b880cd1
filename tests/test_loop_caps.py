"""Caps on tool calls: per model message (`max_calls_per_step`) and per run (`max_calls_per_run`).

Through the real openai client over HTTP against the scripted server, on both memories.
"""

from __future__ import annotations

import itertools
import json
import logging
import threading
import uuid
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from opsbot.config.check import ConfigError
from opsbot.config.settings import LoopLimits, Settings
from tests.fakes.checks import assert_well_paired
from tests.fakes.model_server import Call, Policy, Reply, has_tools, script


class Lookups:
    """A `lookup` tool that counts how often it really ran, and with what."""

    def __init__(self) -> None:
        self.keys: list[str] = []
        self.lock = threading.Lock()

    def tool(self) -> Callable[[str], str]:
        def lookup(key: str) -> str:
            """Look a key up."""
            with self.lock:
                self.keys.append(key)
            return f"value of {key}"

        return lookup


@pytest.fixture
def lookups() -> Lookups:
    return Lookups()


def lookup(key: str, call_id: str) -> Call:
    return Call("lookup", {"key": key}, id=call_id)


def tool_messages(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """This request's tool results by tool_call_id; each id must be answered exactly once."""
    messages = [m for m in body["messages"] if m["role"] == "tool"]
    ids = Counter(m["tool_call_id"] for m in messages)
    assert all(n == 1 for n in ids.values()), f"answered more than once: {[i for i, n in ids.items() if n > 1]}"
    return {m["tool_call_id"]: json.loads(m["content"]) for m in messages}


def answer_when_tools_are_gone(calls_per_step: list[list[Call]], answer: str) -> Policy:
    """Sends each planned message of calls while tools are offered; answers once they are not
    (or the plan is spent)."""
    plan = list(calls_per_step)

    def policy(body: dict[str, Any]) -> Reply:
        if not has_tools(body) or not plan:
            return Reply(content=answer)
        return Reply(calls=plan.pop(0))

    return policy


# ------------------------------------------------------------------ per message


def test_248_distinct_calls_in_one_message_run_only_the_first_eight(model_server, make_agent, lookups, caplog):
    calls = [lookup(f"k{i:03}", f"id-{i:03}") for i in range(248)]
    server = model_server(script(Reply(calls=calls), Reply(content="k000 to k007 looked up; the rest were refused")))
    with caplog.at_level(logging.INFO, logger="opsbot.steps"):
        reply = make_agent(server, tools=[lookups.tool()]).run("look everything up", thread="t")

    assert sorted(lookups.keys) == [f"k{i:03}" for i in range(8)], "the first eight, in the order sent"
    second = server.requests[1]
    assert_well_paired(second)
    results = tool_messages(second)
    assert list(results) == [c.id for c in calls], "every tool_call_id answered, in order"
    assert [results[f"id-{i:03}"]["data"] for i in range(8)] == [f"value of k{i:03}" for i in range(8)]
    for refused in [results[f"id-{i:03}"] for i in range(8, 248)]:
        error = refused["error"]
        assert error["type"] == "invalid_args"
        assert "asked for 248 different tool calls" in error["message"]
        assert "at most 8 run per message" in error["message"] and "not run" in error["message"]
        assert "fewer" in error["hint"] and "answer from the results you have" in error["hint"]

    assert reply.stop_reason == "answered" and reply.text == "k000 to k007 looked up; the rest were refused"
    statuses = Counter(c.status for c in reply.steps[0].calls)
    assert statuses == {"ok": 8, "invalid_args": 240}
    assert reply.steps[0].note == "240 call(s) not run: over max_calls_per_step (8)"
    logged = [json.loads(r.getMessage()) for r in caplog.records if r.name == "opsbot.steps"]
    [step_log] = [r for r in logged if r["event"] == "step" and r["step"] == 1]
    assert Counter(c["status"] for c in step_log["calls"]) == {"ok": 8, "invalid_args": 240}
    assert "at most 8 run per message" in step_log["calls"][-1]["error"]
    assert step_log["note"] == reply.steps[0].note


def test_identical_calls_in_one_message_count_once(model_server, make_agent, lookups):
    calls = [
        Call("lookup", {"key": "a"}, id="1"),
        Call("lookup", '{"key":"a"}', id="2"),
        Call("lookup", {"key": "b"}, id="3"),
        Call("lookup", {"key": "b"}, id="4"),
        Call("lookup", {"key": "c"}, id="5"),
        Call("lookup", {"key": "d"}, id="6"),
        Call("lookup", {"key": "d"}, id="7"),
    ]
    server = model_server(script(Reply(calls=calls), Reply(content="done")))
    reply = make_agent(server, tools=[lookups.tool()], max_calls_per_step=3).run("go", thread="t")

    assert sorted(lookups.keys) == ["a", "b", "c"], "four different calls, three run"
    results = tool_messages(server.requests[1])
    assert [results[i].get("data") for i in "12345"] == ["value of a"] * 2 + ["value of b"] * 2 + ["value of c"]
    for i in "67":
        assert results[i]["error"]["type"] == "invalid_args"
        assert "asked for 4 different tool calls" in results[i]["error"]["message"]
    assert_well_paired(server.requests[1])
    assert [c.status for c in reply.steps[0].calls] == ["ok"] * 5 + ["invalid_args"] * 2
    assert reply.steps[0].note == "2 call(s) not run: over max_calls_per_step (3)"


def test_repeats_answered_by_the_guard_do_not_count(model_server, make_agent, lookups):
    plan = [
        [lookup("a", "1")],
        [lookup("a", "2"), lookup("b", "3"), lookup("c", "4")],
    ]
    server = model_server(answer_when_tools_are_gone(plan, "a, b and c"))
    reply = make_agent(server, tools=[lookups.tool()], max_calls_per_step=2).run("go", thread="t")

    assert sorted(lookups.keys) == ["a", "b", "c"]
    assert [c.status for c in reply.steps[1].calls] == ["repeated_call", "ok", "ok"]
    assert reply.steps[1].note is None
    assert reply.stop_reason == "answered"


def test_a_refused_call_is_not_remembered_as_run_and_sent_again_meets_the_caps(model_server, make_agent, lookups):
    plan = [
        [lookup("a", "1"), lookup("b", "2"), lookup("c", "3")],
        # c was refused, not run: it is no repeat. a and b are, and do not count.
        [lookup("a", "4"), lookup("b", "5"), lookup("c", "6"), lookup("d", "7")],
    ]
    server = model_server(answer_when_tools_are_gone(plan, "a, b and c; d was refused"))
    agent = make_agent(server, tools=[lookups.tool()], max_calls_per_step=2, max_calls_per_run=3)
    reply = agent.run("go", thread="t")

    assert sorted(lookups.keys) == ["a", "b", "c"], "c ran once, when there was room; d never"
    first, second = tool_messages(server.requests[1]), tool_messages(server.requests[2])
    assert "at most 2 run per message" in first["3"]["error"]["message"]
    assert second["6"]["data"] == "value of c", "the refused call got its real result, not repeated_call"
    assert second["7"]["error"]["type"] == "invalid_args"
    assert "this run already ran its limit of 3 tool calls" in second["7"]["error"]["message"]
    assert [c.status for c in reply.steps[1].calls] == ["repeated_call", "repeated_call", "ok", "invalid_args"]
    assert reply.steps[1].note == (
        "1 call(s) not run: over max_calls_per_run (3); max_calls_per_run (3) reached: tools withdrawn"
    )
    assert reply.stop_reason == "max_calls" and reply.text == "a, b and c; d was refused"


# ------------------------------------------------------------------ per run


def test_the_run_cap_withdraws_tools_across_steps_and_the_model_answers(model_server, make_agent, lookups):
    keys = (f"k{i}" for i in itertools.count())
    plan = [[lookup(next(keys), f"s{step}-{n}") for n in range(2)] for step in range(10)]
    server = model_server(answer_when_tools_are_gone(plan, "five lookups: enough to say k0 is fine"))
    agent = make_agent(server, tools=[lookups.tool()], max_calls_per_step=2, max_calls_per_run=5, near_repeat_limit=50)
    reply = agent.run("go", thread="t")

    assert sorted(lookups.keys) == ["k0", "k1", "k2", "k3", "k4"]
    assert [has_tools(b) for b in server.requests] == [True, True, True, False]
    third = tool_messages(server.requests[3])
    assert third["s2-0"]["data"] == "value of k4"
    assert "this run already ran its limit of 5 tool calls" in third["s2-1"]["error"]["message"]
    final = server.requests[3]["messages"][-1]["content"]
    assert "You have run the 5 tool calls allowed for this question" in final and "Answer now" in final
    for body in server.requests:
        assert_well_paired(body)
    assert reply.stop_reason == "max_calls"
    assert reply.text == "five lookups: enough to say k0 is fine"
    assert reply.steps[2].note == (
        "1 call(s) not run: over max_calls_per_run (5); max_calls_per_run (5) reached: tools withdrawn"
    )
    assert [c.status for c in reply.steps[2].calls] == ["ok", "invalid_args"]


def test_default_caps_allow_8_calls_a_message_and_24_a_run(model_server, make_agent, lookups):
    assert (LoopLimits().max_calls_per_step, LoopLimits().max_calls_per_run) == (8, 24)
    keys = (f"k{i}" for i in itertools.count())
    plan = [[lookup(next(keys), f"s{step}-{n}") for n in range(9)] for step in range(10)]
    server = model_server(answer_when_tools_are_gone(plan, "24 lookups done"))
    reply = make_agent(server, tools=[lookups.tool()], near_repeat_limit=50).run("go", thread="t")

    assert len(lookups.keys) == 24 and len(set(lookups.keys)) == 24
    assert [has_tools(b) for b in server.requests] == [True, True, True, False]
    assert [s.note for s in reply.steps[:2]] == ["1 call(s) not run: over max_calls_per_step (8)"] * 2
    assert reply.steps[2].note == (
        "1 call(s) not run: over max_calls_per_step (8); max_calls_per_run (24) reached: tools withdrawn"
    )
    assert reply.stop_reason == "max_calls" and reply.text == "24 lookups done"


def test_a_new_question_gets_a_fresh_run_budget(model_server, make_agent, lookups):
    keys = (f"k{i}" for i in itertools.count())

    def policy(body: dict[str, Any]) -> Reply:
        if not has_tools(body):
            return Reply(content="out of calls")
        return Reply(calls=[lookup(next(keys), uuid.uuid4().hex)])

    server = model_server(policy)
    agent = make_agent(server, tools=[lookups.tool()], max_calls_per_run=2, near_repeat_limit=50)
    assert agent.run("first", thread="t").stop_reason == "max_calls"
    assert agent.run("second", thread="t").stop_reason == "max_calls"
    assert len(lookups.keys) == 4
    assert_well_paired(server.requests[-1])


def test_a_failure_after_many_refused_calls_says_what_ran_in_one_line(model_server, make_agent, lookups):
    calls = [lookup(f"k{i}", f"id-{i}") for i in range(248)]
    server = model_server(script(Reply(calls=calls), Reply(status=503)))
    reply = make_agent(server, tools=[lookups.tool()]).run("go", thread="t")

    assert reply.stop_reason == "llm_unavailable"
    assert "lookup -> ok (8x); lookup -> invalid_args (240x)" in reply.text
    assert len(reply.text) < 600


# ------------------------------------------------------------------ settings


@pytest.mark.parametrize(
    "values",
    [
        {"max_calls_per_step": 0},
        {"max_calls_per_step": 65},
        {"max_calls_per_run": 0},
        {"max_calls_per_run": 501},
    ],
)
def test_caps_out_of_range_are_refused(values):
    with pytest.raises(ValidationError) as caught:
        LoopLimits(**values)
    assert next(iter(values)) in str(caught.value)


def test_caps_come_from_the_yaml_file_and_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    path = tmp_path / "opsbot.yaml"
    path.write_text("loop:\n  max_calls_per_step: 3\n  max_calls_per_run: 10\n")
    monkeypatch.setenv("OPSBOT_LOOP__MAX_CALLS_PER_RUN", "12")
    loop = Settings.load(path).loop
    assert (loop.max_calls_per_step, loop.max_calls_per_run) == (3, 12)


def test_a_zero_cap_in_the_yaml_file_names_its_line(tmp_path: Path):
    path = tmp_path / "opsbot.yaml"
    path.write_text("loop:\n  max_steps: 8\n  max_calls_per_step: 0\n")
    with pytest.raises(ConfigError) as caught:
        Settings.load(path)
    assert f"{path}:3" in str(caught.value)


# ------------------------------------------------------------------ property

keys_in_a_message = st.lists(st.integers(0, 12), max_size=30)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    messages=st.lists(keys_in_a_message, min_size=1, max_size=3),
    per_step=st.integers(1, 8),
    per_run=st.integers(1, 20),
)
def test_any_calls_are_each_answered_once_and_run_within_both_caps(
    model_server, make_agent, messages, per_step, per_run
):
    """Whatever the model sends: every tool_call_id is answered exactly once, no call runs twice,
    and each message runs exactly the first distinct new calls that fit both caps."""
    lookups = Lookups()
    plan = [[lookup(f"k{key}", f"m{m}-{i}") for i, key in enumerate(keys)] for m, keys in enumerate(messages)]
    runs_before_request: list[int] = []

    def policy(body: dict[str, Any]) -> Reply:
        runs_before_request.append(len(lookups.keys))
        if not has_tools(body) or not plan:
            return Reply(content="done")
        calls = plan.pop(0)
        return Reply(calls=calls) if calls else Reply(content="done")

    server = model_server(policy)
    agent = make_agent(
        server,
        tools=[lookups.tool()],
        max_calls_per_step=per_step,
        max_calls_per_run=per_run,
        repeat_warnings=100,
        near_repeat_limit=50,
    )
    reply = agent.run("go", thread=f"prop:{uuid.uuid4().hex}")

    assert reply.text.strip()
    assert len(lookups.keys) == len(set(lookups.keys)), "no call ran twice"
    expected, ran = _expected_runs(messages, per_step, per_run)
    assert ran == len(lookups.keys) <= per_run
    for n, (body, keys) in enumerate(zip(server.requests[1:], expected, strict=False)):
        assert_well_paired(body)
        sent = [c for step in reply.steps[: n + 1] for c in step.calls]
        assert list(tool_messages(body)) == [c.id for c in sent], "every id answered exactly once, in order"
        ran_in_step = set(lookups.keys[runs_before_request[n] : runs_before_request[n + 1]])
        assert ran_in_step == keys and len(ran_in_step) <= per_step
        refused = [c for c in reply.steps[n].calls if c.status == "invalid_args"]
        assert all("not run" in (c.error or "") for c in refused)
    if ran == per_run:
        assert reply.stop_reason == "max_calls" and not has_tools(server.requests[-1])


def _expected_runs(messages: list[list[int]], per_step: int, per_run: int) -> tuple[list[set[str]], int]:
    """The rule, stated plainly: per message, the first distinct calls not run before, as many as
    fit both caps; the messages after the run cap is reached (or after an empty one) are never sent."""
    done: list[str] = []
    per_message: list[set[str]] = []
    for keys in messages:
        if not keys or len(done) == per_run:
            break
        new = [f"k{k}" for k in dict.fromkeys(keys) if f"k{k}" not in done]
        admitted = new[: min(per_step, per_run - len(done))]
        done += admitted
        per_message.append(set(admitted))
    return per_message, len(done)
