"""opsbot against each server family as it really answers (tests/fakes/servers.py, built from the
servers' own sources and documented errors), one test per quirk: the whole loop, the real
`openai` client, real HTTP. Every fake also refuses any request breaking OpenAI's pairing rules
(tests/fakes/checks.py), so each test checks opsbot's requests too."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from opsbot.bot.agent import Agent
from opsbot.bot.llm import ModelClient, Protocol
from opsbot.bot.memory import InProcessMemory
from opsbot.config.settings import LoopLimits, Settings
from opsbot.tools.catalog import ops_tools
from tests.fakes.checks import openai_error
from tests.fakes.model_server import Call, ModelServer, Reply, tool_results
from tests.fakes.servers import LiteLLMFlavour, OpenAIFlavour, VLLMFlavour, flavoured_server

LOGS = Call("query_logs", {"service": "checkout", "level": "ERROR"})
ANSWER = "checkout's 502s come from payments timing out"


def investigate(body: dict[str, Any]) -> Reply:
    """The model: read checkout's error logs, then answer from them."""
    return Reply(content=ANSWER) if tool_results(body) or _observed(body) else Reply(calls=[LOGS])


def _observed(body: dict[str, Any]) -> bool:
    """A text-protocol conversation: the tool's result came back as a user message."""
    return any(m["role"] == "user" and "Observation:" in (m.get("content") or "") for m in body["messages"][1:])


def agent_on(server: ModelServer, sample: Settings, **client: Any) -> Agent:
    model = ModelClient(model=client.pop("model", "scripted"), base_url=server.base_url, max_retries=0, **client)
    return Agent(model, InProcessMemory(), tools=ops_tools(sample.policy), limits=LoopLimits(tool_retry_backoff_s=0.01))


@contextmanager
def served(kind: Any, **quirks: Any) -> Iterator[ModelServer]:
    with flavoured_server(kind, script=quirks.pop("script", investigate), **quirks) as server:
        yield server


def investigated(agent: Agent) -> None:
    reply = agent.run("why is checkout returning 502s?", thread="t")
    assert reply.stop_reason == "answered", reply.text
    assert reply.text == ANSWER and reply.checked
    assert [(c.tool, c.status) for s in reply.steps for c in s.calls] == [("query_logs", "ok")]


# ---------------------------------------------------------------- vLLM


def test_vllm_without_a_tool_parser_refuses_tools_and_auto_speaks_react(sample, caplog) -> None:
    caplog.set_level(logging.WARNING, logger="opsbot.llm")
    with served("vllm", auto_tool_choice=False, tool_parser=None) as server:
        agent = agent_on(server, sample)
        investigated(agent)
        assert agent.model is not None and agent.model.protocol is Protocol.react
    assert "speaking react" in caplog.text
    # Refused once; every later request is text (no `tools`), the tools described in the system message.
    assert "tools" in server.requests[0] and all("tools" not in body for body in server.requests[1:])
    assert "Action Input" in server.requests[1]["messages"][0]["content"]


def test_vllm_hermes_calls_left_as_text_are_run(sample) -> None:
    # A request without tools gets the call as <tool_call> text: the final, tool-less step shows it.
    with served(VLLMFlavour(tool_parser="hermes"), script=investigate) as server:
        investigated(agent_on(server, sample))


@pytest.mark.parametrize("field", ["reasoning", "reasoning_content", "raw"])
def test_vllm_reasoning_in_any_field_is_not_the_answer(sample, field) -> None:
    script = [Reply(calls=[LOGS], reasoning="look at logs"), Reply(content=ANSWER, reasoning="the pool is it")]
    with served("vllm", reasoning=field, script=script) as server:
        reply = agent_on(server, sample).run("why?", thread="t")
    assert reply.text == ANSWER and "pool is it" not in reply.text


def test_vllm_mistral_needs_nine_character_ids_and_alternating_roles(sample) -> None:
    script = [Reply(content=""), Reply(calls=[LOGS]), Reply(content=ANSWER)]  # an empty reply: a nudge follows
    with served("vllm", mistral=True, strict_template="mistral", script=script) as server:
        reply = agent_on(server, sample).run("why?", thread="t")
    assert reply.text == ANSWER and reply.stop_reason == "answered"


# ---------------------------------------------------------------- Ollama


def test_ollama_model_without_tools_is_spoken_to_in_react(sample) -> None:
    with served("ollama", tools=False) as server:
        investigated(agent_on(server, sample))


@pytest.mark.parametrize("ids", ["per_message", "empty"])
def test_ollama_repeated_or_empty_ids_are_made_unique(sample, ids) -> None:
    two = Reply(calls=[LOGS, Call("query_logs", {"service": "payments", "level": "ERROR"})])
    script = [two, Reply(calls=[Call("list_services", {})]), Reply(content=ANSWER)]
    with served("ollama", ids=ids, script=script) as server:
        agent = agent_on(server, sample)
        assert agent.run("why?", thread="t").text == ANSWER
        assert agent.run("and now?", thread="t").stop_reason == "answered"  # the thread's ids stay unique


