"""`opsbot chat` at a terminal, as a person uses it: a real process in a pseudo-terminal
(tests/fakes/terminal.py), keys typed, the screen read back.

What the screen must show: the line editor (↑ recalls what was typed, in this chat and the next;
Tab completes names the policy declares), Ctrl-C giving a question up (its command killed, the
prompt back, the thread fine for the next question), a spinner with seconds while the model
thinks and while a tool runs, the answer rendered as markdown (a table drawn, no `##` or `**`),
each step's line saying what the tool found, an approval asked y/N with the exact argv; and
--plain and NO_COLOR keeping to plain text and no colour."""

from __future__ import annotations

import getpass
import re
import shutil
import signal
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document

from opsbot.bot.agent.prompts import CANCELLED_NOTE
from opsbot.bot.terminal.completion import completer
from opsbot.config.policy import MetricsSource, Policy
from opsbot.config.settings import SAMPLE_CONFIG
from tests.corpus.secrets import KINDS, leaks
from tests.fakes.model_server import Call, ModelServer, Reply, tool_results
from tests.fakes.terminal import TAB, UP, Terminal, chats
from tests.test_cancel import SLEEP, none_left, sleeping, slow_then

ME = getpass.getuser()
ANSWER = (
    "## Why\n\n**Cause:** payments times out.\n\n| service | errors |\n|---|---|\n| checkout | 12 |\n| payments | 3 |\n"
)


@pytest.fixture
def config(tmp_path: Path) -> Path:
    """The bundled sample with a slow command, and restart approvable by this user here."""
    root = tmp_path / "sample"
    shutil.copytree(SAMPLE_CONFIG.parent, root)
    path = root / SAMPLE_CONFIG.name
    data = yaml.safe_load(path.read_text())
    commands = data["policy"]["commands"]
    commands["slow"] = {"description": "sleeps", "argv": ["sleep", SLEEP], "timeout_s": 60}
    commands["restart"].update(approvers={"users": [ME]}, self_approval=True)
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.fixture
def terminal(tmp_path: Path, config: Path) -> Iterator[Callable[..., Terminal]]:
    with chats(tmp_path, config) as open_:
        yield open_


def prompts(screen: str) -> list[str]:
    return [line for line in screen.splitlines() if line.startswith("you>")]


def last_prompt(screen: str) -> str:
    return prompts(screen)[-1]


def answered(count: int) -> Callable[[str], bool]:
    """The screen once `count` questions are answered and the prompt is back."""
    return lambda screen: len(prompts(screen)) > count and screen.count("model call(s)") >= count


# ---------------------------------------------------------------- line editing


def test_up_recalls_what_was_typed_in_this_chat_and_the_next(terminal: Callable[..., Terminal]) -> None:
    term = terminal()
    term.enter("services")
    term.wait_for(lambda s: len(prompts(s)) == 2)
    term.type(UP)
    assert term.wait_for(lambda s: last_prompt(s) == "you> services")
    term.ctrl_c()  # clears the recalled line: the chat goes on
    term.wait_for(lambda s: len(prompts(s)) == 2 and last_prompt(s) == "you>")
    term.enter("exit")
    assert term.exited() == 0

    again = terminal()
    again.type(UP)
    again.wait_for(lambda s: last_prompt(s) == "you> exit")
    again.type(UP)
    assert again.wait_for(lambda s: last_prompt(s) == "you> services")

    searching = terminal()
    searching.type("\x12serv")  # Ctrl-R: search what was typed, newest first
    assert searching.wait_for("(reverse-i-search)`serv': services")


def test_history_keeps_no_secret_typed_at_the_prompt(terminal: Callable[..., Terminal], tmp_path: Path) -> None:
    kinds = [k for k in KINDS if not k.multiline][:4]
    term = terminal()
    for kind in kinds:
        term.enter(f"is this ok {kind.line}")
    term.wait_for(lambda s: len(prompts(s)) == len(kinds) + 1)
    term.type(UP)
    recalled = term.wait_for(lambda s: last_prompt(s).startswith("you> is this ok"))
    term.enter("\x15exit")  # Ctrl-U clears the recalled line first
    term.exited()

    written = (tmp_path / "data" / "opsbot" / "history").read_text()
    assert written.count("+is this ok") == len(kinds)
    for kind in kinds:
        assert not leaks(kind.secret, written), kind.id
    assert not leaks(kinds[-1].secret, last_prompt(recalled))
    assert oct((tmp_path / "data" / "opsbot" / "history").stat().st_mode & 0o777) == "0o600"


