"""Whether the model can be used, as `serve` finds out before anyone asks (ModelClient.check over
the real openai client, ModelWatch), and how a failed model or Redis is worded in the terminal:
a setting to fix is never "ask again in a minute", a passing failure is. What Slack says instead
is in tests/test_slack_faults.py; `serve`'s log and /healthz in tests/test_serve_checks.py."""

from __future__ import annotations

import json
import logging
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from redis.exceptions import AuthenticationError
from redis.exceptions import ConnectionError as RedisConnectionError

from opsbot.bot.agent import Agent, StopReason
from opsbot.bot.faults import Part
from opsbot.bot.llm import ModelClient, ModelHealth, ModelState, ModelWatch
from opsbot.bot.memory import InProcessMemory
from opsbot.bot.memory.redis import RedisMemory
from opsbot.bot.redis.client import lasting
from opsbot.config.settings import SAMPLE_CONFIG, LoopLimits
from tests.fakes.model_server import ModelServer, Reply, script
from tests.fakes.redis_server import RedisServer, free_port
from tests.fakes.serve_process import base_env
from tests.fakes.waiting import until


def client_for(url: str, model: str = "scripted") -> ModelClient:
    return ModelClient(model=model, base_url=url, max_retries=0, timeout_s=5)


def closed_url() -> str:
    """An address where nothing listens: the port was free a moment ago."""
    return f"http://127.0.0.1:{free_port()}/v1"


@contextmanager
def answering_models_with(status: int) -> Iterator[str]:
    """A server whose GET /v1/models answers `status` with an OpenAI-shaped error; its base URL."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            data = json.dumps({"error": {"message": f"scripted {status}", "type": "scripted"}}).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


# ---------------------------------------------------------------- the check


def test_a_server_that_lists_the_model_is_ok() -> None:
    with ModelServer(script(), models=["other", "scripted"]) as server:
        health = client_for(server.base_url).check()

    assert health.state is ModelState.ok and server.listings == 1
    assert health.public() == {"state": "ok"}


def test_a_model_the_server_does_not_list_is_unknown_and_the_log_names_what_it_serves() -> None:
    with ModelServer(script(), models=["llama3.2:latest", "qwen2.5:7b"]) as server:
        health = client_for(server.base_url, model="gpt-4o-mini").check()

    assert health.state is ModelState.unknown_model
    line = health.line()
    assert "'gpt-4o-mini'" in line and "llama3.2:latest, qwen2.5:7b" in line and "OPSBOT_MODEL" in line
    assert server.base_url in line, "the log says which server was asked"
    assert server.base_url not in json.dumps(health.public()), "/healthz never shows the address"
    assert "OPSBOT_MODEL" in health.public()["fix"]


def test_a_name_without_a_tag_is_ollamas_latest() -> None:
    with ModelServer(script(), models=["llama3.2:latest"]) as server:
        assert client_for(server.base_url, model="llama3.2").check().state is ModelState.ok


def test_a_server_without_a_model_list_is_reachable_but_unverified() -> None:
    with ModelServer(script(), models=None) as server:
        health = client_for(server.base_url).check()

    assert health.state is ModelState.unverified and "HTTP 404" in health.said


def test_a_closed_port_is_unreachable_and_names_the_setting() -> None:
    url = closed_url()
    health = client_for(url).check()

    assert health.state is ModelState.unreachable
    assert f"cannot connect to {url} (connection refused)" in health.line()
    assert "OPENAI_BASE_URL" in health.fix and url not in health.fix


def test_a_server_that_does_not_answer_in_time_is_unreachable_within_the_timeout() -> None:
    with socket.socket() as silent:  # listens, so connecting works, but never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        health = client_for(f"http://127.0.0.1:{silent.getsockname()[1]}/v1").check(timeout_s=0.3)

    assert health.state is ModelState.unreachable and "did not answer within 0.3s" in health.said


@pytest.mark.parametrize(
    ("status", "state"),
    [(401, ModelState.key_rejected), (403, ModelState.unverified), (502, ModelState.unreachable)],
    ids=["key rejected", "key may not list models", "proxy without its server"],
)
def test_what_a_models_list_status_means(status: int, state: ModelState) -> None:
    with answering_models_with(status) as url:
        assert client_for(url).check().state is state


# ---------------------------------------------------------------- the watch


class Probe:
    """Answers the states given in turn, counting how often it was asked; `hold` keeps it waiting."""

    def __init__(self, *states: ModelState) -> None:
        self.states = list(states)
        self.asked = 0
        self.hold = threading.Event()
        self.hold.set()

    def __call__(self) -> ModelHealth:
        self.hold.wait(10)
        state = self.states[min(self.asked, len(self.states) - 1)]
        self.asked += 1
        return ModelHealth(state=state, said=f"check {self.asked}", fix="" if state is ModelState.ok else "set X")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_the_watch_asks_again_only_once_its_answer_is_stale_and_logs_each_change_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    probe, clock = Probe(ModelState.unreachable, ModelState.unreachable, ModelState.ok), Clock()
    watch = ModelWatch(probe, ttl_s=30, clock=clock)
    caplog.set_level(logging.INFO, logger="opsbot.llm")

    assert watch.check().state is ModelState.unreachable
    clock.now += 29
    assert watch.current().state is ModelState.unreachable and probe.asked == 1, "fresh: not asked again"

    clock.now += 1
    watch.current()
    assert until(lambda: probe.asked == 2)
    clock.now += 30
    watch.current()
    assert until(lambda: watch.current().state is ModelState.ok)

    lines = [(r.levelno, r.getMessage()) for r in caplog.records if r.name == "opsbot.llm"]
    assert lines == [
        (logging.WARNING, "model unreachable: check 1; set X"),
        (logging.INFO, "model ok: check 3"),
    ], "a line per change, not per check"


def test_a_slow_check_never_holds_up_current() -> None:
    probe, clock = Probe(ModelState.ok, ModelState.unreachable), Clock()
    watch = ModelWatch(probe, ttl_s=30, clock=clock)
    watch.check()
    probe.hold.clear()  # the next check waits, as on a model server that does not answer
    clock.now += 60
    try:
        assert watch.current().state is ModelState.ok, "the last answer, at once"
        assert watch.current().state is ModelState.ok and probe.asked == 1, "one check under way, not two"
    finally:
        probe.hold.set()
    assert until(lambda: watch.current().state is ModelState.unreachable)
    assert probe.asked == 2


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
