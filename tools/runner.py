"""The one way opsbot starts a process: no shell, nothing on stdin, a minimal environment, its own
process group that is killed whole, and output capped by bytes.

    done = run(["/usr/bin/journalctl", "-u", "nginx.service"], Sandbox(timeout_s=5, max_output_bytes=64_000))
    result = as_tool_result(done)      # or read done.exit_code, done.output, done.cut, done.timed_out

Guarantees:
- `argv` is executed as given (never through a shell); callers resolve the executable with `which`.
- stdin is /dev/null; the environment is `BASE_ENV` plus `Sandbox.env`: pagers are `cat`, no
  LESSOPEN, nothing inherited from opsbot (no API keys); the working directory is `/`.
- The process starts a new session (its own process group). When it exits, or when the timeout
  passes, the whole group is killed, so nothing it started outlives it. A process that moved
  itself to another session cannot be killed that way; it may still hold the output pipe, so the
  pipe is closed rather than waited on.
- stdout and stderr are read together, interleaved. Beyond `max_output_bytes` the head and tail
  are kept and the middle is cut, and the cut is said in the output and in `cut`. With
  `Sandbox(keep="head")` (or `"tail"`) only the first (last) `max_output_bytes` are kept, so the
  kept bytes are one unbroken stretch of the output (a log read newest first never has a gap);
  then the output holds only those bytes, the cut is said in `cut` alone, and the stretch may
  begin (tail) or end (head) in the middle of a line.
- Resource limits go through prlimit(1) from util-linux (which sets them and execs the command),
  and another user through Popen's own setuid/setgid; `preexec_fn` is never used, as it is unsafe
  in a threaded program.
- A cancel (tools/cancel.py) ends it as the timeout does, at once: the group is killed, `cancelled` set.
- Nothing raises: a process that cannot be started comes back with `error` set.
"""

from __future__ import annotations

import os
import pwd
import selectors
import shutil
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from . import cancel
from .base import ErrorType, ToolResult
from .text import plural, without_cut_words

# A fixed search path, so executables cannot be swapped in through opsbot's own PATH.
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
BASE_ENV: Mapping[str, str] = {
    "PATH": SYSTEM_PATH,
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "TERM": "dumb",
    "NO_COLOR": "1",
    "PAGER": "cat",
    "GIT_PAGER": "cat",
    "SYSTEMD_PAGER": "cat",
    "MANPAGER": "cat",
    "GIT_TERMINAL_PROMPT": "0",
}
_CHUNK = 65_536
_POLL_S = 0.05  # only when pidfd is unavailable: how often to look whether the process exited
_DRAIN_S = 0.25  # after the kill: how long to keep reading what is left in the pipe
_REAP_S = 5.0
WORKING_DIRECTORY = "/"  # every process starts here: no relative path depends on opsbot's own


@dataclass(frozen=True)
class Sandbox:
    """How to run one process."""

    timeout_s: float = 10.0
    max_output_bytes: int = 64_000
    env: Mapping[str, str] = field(default_factory=dict)
    cpu_s: int | None = None
    memory_bytes: int | None = None
    run_as: str | None = None
    keep: Literal["ends", "head", "tail"] = "ends"  # which bytes of a too-long output are kept


@dataclass(frozen=True)
class Completed:
    """What came of one run."""

    argv: tuple[str, ...]
    exit_code: int | None  # negative: killed by that signal; None: never started or not reaped
    output: str = ""
    output_bytes: int = 0  # how many bytes were read from the process, cut ones included
    cut: str | None = None
    timed_out: bool = False
    cancelled: bool = False  # killed because the user cancelled the question
    duration_s: float = 0.0  # the killing and reaping included when it timed out
    error: str | None = None  # why it could not be started
    timeout_s: float | None = None  # the sandbox's timeout it ran under


class _CannotStart(Exception):
    pass


def which(program: str) -> str | None:
    """`program` as an absolute path: looked up on `SYSTEM_PATH`, or checked if it has a slash."""
    if "/" in program:
        path = os.path.abspath(program)
        return path if os.path.isfile(path) and os.access(path, os.X_OK) else None
    return shutil.which(program, path=SYSTEM_PATH)


