"""Every row of the loop's behaviour table, through the real openai client and both memories."""

from __future__ import annotations

import json
import logging
import threading
import time

import pytest

from opsbot.config.settings import MemorySettings
from opsbot.tools.base import ErrorType, ToolResult
from tests.fakes.checks import assert_well_paired
from tests.fakes.model_server import Call, Reply, has_tools, script, tool_results
from tests.fakes.waiting import until


class Counter:
    """Plain functions registered as tools, counting how often they really ran."""

    def __init__(self) -> None:
        self.runs: list[dict] = []
        self.lock = threading.Lock()

    def note(self, **kwargs: object) -> None:
        with self.lock:
            self.runs.append(kwargs)


@pytest.fixture
def counter() -> Counter:
    return Counter()


def lookup_tool(counter: Counter):
    def lookup(key: str, page: int = 1) -> str:
        """Look a key up."""
        counter.note(key=key, page=page)
        return f"value of {key} page {page}"

    return lookup


def test_answer_without_tool_calls(model_server, make_agent):
    server = model_server(script(Reply(content="All quiet: no errors in the last hour.")))
    reply = make_agent(server).run("anything wrong?", thread="t")
    assert reply.stop_reason == "answered"
    assert reply.text == "All quiet: no errors in the last hour."
    assert reply.usage.model_calls == 1 and reply.usage.prompt_tokens > 0
    assert server.requests[0]["tools"], "tools are offered on a normal step"


def test_unknown_tool_is_fed_back_with_the_real_tools(model_server, make_agent):
    server = model_server(script(Reply(calls=[Call("grep_logs", {"q": "x"})]), Reply(content="ok")))
    reply = make_agent(server).run("grep it", thread="t")
    assert reply.stop_reason == "answered"
    result = tool_results(server.requests[1])[0]
    assert result["error"]["type"] == "unknown_tool"
    assert "query_logs" in result["error"]["hint"] and "list_services" in result["error"]["hint"]
    assert reply.steps[0].calls[0].status == "unknown_tool"


@pytest.mark.parametrize(
    "raw",
    ['{"key": "a", "page": ', '{"key": "a"', "not json at all", '["a"]', '"a"'],
)
def test_invalid_json_arguments_get_a_parse_error_never_empty_args(model_server, make_agent, counter, raw):
    server = model_server(script(Reply(calls=[Call("lookup", raw)]), Reply(content="ok")))
    reply = make_agent(server, tools=[lookup_tool(counter)]).run("look", thread="t")
    assert reply.stop_reason == "answered"
    error = tool_results(server.requests[1])[0]["error"]
    assert error["type"] == "invalid_args"
    assert "JSON" in error["message"]
    assert counter.runs == [], "the tool must not run with guessed arguments"


def test_schema_failures_are_reported_per_field(model_server, make_agent, counter):
    server = model_server(script(Reply(calls=[Call("lookup", {"page": "many", "extra": 1})]), Reply(content="ok")))
    reply = make_agent(server, tools=[lookup_tool(counter)]).run("look", thread="t")
    message = tool_results(server.requests[1])[0]["error"]["message"]
    assert "key: Field required" in message
    assert "page:" in message and "extra:" in message
    assert counter.runs == []
    assert reply.stop_reason == "answered"


def test_a_raising_tool_becomes_a_structured_error(model_server, make_agent):
    def explode(service: str) -> str:
        """Always fails."""
        raise KeyError(service)

    server = model_server(script(Reply(calls=[Call("explode", {"service": "auth"})]), Reply(content="it failed")))
    reply = make_agent(server, tools=[explode]).run("go", thread="t")
    error = tool_results(server.requests[1])[0]["error"]
    assert error["type"] == "failed" and "KeyError" in error["message"] and error["hint"]
    assert reply.stop_reason == "answered" and reply.text == "it failed"


