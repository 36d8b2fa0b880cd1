"""`opsbot serve --http` as a real process, on what it checks before it says it serves: the port
it listens on (taken: one line and exit 2, before any "serving" line)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest

from tests.fakes.redis_server import RedisServer
from tests.fakes.serve_process import run_cli
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
