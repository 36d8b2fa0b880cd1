"""Folding old turns into the running summary: which turns, what the model is asked, what the
next prompts carry, the cap, and the digest used when the model cannot summarise."""

from __future__ import annotations

import random
import re
from typing import Any

import pytest

from opsbot.bot.agent import Agent
from opsbot.bot.agent.summary import KEEP_FRACTION, blocks_to_fold
from opsbot.bot.agent.tokens import CHARS_PER_TOKEN, blocks_tokens, estimate_tokens
from opsbot.bot.llm import ModelClient
from opsbot.bot.memory import Memory
from opsbot.bot.memory.redis import RedisMemory
from opsbot.bot.messages import Block, Message, ToolCallSpec
from opsbot.config.settings import LoopLimits, MemorySettings, Settings
from opsbot.tools.catalog import ops_tools
from tests.fakes.model_server import Call, Reply, has_tools, is_summary_request, tool_results
from tests.fakes.redis_server import RedisServer

SUMMARY_HEADER = "Summary of earlier turns"

# blocks_to_fold, on blocks of known sizes.


def turn(n: int, result_chars: int = 400, steps: int = 1) -> list[Block]:
    """One user turn: the question, `steps` tool steps, the answer."""
    blocks = [Block(messages=[Message.user(f"question {n}")])]
    for step in range(steps):
        call = ToolCallSpec(id=f"c{n}_{step}", name="query_logs", arguments='{"service":"checkout"}')
        blocks.append(Block.tool_step(Message.assistant("", [call]), [Message.tool(call.id, "x" * result_chars)]))
    blocks.append(Block(messages=[Message.assistant(f"answer {n}")]))
    return blocks


def turn_starts(blocks: list[Block]) -> list[int]:
    return [i for i, block in enumerate(blocks) if block.starts_turn]


def test_nothing_is_folded_within_budget() -> None:
    blocks = turn(1) + turn(2)
    size = blocks_tokens(blocks)
    assert blocks_to_fold(blocks, window_tokens=size) == 0
    assert blocks_to_fold(blocks, window_tokens=size * 10) == 0
    assert blocks_to_fold([], window_tokens=200) == 0
    assert blocks_to_fold(blocks, window_tokens=size - 1) > 0


def test_the_newest_turn_is_never_folded_even_when_alone_over_budget() -> None:
    huge = turn(1, result_chars=50_000, steps=3)
    assert blocks_to_fold(huge, window_tokens=200) == 0
    blocks = turn(1) + turn(2) + huge
    assert blocks_to_fold(blocks, window_tokens=200) == len(turn(1)) * 2, "everything before the newest turn"


def test_only_as_many_whole_turns_as_needed_are_folded() -> None:
    blocks = [block for n in range(1, 7) for block in turn(n, result_chars=400)]
    per_turn = blocks_tokens(turn(1))
    window = per_turn * 4  # six turns do not fit
    count = blocks_to_fold(blocks, window)
    assert count in turn_starts(blocks), "folds end at a turn boundary"
    assert blocks_tokens(blocks[count:]) <= window * KEEP_FRACTION
    assert blocks_tokens(blocks[count - len(turn(1)) :]) > window * KEEP_FRACTION, "folds no more than needed"
    assert count == len(turn(1)) * 4  # six turns, two kept (within 60% of four)


@pytest.mark.parametrize("seed", range(40))
def test_folds_are_whole_turns_and_spare_the_newest_turn(seed: int) -> None:
    rng = random.Random(seed)
    blocks = [
        block
        for n in range(rng.randint(1, 8))
        for block in turn(n, result_chars=rng.randint(0, 3000), steps=rng.randint(0, 3))
    ]
    window = rng.randint(200, 3000)
    count = blocks_to_fold(blocks, window)
    starts = turn_starts(blocks)
    if blocks_tokens(blocks) <= window:
        assert count == 0
        return
    if len(starts) == 1:
        assert count == 0
        return
    assert count in starts[1:], f"{count} is not the start of a later turn ({starts})"
    kept = blocks_tokens(blocks[count:])
    assert kept <= window * KEEP_FRACTION or count == starts[-1], (
        "folds until the kept turns fit, or all but the newest"
    )
    earlier = [s for s in starts if s < count]
    if len(earlier) > 1:
        assert blocks_tokens(blocks[earlier[-1] :]) > window * KEEP_FRACTION, "folded one turn too many"


