"""Giving a question up (Ctrl-C in `opsbot chat` sets the run's cancel event): the model's reply
stops being read, a running command's whole process group is killed as on timeout, a tool that
cannot be stopped is no longer waited for, and the thread's memory reads as it happened, so the
next question is asked in a thread the model server accepts (the fake checks call/result order)."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from opsbot.bot.agent import Agent, Progress, StopReason
from opsbot.bot.agent.prompts import CANCELLED_NOTE
from opsbot.bot.memory import Memory
from opsbot.config.policy import Command, Policy
from opsbot.config.settings import Settings
from opsbot.tools.base import ErrorType, Tool
from opsbot.tools.cancel import abandonable, cancellable
from opsbot.tools.catalog import ops_tools
from opsbot.tools.runner import Sandbox, run
from opsbot.tools.services import NoArgs
from tests.fakes.model_server import Call, ModelServer, Reply, tool_results

SLEEP = "47.25"  # a duration no other process on the machine sleeps for


def sleepers(duration: str = SLEEP) -> list[int]:
    """Processes sleeping `duration` seconds, from /proc (what a person would see with ps)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                argv = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if duration.encode() in argv and (entry / "stat").read_text().split()[2] != "Z":
                found.append(int(entry.name))
    return found


def sleeping(within_s: float = 10.0) -> bool:
    """A sleeper has started (the command is running), within `within_s`."""
    deadline = time.monotonic() + within_s
    while not sleepers():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def none_left(within_s: float = 2.0) -> bool:
    """No sleeper is left once SIGKILL has been delivered (it takes the kernel a moment)."""
    deadline = time.monotonic() + within_s
    while sleepers():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def cancel_after(seconds: float) -> threading.Event:
    event = threading.Event()
    threading.Timer(seconds, event.set).start()
    return event


# ---------------------------------------------------------------- the runner and the executor


def test_a_cancel_kills_the_command_and_everything_it_started() -> None:
    event = cancel_after(0.5)
    with cancellable(event):
        done = run(["/bin/sh", "-c", f"sleep {SLEEP} & sleep {SLEEP}; echo never"], Sandbox(timeout_s=60))

    assert done.cancelled and not done.timed_out
    assert done.duration_s < 3
    assert "never" not in done.output
    assert none_left()  # the background child too: the group was killed


def test_without_a_cancel_nothing_changes() -> None:
    event = threading.Event()
    with cancellable(event):
        done = run(["/bin/echo", "hi"], Sandbox(timeout_s=5))
    assert done.output == "hi\n" and done.exit_code == 0 and not done.cancelled


def test_a_tool_that_cannot_be_stopped_is_no_longer_waited_for() -> None:
    from opsbot.tools.base import Registry
    from opsbot.tools.executor import Executor, ToolCall

    release = threading.Event()
    stuck = Tool("stuck", "waits", args_model=NoArgs, run=lambda args, who: release.wait(60))
    executor = Executor(Registry([stuck]))
    started = time.monotonic()
    with cancellable(cancel_after(0.3)):
        outcome = executor.run_one(ToolCall("1", "stuck", "{}"))
    release.set()

    assert outcome.result.error is not None and outcome.result.error.type is ErrorType.cancelled
    assert outcome.attempts == 1  # a cancelled call is not retried
    assert time.monotonic() - started < 3


def test_abandonable_gives_up_waiting_at_once() -> None:
    release = threading.Event()
    started = time.monotonic()
    with cancellable(cancel_after(0.2)), pytest.raises(Exception) as raised:
        abandonable(lambda: release.wait(30))
    release.set()
    assert type(raised.value).__name__ == "Cancelled"
    assert time.monotonic() - started < 2


# ---------------------------------------------------------------- the loop


def slow_policy(sample: Settings) -> Policy:
    slow = Command.model_validate({"description": "sleeps", "argv": ["sleep", SLEEP], "timeout_s": 60})
    return sample.policy.model_copy(update={"commands": {**sample.policy.commands, "slow": slow}})


class CancelOnTool(Progress):
    """Cancels `delay_s` after the first tool starts, as a person pressing Ctrl-C would."""

    def __init__(self, event: threading.Event, delay_s: float) -> None:
        self.event, self.delay_s = event, delay_s

    def on_tool_start(self, step: int, tool: str, args: Any) -> None:
        threading.Timer(self.delay_s, self.event.set).start()