@pytest.mark.parametrize("exc_type, error_type", [(ConnectionError, "unavailable"), (TimeoutError, "timeout")])
def test_transient_tool_failures_are_retried_with_backoff_then_reported(model_server, make_agent, exc_type, error_type):
    attempts: list[float] = []

    def flaky() -> str:
        """Never reaches its backend."""
        attempts.append(time.monotonic())
        raise exc_type("backend down")

    server = model_server(script(Reply(calls=[Call("flaky", {})]), Reply(content="backend is down")))
    agent = make_agent(server, tools=[flaky], tool_retry_backoff_s=0.05)
    waits: list[float] = []
    agent.executor.sleep = waits.append  # the waits asked for, not the machine's timing of them
    reply = agent.run("go", thread="t")
    assert len(attempts) == 3, "default: two retries"
    assert len(waits) == 2 and 0.04 <= waits[0] <= 0.06 and 0.08 <= waits[1] <= 0.12, f"backoff doubles: {waits}"
    assert tool_results(server.requests[1])[0]["error"]["type"] == error_type
    assert reply.steps[0].calls[0].attempts == 3


def test_a_hung_tool_times_out_and_is_retried(model_server, make_agent):
    calls: list[int] = []
    release = threading.Event()

    def hang() -> str:
        """Hangs."""
        calls.append(1)
        release.wait(10)  # until the test is over
        return "late"

    server = model_server(script(Reply(calls=[Call("hang", {})]), Reply(content="timed out")))
    started = time.monotonic()
    try:
        reply = make_agent(server, tools=[hang], tool_timeout_s=0.2, tool_retries=1).run("go", thread="t")
    finally:
        release.set()
    assert time.monotonic() - started < 1.5
    assert len(calls) == 2
    assert tool_results(server.requests[1])[0]["error"]["type"] == "timeout"
    assert reply.stop_reason == "answered"


def test_a_business_error_is_not_retried(model_server, make_agent):
    server = model_server(script(Reply(calls=[Call("query_logs", {"service": "nope"})]), Reply(content="no such")))
    reply = make_agent(server).run("logs of nope", thread="t")
    error = tool_results(server.requests[1])[0]["error"]
    assert error["type"] == "not_found" and "checkout" in error["hint"]
    assert reply.steps[0].calls[0].attempts == 1


def test_identical_repeat_gets_the_earlier_result_then_the_loop_stops(model_server, make_agent, counter):
    same = Reply(calls=[Call("lookup", {"key": "db", "page": 1})])

    def policy(body):
        return same if has_tools(body) else Reply(content="db has value of db page 1")

    server = model_server(policy)
    reply = make_agent(server, tools=[lookup_tool(counter)]).run("look up db", thread="t")
    assert len(counter.runs) == 1, "the tool ran once; repeats were answered from memory"
    second = tool_results(server.requests[2])
    assert second[-1]["error"]["type"] == "repeated_call"
    assert "value of db page 1" in second[-1]["data"]["earlier_result"]
    assert reply.stop_reason == "repeated_call"
    assert reply.text == "db has value of db page 1"
    assert not has_tools(server.requests[-1]), "the final request withdraws tools"
    assert len(server.requests) == 4


def test_argument_order_does_not_hide_a_repeat(model_server, make_agent, counter):
    server = model_server(
        script(
            Reply(calls=[Call("lookup", '{"key": "db", "page": 2}')]),
            Reply(calls=[Call("lookup", '{"page":2,"key":"db"}')]),
            Reply(content="ok"),
        )
    )
    make_agent(server, tools=[lookup_tool(counter)]).run("look", thread="t")
    assert len(counter.runs) == 1
    assert tool_results(server.requests[2])[-1]["error"]["type"] == "repeated_call"


def test_a_call_repeated_after_an_error_is_a_retry(model_server, make_agent):
    outcomes = iter([ToolResult.failure(ErrorType.failed, "disk busy"), ToolResult.success("42% used")])
    runs: list[int] = []

    def disk() -> ToolResult:
        """Disk usage."""
        runs.append(1)
        return next(outcomes)

    server = model_server(
        script(Reply(calls=[Call("disk", {})]), Reply(calls=[Call("disk", {})]), Reply(content="42%"))
    )
    reply = make_agent(server, tools=[disk]).run("disk?", thread="t")
    assert len(runs) == 2
    assert tool_results(server.requests[2])[-1]["data"] == "42% used"
    assert reply.stop_reason == "answered"