# Folding through the agent, the real client and both memories.


def fact_keeping_summariser(body: dict[str, Any]) -> Reply:
    """Keeps every line mentioning a deploy id, reworded, from the summary so far and the new turns."""
    text = body["messages"][-1]["content"]
    ids = sorted({match for line in text.splitlines() if "D-4242" in line for match in re.findall(r"D-\d+", line)})
    return Reply(
        content="\n".join(f"- deploy {deploy_id} was named by the engineer" for deploy_id in ids) or "- (none)"
    )


def log_reader(summariser=fact_keeping_summariser):
    """Each question: fetch the newest errors of a service, then answer."""

    def policy(body: dict[str, Any]) -> Reply:
        if is_summary_request(body):
            return summariser(body)
        question = [m for m in body["messages"] if m["role"] == "user"][-1]["content"]
        if not tool_results(body):
            service = "payments" if "payments" in question else "checkout"
            return Reply(calls=[Call("query_logs", {"service": service, "level": "ERROR", "limit": 4})])
        return Reply(content=f"answer {len(tool_results(body)[0]['data']['lines'].splitlines())} lines for: {question}")

    return policy


QUESTIONS = [
    "the deploy id is D-4242; why is checkout failing?",
    "and the payments errors?",
    "checkout again, anything new?",
    "payments once more?",
]


def chat_requests(server) -> list[dict[str, Any]]:
    return [body for body in server.requests if not is_summary_request(body)]


def summary_messages(body: dict[str, Any]) -> list[str]:
    """The summary sent, from its header on: folded into the one system message (strict chat
    templates take no other)."""
    system = [m["content"] for m in body["messages"] if m["role"] == "system"]
    assert len(system) <= 1, "one system message"
    return [text[text.index(SUMMARY_HEADER) :] for text in system if SUMMARY_HEADER in text]


def conversation_text(body: dict[str, Any]) -> str:
    return "\n".join(str(m.get("content")) for m in body["messages"] if m["role"] != "system")


def test_old_turns_are_folded_into_a_summary_that_later_prompts_carry(memory: Memory, model_server, make_agent) -> None:
    server = model_server(log_reader())
    agent = make_agent(server, memory_settings=MemorySettings(window_tokens=300, summary_tokens=100))
    turn_one_ids: set[str] = set()
    for n, question in enumerate(QUESTIONS, start=1):
        reply = agent.run(question, thread="t")
        assert reply.stop_reason == "answered"
        assert reply.text == f"answer 4 lines for: {question}", "folding never changes the reply"
        if n == 1:
            turn_one_ids = {c.id for step in reply.steps for c in step.calls}
            assert not any(is_summary_request(body) for body in server.requests), "one turn is never folded"

    summaries = [body for body in server.requests if is_summary_request(body)]
    assert summaries, "the thread outgrew its window but nothing was folded"
    first = summaries[0]
    assert not has_tools(first), "the summariser is offered no tools"
    assert QUESTIONS[0] in first["messages"][-1]["content"], "the folded turn is sent to be summarised"
    assert "query_logs" in first["messages"][-1]["content"], "what the tools were asked is part of it"

    last_prompt = chat_requests(server)[-2]  # the last turn's first request: its tool call and answer follow
    assert QUESTIONS[-1] in conversation_text(last_prompt)
    (summary,) = summary_messages(last_prompt)
    assert "D-4242" in summary, "the turn-1 fact survives every fold"
    text = conversation_text(last_prompt)
    assert "D-4242" not in text and QUESTIONS[0] not in text, "turn 1 is no longer sent verbatim"
    ids = {c["id"] for m in last_prompt["messages"] for c in m.get("tool_calls") or []}
    assert not ids & turn_one_ids, "turn 1's tool calls are gone"
    assert last_prompt["messages"][0]["content"].endswith(summary), "after the system prompt, in the one system message"
    assert last_prompt["messages"][1]["role"] == "user"

    state = memory.load("t", new_turn=False)
    assert "D-4242" in state.summary
    assert [b.messages[0].content for b in state.blocks if b.starts_turn] == [QUESTIONS[-1]]
    assert blocks_tokens(state.blocks) <= 300


