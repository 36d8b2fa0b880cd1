"""What opsbot sends a model server is what it built: the body goes out through the `openai`
client's `post`, without the SDK's per-request walk over its parameter types (`maybe_transform`,
which costs about 80 µs a message on every request). That walk must have nothing to change in
any body opsbot sends, or skipping it would change what servers get: every body a real run sends,
and bodies built from any text, are checked against it here. The client's key still goes as
`Authorization: Bearer`, and `llm.extra_body` still reaches the server."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai._utils import maybe_transform
from openai.types.chat import completion_create_params

from opsbot.bot.agent import Agent
from opsbot.bot.llm import ModelClient, Protocol
from opsbot.bot.memory import InProcessMemory
from opsbot.bot.messages import Message, ToolCallSpec
from opsbot.config.settings import LoopLimits, MemorySettings, Settings
from opsbot.tools.catalog import ops_tools
from tests.fakes.model_server import Call, ModelServer, Reply, is_summary_request, tool_results

KEY = "sk-opsbot-test-0123456789abcdef"
# The same call as a JSON-protocol reply and as a ReAct one (indexed by "the prompt speaks ReAct").
TEXT_CALLS = (
    '{"tool": "query_logs", "arguments": {"service": "checkout", "level": "ERROR"}}',
    'Thought: the logs first.\nAction: query_logs\nAction Input: {"service": "checkout", "level": "ERROR"}',
)
EXTRA = {"top_k": 20, "chat_template_kwargs": {"enable_thinking": False}}


def sdk_would_send(body: dict[str, Any]) -> dict[str, Any]:
    """The body as `chat.completions.create` would send it: its parameters walked by the SDK."""
    params = (
        completion_create_params.CompletionCreateParamsStreaming
        if body.get("stream")
        else completion_create_params.CompletionCreateParamsNonStreaming
    )
    return maybe_transform(body, params)


ANSWER = 'checkout\'s 502s come from payments timing out — «quoted» "as read"\n\n- step 1\n- step 2'


def investigating(body: dict[str, Any]) -> Reply:
    """Natively, two steps of calls (two at once, then a command), then an answer; in a text
    protocol, one call written as its text, then the answer."""
    if is_summary_request(body):
        return Reply(content="Earlier: checkout's 502s were traced to payments.")
    done = len(tool_results(body))
    if "tools" not in body:
        last = body["messages"][-1]
        if last["role"] == "user" and "Observation" not in last["content"] and "result" not in last["content"]:
            return Reply(content=TEXT_CALLS[body["messages"][0]["content"].count("Action Input") > 0])
        return Reply(content=ANSWER)
    if done == 0:
        return Reply(
            content="Looking at the logs and the config first.",
            calls=[
                Call("query_logs", {"service": "checkout", "level": "ERROR"}),
                Call("read_config", {"name": "checkout"}),
            ],
        )
    if done == 2:
        return Reply(calls=[Call("run_command", {"command": "uptime"})])
    return Reply(content=ANSWER)


def ran(server: ModelServer, sample: Settings, protocol: Protocol, stream: bool) -> None:
    model = ModelClient(
        model="scripted",
        base_url=server.base_url,
        api_key=KEY,
        max_retries=0,
        protocol=protocol,
        extra_body=EXTRA,
        stream=stream,
    )
    agent = Agent(
        model,
        InProcessMemory(),
        tools=ops_tools(sample.policy),
        limits=LoopLimits(tool_retry_backoff_s=0.01),
        memory_settings=MemorySettings(window_tokens=200, summary_tokens=50),
    )
    for question in ("why is checkout returning 502s?", "and is payments' pool exhausted? ünïcödé ✓"):
        reply = agent.run(question, thread="t")
        assert reply.stop_reason == "answered", reply.text


@pytest.mark.parametrize("protocol", [Protocol.native, Protocol.react, Protocol.json])
@pytest.mark.parametrize("stream", [True, False])
def test_every_body_a_run_sends_is_what_the_sdk_would_send(sample, protocol, stream) -> None:
    with ModelServer(investigating) as server:
        ran(server, sample, protocol, stream)
    assert len(server.requests) >= 5
    assert any(is_summary_request(body) for body in server.requests)  # the summary call's body too
    for body in server.requests:
        assert sdk_would_send(body) == body
        assert body["top_k"] == 20 and body["chat_template_kwargs"] == {"enable_thinking": False}
        assert ("tools" in body) is (protocol is Protocol.native and not is_summary_request(body))
    assert all(headers["authorization"] == f"Bearer {KEY}" for headers in server.headers)


texts = st.text(max_size=40)
calls = st.builds(
    ToolCallSpec, id=st.text(min_size=1, max_size=12), name=st.text(min_size=1, max_size=12), arguments=texts
)
messages = st.one_of(
    st.builds(Message.system, texts),
    st.builds(Message.user, texts),
    st.builds(Message.assistant, texts, st.lists(calls, max_size=3)),
    st.builds(Message.tool, st.text(min_size=1, max_size=12), texts),
)


@pytest.fixture(scope="module")
def echo_server():
    with ModelServer(lambda body: Reply(content="ok"), check_ordering=False) as server:
        yield server


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(history=st.lists(messages, min_size=1, max_size=8), stream=st.booleans())
def test_bodies_from_any_text_are_what_the_sdk_would_send(echo_server, history, stream) -> None:
    model = ModelClient(
        model="scripted", base_url=echo_server.base_url, max_retries=0, stream=stream, protocol=Protocol.native
    )
    tools = [
        {"type": "function", "function": {"name": "ping", "description": "ping", "parameters": {"type": "object"}}}
    ]
    before = len(echo_server.requests)

    class Sink:
        def text(self, piece: str) -> None: ...
        def reset(self) -> None: ...

    model.complete([m.to_api() for m in history], tools=tools, sink=Sink())
    body = echo_server.requests[before]
    assert sdk_would_send(body) == body
