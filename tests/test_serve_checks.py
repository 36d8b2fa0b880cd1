"""`opsbot serve --http` as a real process, on what it checks before it says it serves: the port
it listens on (taken: one line and exit 2, before any "serving" line) and the model (missing,
unreachable, a name the server does not serve: a line in its log and a state in /healthz, while
it serves direct commands, approvals and runbooks anyway)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator

import pytest

from tests.fakes.model_server import ModelServer, script
from tests.fakes.redis_server import RedisServer, free_port
from tests.fakes.serve_process import ServeProcess, run_cli
from tests.fakes.slack_api import SlackApi

TOKEN = "xoxb-test"


def serve_env(slack: SlackApi, redis_url: str, **extra: str) -> dict[str, str]:
    return {
        "SLACK_BOT_TOKEN": TOKEN,
        "SLACK_SIGNING_SECRET": "test-signing-secret",
        "SLACK_API_URL": slack.base_url,
        "REDIS_URL": redis_url,
        **extra,
    }


@pytest.fixture
def slack() -> Iterator[SlackApi]:
    with SlackApi(token=TOKEN) as api:
        yield api


@pytest.fixture
def held_port() -> Iterator[int]:
    """A port another process listens on, as a second opsbot or anything else would."""
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import socket, sys\n"
            "s = socket.socket(); s.bind(('0.0.0.0', 0)); s.listen()\n"
            "print(s.getsockname()[1], flush=True); sys.stdin.read()",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdin is not None
    try:
        yield int(holder.stdout.readline())
    finally:
        holder.stdin.close()  # its read ends: it exits
        holder.wait(10)


def test_a_busy_port_is_one_line_and_exit_2_before_any_serving_line(
    held_port: int, slack: SlackApi, redis_server: RedisServer
) -> None:
    code, output = run_cli(serve_env(slack, redis_server.url, PORT=str(held_port)), timeout=20)

    assert code == 2, output
    assert (
        f"opsbot cannot start: port {held_port} is already in use: stop what holds it, or choose another with "
        "--port or PORT" in output.splitlines()
    ), output
    assert "serving Slack" not in output and "Traceback" not in output and "Errno" not in output, output


def test_a_port_that_is_no_port_is_a_usage_error(slack: SlackApi, redis_server: RedisServer) -> None:
    code, output = run_cli(serve_env(slack, redis_server.url, PORT="70000"), timeout=20)

    assert code == 2 and "Invalid value for '--port'" in output and "Traceback" not in output, output


def closed(server: ModelServer) -> dict[str, str]:
    return {"OPENAI_BASE_URL": f"http://127.0.0.1:{free_port()}/v1"}


def lists_others(server: ModelServer) -> dict[str, str]:
    server.models = ["llama3.2:latest", "qwen2.5:7b"]
    return {"OPENAI_BASE_URL": server.base_url, "OPSBOT_MODEL": "gpt-4o-mini"}


def lists_it(server: ModelServer) -> dict[str, str]:
    server.models = ["gpt-4o-mini"]
    return {"OPENAI_BASE_URL": server.base_url, "OPSBOT_MODEL": "gpt-4o-mini"}


def none(server: ModelServer) -> dict[str, str]:
    return {}


@pytest.mark.parametrize(
    ("model_env", "state", "line"),
    [
        (none, "not_configured", "no model: none is configured, so questions are refused (direct commands work)"),
        (closed, "unreachable", "model unreachable: cannot connect to http://127.0.0.1:"),
        (
            lists_others,
            "unknown_model",
            "(it serves llama3.2:latest, qwen2.5:7b); set OPSBOT_MODEL",
        ),
        (lists_it, "ok", "model ok: http://127.0.0.1:"),
    ],
    ids=["no model", "closed port", "unknown model", "ok"],
)
def test_the_model_is_checked_at_startup_said_in_the_log_and_in_healthz(
    model_env: Callable[[ModelServer], dict[str, str]],
    state: str,
    line: str,
    slack: SlackApi,
    redis_server: RedisServer,
) -> None:
    with ModelServer(script()) as server:
        env = serve_env(slack, redis_server.url, **model_env(server))
        with ServeProcess(env) as process:
            status, body = process.get("/healthz")
            output = process.output()

    report = json.loads(body)
    assert status == 200 and report["ok"] is True, "the model's state is read, not a reason to take the process out"
    assert report["model"]["state"] == state
    assert "127.0.0.1" not in body, "/healthz may face the internet: no addresses"
    [said] = [text for text in output.splitlines() if line in text]
    lines = output.splitlines()
    serving = next(i for i, text in enumerate(lines) if "serving Slack" in text)
    assert lines.index(said) < serving, "said before it serves"
    assert "Traceback" not in output


def test_a_model_server_that_never_answers_delays_startup_by_the_check_timeout_only(
    slack: SlackApi, redis_server: RedisServer
) -> None:
    with socket.socket() as silent:  # accepts connections, never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/v1"
        # A model request's timeout shorter than the check's 5 s bounds the check too.
        env = serve_env(slack, redis_server.url, OPENAI_BASE_URL=url, OPSBOT_LLM__TIMEOUT_S="1")
        with ServeProcess(env) as process:
            output = process.output()

    assert "model unreachable" in output and "did not answer within 1s" in output, output
