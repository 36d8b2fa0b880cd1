"""What real servers send, round three (issue 30): gpt-oss's Harmony passed through as text, calls
named behind a namespace, Qwen3-Coder's XML calls, and an error event inside a stream. Each case
through the whole loop, the real `openai` client and real HTTP (tests/fakes/model_server.py),
citing where the behaviour is documented or reported."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from opsbot.bot.agent import Agent
from opsbot.bot.agent import Reply as AgentReply
from opsbot.bot.agent.reply import StopReason
from opsbot.bot.llm import Fallbacks, ModelClient
from opsbot.bot.memory import InProcessMemory
from opsbot.config.settings import LoopLimits, Settings
from opsbot.tools.catalog import ops_tools
from tests.fakes.model_server import Call, ModelServer, Reply
from tests.fakes.redis_server import free_port

ANSWER = "checkout's 502s come from payments timing out"
ARGS = '{"service": "checkout", "level": "ERROR"}'


class Asked(NamedTuple):
    reply: AgentReply
    pauses: list[float]  # between attempts after an error inside a stream
    requests: list[dict[str, Any]]


def ask(written: str | list[Reply], sample: Settings, *, stream: bool = True, retries: int = 0, **client: Any) -> Asked:
    """The question asked of a model that writes `written` (its first reply) and then answers."""
    first = [Reply(content=written)] if isinstance(written, str) else written
    replies = iter([*first, Reply(content=ANSWER)])

    def script(body: dict[str, Any]) -> Reply:
        return next(replies)

    pauses: list[float] = []
    with ModelServer(script) as server:
        model = ModelClient(
            model="scripted",
            base_url=server.base_url,
            max_retries=retries,
            stream=stream,
            sleep=pauses.append,
            **client,
        )
        agent = Agent(model, InProcessMemory(), tools=ops_tools(sample.policy), limits=LoopLimits())
        reply = agent.run("why is checkout returning 502s?", thread="t")
    return Asked(reply, pauses, server.requests)


def run(written: str | list[Reply], sample: Settings, *, stream: bool = True) -> AgentReply:
    return ask(written, sample, stream=stream).reply


def calls_of(reply: AgentReply) -> list[tuple[str, str]]:
    return [(c.tool, c.status) for s in reply.steps for c in s.calls]


# ---------------------------------------------------------------- gpt-oss: Harmony as text

# OpenAI's harmony guide (cookbook.openai.com/articles/openai-harmony, "Receiving tool calls"):
# the recipient after the channel, or before it in the header; `<|constrain|>json`; `<|call|>`.
HARMONY_CALLS = [
    "<|channel|>analysis<|message|>Need checkout's errors.<|end|>"
    f"<|start|>assistant<|channel|>commentary to=functions.query_logs <|constrain|>json<|message|>{ARGS}<|call|>",
    f"<|start|>assistant to=functions.query_logs<|channel|>commentary json<|message|>{ARGS}<|call|>",
    # Special tokens skipped by the server (oobabooga/textgen#7374: `analysisUser says ...assistantfinal...`).
    f"analysisNeed checkout's errors.assistantcommentary to=functions.query_logs json{ARGS}",
]


@pytest.mark.parametrize("written", HARMONY_CALLS)
@pytest.mark.parametrize("stream", [True, False])
def test_gpt_oss_harmony_calls_written_as_text_are_run(written: str, stream: bool, sample: Settings) -> None:
    reply = run(written, sample, stream=stream)
    assert reply.stop_reason == StopReason.answered and reply.text == ANSWER and reply.checked
    assert calls_of(reply) == [("query_logs", "ok")]
    assert "<|" not in json.dumps(reply.model_dump(mode="json"))


@pytest.mark.parametrize(
    "written",
    [
        "<|channel|>analysis<|message|>The logs say payments times out.<|end|>"
        f"<|start|>assistant<|channel|>final<|message|>{ANSWER}<|return|>",
        f"analysisThe logs say payments times out.assistantfinal{ANSWER}",
    ],
)
def test_gpt_oss_harmony_answer_is_the_final_channel_and_the_analysis_is_thinking(
    written: str, sample: Settings
) -> None:
    reply = run([Reply(calls=[Call("query_logs", json.loads(ARGS))]), Reply(content=written)], sample)
    assert reply.stop_reason == StopReason.answered
    assert reply.text.startswith(ANSWER) and "payments times out." not in reply.text.replace(ANSWER, "")
    assert "analysis" not in reply.text and "<|" not in reply.text


# ---------------------------------------------------------------- names behind a namespace


@pytest.mark.parametrize(
    "name",
    [
        "functions.query_logs",  # gpt-oss through some servers (cubist38/mlx-openai-server#51, tontinton/maki#518)
        "tools.query_logs",
        "default_api:query_logs",
        "query_logs<|channel|>commentary",  # special tokens in the name (vllm-project/vllm#32587)
    ],
)
def test_a_call_named_behind_a_namespace_runs_the_offered_tool_and_says_so(name: str, sample: Settings) -> None:
    reply = run([Reply(calls=[Call(name, json.loads(ARGS))])], sample)
    assert reply.stop_reason == StopReason.answered and reply.text == ANSWER
    assert calls_of(reply) == [("query_logs", "ok")]
    assert f"{name} -> query_logs" in (reply.steps[0].note or "")


def test_a_name_that_is_no_offered_tool_behind_its_namespace_stays_unknown(sample: Settings) -> None:
    reply = run([Reply(calls=[Call("functions.query_everything", {})])], sample)
    assert calls_of(reply) == [("functions.query_everything", "unknown_tool")]


# ---------------------------------------------------------------- Qwen3-Coder's XML calls

# Qwen3-Coder's chat template and vLLM's qwen3coder tool parser: `<function=NAME>` holding one
# `<parameter=KEY>` per argument, values on their own lines.
QWEN_XML = (
    "<tool_call>\n<function=query_logs>\n<parameter=service>\ncheckout\n</parameter>\n"
    "<parameter=level>\nERROR\n</parameter>\n<parameter=limit>\n5\n</parameter>\n</function>\n</tool_call>"
)


@pytest.mark.parametrize("stream", [True, False])
def test_qwen3_coder_xml_calls_are_run_with_their_parameters(stream: bool, sample: Settings) -> None:
    reply = run(QWEN_XML, sample, stream=stream)
    assert reply.stop_reason == StopReason.answered and reply.text == ANSWER
    assert calls_of(reply) == [("query_logs", "ok")]
    assert "<function=" not in reply.text
    assert reply.steps[0].calls[0].args == {"service": "checkout", "level": "ERROR", "limit": "5"}


# ---------------------------------------------------------------- an error event inside a stream

# OpenRouter ("Errors" > "Error during streaming": `data: {"error": ...}` after a 200) and LiteLLM
# send an error event when the upstream provider fails mid-answer; the openai SDK raises it as an
# APIError after the 200, which it does not retry.
UPSTREAM = {"message": "Provider returned error: upstream overloaded", "code": 502}


def test_an_error_event_in_the_stream_is_asked_again_like_a_5xx(sample: Settings) -> None:
    broken = Reply(content="checkout's 502s come from", stream_error=UPSTREAM)
    asked = ask([broken], sample, retries=2)
    assert asked.reply.stop_reason == StopReason.answered and asked.reply.text == ANSWER
    assert asked.pauses == [0.5] and len(asked.requests) == 2


def test_an_error_event_every_time_ends_as_model_unavailable_with_the_providers_words(sample: Settings) -> None:
    broken = Reply(content="checkout's 502s come from", stream_error=UPSTREAM)
    asked = ask([broken, broken, broken], sample, retries=2)
    reply = asked.reply
    assert reply.stop_reason == StopReason.llm_unavailable
    assert asked.pauses == [0.5, 1.0] and len(asked.requests) == 3
    assert reply.fault is not None and not reply.fault.lasting
    assert "upstream overloaded" in reply.fault.detail and "after 3 attempt(s)" in reply.fault.detail


# ---------------------------------------------------------------- tool-call deltas, however a server streams them

LOGS_CALL = {"name": "query_logs", "arguments": ARGS}
UPTIME = {"name": "run_command", "arguments": '{"command": "uptime"}'}


def pieces(text: str, size: int = 7) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


DELTA_SHAPES = {
    # OpenAI's own: id and name first, then the arguments in pieces, all under one index.
    "openai": [
        {"index": 0, "id": "c1", "type": "function", "function": {"name": "query_logs", "arguments": ""}},
        *({"index": 0, "function": {"arguments": p}} for p in pieces(ARGS)),
    ],
    # No index at all: the pieces continue the call they follow.
    "no index": [
        {"id": "c1", "type": "function", "function": {"name": "query_logs", "arguments": ""}},
        *({"function": {"arguments": p}} for p in pieces(ARGS)),
    ],
    # The id and the whole name again in every delta.
    "id and name repeated": [
        {"index": 0, "id": "c1", "type": "function", "function": {"name": "query_logs", "arguments": p}}
        for p in pieces(ARGS)
    ],
    # Each delta carries the arguments so far, not the new piece.
    "cumulative arguments": [
        {"index": 0, "id": "c1", "type": "function", "function": {"name": "query_logs", "arguments": ARGS[:n]}}
        for n in range(8, len(ARGS) + 1, 8)
    ]
    + [{"index": 0, "function": {"arguments": ARGS}}],
}


@pytest.mark.parametrize("shape", sorted(DELTA_SHAPES))
def test_tool_call_deltas_are_assembled_however_they_come(shape: str, sample: Settings) -> None:
    reply = run([Reply(call_deltas=DELTA_SHAPES[shape], finish_reason="tool_calls")], sample)
    assert reply.stop_reason == StopReason.answered and reply.text == ANSWER
    assert calls_of(reply) == [("query_logs", "ok")]
    assert reply.steps[0].calls[0].args == json.loads(ARGS)


@pytest.mark.parametrize(
    "deltas",
    [
        # Parallel calls, each under index 0 with its own id.
        [
            {"index": 0, "id": "c1", "type": "function", "function": LOGS_CALL},
            {"index": 0, "id": "c2", "type": "function", "function": UPTIME},
        ],
        # Whole calls without index or id, one after the other.
        [{"type": "function", "function": LOGS_CALL}, {"type": "function", "function": UPTIME}],
    ],
)
def test_parallel_calls_stay_apart_whatever_their_indexes(deltas: list[dict[str, Any]], sample: Settings) -> None:
    reply = run([Reply(call_deltas=deltas, finish_reason="tool_calls")], sample)
    assert sorted(calls_of(reply)) == [("query_logs", "ok"), ("run_command", "ok")]


# ---------------------------------------------------------------- every way a reply can end is said

# OpenAI's chat completions: finish_reason is stop, length, tool_calls, content_filter or
# function_call; `refusal` holds the model's refusal. Other servers add their own values.


@pytest.mark.parametrize("stream", [True, False])
def test_a_reply_a_content_filter_stopped_says_so_beside_what_came(stream: bool, sample: Settings) -> None:
    reply = run([Reply(content="checkout's 502s come", finish_reason="content_filter")], sample, stream=stream)
    assert reply.stop_reason == StopReason.answered
    assert reply.text.startswith("checkout's 502s come")
    assert "content filter stopped the model's reply (finish_reason: content_filter)" in reply.text
    assert reply.ended is not None and "content_filter" in reply.ended


@pytest.mark.parametrize("reason", ["content_filter", "insufficient_system_resource", "abort\u202e"])
def test_a_reply_with_nothing_in_it_says_how_it_ended_instead_of_nothing(reason: str, sample: Settings) -> None:
    asked = ask([Reply(content="", finish_reason=reason)], sample)
    reply = asked.reply
    assert reply.stop_reason == StopReason.no_answer and reply.ended is not None
    assert reply.text.startswith("I stopped: ") and "replied with nothing" not in reply.text
    assert "\u202e" not in reply.text  # a server's word is shown inert
    assert len(asked.requests) == 1, "a filtered reply is not asked for again"


@pytest.mark.parametrize("stream", [True, False])
def test_a_refusal_is_the_answer_in_the_models_words(stream: bool, sample: Settings) -> None:
    reply = run([Reply(content=None, refusal="I can't help with that request.")], sample, stream=stream)
    assert reply.text == "The model declined to answer: I can't help with that request."
    assert reply.ended == "the model declined to answer"


def test_plain_ends_say_nothing_more(sample: Settings) -> None:
    for reason in ("stop", "eos", "end_turn"):
        reply = run([Reply(content=ANSWER, finish_reason=reason)], sample)
        assert reply.text == ANSWER and reply.ended is None


# ---------------------------------------------------------------- a stream that goes silent

SILENT = Reply(content="checkout's 502s come from payments timing", chunk_delay_s=5.0)


def test_a_stream_that_goes_silent_is_given_up_and_asked_again_once(sample: Settings) -> None:
    asked = ask([SILENT], sample, stream_idle_timeout_s=0.3)
    assert asked.reply.stop_reason == StopReason.answered and asked.reply.text == ANSWER
    assert len(asked.requests) == 2


def test_a_stream_silent_twice_is_model_unavailable_saying_so(sample: Settings) -> None:
    reply = ask([SILENT, SILENT], sample, stream_idle_timeout_s=0.3).reply
    assert reply.stop_reason == StopReason.llm_unavailable
    assert reply.fault is not None and "went silent for 0.3s in the middle of its answer, twice" in reply.fault.detail


# ---------------------------------------------------------------- a thread that outgrows the model's context

# OpenAI's 400 for a request over the context (code `context_length_exceeded`); vLLM answers with
# "This model's maximum context length is N tokens" and llama.cpp with "exceeds the available context size".
TOO_LONG = {
    "error": {
        "message": "This model's maximum context length is 4096 tokens. However, your messages resulted in 5210 "
        "tokens. Please reduce the length of the messages.",
        "type": "invalid_request_error",
        "param": "messages",
        "code": "context_length_exceeded",
    }
}
LONG_ANSWER = "payments timed out again; " * 150  # ~3,900 characters a turn


def test_a_thread_that_outgrows_the_context_is_asked_again_shorter_once_and_says_so(sample: Settings) -> None:
    limit = 9_000  # characters of messages the fake's "model" takes

    def model(body: dict[str, Any]) -> Reply:
        if len(json.dumps(body["messages"])) > limit:
            return Reply(status=400, error=TOO_LONG)
        return Reply(content=LONG_ANSWER)

    with ModelServer(model) as server:
        client = ModelClient(model="scripted", base_url=server.base_url, max_retries=0)
        agent = Agent(client, InProcessMemory(), tools=ops_tools(sample.policy), limits=LoopLimits())
        replies = [agent.run(f"question {n}", thread="long") for n in range(4)]
    assert [r.stop_reason for r in replies] == [StopReason.answered] * 4
    shrunk = [r for r in replies if any("too long for the model's context" in (s.note or "") for s in r.steps)]
    assert shrunk, "some question outgrew the context"
    asked = [b for b in server.requests if str(b["messages"][-1]["content"]).startswith("question")]
    refused = [b for b in asked if len(json.dumps(b["messages"])) > limit]
    assert len(refused) == len(shrunk), "each was asked again once, shorter"


def test_too_long_even_when_shorter_is_model_unavailable_saying_what_to_change(sample: Settings) -> None:
    reply = run([Reply(status=400, error=TOO_LONG), Reply(status=400, error=TOO_LONG)], sample)
    assert reply.stop_reason == StopReason.llm_unavailable
    assert reply.fault is not None and reply.fault.lasting
    assert "longer than the model's context" in reply.fault.detail and "loop.max_prompt_tokens" in reply.fault.detail


# ---------------------------------------------------------------- fallback models


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def fallback_agent(primary: ModelServer, backup: ModelServer, clock: Clock, sample: Settings) -> Agent:
    def client(server: ModelServer, name: str) -> ModelClient:
        return ModelClient(model=name, base_url=server.base_url, max_retries=0, sleep=lambda s: None)

    model = Fallbacks(client(primary, "primary-model"), [client(backup, "backup-model")], clock=clock)
    return Agent(model, InProcessMemory(), tools=ops_tools(sample.policy), limits=LoopLimits())


def test_a_fallback_answers_while_the_configured_model_is_down_and_it_is_asked_again_after_a_minute(
    sample: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    down = {"on": True}

    def primary(body: dict[str, Any]) -> Reply:
        return Reply(status=503) if down["on"] else Reply(content="primary here")

    clock = Clock()
    with ModelServer(primary) as first, ModelServer(lambda body: Reply(content="backup here")) as second:
        agent = fallback_agent(first, second, clock, sample)
        with caplog.at_level(logging.WARNING, logger="opsbot.llm"):
            one = agent.run("is checkout ok?", thread="t")
        assert (one.text, one.model, one.steps[-1].model) == ("backup here", "backup-model", "backup-model")
        assert "model primary-model is unavailable" in caplog.text and "backup-model answers" in caplog.text
        asked_first = len(first.requests)
        down["on"] = False
        two = agent.run("and now?", thread="t")
        assert two.model == "backup-model" and len(first.requests) == asked_first, "within the minute: the fallback"
        clock.now += 61
        three = agent.run("and now?", thread="t")
        assert (three.text, three.model) == ("primary here", "primary-model")


@pytest.mark.parametrize(
    ("status", "error"),
    [
        (401, {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}}),
        (404, {"error": {"message": "The model `primary-model` does not exist", "code": "model_not_found"}}),
    ],
)
def test_a_configuration_error_is_said_not_hidden_by_a_fallback(
    status: int, error: dict[str, Any], sample: Settings
) -> None:
    with (
        ModelServer(lambda body: Reply(status=status, error=error)) as first,
        ModelServer(lambda body: Reply(content="backup here")) as second,
    ):
        reply = fallback_agent(first, second, Clock(), sample).run("is checkout ok?", thread="t")
    assert reply.stop_reason == StopReason.llm_unavailable and second.requests == []
    assert reply.fault is not None and reply.fault.lasting


def test_every_model_down_is_said_with_each_ones_reason(sample: Settings) -> None:
    with ModelServer(lambda body: Reply(status=503)) as first, ModelServer(lambda body: Reply(status=502)) as second:
        reply = fallback_agent(first, second, Clock(), sample).run("is checkout ok?", thread="t")
    assert reply.stop_reason == StopReason.llm_unavailable and reply.fault is not None
    assert "primary-model: " in reply.fault.detail and "HTTP 503" in reply.fault.detail
    assert "backup-model: " in reply.fault.detail and "HTTP 502" in reply.fault.detail


def test_opsbot_ask_uses_the_configured_fallback_when_nothing_listens_for_the_model(tmp_path: Path) -> None:
    with ModelServer(lambda body: Reply(content="backup here"), models=["backup-model"]) as backup:
        config = tmp_path / "opsbot.yaml"
        config.write_text(
            "model: primary-model\n"
            f"llm:\n  max_retries: 0\n  fallbacks:\n    - model: backup-model\n      base_url: {backup.base_url}\n"
            "      api_key_env: BACKUP_KEY\n"
        )
        env = {"PATH": "/usr/bin:/bin", "OPENAI_BASE_URL": f"http://127.0.0.1:{free_port()}/v1", "BACKUP_KEY": "sk-b"}
        done = subprocess.run(
            [sys.executable, "-m", "opsbot.bot", "--config", str(config), "ask", "--json", "is checkout ok?"],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=tmp_path,
            env=env,
        )
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["text"] == "backup here" and answer["model"] == "backup-model"
    assert backup.requests[0]["model"] == "backup-model"
    assert "model primary-model is unavailable" in done.stderr