def test_repeat_counters_start_afresh_with_each_user_message(model_server, make_agent, counter):
    def policy(body):
        if tool_results(body):
            return Reply(content="done")
        return Reply(calls=[Call("lookup", {"key": "db"})])

    server = model_server(policy)
    agent = make_agent(server, tools=[lookup_tool(counter)])
    agent.run("look", thread="t")
    agent.run("and now?", thread="t")
    assert len(counter.runs) == 2, "a new question may run the same query again"


def test_varying_one_argument_forever_is_nudged_then_tools_are_withdrawn(model_server, make_agent, counter):
    pages = iter(range(1, 100))

    def policy(body):
        if not has_tools(body):
            return Reply(content="the key has many pages; stopping")
        return Reply(calls=[Call("lookup", {"key": "db", "page": next(pages)})])

    server = model_server(policy)
    reply = make_agent(server, tools=[lookup_tool(counter)], max_steps=20).run("look", thread="t")
    assert reply.stop_reason == "loop_detected"
    nudges = [m for m in server.requests[-2]["messages"] if "circling" in (m.get("content") or "")]
    assert nudges, "the model was told it was circling before tools were withdrawn"
    assert len(counter.runs) == 5
    assert not has_tools(server.requests[-1])
    assert reply.text == "the key has many pages; stopping"


def test_alternating_between_two_failing_calls_is_detected(model_server, make_agent):
    def broken(which: str) -> ToolResult:
        """Always fails, so repeats are retries."""
        return ToolResult.failure(ErrorType.failed, f"{which} broke")

    flip = iter(["a", "b"] * 20)

    def policy(body):
        if not has_tools(body):
            return Reply(content="both sources are failing")
        return Reply(calls=[Call("broken", {"which": next(flip)})])

    server = model_server(policy)
    reply = make_agent(server, tools=[broken], max_steps=20, near_repeat_limit=10).run("go", thread="t")
    assert reply.stop_reason == "loop_detected"
    assert len(server.requests) == 6, "A B A B (nudge) A (withdraw) -> final answer"
    assert reply.text == "both sources are failing"


def test_max_steps_withdraws_tools_on_the_last_step(model_server, make_agent, counter):
    keys = iter(f"k{i}" for i in range(100))

    def policy(body):
        if not has_tools(body):
            return Reply(content=f"summary of {len(tool_results(body))} lookups")
        return Reply(calls=[Call("lookup", {"key": next(keys)})])

    server = model_server(policy)
    reply = make_agent(server, tools=[lookup_tool(counter)], max_steps=5, near_repeat_limit=50).run("go", thread="t")
    assert reply.stop_reason == "max_steps"
    assert len(server.requests) == 5
    assert [has_tools(b) for b in server.requests] == [True, True, True, True, False]
    assert reply.text == "summary of 4 lookups"
    assert "last of your 5 steps" in server.requests[-1]["messages"][-1]["content"]


def test_default_max_steps_is_eight(model_server, make_agent, counter):
    keys = iter(f"k{i}" for i in range(100))

    def policy(body):
        return Reply(content="enough") if not has_tools(body) else Reply(calls=[Call("lookup", {"key": next(keys)})])

    server = model_server(policy)
    reply = make_agent(server, tools=[lookup_tool(counter)], near_repeat_limit=50).run("go", thread="t")
    assert reply.stop_reason == "max_steps" and len(server.requests) == 8


def test_an_empty_reply_is_nudged_once(model_server, make_agent):
    server = model_server(script(Reply(content=""), Reply(content="checkout is fine")))
    reply = make_agent(server).run("status?", thread="t")
    assert reply.stop_reason == "answered" and reply.text == "checkout is fine"
    assert "empty" in server.requests[1]["messages"][-1]["content"]


def test_empty_twice_gives_a_clear_fallback(model_server, make_agent):
    server = model_server(script(Reply(calls=[Call("query_logs", {"service": "auth"})]), Reply(content="")))
    reply = make_agent(server).run("status?", thread="t")
    assert reply.stop_reason == "no_answer"
    assert "replied with nothing, twice" in reply.text and "query_logs -> ok" in reply.text
    assert 'What the tools found:\nquery_logs(service="auth")' in reply.text, "what was found is given"
    assert len(server.requests) == 3


