"""The fake model servers answer as the real ones do, seen through the real `openai` client."""

from __future__ import annotations

import json
import re
import time
import urllib.request
from typing import Any

import openai
import pytest
from openai.lib.streaming.chat import ChatCompletionStreamState

from tests.fakes.checks import openai_error
from tests.fakes.model_server import Call, ModelServer, Reply, Wire, script, tool_results
from tests.fakes.servers import (
    ALTERNATE,
    MISTRAL_V3,
    Kind,
    LiteLLMFlavour,
    OllamaFlavour,
    ReActVariant,
    TextFormat,
    VLLMFlavour,
    flavoured_server,
)

QUESTION = [{"role": "user", "content": "why is checkout returning 502s?"}]
TOOLS: list[Any] = [
    {
        "type": "function",
        "function": {
            "name": "query_logs",
            "description": "Read a service's logs.",
            "parameters": {"type": "object", "properties": {"service": {"type": "string"}}, "required": ["service"]},
        },
    }
]
LOGS = Call("query_logs", {"service": "checkout"})
ANSWER = Reply(content="checkout returns 502s because payments times out")


HTTP = openai.DefaultHttpxClient()
"""Shared by every client: building an HTTP client costs more than a request to the fakes."""


def client(server: ModelServer) -> openai.OpenAI:
    """The real client without retries, so a 500 is seen once."""
    return openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0, timeout=5, http_client=HTTP)


def ask(server: ModelServer, messages: list[Any] = QUESTION, **params: Any) -> Any:
    return client(server).chat.completions.create(model=params.pop("model", "m"), messages=messages, **params)


def reassembled(server: ModelServer, **params: Any) -> Any:
    """A streamed answer put back together by the openai client's own accumulator."""
    state: ChatCompletionStreamState[Any] = ChatCompletionStreamState()
    for chunk in ask(server, stream=True, **params):
        state.handle_chunk(chunk)
    return state.current_completion_snapshot


def refusal(server: ModelServer, error: type[openai.APIStatusError], **params: Any) -> openai.APIStatusError:
    with pytest.raises(error) as raised:
        ask(server, **params)
    return raised.value


