"""`opsbot serve --http` as a real subprocess, for tests and benchmarks of what Slack actually talks to.

The in-process stack (`slack_stack.py`) skips the parts that only exist in a deployed process:
click's option and environment handling, settings loaded from the environment, startup checks and
their exit codes, waitress and its thread pool, Bolt's WSGI adapter. Running the real command line
covers those, at the cost of a second or so of startup per process.

The child gets a scrubbed environment: a developer's own SLACK_*, OPENAI_*, REDIS_* or OPSBOT_*
variables must never leak into a test (or, worse, point it at a real workspace).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from opsbot.config.settings import SAMPLE_CONFIG
from tests.fakes.redis_server import free_port
from tests.fakes.waiting import until

ROOT = Path(__file__).resolve().parents[2]
_SCRUBBED = ("SLACK_", "OPENAI_", "REDIS_", "OPSBOT_")
STARTUP_TIMEOUT_S = 15.0


def base_env() -> dict[str, str]:
    """os.environ without anything that configures opsbot, so only what a test passes counts."""
    return {name: value for name, value in os.environ.items() if not name.startswith(_SCRUBBED)}


def command(*args: str, config: Path = SAMPLE_CONFIG) -> list[str]:
    return [sys.executable, "-m", "opsbot.bot", "--config", str(config), *args]


def run_cli(env: dict[str, str], args: tuple[str, ...] = ("serve", "--http"), timeout: float = 30.0) -> tuple[int, str]:
    """Run `opsbot --config <sample> ARGS` to its end; (exit code, stderr and stdout). For startup
    failures: a process that does start serves until `timeout`, which raises `TimeoutExpired`."""
    completed = subprocess.run(
        command(*args),
        env={**base_env(), **env},
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return completed.returncode, completed.stderr + completed.stdout


@contextmanager
def serving(*processes: ServeProcess) -> Iterator[tuple[ServeProcess, ...]]:
    """Several processes started, and at the end stopped, side by side: their imports and their
    shutdowns overlap."""
    try:
        for process in processes:
            process.launch()
        for process in processes:
            process.wait_until_serving()
        yield processes
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            process.stop()


class ServeProcess:
    """`opsbot serve --http` on `port` (a free one by default), ready once /healthz says 200."""

    def __init__(self, env: dict[str, str], port: int | None = None, config: Path = SAMPLE_CONFIG) -> None:
        self.port = port if port is not None else free_port()
        self.config = config
        self.env = {**base_env(), "PORT": str(self.port), **env}
        self.process: subprocess.Popen[bytes] | None = None
        # A file, not a pipe: nobody reads a pipe while the server runs, and a full one would block it.
        self._stderr: IO[bytes] | None = None
        self._terminated = False

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> ServeProcess:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        self.launch()
        self.wait_until_serving()

    def launch(self) -> None:
        """Start the process without waiting for it: several start side by side (see `serving`)."""
        self._stderr = tempfile.TemporaryFile(prefix="opsbot-serve-")
        self._terminated = False
        self.process = subprocess.Popen(
            command("serve", "--http", config=self.config),
            env=self.env,
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            stdout=self._stderr,
            stderr=self._stderr,
        )

    def wait_until_serving(self) -> None:
        process = self.process
        assert process is not None, "launch() first"

        def healthy() -> bool:
            if process.poll() is not None:
                self._fail(f"opsbot exited with code {process.returncode} before serving")
            return self.get("/healthz", timeout=1)[0] == 200

        # OSError: not listening yet.
        if not until(healthy, STARTUP_TIMEOUT_S, interval=0.05, ignore=(OSError,)):
            self._fail(f"/healthz did not answer 200 within {STARTUP_TIMEOUT_S:.0f} s")

    def terminate(self) -> None:
        """SIGTERM (what a platform sends on deploy), once: a second would cut short the shutdown
        the first began."""
        if self.process is not None and self.process.poll() is None and not self._terminated:
            self.process.send_signal(signal.SIGTERM)
            self._terminated = True

    def stop(self, timeout: float = 5.0) -> None:
        """`terminate`, then SIGKILL if the process does not end in `timeout`."""
        self.terminate()
        if self.process is not None:
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    def kill(self) -> None:
        """SIGKILL: the process dies mid-work, as on an OOM kill or a lost machine."""
        if self.process is not None:
            self.process.kill()
            self.process.wait()

    def output(self) -> str:
        """Everything the process wrote so far (stdout and stderr), for failure messages."""
        if self._stderr is None:
            return ""
        self._stderr.flush()
        self._stderr.seek(0)
        text = self._stderr.read().decode("utf-8", errors="replace")
        self._stderr.seek(0, os.SEEK_END)
        return text

    def post(self, path: str, body: str | bytes, headers: dict[str, str], timeout: float = 10.0) -> tuple[int, str]:
        """POST `body` (text is sent as UTF-8); (status, body) for any status, 4xx and 5xx included."""
        data = body.encode() if isinstance(body, str) else body
        request = urllib.request.Request(self.base_url + path, data=data, headers=headers, method="POST")
        return self._send(request, timeout)

    def get(self, path: str, timeout: float = 10.0) -> tuple[int, str]:
        return self._send(urllib.request.Request(self.base_url + path), timeout)

    @staticmethod
    def _send(request: urllib.request.Request, timeout: float) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as exc:
            with exc:
                return exc.code, exc.read().decode()

    def _fail(self, why: str) -> None:
        output = self.output()
        self.stop()
        raise RuntimeError(f"{why}; its output:\n{output}")