def test_several_tool_calls_run_concurrently_and_pair_by_id_in_order(model_server, make_agent):
    def slow(name: str) -> str:
        """Takes a while."""
        time.sleep(0.4)
        return f"result {name}"

    calls = [Call("slow", {"name": n}, id=f"id-{n}") for n in ("c", "a", "b")]
    server = model_server(script(Reply(calls=calls), Reply(content="three results")))
    started = time.monotonic()
    reply = make_agent(server, tools=[slow]).run("go", thread="t")
    assert time.monotonic() - started < 1.0, "three 0.4 s calls ran concurrently"
    tool_messages = [m for m in server.requests[1]["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_messages] == ["id-c", "id-a", "id-b"]
    assert [json.loads(m["content"])["data"] for m in tool_messages] == ["result c", "result a", "result b"]
    assert all(c.duration_ms >= 350 for c in reply.steps[0].calls), "each call's own duration is reported"
    assert_well_paired(server.requests[1])
    assert reply.stop_reason == "answered"


def test_model_429_is_retried_honouring_retry_after(model_server, make_agent):
    server = model_server(script(Reply(status=429, headers={"Retry-After": "1"}), Reply(content="fine")))
    started = time.monotonic()
    reply = make_agent(server, max_retries=2).run("status?", thread="t")
    assert reply.stop_reason == "answered" and len(server.requests) == 2
    assert time.monotonic() - started >= 0.9, "the client waited as Retry-After asked"


@pytest.mark.parametrize("status, words", [(503, "HTTP 503"), (429, "429"), (500, "HTTP 500")])
def test_model_failures_after_retries_give_llm_unavailable_and_keep_memory(
    model_server, make_agent, memory, status, words
):
    healthy = model_server(
        lambda body: (
            Reply(content="answer " + str(len(body["messages"])))
            if tool_results(body) or not has_tools(body)
            else Reply(calls=[Call("query_logs", {"service": "auth", "limit": 1})])
        )
    )
    make_agent(healthy).run("first question", thread="t")
    before = memory.load("t", new_turn=False).blocks
    # OpenAI's own millisecond header: a "Retry-After: 0" makes the client back off 0.5 s, then 1 s.
    broken = model_server(lambda body: Reply(status=status, headers={"retry-after-ms": "1"}))
    reply = make_agent(broken, max_retries=2).run("second question", thread="t")
    assert reply.stop_reason == "llm_unavailable"
    assert words in reply.text and "after 3 attempt" in reply.text and "logs <service>" in reply.text
    assert len(broken.requests) == 3
    after = memory.load("t", new_turn=False).blocks
    assert after[: len(before)] == before, "earlier turns intact"
    recovered = make_agent(healthy).run("third question", thread="t")
    assert recovered.stop_reason == "answered"
    assert_well_paired(healthy.requests[-1])
    contents = [m.get("content") for m in healthy.requests[-1]["messages"]]
    # The unanswered question and the next are one user message: strict templates refuse two in a row.
    assert "first question" in contents and "second question\n\nthird question" in contents


def test_model_timeout_gives_llm_unavailable(model_server, make_agent):
    server = model_server(lambda body: Reply(content="late", delay_s=3))
    from opsbot.bot.llm import ModelClient

    agent = make_agent(server)
    agent.model = ModelClient(model="m", base_url=server.base_url, timeout_s=0.3, max_retries=1)
    started = time.monotonic()
    reply = agent.run("status?", thread="t")
    assert reply.stop_reason == "llm_unavailable" and "did not answer within 0.3s" in reply.text
    assert time.monotonic() - started < 3


def test_rejected_key_names_the_variable(model_server, make_agent):
    server = model_server(lambda body: Reply(status=401))
    reply = make_agent(server).run("status?", thread="t")
    assert reply.stop_reason == "llm_unavailable" and "OPENAI_API_KEY" in reply.text


def test_huge_tool_output_is_cut_before_it_is_sent_or_stored(model_server, make_agent, memory):
    def dump() -> str:
        """A lot of output."""
        return "HEAD-LINE\n" + "x" * 200_000 + "\nTAIL-LINE"

    server = model_server(script(Reply(calls=[Call("dump", {})]), Reply(content="big")))
    make_agent(server, tools=[dump], max_result_tokens=500).run("go", thread="t")
    sent = [m for m in server.requests[1]["messages"] if m["role"] == "tool"][0]["content"]
    assert len(sent) <= 500 * 4
    parsed = json.loads(sent)
    assert parsed["data"].startswith("HEAD-LINE") and parsed["data"].endswith("TAIL-LINE")
    assert "cut" in parsed["truncated"]
    stored = [m for b in memory.load("t", new_turn=False).blocks for m in b.messages if m.role == "tool"]
    assert stored[0].content == sent


def test_secrets_in_tool_output_never_reach_the_model(model_server, make_agent):
    def env() -> str:
        """Environment of the app."""
        return "DATABASE_URL=postgres://app:pa55!@db:5432/app\nSLACK=xoxb-123456789012-abcdefghijkl"

    server = model_server(script(Reply(calls=[Call("env", {})]), Reply(content="seen")))
    make_agent(server, tools=[env]).run("go", thread="t")
    body = json.dumps(server.requests[1])
    assert "pa55!" not in body and "xoxb-123456789012" not in body
    assert "[REDACTED:" in body


def test_each_step_is_logged_as_one_structured_record(model_server, make_agent, caplog):
    server = model_server(
        script(
            Reply(calls=[Call("query_logs", {"service": "checkout", "level": "ERROR", "limit": 3})]),
            Reply(content="502s"),
        )
    )
    with caplog.at_level(logging.INFO, logger="opsbot.steps"):
        reply = make_agent(server).run("why 502?", thread="slack:T1:C2:1.2")
    records = [json.loads(r.getMessage()) for r in caplog.records if r.name == "opsbot.steps"]
    assert [r["event"] for r in records] == ["run_start", "step", "step", "run_end"]
    assert {r["run"] for r in records} == {records[0]["run"]} and {r["thread"] for r in records} == {"slack:T1:C2:1.2"}
    assert records[0]["question"] == "why 502?"
    first = records[1]
    assert first["step"] == 1 and first["decision"] == "tool_calls"
    assert first["calls"][0]["tool"] == "query_logs"
    assert first["calls"][0]["args"] == {"service": "checkout", "level": "ERROR", "limit": 3}
    assert first["calls"][0]["status"] == "ok" and first["calls"][0]["duration_ms"] >= 0
    assert first["prompt_tokens"] > 0 and first["completion_tokens"] > 0
    assert "ERROR" in first["results"][0]
    assert records[2]["decision"] == "answer"
    end = records[3]
    assert end["answer"] == reply.text == "502s" and end["stop_reason"] == "answered"
    assert end["prompt_tokens"] == reply.usage.prompt_tokens and end["steps"] == 2


def test_outages_are_logged_too(model_server, make_agent, caplog):
    server = model_server(lambda body: Reply(status=503))
    with caplog.at_level(logging.INFO, logger="opsbot.steps"):
        make_agent(server).run("status?", thread="t")
    end = json.loads(caplog.records[-1].getMessage())
    assert end["event"] == "run_end" and end["stop_reason"] == "llm_unavailable" and "503" in end["answer"]


def test_a_second_run_in_the_same_thread_waits_for_the_first(model_server, make_agent):
    answers = iter(["first answer", "second answer"])
    lock = threading.Lock()

    def policy(body):
        with lock:
            return Reply(content=next(answers), delay_s=0.5)

    server = model_server(policy)
    agent = make_agent(server)
    replies = []
    threads = [threading.Thread(target=lambda q=q: replies.append(agent.run(q, thread="t"))) for q in ("one", "two")]
    threads[0].start()
    assert until(lambda: server.requests)  # the first run asks the model only once it holds the thread's lock
    threads[1].start()
    for t in threads:
        t.join()
    assert [r.stop_reason for r in replies] == ["answered", "answered"]
    second = server.requests[-1]["messages"]
    assert_well_paired(server.requests[-1])
    assert [m["content"] for m in second if m["role"] in ("user", "assistant")] == ["one", "first answer", "two"], (
        "the second run started only after the first had answered"
    )


def test_a_run_that_cannot_get_the_thread_says_busy(model_server, make_agent, memory):
    server = model_server(lambda body: Reply(content="never asked"))
    agent = make_agent(server, memory_settings=MemorySettings(lock_wait_s=0.2, lock_ttl_s=30))
    with memory.lock("t", ttl_s=30, wait_s=0):
        reply = agent.run("status?", thread="t")
    assert reply.stop_reason == "busy" and "still being worked on" in reply.text
    assert server.requests == []


def test_the_time_budget_withdraws_tools_and_answers(model_server, make_agent):
    def slow(n: int) -> str:
        """Slow lookups."""
        time.sleep(0.3)
        return f"result {n}"

    numbers = iter(range(100))

    def policy(body):
        if not has_tools(body):
            return Reply(content="out of time; partial findings")
        return Reply(calls=[Call("slow", {"n": next(numbers)})])

    server = model_server(policy)
    started = time.monotonic()
    reply = make_agent(server, tools=[slow], time_budget_s=0.5, near_repeat_limit=50).run("go", thread="t")
    assert reply.stop_reason == "time_budget" and reply.text == "out of time; partial findings"
    assert time.monotonic() - started < 1.5
    assert not has_tools(server.requests[-1]) and "time budget" in server.requests[-1]["messages"][-1]["content"]


def test_parallel_tool_calls_are_bounded(model_server, make_agent):
    running, peak = [0], [0]
    changed = threading.Condition()

    def probe(n: int) -> str:
        """Counts how many run at once."""
        with changed:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
            changed.notify_all()
            # Stays 0.1 s, time for a call beyond the bound to join it (and to end the wait at once).
            changed.wait_for(lambda: running[0] > 2, 0.1)
            running[0] -= 1
        return "ok"

    server = model_server(script(Reply(calls=[Call("probe", {"n": n}) for n in range(6)]), Reply(content="done")))
    make_agent(server, tools=[probe], max_parallel_tools=2).run("go", thread="t")
    assert peak[0] == 2


def test_tool_calls_on_the_forced_final_step_are_not_run_and_not_an_answer(model_server, make_agent, counter):
    keys = iter(f"k{i}" for i in range(100))

    def policy(body):
        # This model keeps calling tools even when none are offered, with a preamble.
        return Reply(content="Let me check one more thing...", calls=[Call("lookup", {"key": next(keys)})])

    server = model_server(policy)
    reply = make_agent(server, tools=[lookup_tool(counter)], max_steps=3, near_repeat_limit=50).run("go", thread="t")
    assert len(counter.runs) == 2, "only the two steps that offered tools ran them"
    assert reply.stop_reason == "max_steps" and "used all its steps" in reply.text and "Let me check" not in reply.text
    assert [s.decision for s in reply.steps][-1] == "tool_calls_ignored"
    assert len(server.requests) == 3, "no nudge on the last step: the reply says why it stopped"
    for body in server.requests:
        assert_well_paired(body)


def test_identical_calls_in_one_message_run_once(model_server, make_agent, counter):
    calls = [Call("lookup", {"key": "db"}, id="a"), Call("lookup", '{"key":"db"}', id="b")]
    server = model_server(script(Reply(calls=calls), Reply(content="done")))
    make_agent(server, tools=[lookup_tool(counter)]).run("go", thread="t")
    assert len(counter.runs) == 1
    results = tool_results(server.requests[1])
    assert [r["data"] for r in results] == ["value of db page 1", "value of db page 1"]
    assert_well_paired(server.requests[1])


def test_fanning_out_over_services_is_not_circling(model_server, make_agent):
    services = ["checkout", "payments", "auth"]
    plan = [
        Reply(calls=[Call("query_logs", {"service": s, "limit": 5}) for s in services]),
        Reply(calls=[Call("query_logs", {"service": s, "level": "ERROR", "limit": 5}) for s in services]),
        Reply(calls=[Call("read_config", {"name": "payments"})]),
        Reply(content="payments pool exhausted"),
    ]
    server = model_server(script(*plan))
    reply = make_agent(server).run("what is wrong?", thread="t")
    assert reply.stop_reason == "answered" and reply.text == "payments pool exhausted"
    assert not any("circling" in (m.get("content") or "") for b in server.requests for m in b["messages"])


def test_a_long_turn_is_fitted_to_the_prompt_budget(model_server, make_agent):
    def big(n: int) -> str:
        """A large result."""
        return f"result {n} " + "y" * 3000

    numbers = iter(range(100))

    def policy(body):
        if not has_tools(body) or len(tool_results(body)) >= 6:
            return Reply(content="done")
        return Reply(calls=[Call("big", {"n": next(numbers)})])

    server = model_server(policy)
    reply = make_agent(server, tools=[big], max_prompt_tokens=3000, near_repeat_limit=50).run("go", thread="t")
    assert reply.stop_reason == "answered"
    for body in server.requests:
        assert len(json.dumps(body["messages"])) < 3000 * 4 * 1.3
        assert_well_paired(body)
    last = [m["content"] for m in server.requests[-1]["messages"] if m["role"] == "tool"]
    assert "left out to fit the context" in last[0], "oldest elided"
    assert last[-1].startswith('{"step":6,"ok":true'), "newest kept, its step first"


def test_a_refused_request_says_what_to_do(model_server, make_agent):
    server = model_server(lambda body: Reply(status=400))
    reply = make_agent(server, max_retries=2).run("status?", thread="t")
    assert reply.stop_reason == "llm_unavailable"
    assert "HTTP 400" in reply.text and "reset" in reply.text and "ask again in a minute" not in reply.text
    assert len(server.requests) == 1, "a 400 is not retried"


def test_an_unreadable_model_response_is_a_reply_not_a_crash(model_server, make_agent):
    import http.server

    class Html(http.server.BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802
            self.rfile.read(int(self.headers["Content-Length"]))
            body = b'{"choices": "<html>proxy error</html>"}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Html)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        from opsbot.bot.llm import ModelClient

        agent = make_agent(model_server(lambda body: Reply(content="unused")))
        agent.model = ModelClient(model="m", base_url=f"http://127.0.0.1:{httpd.server_address[1]}/v1", max_retries=0)
        reply = agent.run("status?", thread="t")
    finally:
        httpd.shutdown()
    assert reply.stop_reason == "llm_unavailable" and "cannot read" in reply.text and "OPENAI_BASE_URL" in reply.text


def test_tools_see_who_asked(model_server, make_agent):
    from pydantic import BaseModel

    from opsbot.config.policy import Principal
    from opsbot.tools.base import Tool

    class NoArgs(BaseModel):
        pass

    seen = []
    whoami = Tool(
        "whoami", "Who is asking.", args_model=NoArgs, run=lambda args, principal: seen.append(principal) or "ok"
    )
    server = model_server(script(Reply(calls=[Call("whoami", {})]), Reply(content="done")))
    asker = Principal(platform="slack", user="U024BE7LH", team="T1", channel="C2", groups=frozenset({"S-oncall"}))
    make_agent(server, tools=[whoami]).run("who am I?", thread="t", principal=asker)
    assert seen == [asker]


def test_a_write_command_stops_the_loop_for_a_person_and_the_model_answers_without_tools(model_server, make_agent):
    server = model_server(
        script(
            Reply(calls=[Call("run_command", {"command": "restart", "params": {"service": "checkout"}})]),
            Reply(content="I asked to restart checkout; an approver must approve it."),
        )
    )
    reply = make_agent(server).run("restart checkout please", thread="t")
    assert reply.stop_reason == "needs_approval"
    assert reply.text == "I asked to restart checkout; an approver must approve it."
    [request] = reply.approvals
    assert request.command == "restart" and request.argv[-1] == "checkout"
    assert tool_results(server.requests[1])[0]["error"]["type"] == "needs_approval"
    assert not has_tools(server.requests[1]), "nothing else runs before a person decides"
    assert reply.steps[0].note and "approval" in reply.steps[0].note


def test_any_object_with_the_model_methods_is_a_model(memory) -> None:
    from opsbot.bot.agent import Agent
    from opsbot.bot.llm import ModelTurn, Usage

    class Scripted:
        max_answer_tokens = 100

        def complete(self, messages, tools, sink=None):
            return ModelTurn(content=f"{len(messages)} messages seen", tool_calls=[], usage=Usage(model_calls=1))

    reply = Agent(Scripted(), memory, tools=[]).run("how is checkout?", thread="t")
    assert reply.text == "2 messages seen" and reply.stop_reason == "answered" and reply.usage.model_calls == 1