def roles(memory: Memory, thread: str) -> list[tuple[str, str]]:
    state = memory.load(thread, new_turn=False)
    return [(m.role, m.content or "") for b in state.blocks for m in b.messages]


def slow_then(answer: str, requests: list[dict[str, Any]]) -> Callable[[dict[str, Any]], Reply]:
    """A model that runs the slow command, then (asked again) answers `answer`; it keeps the requests."""

    def model(body: dict[str, Any]) -> Reply:
        requests.append(body)
        if len(requests) == 1:
            return Reply(calls=[Call("run_command", {"command": "slow"})])
        return Reply(content=answer)

    return model


def test_cancel_during_a_command_kills_it_and_the_thread_goes_on(
    make_agent: Callable[..., Agent], model_server: Callable[[Any], ModelServer], memory: Memory, sample: Settings
) -> None:
    requests: list[dict[str, Any]] = []
    server = model_server(slow_then("Nothing was left running.", requests))
    agent = make_agent(server, tools=ops_tools(slow_policy(sample)))
    event = threading.Event()
    reply = agent.run("is anything slow?", thread="t", progress=CancelOnTool(event, 0.5), cancel=event)

    assert reply.stop_reason is StopReason.cancelled
    assert reply.duration_s < 5
    assert reply.text.startswith("Cancelled; nothing more was run.") and "run_command -> cancelled" in reply.text
    [call] = [c for s in reply.steps for c in s.calls]
    assert call.status == "cancelled" and "killed" in call.summary
    assert none_left()
    assert len(requests) == 1  # the model was not asked again after the cancel
    stored = roles(memory, "t")
    assert [r for r, _ in stored] == ["user", "assistant", "tool", "assistant"]
    assert '"type":"cancelled"' in stored[2][1] and stored[3][1] == CANCELLED_NOTE

    after = agent.run("and now?", thread="t")

    assert after.stop_reason is StopReason.answered and after.text == "Nothing was left running."
    sent = [m.get("content") or "" for m in requests[1]["messages"]]
    assert CANCELLED_NOTE in sent and any("cancelled the question" in text for text in sent)
    assert tool_results(requests[1]) == []  # the new turn's own results: none yet


class CancelOnAnswer(Progress):
    def __init__(self, event: threading.Event) -> None:
        self.event = event
        self.shown: list[str] = []

    def on_answer_text(self, step: int, text: str) -> None:
        self.shown.append(text)
        self.event.set()


def test_cancel_while_the_answer_is_written_stops_reading_it(
    make_agent: Callable[..., Agent], model_server: Callable[[Any], ModelServer], memory: Memory
) -> None:
    long = "".join(f"Line {n} of a long answer.\n" for n in range(40))
    agent = make_agent(model_server(lambda body: Reply(content=long, chunk_delay_s=0.05)))
    event = threading.Event()
    progress = CancelOnAnswer(event)
    reply = agent.run("explain", thread="t", progress=progress, cancel=event)

    assert reply.stop_reason is StopReason.cancelled
    assert len(progress.shown) <= 2  # the first line, and at most one that was on its way
    assert reply.duration_s < 40 * 6 * 0.05  # far less than the whole stream takes
    assert [r for r, _ in roles(memory, "t")] == ["user", "assistant"]
    assert "Line 39" not in str(roles(memory, "t"))


def test_cancel_while_the_model_has_not_begun_to_answer(
    make_agent: Callable[..., Agent], model_server: Callable[[Any], ModelServer], memory: Memory
) -> None:
    agent = make_agent(model_server(lambda body: Reply(content="late", delay_s=20)))
    reply = agent.run("explain", thread="t", cancel=cancel_after(0.3))

    assert reply.stop_reason is StopReason.cancelled
    assert reply.duration_s < 3  # not the 20 s the server takes
    assert [r for r, _ in roles(memory, "t")] == ["user", "assistant"]


def test_no_cancel_event_changes_nothing(
    make_agent: Callable[..., Agent], model_server: Callable[[Any], ModelServer]
) -> None:
    agent = make_agent(model_server(lambda body: Reply(content="fine")))
    assert agent.run("ok?", thread="t", cancel=threading.Event()).text == "fine"
    assert os.environ.get("OPSBOT_NEVER_SET") is None
