"""The loop with models as they really answer (issue 10): calls written as text, repeated and
empty ids, thinking, answers and calls cut at the output limit, notes where they belong, a model
that repeats one call forever, answers that checked nothing. Through the real `openai` client and
HTTP against the scripted server, on both memories; every request must be one a strict server
accepts (OpenAI's pairing rules, one system message first, no two user messages in a row)."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from opsbot.bot.agent import Progress
from tests.fakes.checks import assert_well_paired
from tests.fakes.model_server import Call, Reply, has_tools, script, tool_results
from tests.test_loop import counter, lookup_tool  # noqa: F401, F811 - `counter` is a fixture


def assert_template_safe(body: dict[str, Any]) -> None:
    assert_well_paired(body)
    roles = [m["role"] for m in body["messages"]]
    assert roles.count("system") <= 1 and roles[0] == "system", roles
    plain = [r for r in roles if r in ("user", "assistant")]
    pairs = zip(plain, plain[1:], strict=False)
    assert not any(a == b == "user" for a, b in pairs), roles
    ids = [c["id"] for m in body["messages"] for c in m.get("tool_calls") or []]
    assert len(ids) == len(set(ids)) and all(ids), ids


def every_request_is_safe(server: Any) -> None:
    for body in server.requests:
        assert_template_safe(body)


TEXT_CALL = json.dumps({"name": "query_logs", "arguments": {"service": "checkout", "level": "ERROR"}})


def test_a_call_written_as_json_text_runs_like_a_native_one(model_server, make_agent) -> None:
    server = model_server(
        lambda body: Reply(content="checkout's pool is exhausted") if tool_results(body) else Reply(content=TEXT_CALL)
    )
    reply = make_agent(server).run("why 502?", thread="t")
    assert reply.text == "checkout's pool is exhausted" and reply.stop_reason == "answered"
    (step, _) = reply.steps
    assert [(c.tool, c.status) for c in step.calls] == [("query_logs", "ok")]
    assert tool_results(server.requests[1])[0]["data"]["service"] == "checkout"
    assert TEXT_CALL not in reply.text
    every_request_is_safe(server)


def test_a_text_call_meets_the_same_validation_and_approval_as_a_native_one(model_server, make_agent) -> None:
    calls = iter(
        [
            '<tool_call>{"name": "query_logs", "arguments": {"service": "nope"}}</tool_call>',
            '[TOOL_CALLS][{"name": "no_such_tool", "arguments": {}}]',
            '{"name": "run_command", "arguments": {"command": "restart", "params": {"service": "checkout"}}}',
        ]
    )
    server = model_server(lambda body: Reply(content=next(calls, "done")) if has_tools(body) else Reply(content="ok"))
    reply = make_agent(server).run("fix it", thread="t")
    statuses = [c.status for s in reply.steps for c in s.calls]
    assert statuses == ["not_found", "unknown_tool", "needs_approval"]
    assert reply.stop_reason == "needs_approval" and reply.approvals
    every_request_is_safe(server)


def test_prose_that_quotes_json_stays_the_answer(model_server, make_agent) -> None:
    answer = f"I would run {TEXT_CALL} next."
    reply = make_agent(model_server(script(Reply(content=answer)))).run("what next?", thread="t")
    assert reply.text == answer and reply.steps[0].calls == []


def test_repeated_and_empty_ids_are_made_unique_in_every_request(model_server, make_agent) -> None:
    def policy(body: dict[str, Any]) -> Reply:
        done = len(tool_results(body))
        if done >= 4:
            return Reply(content="done")
        # Two calls per message, both `call_0` (or empty), in every message, as some servers number them.
        name = "call_0" if done < 2 else ""
        return Reply(calls=[Call("query_logs", {"service": s}, id=name) for s in ("checkout", f"auth{done}")])

    server = model_server(policy)
    agent = make_agent(server, near_repeat_limit=50)
    assert agent.run("look", thread="t").text == "done"
    assert agent.run("again", thread="t").text == "done"
    every_request_is_safe(server)


def test_thinking_never_reaches_the_answer_or_memory(model_server, make_agent, memory, caplog) -> None:
    caplog.set_level(logging.INFO, logger="opsbot.steps")
    server = model_server(
        script(Reply(content="<think>I must not say this</think>The pool is exhausted.", reasoning="weighing options"))
    )
    reply = make_agent(server).run("why?", thread="t")
    assert reply.text == "The pool is exhausted."
    stored = json.dumps([b.model_dump() for b in memory.load("t", new_turn=False).blocks])
    assert "must not say" not in stored and "weighing" not in stored
    steps = [json.loads(r.getMessage()) for r in caplog.records if '"event": "step"' in r.getMessage()]
    assert "I must not say this" in steps[-1]["reasoning"] and "weighing options" in steps[-1]["reasoning"]


def test_a_call_cut_at_the_output_limit_is_not_run(model_server, make_agent, counter) -> None:  # noqa: F811
    def policy(body: dict[str, Any]) -> Reply:
        if tool_results(body):
            return Reply(content="asked again with less")
        return Reply(calls=[Call("lookup", '{"key": "trunc')], finish_reason="length")

    server = model_server(policy)
    reply = make_agent(server, tools=[lookup_tool(counter)]).run("go", thread="t")
    assert counter.runs == []
    result = tool_results(server.requests[1])[0]
    assert result["error"]["type"] == "invalid_args" and "cut off at the output limit" in result["error"]["message"]
    assert reply.text == "asked again with less"


def test_an_answer_cut_at_the_output_limit_is_continued_once(model_server, make_agent) -> None:
    server = model_server(
        script(Reply(content="The pool", finish_reason="length"), Reply(content=" is exhausted.", finish_reason="stop"))
    )
    reply = make_agent(server).run("why?", thread="t")
    assert reply.text == "The pool is exhausted." and reply.stop_reason == "answered"
    continued = server.requests[1]["messages"]
    assert continued[-2] == {"role": "assistant", "content": "The pool"} and "Continue" in continued[-1]["content"]
    every_request_is_safe(server)


def test_an_answer_still_cut_says_so(model_server, make_agent) -> None:
    server = model_server(
        script(Reply(content="The pool", finish_reason="length"), Reply(content=" is", finish_reason="length"))
    )
    reply = make_agent(server).run("why?", thread="t")
    assert reply.text.startswith("The pool is") and "cut off at the model's output limit" in reply.text
    assert len(server.requests) == 2


def test_a_nudge_is_sent_where_it_was_issued_and_not_again_at_the_end(model_server, make_agent, counter) -> None:  # noqa: F811
    keys = iter(f"k{i}" for i in range(8))

    def policy(body: dict[str, Any]) -> Reply:
        if len(tool_results(body)) >= 6:
            return Reply(content="done")
        return Reply(calls=[Call("lookup", {"key": next(keys)})])

    server = model_server(policy)
    make_agent(server, tools=[lookup_tool(counter)], near_repeat_limit=3, max_steps=10).run("go", thread="t")
    nudged = [
        i
        for i, body in enumerate(server.requests)
        if any("seem to be circling" in (m.get("content") or "") for m in body["messages"])
    ]
    assert nudged, "the circling model was nudged"
    for body in server.requests[nudged[0] + 1 :]:
        last = body["messages"][-1].get("content") or ""
        assert "seem to be circling" not in last, "the nudge is not re-sent at the end"
    every_request_is_safe(server)


def test_a_model_repeating_one_call_is_stopped_in_four_calls_with_what_it_found(model_server, make_agent) -> None:
    server = model_server(lambda body: Reply(calls=[Call("query_logs", {"service": "payments", "level": "ERROR"})]))
    reply = make_agent(server).run("why?", thread="t")
    assert len(server.requests) <= 4
    assert reply.stop_reason == "repeated_call"
    assert "kept repeating a call" in reply.text and "replied with nothing" not in reply.text
    assert 'query_logs(service="payments", level="ERROR")' in reply.text and "matching line" in reply.text
    every_request_is_safe(server)


@pytest.mark.parametrize("with_tool_call, checked", [(False, False), (True, True)])
def test_an_answer_that_ran_no_tool_is_marked_unchecked(model_server, make_agent, with_tool_call, checked) -> None:
    first = Reply(calls=[Call("list_services", {})]) if with_tool_call else Reply(content="it is DNS")
    server = model_server(script(first, Reply(content="it is DNS")))
    assert make_agent(server).run("why?", thread="t").checked is checked


def test_without_tools_on_offer_an_answer_is_not_marked(model_server, make_agent) -> None:
    server = model_server(script(Reply(content="hello")))
    assert make_agent(server, tools=[]).run("hi", thread="t").checked is True


class Lines(Progress):
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.resets = 0

    def on_answer_text(self, step: int, text: str) -> None:
        self.lines.append(text)

    def on_answer_reset(self, step: int) -> None:
        self.resets += 1


def test_the_answer_streams_as_whole_redacted_lines(model_server, make_agent) -> None:
    token = "ghp_" + "KRidQZhUsBZc3QaMhf5b27qL37t0kqgC3SVT"
    answer = f"The pool is exhausted.\nIt leaked token={token} in a log.\nRestart payments."
    seen = Lines()
    reply = make_agent(model_server(script(Reply(content=answer)))).run("why?", thread="t", progress=seen)
    assert "".join(seen.lines) == reply.text and len(seen.lines) == 3
    assert token not in "".join(seen.lines)
    assert reply.usage.first_token_ms is not None and reply.steps[-1].first_token_ms is not None


def test_calls_and_thinking_are_never_streamed(model_server, make_agent) -> None:
    seen = Lines()
    server = model_server(
        lambda body: Reply(content="<think>plan</think>Found it.") if tool_results(body) else Reply(content=TEXT_CALL)
    )
    reply = make_agent(server).run("why?", thread="t", progress=seen)
    assert reply.text == "Found it." and "".join(seen.lines) == "Found it."


def test_thinking_without_its_opening_tag_is_taken_back(model_server, make_agent) -> None:
    seen = Lines()
    server = model_server(script(Reply(content="first I check the logs\nthen</think>\nThe answer.")))
    reply = make_agent(server).run("why?", thread="t", progress=seen)
    assert reply.text == "The answer." and seen.resets == 1 and seen.lines[-1] == "The answer."
