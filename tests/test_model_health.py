"""How a failed model or Redis is worded in the terminal: a setting to fix is never "ask again in
a minute", a passing failure is. What Slack says instead is in tests/test_slack_faults.py."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from redis.exceptions import AuthenticationError
from redis.exceptions import ConnectionError as RedisConnectionError

from opsbot.bot.agent import Agent, StopReason
from opsbot.bot.faults import Part
from opsbot.bot.llm import ModelClient
from opsbot.bot.memory import InProcessMemory
from opsbot.bot.memory.redis import RedisMemory
from opsbot.bot.redis.client import lasting
from opsbot.config.settings import SAMPLE_CONFIG, LoopLimits
from tests.fakes.model_server import ModelServer, Reply, script
from tests.fakes.redis_server import RedisServer, free_port
from tests.fakes.serve_process import base_env


def client_for(url: str, model: str = "scripted") -> ModelClient:
    return ModelClient(model=model, base_url=url, max_retries=0, timeout_s=5)


def closed_url() -> str:
    """An address where nothing listens: the port was free a moment ago."""
    return f"http://127.0.0.1:{free_port()}/v1"


# ---------------------------------------------------------------- model failures, as the terminal says them


def agent_on(client: ModelClient) -> Agent:
    return Agent(client, InProcessMemory(), tools=[], limits=LoopLimits(tool_retry_backoff_s=0.01))


def test_a_closed_model_port_is_a_setting_to_fix_not_a_minute_to_wait() -> None:
    url = closed_url()
    reply = agent_on(client_for(url)).run("why 502?")

    assert reply.stop_reason is StopReason.llm_unavailable
    assert reply.fault is not None and reply.fault.part is Part.model and reply.fault.lasting
    assert "connection refused" in reply.text and "OPENAI_BASE_URL" in reply.text and url in reply.text
    assert "ask again in a minute" not in reply.text and "will not help until that is fixed" in reply.text


def test_a_model_the_server_does_not_serve_is_a_setting_to_fix() -> None:
    # OpenAI's answer for a model it does not have; vLLM and Ollama say it in other words, with a 404 too.
    not_found = {
        "error": {
            "message": "The model `scripted` does not exist or you do not have access to it.",
            "type": "invalid_request_error",
            "code": "model_not_found",
        }
    }
    with ModelServer(lambda body: Reply(status=404, error=not_found)) as server:
        reply = agent_on(client_for(server.base_url)).run("why 502?")

    assert reply.fault is not None and reply.fault.lasting
    assert "does not serve model 'scripted'" in reply.text and "OPSBOT_MODEL" in reply.text
    assert "ask again in a minute" not in reply.text


def test_a_404_that_is_not_about_the_model_points_at_the_address() -> None:
    with ModelServer(lambda body: Reply(status=404, error={"detail": "Not Found"})) as server:
        reply = agent_on(client_for(server.base_url)).run("why 502?")

    assert reply.fault is not None and reply.fault.lasting
    assert "OPENAI_BASE_URL usually ends in /v1" in reply.text and "OPSBOT_MODEL" not in reply.text


@pytest.mark.parametrize("status", [500, 503, 429])
def test_a_server_error_or_rate_limit_is_worth_asking_again(status: int) -> None:
    with ModelServer(lambda body: Reply(status=status)) as server:
        reply = agent_on(client_for(server.base_url)).run("why 502?")

    assert reply.fault is not None and not reply.fault.lasting
    assert "ask again in a minute" in reply.text


# ---------------------------------------------------------------- Redis failures


def test_a_redis_url_where_nothing_listens_is_a_setting_to_fix(tmp_path: Path) -> None:
    redis_url = f"redis://127.0.0.1:{free_port()}/0"
    with ModelServer(script(Reply(content="fine"))) as server:
        done = subprocess.run(
            [sys.executable, "-m", "opsbot.bot", "--config", str(SAMPLE_CONFIG), "ask", "why 502?"],
            env={**base_env(), "OPENAI_BASE_URL": server.base_url, "REDIS_URL": redis_url},
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
        )

    assert done.returncode == 3, done.stderr
    assert "check REDIS_URL" in done.stdout and "ask again" not in done.stdout, done.stdout
    assert "Traceback" not in done.stderr


def test_a_redis_that_answered_and_then_refuses_is_restarting_so_worth_asking_again(tmp_path: Path) -> None:
    server = RedisServer(tmp_path)
    server.start()
    try:
        memory = RedisMemory(server.url)
        memory.load("t", new_turn=True)  # Redis answered this process
        server.stop()
        with ModelServer(script(Reply(content="fine"))) as model:
            reply = Agent(client_for(model.base_url), memory, tools=[]).run("why 502?", thread="t")
    finally:
        server.stop()

    assert reply.stop_reason is StopReason.memory_unavailable
    assert reply.fault is not None and reply.fault.part is Part.redis and not reply.fault.lasting
    assert "ask again in a moment" in reply.text


def test_refused_credentials_are_lasting_whenever_they_come() -> None:
    assert lasting(AuthenticationError("invalid username-password pair"), answered_before=True)
    refused = RedisConnectionError("Error 111 connecting to 127.0.0.1:1. Connection refused.")
    refused.__context__ = ConnectionRefusedError(111, "Connection refused")
    assert lasting(refused, answered_before=False) and not lasting(refused, answered_before=True)