def run(argv: Sequence[str], sandbox: Sandbox | None = None) -> Completed:
    box = sandbox or Sandbox()
    started = time.monotonic()
    try:
        process = _start(list(argv), box)
    except (_CannotStart, OSError, ValueError) as exc:
        return Completed(tuple(argv), None, error=_why(argv, exc))
    capture = _Capture(box.max_output_bytes, box.keep)
    ending = _supervise(process, capture, started + box.timeout_s)
    return Completed(
        argv=tuple(argv),
        exit_code=process.returncode,
        output=capture.text(),
        output_bytes=capture.total,
        cut=capture.note(),
        timed_out=ending == "timeout",
        cancelled=ending == "cancelled",
        duration_s=time.monotonic() - started,
        timeout_s=box.timeout_s,
    )


def as_tool_result(done: Completed, extra: Mapping[str, Any] | None = None) -> ToolResult:
    """A run as a tool result: `ok` with exit code and output (a failing exit code is still
    `ok`: the command ran and its output says why), `timeout` or `unavailable` otherwise."""
    name = os.path.basename(done.argv[0]) if done.argv else "the command"
    data: dict[str, Any] = {**(extra or {}), "exit_code": done.exit_code, "output": done.output}
    if done.cut:
        data["note"] = done.cut
    if done.error is not None:
        return ToolResult.failure(
            ErrorType.unavailable, done.error, hint="tell the user; the opsbot host cannot run this command now"
        )
    if done.cancelled:
        return ToolResult.failure(
            ErrorType.cancelled,
            f"{name} was stopped because the user cancelled the question; it and every process it started were killed",
            data=data,
        )
    if done.timed_out:
        return ToolResult.failure(
            ErrorType.timeout,
            f"{name} was still running at its timeout of {_seconds(done.timeout_s)}; "
            "it and every process it started were killed",
            hint="the host may be overloaded; try a narrower command or later",
            data=data,
        )
    return ToolResult.success(data)


def brief(data: Mapping[str, Any]) -> str:
    """What `as_tool_result`'s data says in a few words: "exit 0, 3 lines" ("…, cut" when it was)."""
    lines = len(str(data.get("output", "")).splitlines())
    cut = ", cut" if data.get("note") else ""
    return f"exit {data.get('exit_code')}, {plural(lines, 'line')}{cut}"


def shown(data: Mapping[str, Any]) -> str:
    """`as_tool_result`'s data for a person: the output as the command printed it, then the exit
    code when it is not 0 and what was cut (the argv is the policy's; the person named the command)."""
    output = str(data.get("output", "")).rstrip("\n")
    lines = [output if output.strip() else "(no output)"]
    if data.get("exit_code") != 0:
        lines.append(f"(exit code {data.get('exit_code')})")
    if data.get("note"):
        lines.append(f"({data['note']})")
    return "\n".join(lines)


def _seconds(value: float | None) -> str:
    return "?" if value is None else f"{value:g}s"


# ---------------------------------------------------------------- starting


def _start(argv: list[str], box: Sandbox) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        _with_limits(argv, box),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env={**BASE_ENV, **box.env},
        cwd=WORKING_DIRECTORY,
        start_new_session=True,
        close_fds=True,
        **_identity(box.run_as),
    )


def _with_limits(argv: list[str], box: Sandbox) -> list[str]:
    if box.cpu_s is None and box.memory_bytes is None:
        return argv
    prlimit = which("prlimit")
    if prlimit is None:
        raise _CannotStart("prlimit (util-linux) is not installed, so the command's resource limits cannot be set")
    limits = [f"--cpu={box.cpu_s}"] if box.cpu_s is not None else []
    limits += [f"--as={box.memory_bytes}"] if box.memory_bytes is not None else []
    return [prlimit, *limits, "--", *argv]