def post(server: ModelServer, body: dict[str, Any]) -> tuple[str, str]:
    """The raw answer, content type and text, to see exactly what went over the wire."""
    request = urllib.request.Request(
        f"{server.base_url}/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=5) as response:
        return response.headers["Content-Type"], response.read().decode()


def events(server: ModelServer, **body: Any) -> list[dict[str, Any]]:
    """The streamed chunks as sent, parsed; the stream must end with `data: [DONE]`."""
    content_type, text = post(server, {"model": "m", "messages": QUESTION, "stream": True, **body})
    assert content_type == "text/event-stream"
    lines = [line for line in text.split("\n\n") if line]
    assert lines[-1] == "data: [DONE]" and all(line.startswith("data: ") for line in lines)
    return [json.loads(line.removeprefix("data: ")) for line in lines[:-1]]


def a_call_then_answer(body: dict[str, Any]) -> Reply:
    """Call query_logs, then answer from its result."""
    return ANSWER if any(m["role"] == "tool" for m in body["messages"]) else Reply(calls=[LOGS])


def after_call(call_id: str, *results: dict[str, Any]) -> list[Any]:
    return [
        *QUESTION,
        {"role": "assistant", "content": None, "tool_calls": [tool_call(call_id)]},
        *(results or [{"role": "tool", "tool_call_id": call_id, "content": "{}"}]),
    ]


def tool_call(call_id: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": "query_logs", "arguments": "{}"}}


# The scripted server: streaming, error bodies, reasoning, finish reasons.


def test_the_default_answer_is_the_same_json_as_before() -> None:
    with ModelServer(script(Reply(content="ok"), Reply(calls=[LOGS]))) as server:
        _, text = post(server, {"model": "m", "messages": QUESTION})
        _, with_call = post(server, {"model": "m", "messages": QUESTION})
    answer = json.loads(text)
    assert list(answer) == ["id", "object", "created", "model", "choices", "usage"]
    assert answer["id"] == "chatcmpl-1" and answer["object"] == "chat.completion"
    assert answer["choices"] == [
        {"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}
    ]
    assert list(answer["usage"]) == ["prompt_tokens", "completion_tokens", "total_tokens"]
    call = json.loads(with_call)["choices"][0]
    assert call["finish_reason"] == "tool_calls"
    assert call["message"]["tool_calls"] == [
        {
            "id": "call_2_0",
            "type": "function",
            "function": {"name": "query_logs", "arguments": '{"service": "checkout"}'},
        }
    ]


STREAMED_REPLIES = [
    Reply(content="All quiet: no errors in the last hour."),
    Reply(content=""),
    Reply(
        calls=[Call("query_logs", {"service": "checkout", "limit": 5}, id="call_a"), Call("list_services", {}, id="b")]
    ),
    Reply(content="Let me look.", calls=[Call("query_logs", '{"service": "chec', id="call_c")], finish_reason="length"),
    Reply(content="payments times out", reasoning="The 502s started when payments slowed."),
]


@pytest.mark.parametrize("wire", [Wire(), Wire(whole_call_deltas=True, reasoning_field="reasoning")])
@pytest.mark.parametrize("reply", STREAMED_REPLIES)
def test_streamed_chunks_reassemble_to_the_non_streamed_message(reply: Reply, wire: Wire) -> None:
    with ModelServer(lambda body: reply, wire) as server:
        whole = ask(server).choices[0]
        streamed = reassembled(server).choices[0]
    assert streamed.finish_reason == whole.finish_reason
    assert streamed.message.content == whole.message.content
    assert streamed.message.model_extra.get(wire.reasoning_field) == reply.reasoning
    assert whole.message.model_extra.get(wire.reasoning_field) == reply.reasoning
    calls = [(c.id, c.function.name, c.function.arguments) for c in streamed.message.tool_calls or []]
    assert calls == [(c.id, c.function.name, c.function.arguments) for c in whole.message.tool_calls or []]
    assert len(calls) == len(reply.calls)


def test_chunks_have_openais_shapes() -> None:
    reply = Reply(content="Looking now.", calls=[Call("query_logs", {"service": "checkout"}, id="call_x")])
    with ModelServer(lambda body: reply) as server:
        chunks = events(server)
    assert {c["object"] for c in chunks} == {"chat.completion.chunk"} and {c["id"] for c in chunks} == {"chatcmpl-1"}
    deltas = [c["choices"][0]["delta"] for c in chunks]
    assert deltas[0] == {"role": "assistant", "content": "", "refusal": None}
    assert [d["content"] for d in deltas if "content" in d][1:] == ["Looking", " now."]
    calls = [d["tool_calls"][0] for d in deltas if "tool_calls" in d]
    assert calls[0] == {
        "index": 0,
        "id": "call_x",
        "type": "function",
        "function": {"name": "query_logs", "arguments": ""},
    }
    assert len(calls) > 2 and all(
        set(c) == {"index", "function"} and set(c["function"]) == {"arguments"} for c in calls[1:]
    )
    assert "".join(c["function"]["arguments"] for c in calls) == '{"service": "checkout"}'
    assert chunks[-1]["choices"] == [{"index": 0, "delta": {}, "logprobs": None, "finish_reason": "tool_calls"}]
    assert [c["choices"][0]["finish_reason"] for c in chunks[:-1]] == [None] * (len(chunks) - 1)
    assert not any("usage" in c for c in chunks), "usage only when stream_options asks for it"


def test_usage_comes_last_with_empty_choices_only_when_asked() -> None:
    with ModelServer(lambda body: ANSWER) as server:
        whole = ask(server).usage
        chunks = events(server, stream_options={"include_usage": True})
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"] == whole.model_dump(exclude_none=True)
    assert chunks[-2]["choices"][0]["finish_reason"] == "stop"


@pytest.mark.parametrize("placement", ["on_last_choice", "omitted"])
def test_a_wire_can_put_the_usage_elsewhere_or_drop_it(placement: Any) -> None:
    with ModelServer(lambda body: ANSWER, Wire(stream_usage=placement)) as server:
        chunks = events(server, stream_options={"include_usage": True})
    assert all(c["choices"] for c in chunks)
    assert [("usage" in c) for c in chunks][-1] is (placement == "on_last_choice")
    assert sum("usage" in c for c in chunks) == (placement == "on_last_choice")


def test_a_reply_that_does_not_stream_answers_one_json_body() -> None:
    with ModelServer(lambda body: Reply(content="one body", stream=False)) as server:
        content_type, text = post(server, {"model": "m", "messages": QUESTION, "stream": True})
        assert content_type == "application/json"
        assert json.loads(text)["choices"][0]["message"]["content"] == "one body"
        assert list(ask(server, stream=True)) == [], "the openai client finds no events in a JSON body"


def test_chunk_delay_lets_the_first_chunk_arrive_early() -> None:
    reply = Reply(content="one two three four five six", chunk_delay_s=0.03)
    with ModelServer(lambda body: reply) as server:
        started = time.monotonic()
        arrivals = [time.monotonic() - started for _ in ask(server, stream=True)]
    assert arrivals[-1] - arrivals[0] > 0.15


def test_an_error_reply_sends_its_documented_body() -> None:
    body = openai_error(
        "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
        param="max_tokens",
        code="unsupported_parameter",
    )
    with ModelServer(script(Reply(status=400, error=body), Reply(status=503))) as server:
        error = refusal(server, openai.BadRequestError)
        generic = refusal(server, openai.InternalServerError)
    assert error.body == body["error"] and error.param == "max_tokens" and error.code == "unsupported_parameter"
    assert error.message == f"Error code: 400 - {body['error']['message']}" and error.type == "invalid_request_error"
    assert generic.body == {"message": "scripted 503", "type": "scripted"}


def test_a_cut_answer_says_length_and_keeps_the_truncated_arguments() -> None:
    reply = Reply(calls=[Call("query_logs", '{"service": "chec')], finish_reason="length")
    with ModelServer(lambda body: reply) as server:
        whole = ask(server).choices[0]
        streamed = [c.choices[0] for c in ask(server, stream=True)]
    assert whole.finish_reason == "length" and whole.message.tool_calls[0].function.arguments == '{"service": "chec'
    assert streamed[-1].finish_reason == "length"


# OpenAI: the reference, with its ordering rules (every fake's) and reasoning-model parameters.


def test_openai_accepts_well_paired_calls_in_any_order() -> None:
    two_calls = {"role": "assistant", "content": None, "tool_calls": [tool_call("call_a"), tool_call("call_b")]}
    messages = [
        {"role": "system", "content": "You are opsbot."},
        *QUESTION,
        two_calls,
        {"role": "tool", "tool_call_id": "call_b", "content": "{}"},
        {"role": "tool", "tool_call_id": "call_a", "content": "{}"},
        {"role": "assistant", "content": "payments times out"},
        {"role": "user", "content": "and now?"},
    ]
    with flavoured_server("openai", script=[ANSWER]) as server:
        assert ask(server, messages=messages).choices[0].message.content == ANSWER.content


@pytest.mark.parametrize(
    "messages, message, param",
    [
        (
            [
                *QUESTION,
                {"role": "assistant", "content": None, "tool_calls": [tool_call("call_a"), tool_call("call_b")]},
            ]
            + [{"role": "tool", "tool_call_id": "call_a", "content": "{}"}, {"role": "user", "content": "well?"}],
            "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
            "'tool_call_id'. The following tool_call_ids did not have response messages: call_b",
            "messages.[1].role",
        ),
        (
            after_call("call_a", {"role": "tool", "tool_call_id": "call_z", "content": "{}"}),
            "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with "
            "'tool_calls'.",
            "messages.[2].role",
        ),
        (
            [*QUESTION, {"role": "tool", "tool_call_id": "call_a", "content": "{}"}],
            "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with "
            "'tool_calls'.",
            "messages.[1].role",
        ),
        (
            [*after_call("call_0"), {"role": "assistant", "content": None, "tool_calls": [tool_call("call_0")]}]
            + [{"role": "tool", "tool_call_id": "call_0", "content": "{}"}],
            "Invalid parameter: Duplicate value for 'tool_call_id' of 'call_0', in messages[2] and messages[4].",
            "messages.[4].tool_call_id",
        ),
    ],
    ids=["unanswered", "wrong-id", "orphan", "duplicate"],
)
def test_openai_refuses_broken_pairing_with_its_own_messages(messages: list[Any], message: str, param: str) -> None:
    with flavoured_server("openai", script=[ANSWER]) as server:
        error = refusal(server, openai.BadRequestError, messages=messages)
        assert (error.body, error.param) == (openai_error(message, param=param)["error"], param)
        assert ask(server).choices[0].message.content == ANSWER.content, "a refusal uses up no scripted reply"


@pytest.mark.parametrize("model", ["o3-mini", "o4-mini", "gpt-5", "gpt-5-mini"])
def test_openai_reasoning_models_refuse_max_tokens_and_temperature(model: str) -> None:
    with flavoured_server("openai", script=[ANSWER]) as server:
        tokens = refusal(server, openai.BadRequestError, model=model, max_tokens=100)
        zero = refusal(server, openai.BadRequestError, model=model, temperature=0)
        zero_float = refusal(server, openai.BadRequestError, model=model, temperature=0.0)
        fine = ask(server, model=model, temperature=1, max_completion_tokens=100)
    assert (tokens.param, tokens.code) == ("max_tokens", "unsupported_parameter")
    assert tokens.message == (
        "Error code: 400 - Unsupported parameter: 'max_tokens' is not supported with this model. "
        "Use 'max_completion_tokens' instead."
    )
    assert (zero.param, zero.code, zero.type) == ("temperature", "unsupported_value", "invalid_request_error")
    assert (
        zero.body
        == openai_error(
            "Unsupported value: 'temperature' does not support 0 with this model. "
            "Only the default (1) value is supported.",
            param="temperature",
            code="unsupported_value",
        )["error"]
    )
    assert "does not support 0.0 with this model" in zero_float.message, "the value is echoed as sent"
    assert fine.choices[0].message.content == ANSWER.content


def test_openai_chat_models_take_max_tokens_and_any_temperature() -> None:
    with flavoured_server("openai", script=[ANSWER]) as server:
        assert ask(server, model="gpt-4o", max_tokens=100, temperature=0).choices


def test_openai_ids_look_like_openais_and_no_reasoning_comes_back() -> None:
    with flavoured_server("openai", script=[Reply(calls=[LOGS], reasoning="hidden")]) as server:
        message = ask(server, tools=TOOLS).choices[0].message
    assert re.fullmatch(r"call_[A-Za-z0-9]{24}", message.tool_calls[0].id)
    assert not message.model_extra


def test_a_flavour_composes_with_a_policy_that_calls_then_answers() -> None:
    with flavoured_server("openai", script=a_call_then_answer) as server:
        first = ask(server, tools=TOOLS).choices[0].message
        call = first.tool_calls[0]
        messages = [
            *QUESTION,
            first.model_dump(exclude_none=True),
            {
                "role": "tool",
                "tool_call_id": call.id,
                "content": json.dumps({"ok": True, "lines": ["502 from payments"]}),
            },
        ]
        second = ask(server, messages=messages, tools=TOOLS).choices[0].message
    assert call.function.name == "query_logs" and second.content == ANSWER.content
    assert tool_results(server.requests[1]) == [{"ok": True, "lines": ["502 from payments"]}]


# vLLM.


AUTO_TOOL_CHOICE = '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set'


@pytest.mark.parametrize("quirks", [{"auto_tool_choice": False}, {"tool_parser": None}])
def test_vllm_without_a_tool_parser_refuses_auto_tool_choice(quirks: dict[str, Any]) -> None:
    with flavoured_server("vllm", script=[Reply(calls=[LOGS])], **quirks) as server:
        error = refusal(server, openai.BadRequestError, tools=TOOLS)
        text = ask(server).choices[0].message
    assert error.body == {"message": AUTO_TOOL_CHOICE, "type": "BadRequestError", "param": None, "code": 400}
    assert error.message == f"Error code: 400 - {AUTO_TOOL_CHOICE}" and error.code == "400"
    assert text.tool_calls is None
    assert text.content == '<tool_call>\n{"name": "query_logs", "arguments": {"service": "checkout"}}\n</tool_call>'


def test_vllm_2024_errors_are_flat() -> None:
    with flavoured_server("vllm", tool_parser=None, error_format="flat", script=[ANSWER]) as server:
        error = refusal(server, openai.BadRequestError, tools=TOOLS)
    assert error.body == {
        "object": "error",
        "message": AUTO_TOOL_CHOICE,
        "type": "BadRequestError",
        "param": None,
        "code": 400,
    }
    assert error.message == f"Error code: 400 - {AUTO_TOOL_CHOICE}"


def test_vllm_with_a_parser_returns_native_calls_with_its_ids() -> None:
    with flavoured_server("vllm", script=[Reply(calls=[LOGS, Call("list_services", {})])]) as server:
        message = ask(server, tools=TOOLS).choices[0].message
        none = ask(server, tools=TOOLS, tool_choice="none").choices[0].message
        required = ask(server, tools=TOOLS, tool_choice="required").choices[0].message
    assert [c.function.name for c in message.tool_calls] == ["query_logs", "list_services"]
    assert all(re.fullmatch(r"chatcmpl-tool-[0-9a-f]{32}", c.id) for c in message.tool_calls)
    assert none.tool_calls is None and none.content.count("<tool_call>") == 2, "tool_choice none: nothing is parsed"
    assert len(required.tool_calls) == 2


@pytest.mark.parametrize("reasoning", ["reasoning_content", "reasoning"])
def test_vllm_reasoning_parsers_fill_their_field(reasoning: str) -> None:
    reply = Reply(content="payments times out", reasoning="Checking the upstream first.")
    with flavoured_server("vllm", reasoning=reasoning, script=[reply]) as server:
        message = ask(server).choices[0].message
        streamed = reassembled(server).choices[0].message
    assert message.model_extra == {reasoning: "Checking the upstream first."} == streamed.model_extra
    assert message.content == "payments times out" == streamed.content


def test_vllm_without_a_reasoning_parser_leaves_think_tags_in_content() -> None:
    reply = Reply(content="payments times out", reasoning="Checking the upstream first.")
    with flavoured_server("vllm", reasoning="raw", script=[reply]) as server:
        message = ask(server).choices[0].message
    assert message.content == "<think>\nChecking the upstream first.\n</think>\n\npayments times out"
    assert not message.model_extra


def test_vllm_mistral_tokenizer_wants_nine_alphanumeric_ids() -> None:
    with flavoured_server("vllm", mistral=True, tool_parser="mistral", script=[Reply(calls=[LOGS])]) as server:
        generated = ask(server, tools=TOOLS).choices[0].message.tool_calls[0].id
        short = refusal(server, openai.BadRequestError, messages=after_call("call_1_0"))
        underscored = refusal(server, openai.BadRequestError, messages=after_call("call_49c89af0"))
        truncated = ask(server, messages=after_call("chatcmpl-tool-0123456789abcdef"))
    assert re.fullmatch(r"[A-Za-z0-9]{9}", generated)
    assert short.message == "Error code: 400 - Tool call id was call_1_0 but must be a-z, A-Z, 0-9, with a length of 9."
    assert "Tool call id was _49c89af0 but must be" in underscored.message, "cut to its last 9 characters first"
    assert truncated.choices


def test_vllm_mistral_tokenizer_needs_no_parser_and_writes_tool_calls_tokens() -> None:
    with flavoured_server("vllm", mistral=True, tool_parser=None, script=[Reply(calls=[LOGS])]) as server:
        message = ask(server, tools=TOOLS).choices[0].message
    assert message.content == '[TOOL_CALLS][{"name": "query_logs", "arguments": {"service": "checkout"}}]'


@pytest.mark.parametrize(
    "error_format, message",
    [("nested", ALTERNATE), ("nested_doubled", f"{ALTERNATE} {ALTERNATE}"), ("flat", ALTERNATE)],
)
def test_vllm_strict_templates_refuse_roles_out_of_turn(error_format: Any, message: str) -> None:
    two_users = [*QUESTION, {"role": "user", "content": "hello?"}]
    with flavoured_server("vllm", strict_template="alternate", error_format=error_format, script=[ANSWER]) as server:
        error = refusal(server, openai.BadRequestError, messages=two_users)
        assert error.message == f"Error code: 400 - {message}"
        two_systems = [{"role": "system", "content": "a"}, {"role": "system", "content": "b"}, *QUESTION]
        assert refusal(server, openai.BadRequestError, messages=two_systems).message.endswith(ALTERNATE)
        assert ask(server, messages=[{"role": "system", "content": "a"}, *QUESTION]).choices


def test_strict_templates_differ_on_tool_messages() -> None:
    with flavoured_server("vllm", strict_template="alternate", script=[ANSWER]) as alternate:
        assert refusal(alternate, openai.BadRequestError, messages=after_call("call_a")).message.endswith(ALTERNATE)
    with flavoured_server("vllm", strict_template="mistral", script=[ANSWER]) as mistral:
        assert ask(mistral, messages=after_call("call_a")).choices, "tool calls and results are skipped"
        two_users = [*after_call("call_a"), {"role": "user", "content": "well?"}]
        assert refusal(mistral, openai.BadRequestError, messages=two_users).message.endswith(MISTRAL_V3)


# Ollama.


@pytest.mark.parametrize(
    "model, name",
    [("gemma3", "registry.ollama.ai/library/gemma3:latest"), ("llama2:13b", "registry.ollama.ai/library/llama2:13b")],
)
def test_ollama_refuses_tools_for_a_model_without_them(model: str, name: str) -> None:
    with flavoured_server("ollama", tools=False, script=[ANSWER]) as server:
        error = refusal(server, openai.BadRequestError, model=model, tools=TOOLS)
        assert ask(server, model=model).choices[0].message.content == ANSWER.content
    assert error.body == {"message": f"{name} does not support tools", "type": "api_error", "param": None, "code": None}


def test_ollama_sends_its_own_ids_and_empty_content_beside_calls() -> None:
    with flavoured_server("ollama", script=[Reply(calls=[LOGS, LOGS])]) as server:
        message = ask(server, tools=TOOLS).choices[0].message
    assert all(re.fullmatch(r"call_[a-z0-9]{8}", c.id) for c in message.tool_calls)
    assert message.content == ""


@pytest.mark.parametrize("ids, expected", [("per_message", ["call_0", "call_1"]), ("empty", ["", ""])])
def test_ollama_ids_can_repeat_across_a_conversation_or_be_empty(ids: Any, expected: list[str]) -> None:
    with flavoured_server("ollama", ids=ids, script=[Reply(calls=[LOGS, LOGS])]) as server:
        first = [c.id for c in ask(server, tools=TOOLS).choices[0].message.tool_calls]
        second = [c.id for c in ask(server, tools=TOOLS).choices[0].message.tool_calls]
    assert first == second == expected


def test_ollama_streams_each_call_whole_and_usage_only_when_asked() -> None:
    with flavoured_server("ollama", script=[Reply(calls=[LOGS])]) as server:
        plain = events(server, tools=TOOLS)
        counted = events(server, tools=TOOLS, stream_options={"include_usage": True})
    calls = [c["choices"][0]["delta"]["tool_calls"] for c in plain if "tool_calls" in c["choices"][0]["delta"]]
    assert len(calls) == 1 and calls[0][0]["function"] == {"name": "query_logs", "arguments": '{"service": "checkout"}'}
    assert plain[-1]["choices"][0] == {"index": 0, "delta": {}, "logprobs": None, "finish_reason": "tool_calls"}
    assert not any("usage" in c for c in plain)
    assert counted[-1]["choices"] == [] and counted[-1]["usage"]["total_tokens"] > 0


@pytest.mark.parametrize(
    "think, content, extra",
    [
        ("reasoning", "payments times out", {"reasoning": "Look upstream."}),
        ("tags", "<think>\nLook upstream.\n</think>\n\npayments times out", {}),
        ("open_missing", "Look upstream.\n</think>\n\npayments times out", {}),
    ],
)
def test_ollama_reasoning_in_a_field_or_in_think_tags(think: Any, content: str, extra: dict[str, str]) -> None:
    reply = Reply(content="payments times out", reasoning="Look upstream.")
    with flavoured_server("ollama", think=think, script=[reply]) as server:
        message = ask(server).choices[0].message
    assert (message.content, message.model_extra) == (content, extra)


# llama.cpp's llama-server.


def test_llamacpp_without_jinja_refuses_tools_with_a_500() -> None:
    with flavoured_server("llamacpp", jinja=False, script=[Reply(calls=[LOGS])]) as server:
        tools = refusal(server, openai.InternalServerError, tools=TOOLS)
        choice = refusal(server, openai.InternalServerError, tool_choice="auto")
        text = ask(server).choices[0].message
    assert tools.status_code == 500 and tools.body == {
        "code": 500,
        "message": "tools param requires --jinja flag",
        "type": "server_error",
    }
    assert choice.message == "Error code: 500 - Unsupported param: tool_choice"
    assert text.content == '{"name": "query_logs", "parameters": {"service": "checkout"}}' and text.tool_calls is None


def test_older_llamacpp_refuses_tools_in_a_stream() -> None:
    with flavoured_server("llamacpp", tools_with_stream=False, script=[Reply(calls=[LOGS])]) as server:
        error = refusal(server, openai.InternalServerError, tools=TOOLS, stream=True)
        assert ask(server, tools=TOOLS).choices[0].message.tool_calls
    assert error.message == "Error code: 500 - Cannot use tools with stream"


def test_llamacpp_native_calls_carry_its_ids() -> None:
    with flavoured_server("llamacpp", script=[Reply(calls=[LOGS])]) as server:
        call = ask(server, tools=TOOLS).choices[0].message.tool_calls[0]
    assert re.fullmatch(r"[A-Za-z0-9]{32}", call.id) and call.function.arguments == '{"service": "checkout"}'


@pytest.mark.parametrize(
    "text_format, content",
    [
        ("mistral", '[TOOL_CALLS][{"name": "query_logs", "arguments": {"service": "checkout"}}]'),
        ("llama3", '<|python_tag|>{"name": "query_logs", "parameters": {"service": "checkout"}}'),
        ("bare_json", '{"name": "query_logs", "parameters": {"service": "checkout"}}'),
        ("fenced", '```json\n{"name": "query_logs", "arguments": {"service": "checkout"}}\n```'),
        ("hermes", '<tool_call>\n{"name": "query_logs", "arguments": {"service": "checkout"}}\n</tool_call>'),
    ],
)
def test_calls_written_as_text_appear_as_documented(text_format: TextFormat, content: str) -> None:
    with flavoured_server(
        "llamacpp", text_format=text_format, script=[Reply(content="Checking.", calls=[LOGS])]
    ) as server:
        choice = ask(server, tools=TOOLS).choices[0]
    assert choice.message.content == f"Checking.\n{content}"
    assert choice.message.tool_calls is None and choice.finish_reason == "stop"


def test_several_calls_as_text_keep_each_format() -> None:
    calls = [LOGS, Call("list_services", {})]
    with flavoured_server("llamacpp", text_format="llama3", script=[Reply(calls=calls)]) as server:
        llama3 = ask(server, tools=TOOLS).choices[0].message.content
    with flavoured_server("llamacpp", text_format="mistral", script=[Reply(calls=calls)]) as server:
        mistral = ask(server, tools=TOOLS).choices[0].message.content
    assert llama3.count("<|python_tag|>") == 1 and '"parameters": {}}' in llama3.split("; ")[1]
    assert json.loads(mistral.removeprefix("[TOOL_CALLS]"))[1] == {"name": "list_services", "arguments": {}}


def test_llamacpp_strict_template_errors_are_jinja_exceptions() -> None:
    two_users = [*QUESTION, {"role": "user", "content": "hello?"}]
    with flavoured_server("llamacpp", strict_template="mistral", script=[ANSWER]) as server:
        error = refusal(server, openai.InternalServerError, messages=two_users)
        assert ask(server).choices
    with flavoured_server("llamacpp", jinja=False, strict_template="mistral", script=[ANSWER]) as server:
        assert ask(server, messages=two_users).choices, "the built-in templates used without --jinja do not check"
    assert error.type == "server_error" and error.message.endswith(f"Error: Jinja Exception: {MISTRAL_V3}")


@pytest.mark.parametrize(
    "reasoning_format, content, extra",
    [
        ("deepseek", "fine", {"reasoning_content": "hm"}),
        ("none", "<think>\nhm\n</think>\n\nfine", {}),
    ],
)
def test_llamacpp_reasoning_format(reasoning_format: Any, content: str, extra: dict[str, str]) -> None:
    with flavoured_server(
        "llamacpp", reasoning_format=reasoning_format, script=[Reply(content="fine", reasoning="hm")]
    ) as s:
        message = ask(s).choices[0].message
    assert (message.content, message.model_extra) == (content, extra)


# LiteLLM proxy.


def test_litellm_wraps_upstream_errors_in_its_own_body() -> None:
    broken = [*QUESTION, {"role": "tool", "tool_call_id": "call_a", "content": "{}"}]
    with flavoured_server("litellm", script=[ANSWER]) as server:
        orphan = refusal(server, openai.BadRequestError, model="gpt-4o", messages=broken)
    assert orphan.body == {
        "message": "litellm.BadRequestError: OpenAIException - Invalid parameter: messages with role 'tool' must be a "
        "response to a preceeding message with 'tool_calls'.. Received Model Group=gpt-4o\n"
        "Available Model Group Fallbacks=None",
        "type": None,
        "param": None,
        "code": "400",
    }
    assert (orphan.param, orphan.code, orphan.type) == (None, "400", None), "the upstream's param is lost"


def test_litellm_passes_answers_through() -> None:
    with flavoured_server("litellm", script=a_call_then_answer) as server:
        call = ask(server, tools=TOOLS).choices[0].message.tool_calls[0]
        answer = ask(server, messages=after_call(call.id), tools=TOOLS).choices[0].message
    assert re.fullmatch(r"call_[A-Za-z0-9]{24}", call.id) and answer.content == ANSWER.content


def test_litellm_names_the_upstream_status_and_may_send_none_strings() -> None:
    upstream = VLLMFlavour(tool_parser=None, error_format="flat")
    limited = script(Reply(status=429, headers={"Retry-After": "0"}), ANSWER)
    with flavoured_server(LiteLLMFlavour(upstream=upstream, none_strings=True), script=limited) as server:
        throttled = refusal(server, openai.RateLimitError)
        tools = refusal(server, openai.BadRequestError, tools=TOOLS)
    assert throttled.message.startswith("Error code: 429 - litellm.RateLimitError: OpenAIException - scripted 429.")
    assert throttled.response.headers["Retry-After"] == "0"
    assert tools.message.startswith(f"Error code: 400 - litellm.BadRequestError: OpenAIException - {AUTO_TOOL_CHOICE}.")
    assert (tools.param, tools.type) == ("None", "None")


def test_litellm_streams_usage_on_the_last_choice_or_not_at_all() -> None:
    with flavoured_server("litellm", script=[ANSWER]) as server:
        chunks = events(server, stream_options={"include_usage": True})
    with flavoured_server("litellm", stream_usage="omitted", script=[ANSWER]) as server:
        omitted = events(server, stream_options={"include_usage": True})
    assert all(c["choices"] for c in chunks) and chunks[-1]["choices"][0]["finish_reason"] == "stop"
    assert chunks[-1]["usage"]["total_tokens"] > 0
    assert not any("usage" in c for c in omitted)


def test_a_flavour_instance_takes_no_extra_quirks() -> None:
    with pytest.raises(TypeError), flavoured_server(OllamaFlavour(), tools=False, script=[ANSWER]):
        pass


# A ReAct text model.


REACT_CALL: dict[str, str] = {
    "plain": 'Thought: I should call query_logs.\nAction: query_logs\nAction Input: {"service": "checkout"}',
    "lowercase": 'thought: I should call query_logs.\naction: query_logs\naction input: {"service": "checkout"}',
    "spaces": "Thought :   I should call query_logs.  \nAction :   query_logs  \n"
    'Action Input :   {"service": "checkout"}  ',
    "fullwidth": 'Thought：I should call query_logs.\nAction：query_logs\nAction Input：{"service": "checkout"}',
    "fenced": "Thought: I should call query_logs.\nAction: query_logs\n"
    'Action Input: \n```json\n{"service": "checkout"}\n```',
    "chinese": '思考：I should call query_logs.\n行动：query_logs\n行动输入：{"service": "checkout"}',
    "overrun": 'Thought: I should call query_logs.\nAction: query_logs\nAction Input: {"service": "checkout"}\n'
    "Observation: the logs show nothing unusual\nThought: I now know the final answer",
}
REACT_ANSWER: dict[str, str] = {
    "plain": "Thought: I now know the final answer\nFinal Answer: payments times out",
    "lowercase": "thought: I now know the final answer\nfinal answer: payments times out",
    "spaces": "Thought :   I now know the final answer  \nFinal Answer :   payments times out  ",
    "fullwidth": "Thought：I now know the final answer\nFinal Answer：payments times out",
    "fenced": "Thought: I now know the final answer\nFinal Answer: payments times out",
    "chinese": "思考：我现在知道最终答案了\n最终答案：payments times out",
    "overrun": "Thought: I now know the final answer\nFinal Answer: payments times out",
}


@pytest.mark.parametrize("variant", list(REACT_CALL))
def test_react_models_write_actions_and_answers_as_text(variant: ReActVariant) -> None:
    replies = [Reply(calls=[LOGS]), Reply(content="payments times out")]
    with flavoured_server("react", variant=variant, script=replies) as server:
        action = ask(server, tools=TOOLS).choices[0]
        observed = [*QUESTION, {"role": "assistant", "content": action.message.content}]
        observed.append({"role": "user", "content": 'Observation: {"lines": ["502 from payments"]}'})
        final = ask(server, messages=observed).choices[0]
    assert (action.message.content, action.message.tool_calls, action.finish_reason) == (
        REACT_CALL[variant],
        None,
        "stop",
    )
    assert final.message.content == REACT_ANSWER[variant]


def test_react_thoughts_come_from_the_reply_and_each_call_gets_a_block() -> None:
    calls = [LOGS, Call("list_services", {})]
    replies = [
        Reply(content="Logs first.", calls=calls, reasoning="Checkout is failing."),
        Reply(content="Logs first.", calls=calls),
    ]
    with flavoured_server("react", script=replies) as server:
        reasoned = ask(server).choices[0].message.content
        said = ask(server).choices[0].message.content
    assert reasoned.split("\n")[::3] == ["Thought: Checkout is failing.", "Thought: Checkout is failing."]
    assert reasoned.endswith("Action: list_services\nAction Input: {}")
    assert said.startswith("Thought: Logs first.\nAction: query_logs")


@pytest.mark.parametrize("kind", ["openai", "vllm", "ollama", "llamacpp", "litellm", "react"])
def test_every_kind_serves_a_scripted_answer(kind: Kind) -> None:
    with flavoured_server(kind, script=[ANSWER]) as server:
        assert ANSWER.content in (ask(server).choices[0].message.content or "")