@pytest.mark.parametrize("think", ["tags", "open_missing"])
def test_ollama_think_tags_are_kept_out_of_the_answer(sample, think) -> None:
    script = [Reply(content=ANSWER, reasoning="I think it is the pool")]
    with served("ollama", think=think, script=script) as server:
        reply = agent_on(server, sample).run("why?", thread="t")
    assert reply.text == ANSWER


# ---------------------------------------------------------------- llama.cpp


def test_llamacpp_without_jinja_refuses_tools_with_a_500_and_auto_speaks_react(sample) -> None:
    with served("llamacpp", jinja=False) as server:
        agent = agent_on(server, sample)
        investigated(agent)
        assert agent.model is not None and agent.model.protocol is Protocol.react


@pytest.mark.parametrize("text_format", ["mistral", "llama3", "bare_json", "fenced", "hermes"])
def test_llamacpp_calls_written_as_text_are_run(sample, text_format) -> None:
    with served("llamacpp", text_format=text_format) as server:
        investigated(agent_on(server, sample))


def test_llamacpp_that_cannot_stream_with_tools_is_asked_without_streaming(sample) -> None:
    with served("llamacpp", tools_with_stream=False) as server:
        agent = agent_on(server, sample)
        investigated(agent)
        assert agent.model is not None and agent.model.stream is False


def test_a_template_that_only_alternates_gets_text_tool_calls(sample) -> None:
    """Such a template cannot hold tool messages: auto speaks ReAct to it, whose requests alternate
    (an empty reply's nudge joins the question rather than following it)."""
    script = [Reply(content=""), Reply(calls=[LOGS]), Reply(content=ANSWER)]
    with served("llamacpp", strict_template="alternate", script=script) as server:
        agent = agent_on(server, sample)
        assert agent.run("why?", thread="t").text == ANSWER
        assert agent.model is not None and agent.model.protocol is Protocol.react


# ---------------------------------------------------------------- OpenAI's reasoning models, and through LiteLLM


@pytest.mark.parametrize(
    "flavour", [OpenAIFlavour(), LiteLLMFlavour(upstream=OpenAIFlavour())], ids=["openai", "litellm"]
)
def test_reasoning_models_get_max_completion_tokens_and_no_temperature(sample, flavour, caplog) -> None:
    caplog.set_level(logging.INFO, logger="opsbot.llm")
    with served(flavour, script=investigate) as server:
        agent = agent_on(server, sample, model="o4-mini")
        investigated(agent)
        agent.run("and now?", thread="t")
        refused = sum(1 for body in server.requests if "max_tokens" in body or body.get("temperature") == 0)
        last = server.requests[-1]
    assert refused == 2, "each parameter refused once, then remembered for the endpoint"
    assert "max_completion_tokens" in last and "temperature" not in last and "max_tokens" not in last
    assert "refused max_tokens" in caplog.text and "refused temperature" in caplog.text


def test_extra_body_reaches_the_server(sample) -> None:
    with served("vllm", script=[Reply(content=ANSWER)]) as server:
        agent_on(server, sample, extra_body={"top_k": 20, "chat_template_kwargs": {"enable_thinking": False}}).run(
            "hi", thread="t"
        )
    assert server.requests[0]["top_k"] == 20 and server.requests[0]["chat_template_kwargs"] == {
        "enable_thinking": False
    }


# ---------------------------------------------------------------- text models


@pytest.mark.parametrize("variant", ["plain", "lowercase", "spaces", "fullwidth", "fenced", "chinese", "overrun"])
def test_a_react_text_model_is_understood_and_auto_switches(sample, variant) -> None:
    with served("react", variant=variant) as server:
        agent = agent_on(server, sample)
        investigated(agent)
        assert agent.model is not None and agent.model.protocol is Protocol.react


def test_the_json_protocol_when_configured(sample) -> None:
    def model(body: dict[str, Any]) -> Reply:
        said = [m.get("content") or "" for m in body["messages"]]
        if any(text.startswith("Tool result:") for text in said):
            return Reply(content='{"answer": "' + ANSWER + '"}')
        return Reply(content='{"tool": "query_logs", "arguments": {"service": "checkout", "level": "ERROR"}}')

    with served("openai", script=model) as server:
        investigated(agent_on(server, sample, protocol=Protocol.json))
    assert all("tools" not in body for body in server.requests)


def test_a_server_that_ignores_stream_is_asked_plainly_from_then_on(sample) -> None:
    with served("openai", script=lambda body: dataclasses.replace(investigate(body), stream=False)) as server:
        agent = agent_on(server, sample)
        investigated(agent)
        assert agent.model is not None and agent.model.stream is False


def test_a_400_about_a_tool_schema_is_not_taken_for_a_server_without_tools(sample) -> None:
    refused = Reply(status=400, error=openai_error("Invalid 'tools[0].function.name': string does not match pattern"))
    with served("openai", script=[refused]) as server:
        agent = agent_on(server, sample)
        reply = agent.run("why?", thread="t")
    assert reply.stop_reason == "llm_unavailable" and "does not match pattern" in reply.text
    assert agent.model is not None and agent.model.protocol is Protocol.native