def _identity(user: str | None) -> dict[str, Any]:
    """Popen's user/group arguments for `user`: applied by the child itself, no preexec_fn."""
    if user is None:
        return {}
    try:
        entry = pwd.getpwnam(user)
    except KeyError:
        raise _CannotStart(f"there is no user {user!r} on the opsbot host") from None
    if entry.pw_uid == os.geteuid():
        return {}
    if os.geteuid() != 0:
        raise _CannotStart(f"cannot run as {user!r}: opsbot does not run as root")
    groups = os.getgrouplist(user, entry.pw_gid)
    return {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": groups}


def _why(argv: Sequence[str], exc: BaseException) -> str:
    if isinstance(exc, _CannotStart):
        return str(exc)
    program = argv[0] if argv else "(nothing)"
    if isinstance(exc, FileNotFoundError):
        return f"{program} is not installed on the opsbot host"
    if isinstance(exc, PermissionError):
        return f"{program} could not be started: permission denied"
    return f"{program} could not be started: {exc}"


# ---------------------------------------------------------------- watching


Ending = Literal["exited", "timeout", "cancelled"]


def _supervise(process: subprocess.Popen[bytes], capture: _Capture, deadline: float) -> Ending:
    """Read output until the process exits, the deadline passes or the user cancels, then kill
    its group and reap it. Returns which it was."""
    assert process.stdout is not None
    pipe = process.stdout.fileno()
    os.set_blocking(pipe, False)
    exit_fd = _pidfd(process.pid)
    try:
        with selectors.DefaultSelector() as selector:
            selector.register(pipe, selectors.EVENT_READ)
            if exit_fd is not None:
                selector.register(exit_fd, selectors.EVENT_READ)
            ending = _watch(process.pid, selector, pipe, capture, deadline, exit_fd is not None)
    finally:
        if exit_fd is not None:
            os.close(exit_fd)
    _finish(process, pipe, capture)
    return ending


def _watch(
    pid: int, selector: selectors.BaseSelector, pipe: int, capture: _Capture, deadline: float, exit_wakes: bool
) -> Ending:
    # Nothing wakes a select when the user cancels, so a cancellable run looks every POLL_S.
    longest = _POLL_S if not exit_wakes else (cancel.POLL_S if cancel.watched() else None)
    while not _exited(pid):
        if cancel.requested():
            return "cancelled"
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return "timeout"
        for key, _ in selector.select(remaining if longest is None else min(remaining, longest)):
            if key.fd == pipe and not _read(pipe, capture):
                selector.unregister(pipe)  # the process closed its output but may still be running
    return "exited"


def _finish(process: subprocess.Popen[bytes], pipe: int, capture: _Capture) -> None:
    # The leader is still running or an unreaped zombie here, so its pid, which is the group's id,
    # cannot have been reused: killing the group cannot hit an unrelated process.
    _kill_group(process.pid)
    until = time.monotonic() + _DRAIN_S
    while time.monotonic() < until and _read(pipe, capture, wait=False):
        pass
    # Whatever escaped into its own session may still hold the pipe: close it rather than wait for EOF.
    assert process.stdout is not None
    process.stdout.close()
    try:
        process.wait(timeout=_REAP_S)
    except subprocess.TimeoutExpired:  # stuck in the kernel (D state); the exit code stays unknown
        pass


def _read(pipe: int, capture: _Capture, wait: bool = True) -> bool:
    """Read one chunk. False at end of output, or (with wait=False) when nothing is left now."""
    try:
        chunk = os.read(pipe, _CHUNK)
    except BlockingIOError:
        return wait
    capture.add(chunk)
    return bool(chunk)


def _exited(pid: int) -> bool:
    """Whether the process has exited, without reaping it (WNOWAIT keeps its pid reserved)."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def _pidfd(pid: int) -> int | None:
    """A descriptor that becomes readable when the process exits (Linux >= 5.3), so one select
    waits for output and exit together; None where there is none, and polling takes over."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


# ---------------------------------------------------------------- output


class _Capture:
    """The first and last bytes of a stream, and how long it was: memory stays bounded however
    much a process writes."""

    def __init__(self, limit: int, keep: Literal["ends", "head", "tail"] = "ends") -> None:
        self.keep = keep
        self.head_limit = {"ends": limit - limit // 2, "head": limit, "tail": 0}[keep]
        self.tail_limit = limit - self.head_limit
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            del self.tail[: max(0, len(self.tail) - self.tail_limit)]

    @property
    def dropped(self) -> int:
        return self.total - len(self.head) - len(self.tail)

    def text(self) -> str:
        if not self.dropped:
            return bytes(self.head + self.tail).decode("utf-8", errors="replace")
        head = without_cut_words(self.head.decode("utf-8", errors="replace"), end=True)
        tail = without_cut_words(self.tail.decode("utf-8", errors="replace"), start=True)
        if self.keep != "ends":
            return head + tail
        return f"{head}\n[... {self.dropped:,} bytes cut ...]\n{tail}"

    def note(self) -> str | None:
        if not self.dropped:
            return None
        if self.keep != "ends":
            which_end = "first" if self.keep == "head" else "last"
            kept = len(self.head) + len(self.tail)
            return f"output was {self.total:,} bytes; only the {which_end} {kept:,} were kept"
        return (
            f"output was {self.total:,} bytes; {self.dropped:,} cut from the middle "
            f"(first {len(self.head):,} and last {len(self.tail):,} kept)"
        )
