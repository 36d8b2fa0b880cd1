"""Reading what models write: calls written as text, ReAct and JSON protocols, thinking, and the
shape of requests strict chat templates accept. The formats are the ones the model families are
trained on (Hermes/Qwen tool_call tags, Mistral [TOOL_CALLS], Llama 3.x python_tag, the ReAct
paper's keywords and Qwen's Chinese ReAct prompt); the servers' quirks are in test_llm_servers.py."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from opsbot.bot.llm.protocols import Protocol, read, read_react, render, speaks_react
from opsbot.bot.llm.reasoning import split_thinking
from opsbot.bot.llm.shaping import ids_in, template_safe, unique_ids
from opsbot.bot.llm.textcalls import calls_in_text
from opsbot.bot.messages import ToolCallSpec

ARGS = {"service": "checkout", "level": "ERROR"}
CALL = ("query_logs", json.dumps(ARGS))


@pytest.mark.parametrize(
    "text",
    [
        json.dumps({"name": "query_logs", "arguments": ARGS}),
        json.dumps({"name": "query_logs", "parameters": ARGS}),  # Llama 3.x
        json.dumps({"name": "query_logs", "arguments": json.dumps(ARGS)}),  # arguments as a string
        json.dumps({"type": "function", "function": {"name": "query_logs", "arguments": ARGS}}),
        "```json\n" + json.dumps({"name": "query_logs", "arguments": ARGS}, indent=2) + "\n```",
        "  " + json.dumps([{"name": "query_logs", "arguments": ARGS}]) + "\n",
        "<tool_call>\n" + json.dumps({"name": "query_logs", "arguments": ARGS}) + "\n</tool_call>",  # Hermes/Qwen
        "[TOOL_CALLS][" + json.dumps({"name": "query_logs", "arguments": ARGS}) + "]",  # Mistral
        "[TOOL_CALLS]query_logs[ARGS]" + json.dumps(ARGS),  # Mistral, newer tokenizers
        "<|python_tag|>" + json.dumps({"name": "query_logs", "parameters": ARGS}) + "<|eom_id|>",  # Llama 3.1
        "<function=query_logs>" + json.dumps(ARGS) + "</function>",  # Llama 3.1 custom tools
    ],
    ids=["bare", "parameters", "string-args", "openai-shape", "fenced", "list", "hermes", "mistral", "mistral-args",
         "python-tag", "function-tag"],
)  # fmt: skip
def test_a_message_that_is_a_call_is_read_as_one(text: str) -> None:
    assert calls_in_text(text) == [CALL]


def test_several_calls_in_one_message_are_all_read() -> None:
    two = "\n".join(
        "<tool_call>" + json.dumps({"name": n, "arguments": {"service": "checkout"}}) + "</tool_call>"
        for n in ("query_logs", "read_config")
    )
    assert [name for name, _ in calls_in_text(two) or []] == ["query_logs", "read_config"]


@pytest.mark.parametrize(
    "text",
    [
        'The logs show {"name": "query_logs", "arguments": {}} was what I ran; checkout is fine.',
        json.dumps({"name": "checkout", "status": "degraded"}),  # an answer that is JSON, not a call
        json.dumps({"name": "query_logs", "arguments": {}, "reason": "x"}),  # more than a call holds
        "Here is the call:\n```json\n" + json.dumps({"name": "query_logs", "arguments": ARGS}) + "\n```",
        "<tool_call>not json</tool_call>",
        "[TOOL_CALLS] maybe later",
        "",
        "checkout returns 502s because the payments pool is exhausted.",
    ],
    ids=["prose-quoting-json", "json-answer", "extra-keys", "prose-then-fence", "broken-tag", "mistral-prose",
         "empty", "prose"],
)  # fmt: skip
def test_prose_stays_an_answer(text: str) -> None:
    assert calls_in_text(text) is None


# ---------------------------------------------------------------- ReAct, tolerantly


@pytest.mark.parametrize(
    "text",
    [
        'Thought: I should read the logs.\nAction: query_logs\nAction Input: {"service": "checkout", "level": "ERROR"}',
        'thought: look\naction:query_logs\naction input:   {"service": "checkout", "level": "ERROR"}\n',
        'Thought：看日志\nAction：query_logs\nAction Input：{"service": "checkout", "level": "ERROR"}',  # full-width
        '思考: 查看日志\n行动: query_logs\n行动输入: {"service": "checkout", "level": "ERROR"}',  # Qwen's Chinese ReAct
        'Thought: x\nAction: `query_logs`\nAction Input:\n```json\n{"service": "checkout", "level": "ERROR"}\n```',
        'Thought: x\nAction: query_logs\nAction Input: {"service": "checkout", "level": "ERROR"}\n'
        "Observation: 37 errors (invented by the model)\nFinal Answer: it is the pool",
    ],
    ids=["classic", "case-and-spacing", "full-width-colon", "chinese", "fenced", "invented-observation"],
)
def test_react_actions_are_read_whatever_the_spelling(text: str) -> None:
    reply = read_react(text)
    assert reply.calls == [CALL] and reply.answer == ""
    assert speaks_react(text) or text.startswith("思考")


@pytest.mark.parametrize(
    "text, answer",
    [
        ("Thought: I know now.\nFinal Answer: the payments pool is exhausted", "the payments pool is exhausted"),
        ("final answer : checkout is fine", "checkout is fine"),
        ("最终答案：连接池耗尽", "连接池耗尽"),
        ("Checkout is fine.", "Checkout is fine."),  # a model that ignored the format
        ("Thought: hmm", "hmm"),
    ],
)
def test_react_final_answers_are_read(text: str, answer: str) -> None:
    assert read_react(text).answer == answer and read_react(text).calls == []


def test_react_renders_the_conversation_as_text_with_observations() -> None:
    tools = [{"type": "function", "function": {"name": "query_logs", "description": "logs", "parameters": {}}}]
    messages = [
        {"role": "system", "content": "You are opsbot."},
        {"role": "user", "content": "why?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [_api_call("c1", *CALL), _api_call("c2", "read_config", "{}")],
        },
        {"role": "tool", "tool_call_id": "c1", "content": '{"ok": true}'},
        {"role": "tool", "tool_call_id": "c2", "content": '{"ok": false}'},
    ]
    rendered = render(Protocol.react, messages, tools)
    assert [m["role"] for m in rendered] == ["system", "user", "assistant", "user"]
    assert "Action: query_logs" in rendered[0]["content"] or "query_logs" in rendered[0]["content"]
    assert "Action: query_logs\nAction Input:" in rendered[2]["content"]
    assert rendered[3]["content"].count("Observation: ") == 2
    assert all("tool_calls" not in m and "tool_call_id" not in m for m in rendered)


def test_the_json_protocol_reads_one_object() -> None:
    assert read(
        Protocol.json, '{"tool": "query_logs", "arguments": {"service": "checkout", "level": "ERROR"}}'
    ).calls == [CALL]
    assert read(Protocol.json, '```json\n{"answer": "the pool"}\n```').answer == "the pool"
    assert read(Protocol.json, "not json at all").answer == "not json at all"


# ---------------------------------------------------------------- thinking


@pytest.mark.parametrize(
    "content, answer, thinking",
    [
        ("<think>check logs first</think>The pool is exhausted.", "The pool is exhausted.", "check logs first"),
        (
            "check logs first</think>\n\nThe pool is exhausted.",
            "The pool is exhausted.",
            "check logs first",
        ),  # no opening tag
        ("<think>still thinking when cut", "", "still thinking when cut"),  # unclosed
        ("<think>a</think>one <think>b</think>two", "one two", "a\nb"),
        ("No thinking here.", "No thinking here.", ""),
    ],
)
def test_thinking_is_never_the_answer(content: str, answer: str, thinking: str) -> None:
    assert split_thinking(content) == (answer, thinking)


# ---------------------------------------------------------------- requests strict templates accept


def test_one_system_message_first_and_no_two_user_messages_in_a_row() -> None:
    shaped = template_safe(
        [
            {"role": "system", "content": "prompt"},
            {"role": "system", "content": "summary"},
            {"role": "user", "content": "question"},
            {"role": "user", "content": "[note] answer now"},
            {"role": "assistant", "content": "", "tool_calls": [_api_call("a", *CALL)]},
            {"role": "tool", "tool_call_id": "a", "content": "{}"},
            {"role": "system", "content": "2 turns left out"},
            {"role": "user", "content": "[note] stop circling"},
        ]
    )
    assert [m["role"] for m in shaped] == ["system", "user", "assistant", "tool", "user"]
    assert shaped[0]["content"] == "prompt\n\nsummary\n\n2 turns left out"
    assert shaped[1]["content"] == "question\n\n[note] answer now"


@given(st.lists(st.sampled_from(["system", "user", "assistant"]), max_size=12))
def test_shaped_requests_alternate_whatever_came_in(roles: list[str]) -> None:
    shaped = template_safe([{"role": role, "content": f"{role} {n}"} for n, role in enumerate(roles)])
    kept = [m["role"] for m in shaped]
    assert kept.count("system") <= 1 and (not kept or "system" not in kept[1:])
    assert all(a != b for a, b in zip(kept, kept[1:], strict=False))


def test_empty_and_repeated_ids_are_replaced_by_unique_ones() -> None:
    earlier = [{"role": "assistant", "content": "", "tool_calls": [_api_call("call_0", *CALL)]}]
    given = (("call_0", "a"), ("", "b"), ("x1", "c"), ("x1", "d"))
    calls = [ToolCallSpec(id=call_id, name=name, arguments="{}") for call_id, name in given]
    ids = [c.id for c in unique_ids(calls, ids_in(earlier))]
    assert len(set(ids)) == 4 and "call_0" not in ids and ids[2] == "x1" and all(ids)


def _api_call(call_id: str, name: str, arguments: str) -> dict[str, object]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