def test_no_summary_is_sent_before_anything_was_folded(memory: Memory, model_server, make_agent) -> None:
    server = model_server(log_reader())
    agent = make_agent(server)  # the default window: two short turns fit
    for question in QUESTIONS[:2]:
        assert agent.run(question, thread="t").stop_reason == "answered"
    assert not any(is_summary_request(body) for body in server.requests)
    assert all(summary_messages(body) == [] for body in server.requests)
    assert memory.load("t", new_turn=False).summary == ""


def test_the_summary_is_capped_at_summary_tokens(memory: Memory, model_server, make_agent) -> None:
    huge = "D-4242 is the deploy. " + "very long narration " * 2000 + "THE END"

    server = model_server(log_reader(lambda body: Reply(content=huge)))
    cap = 100
    agent = make_agent(server, memory_settings=MemorySettings(window_tokens=300, summary_tokens=cap))
    for question in QUESTIONS[:3]:
        assert agent.run(question, thread="t").stop_reason == "answered"
    assert any(is_summary_request(body) for body in server.requests)
    summary = memory.load("t", new_turn=False).summary
    assert summary, "the fold stored no summary"
    assert len(summary) <= cap * CHARS_PER_TOKEN and estimate_tokens(summary) <= cap, f"{len(summary)} characters"
    assert summary.startswith("D-4242 is the deploy.") and summary.endswith("THE END"), "head and tail are kept"
    assert "cut" in summary, "the cut is said aloud"
    (sent,) = summary_messages(chat_requests(server)[-1])
    assert sent.endswith(summary) and len(sent) < len(SUMMARY_HEADER) + 50 + cap * CHARS_PER_TOKEN


def test_a_failing_summariser_falls_back_to_a_digest(memory: Memory, model_server, make_agent) -> None:
    server = model_server(log_reader(lambda body: Reply(status=500)))
    agent = make_agent(server, memory_settings=MemorySettings(window_tokens=300, summary_tokens=100))
    replies = [agent.run(question, thread="t") for question in QUESTIONS[:3]]
    for question, reply in zip(QUESTIONS[:3], replies, strict=True):
        assert reply.stop_reason == "answered"
        assert reply.text == f"answer 4 lines for: {question}", "the engineer's reply is unaffected"
    assert any(is_summary_request(body) for body in server.requests), "the summariser was asked (and failed)"

    state = memory.load("t", new_turn=False)
    assert [b.messages[0].content for b in state.blocks if b.starts_turn] == [QUESTIONS[2]], "the thread shrank"
    assert "D-4242" in state.summary and "why is checkout failing?" in state.summary, state.summary
    assert "answer 4 lines" in state.summary, "the digest keeps the answer too"
    assert estimate_tokens(state.summary) <= 100

    assert agent.run(QUESTIONS[3], thread="t").stop_reason == "answered"
    (sent,) = summary_messages(chat_requests(server)[-2])
    assert "why is checkout failing?" in sent


@pytest.mark.usefixtures("quick_redis_retries")
def test_an_outage_while_folding_does_not_cost_the_engineer_the_answer(
    own_redis: RedisServer, model_server, sample: Settings
) -> None:
    """The answer is found and stored before the fold; Redis going away during the summary
    call must not turn the reply into memory_unavailable ("ask again")."""

    def summariser_during_outage(body: dict[str, Any]) -> Reply:
        own_redis.stop()
        return Reply(content="- deploy D-4242")

    server = model_server(log_reader(summariser_during_outage))
    agent = Agent(
        model=ModelClient(model="scripted", base_url=server.base_url, max_retries=0, timeout_s=5),
        memory=RedisMemory(own_redis.url),
        tools=ops_tools(sample.policy),
        limits=LoopLimits(tool_retry_backoff_s=0.01),
        memory_settings=MemorySettings(window_tokens=300, summary_tokens=100, lock_wait_s=1),
    )
    assert agent.run(QUESTIONS[0], thread="t").stop_reason == "answered"
    reply = agent.run(QUESTIONS[1], thread="t")  # over the window: folds, and Redis dies meanwhile
    assert any(is_summary_request(body) for body in server.requests)
    assert reply.stop_reason == "answered", reply.text
    assert reply.text == f"answer 4 lines for: {QUESTIONS[1]}"
