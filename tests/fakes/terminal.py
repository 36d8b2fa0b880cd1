"""A real `opsbot chat` in a pseudo-terminal, and the screen a person would see.

pexpect gives the process a pty (so prompt_toolkit, rich and Ctrl-C behave as at a terminal: the
key sends SIGINT to the foreground process group), and pyte, a VT100 emulator, turns what it
writes into the screen's rows, so a test reads the screen, not escape sequences."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pexpect
import pyte

COLUMNS, ROWS = 120, 80
UP = "\x1b[A"
TAB = "\t"


class Terminal:
    def __init__(self, args: list[str], env: Mapping[str, str], cwd: Path) -> None:
        self.screen = pyte.Screen(COLUMNS, ROWS)
        self.stream = pyte.ByteStream(self.screen)
        self.raw = b""
        self.child = pexpect.spawn(
            sys.executable,
            ["-m", "opsbot.bot", *args],
            env={**env, "TERM": "xterm-256color", "COLUMNS": str(COLUMNS), "LINES": str(ROWS)},
            cwd=str(cwd),
            dimensions=(ROWS, COLUMNS),
        )

    def __enter__(self) -> Terminal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.child.close(force=True)

    def text(self) -> str:
        """The screen as it is now, one row a line, trailing spaces dropped."""
        self._read(0)
        return "\n".join(row.rstrip() for row in self.screen.display)

    def wait_for(self, wanted: str | Callable[[str], bool], timeout: float = 30) -> str:
        """The screen, once it shows `wanted` (a text, or a test of the screen's text)."""
        test = wanted if callable(wanted) else (lambda screen: wanted in screen)
        deadline = time.monotonic() + timeout
        while True:
            screen = self.text()
            if test(screen):
                return screen
            if time.monotonic() > deadline or not self.child.isalive() and not self._read(0.1):
                raise AssertionError(f"the screen never showed {wanted!r}; it shows:\n{screen}")
            self._read(0.05)

    def type(self, keys: str) -> None:
        self.child.send(keys)

    def enter(self, line: str) -> None:
        self.child.send(line + "\r")

    def ctrl_c(self) -> None:
        self.child.sendintr()

    def ctrl_d(self) -> None:
        self.child.sendeof()

    def exited(self, timeout: float = 20) -> int:
        deadline = time.monotonic() + timeout
        while self.child.isalive() and time.monotonic() < deadline:
            self._read(0.1)
        assert not self.child.isalive(), f"opsbot did not leave; the screen shows:\n{self.text()}"
        self.child.close()
        return int(self.child.exitstatus if self.child.exitstatus is not None else -(self.child.signalstatus or 0))

    def _read(self, timeout: float) -> bool:
        if self.child.closed:  # it has exited: the screen is as it left it
            return False
        try:
            data = self.child.read_nonblocking(65536, timeout=timeout)
        except (pexpect.TIMEOUT, pexpect.EOF):
            return False
        self.raw += data
        self.stream.feed(data)
        return True


def clean_env(**extra: str) -> dict[str, str]:
    """The environment opsbot gets: none of the developer's model, Redis or opsbot settings."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "REDIS_URL", "NO_COLOR", "FORCE_COLOR")
        and not k.startswith("OPSBOT_")
    }
    return {**env, **extra}


@contextmanager
def chats(workdir: Path, config: Path) -> Iterator[Callable[..., Terminal]]:
    """`opsbot chat` on `config` in pseudo-terminals, opened as often as asked (each waits for its
    first prompt; `model` points it at a model server), all closed at the end."""
    opened: list[Terminal] = []

    def open_(*args: str, model: Any = None, options: tuple[str, ...] = (), **env: str) -> Terminal:
        extra = {"OPENAI_BASE_URL": model.base_url, "OPSBOT_LLM__MAX_RETRIES": "0"} if model else {}
        environment = clean_env(XDG_DATA_HOME=str(workdir / "data"), PROMPT_TOOLKIT_NO_CPR="1", **extra, **env)
        term = Terminal([*options, "--config", str(config), "chat", *args], environment, workdir)
        opened.append(term)
        term.wait_for("you>")
        return term

    try:
        yield open_
    finally:
        for term in opened:
            term.__exit__()