def test_tab_completes_commands_and_the_names_the_policy_declares(terminal: Callable[..., Terminal]) -> None:
    term = terminal()
    term.type("lo" + TAB)
    term.wait_for(lambda s: last_prompt(s) == "you> logs")
    term.type(" chec" + TAB)
    term.wait_for(lambda s: last_prompt(s) == "you> logs checkout")
    term.type(" ERR" + TAB)
    term.wait_for(lambda s: last_prompt(s) == "you> logs checkout ERROR")
    term.type("\x15" + "run up" + TAB)  # Ctrl-U clears the line
    term.wait_for(lambda s: last_prompt(s) == "you> run uptime")
    term.type("\x15" + "config pay" + TAB)
    term.wait_for(lambda s: last_prompt(s) == "you> config payments")
    term.type("\x15" + "runbook sh" + TAB)
    term.wait_for(lambda s: last_prompt(s) == "you> runbook show")
    term.type(" disk" + TAB)
    term.wait_for(lambda s: last_prompt(s) == "you> runbook show disk-filling")


def test_ctrl_c_at_an_empty_prompt_leaves_and_so_does_ctrl_d(terminal: Callable[..., Terminal]) -> None:
    term = terminal()
    term.ctrl_c()
    assert term.exited() == 0
    term = terminal()
    term.ctrl_d()
    assert term.exited() == 0


# ---------------------------------------------------------------- a question's run


def test_spinners_say_what_is_under_way_and_for_how_long(
    terminal: Callable[..., Terminal], model_server: Callable[[Any], ModelServer]
) -> None:
    def model(body: dict[str, Any]) -> Reply:
        if not tool_results(body):
            return Reply(calls=[Call("run_command", {"command": "slow"})], delay_s=2.5)
        return Reply(content="done")

    term = terminal(model=model_server(model))
    term.enter("is anything slow?")
    term.wait_for(re.compile(r"step 1: the model is thinking · [12]s").search)
    screen = term.wait_for(re.compile(r'step 1: run_command \(command="slow"\) · [2-9]s').search)
    assert re.search(r"[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏]", screen)  # the spinner itself
    term.ctrl_c()
    term.wait_for(answered(1))


def test_ctrl_c_gives_the_question_up_and_the_thread_goes_on(
    terminal: Callable[..., Terminal], model_server: Callable[[Any], ModelServer]
) -> None:
    requests: list[dict[str, Any]] = []
    term = terminal(model=model_server(slow_then("Nothing is running now.", requests)))
    term.enter("is anything slow?")
    term.wait_for('run_command (command="slow")')
    assert sleeping()
    term.ctrl_c()
    screen = term.wait_for(answered(1))

    assert "Cancelled; nothing more was run." in screen
    assert '✗ step 1: run_command (command="slow") → cancelled: ' in screen
    assert "(cancelled · " in screen  # the footer
    assert none_left()  # killed, as on timeout
    assert "Traceback" not in screen and "Aborted" not in screen

    term.enter("and now?")
    screen = term.wait_for(answered(2))
    assert "Nothing is running now." in screen
    assert CANCELLED_NOTE in [m.get("content") for m in requests[1]["messages"]]


def test_ctrl_c_twice_leaves_and_leaves_nothing_running(
    terminal: Callable[..., Terminal], model_server: Callable[[Any], ModelServer]
) -> None:
    term = terminal(model=model_server(slow_then("never", [])))
    term.enter("is anything slow?")
    assert sleeping()
    term.ctrl_c()
    term.wait_for("cancelling…")
    term.ctrl_c()  # while the first winds down, or at the prompt it gave back: either way, opsbot leaves
    assert term.exited() == 0
    assert none_left()
    assert "Traceback" not in term.text()


@pytest.mark.parametrize("hangup", [signal.SIGHUP, signal.SIGTERM], ids=["SIGHUP", "SIGTERM"])
def test_a_closed_terminal_leaves_no_command_behind(
    terminal: Callable[..., Terminal], model_server: Callable[[Any], ModelServer], hangup: signal.Signals
) -> None:
    term = terminal(model=model_server(lambda body: Reply(calls=[Call("run_command", {"command": "slow"})])))
    term.enter("is anything slow?")
    assert sleeping()
    term.child.kill(hangup)
    assert term.exited() == 0
    assert none_left()


@pytest.mark.parametrize("hangup", [signal.SIGHUP, signal.SIGTERM], ids=["SIGHUP", "SIGTERM"])
def test_a_closed_terminal_at_the_prompt_leaves(terminal: Callable[..., Terminal], hangup: signal.Signals) -> None:
    term = terminal()
    term.child.kill(hangup)
    assert term.exited() == 0
    assert none_left()


def test_the_answer_streams_then_shows_rendered(
    terminal: Callable[..., Terminal], model_server: Callable[[Any], ModelServer]
) -> None:
    def model(body: dict[str, Any]) -> Reply:
        if not tool_results(body):
            return Reply(calls=[Call("query_logs", {"service": "checkout", "level": "ERROR", "limit": 2})])
        return Reply(content=ANSWER + "".join(f"\nMore {n}." for n in range(12)), chunk_delay_s=0.1)

    term = terminal(model=model_server(model))
    term.enter("why 502?")
    streaming = term.wait_for("payments times out")
    assert "model call(s)" not in streaming  # shown while still being written
    screen = term.wait_for(answered(1))

    assert "✓ step 1: query_logs" in screen and "→ ok: " in screen and "matching lines, showing the last 2" in screen
    assert "Cause: payments times out." in screen
    assert re.search(r"checkout +12", screen) and re.search(r"payments +3", screen)
    assert "─" in screen  # the table's rule
    for raw in ("## Why", "**Cause:**", "|---|", "| checkout |"):
        assert raw not in screen


def test_plain_and_no_color_keep_to_plain_text(
    terminal: Callable[..., Terminal], model_server: Callable[[Any], ModelServer]
) -> None:
    server = model_server(lambda body: Reply(content=ANSWER))
    coloured = terminal(model=server)
    coloured.enter("why?")
    coloured.wait_for(answered(1))
    assert any(ch.fg != "default" for row in coloured.screen.buffer.values() for ch in row.values())

    plain = terminal("--plain", model=server, NO_COLOR="1")
    plain.enter("why?")
    screen = plain.wait_for(answered(1))
    assert "opsbot> ## Why" in screen and "| checkout | 12 |" in screen  # as the model wrote it
    assert not re.search(r"[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏]", plain.raw.decode(errors="replace"))
    assert all(ch.fg == "default" for row in plain.screen.buffer.values() for ch in row.values())

    logged = terminal(model=server, options=("-v",))  # the JSON step log would tear a live area
    logged.enter("why?")
    screen = logged.wait_for(answered(1))
    assert '"event": "run_end"' in screen and "opsbot> ## Why" in screen


# ---------------------------------------------------------------- approvals


def test_an_approval_is_asked_with_the_exact_argv(terminal: Callable[..., Terminal]) -> None:
    term = terminal()
    term.enter("run restart service=payments")
    screen = term.wait_for("approve and run it? [y/N]")
    printf = shutil.which("printf")
    assert f"⏸ approval needed: {printf} -- 'would restart %s; this sample changes nothing\\n' payments" in screen
    assert f"may approve: users {ME}" in screen
    term.enter("y")
    screen = term.wait_for(lambda s: len(prompts(s)) == 2)
    assert screen.count("would restart payments; this sample changes nothing") == 1


def test_tab_completes_metrics_sources_and_find() -> None:
    tab = completer(Policy(metrics={"prod": MetricsSource(url="http://prom:9090")}))

    def offered(typed: str) -> list[str]:
        return [c.text for c in tab.get_completions(Document(typed), CompleteEvent(completion_requested=True))]

    assert offered("metr") == ["metrics"]
    assert offered("metrics pr") == ["prod"]
    assert offered("metrics prod fi") == ["find"]
