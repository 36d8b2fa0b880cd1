"""Text from outside never acts on the terminal that shows it: every control sequence of the
corpus (tests/corpus/terminal.py: CSI, OSC 0/2/8/52, DCS, APC, PM, SOS, 8-bit C1, C0, bidi
overrides and isolates), through every front end it can reach, is shown spelled out (`\\x1b]52;…`)
and never written raw: `opsbot chat` at a real terminal (the live area, the rendered answer, step
lines, direct commands), `opsbot ask` (stdout, stderr, --json, -v), `opsbot audit`, `opsbot eval`
and `check-config`.

Each line of outside text is marked (`a-osc-52-clipboard:… end`), so a test finds where every
sequence landed: `leaked` reads what was written for a raw control or bidi character between a
marker and its `end`, `unseen` the screen (or the pipe) for the spelled-out form. One chat session
carries the whole corpus (a pty run costs seconds); plain subprocesses run `ask`; what needs no
process of its own (`audit`, `eval`, `check-config`) runs in this one, through click's runner."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from opsbot.bot.cli import main
from opsbot.bot.telemetry.audit import AuditRecord, RedisAudit
from opsbot.config.settings import SAMPLE_CONFIG
from tests.corpus.terminal import ACTIVE, NO_NUL, SEQUENCES, leaked, lines, unseen
from tests.fakes.model_server import Call, ModelServer, Reply, tool_results
from tests.fakes.redis_server import RedisServer
from tests.fakes.terminal import Terminal, chats, clean_env

# What the model chooses and writes, each marked by where it is shown.
ARGS = {"service": "hostile", **{f"k-{s.id}:{s.raw} end": 1 for s in SEQUENCES}}  # a step line's arguments
THINKING = lines("t-") + "That is all.\n"  # streamed, then called thinking (its last line is held back)
ENTITY = "- e-rlo:&#x202e;abc end\n"  # decoded by the markdown parser, after the source was made inert
LINK = "[the runbook](https://evil.example/run)"
ANSWER = "Found it.\n\n" + lines("a-", start="- ") + ENTITY + f"\nSee {LINK}.\n"  # a markdown list


def hostile_model(delay_s: float = 0.0) -> Callable[[dict[str, Any]], Reply]:
    """A step whose arguments hold the corpus (refused: they are no query_logs arguments), then
    thinking and an answer that hold it, streamed; `delay_s` before the answer leaves the step
    line on the screen a while."""

    def policy(body: dict[str, Any]) -> Reply:
        if not tool_results(body):
            return Reply(calls=[Call("query_logs", ARGS)])
        return Reply(content=f"{THINKING}</think>{ANSWER}", delay_s=delay_s, chunk_delay_s=0.001)

    return policy


@pytest.fixture
def config(tmp_path: Path) -> Path:
    """The sample, with a service whose log lines hold the corpus and a config root whose values do."""
    root = tmp_path / "sample"
    shutil.copytree(SAMPLE_CONFIG.parent, root)
    (root / "logs" / "hostile.log").write_text(lines("l-", start="2026-11-29T03:00:00Z ERROR "))
    (root / "hostile").mkdir()
    (root / "hostile" / "app.ini").write_text("".join(f"v{n} = c-{s.id}:{s.raw} end\n" for n, s in enumerate(NO_NUL)))
    path = root / SAMPLE_CONFIG.name
    data = yaml.safe_load(path.read_text())
    data["policy"]["services"]["hostile"] = {"description": "logs that hold escapes", "logs": ["logs/hostile.log"]}
    data["policy"]["config_files"]["hostile"] = {"description": "values that hold escapes", "path": "hostile"}
    path.write_text(yaml.safe_dump(data))
    return path


def model_env(server: ModelServer) -> dict[str, str]:
    return {"OPENAI_BASE_URL": server.base_url, "OPSBOT_LLM__MAX_RETRIES": "0"}


# ---------------------------------------------------------------- opsbot chat, at a terminal


@pytest.fixture
def chat(tmp_path: Path, config: Path) -> Iterator[Callable[[ModelServer], Terminal]]:
    with chats(tmp_path, config) as open_:
        yield lambda server: open_(model=server)


def flat(term: Terminal) -> str:
    """The screen's rows run together, so a line the terminal wrapped reads as one."""
    term.text()
    return "".join(term.screen.display)


def test_a_chat_at_a_terminal_shows_every_sequence_and_obeys_none(
    chat: Callable[[ModelServer], Terminal], model_server: Callable[[Any], ModelServer]
) -> None:
    term = chat(model_server(hostile_model(delay_s=1.5)))

    term.enter("logs hostile limit=100")  # log lines, printed by a direct command
    term.wait_for(lambda _: not unseen("l-", flat(term)), timeout=15)
    term.enter("config hostile/app.ini")  # config values
    term.wait_for(lambda _: not unseen("c-", flat(term), NO_NUL), timeout=15)

    term.enter("what is wrong?")
    # The refused step, with the arguments the model chose, while the model writes its answer.
    term.wait_for(lambda _: "✗ step 1: query_logs" in flat(term) and not unseen("k-", flat(term)), timeout=15)
    screen = term.wait_for("model call(s)")

    assert unseen("a-", screen) == []  # the answer, rendered as markdown
    assert "e-rlo:\\u202eabc end" in screen
    assert "See the runbook (https://evil.example/run)." in screen  # where a link leads is shown
    written = term.raw.decode(errors="replace")
    for prefix in ("l-", "c-", "k-", "t-", "a-"):  # t-: the thinking, in the live area while it streamed
        assert leaked(prefix, written) == [], prefix
    assert "\u202e" not in written
    assert "\x1b]8;" not in written and "\x1b]52;" not in written and "\x1b]0;" not in written
    assert term.screen.title == "" and term.screen.icon_name == ""  # the window was not renamed
    assert "Traceback" not in term.text()


# ---------------------------------------------------------------- opsbot ask, piped


def opsbot(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "opsbot.bot", *args],
        capture_output=True,
        text=True,
        env=clean_env(**env),
        cwd=cwd,
        timeout=60,
    )


def test_ask_prints_the_answer_and_the_steps_inert_and_never_the_thinking(
    tmp_path: Path, config: Path, model_server: Callable[[Any], ModelServer]
) -> None:
    done = opsbot(
        "--config", str(config), "ask", "what is wrong?", cwd=tmp_path, **model_env(model_server(hostile_model()))
    )

    assert done.returncode == 0, done.stderr
    assert ACTIVE.search(done.stdout) is None and ACTIVE.search(done.stderr) is None
    assert unseen("a-", done.stdout) == []
    assert not [s.id for s in SEQUENCES if f"t-{s.id}:" in done.stdout + done.stderr]  # stdout is the answer alone
    assert unseen("k-", done.stderr) == []  # the step line: the arguments the model chose


def test_ask_json_and_the_step_log_decode_to_what_was_said_and_hold_nothing_raw(
    tmp_path: Path, config: Path, model_server: Callable[[Any], ModelServer]
) -> None:
    server = model_server(hostile_model())
    done = opsbot("-v", "--config", str(config), "ask", "--json", "what is wrong?", cwd=tmp_path, **model_env(server))

    assert done.returncode == 0, done.stderr
    assert ACTIVE.search(done.stdout) is None and ACTIVE.search(done.stderr) is None
    reply = json.loads(done.stdout)  # still JSON, and the data whole: a program reading it gets what was said
    assert reply["text"] == ANSWER.strip()
    assert reply["steps"][0]["calls"][0]["args"] == ARGS
    # -v: a JSON record per step and per tool call (the audit trail's), each still JSON once inert.
    records = [json.loads(line) for line in done.stderr.splitlines() if line.startswith("{")]
    [audited] = [r for r in records if r.get("kind") == "tool_call"]
    assert audited["args"] == ARGS
    [answered] = [r for r in records if r.get("decision") == "answer"]
    assert answered["reasoning"] == THINKING.rstrip("\n")


def test_a_direct_command_prints_log_lines_inert_as_it_did(tmp_path: Path, config: Path) -> None:
    done = opsbot("--config", str(config), "ask", "logs hostile limit=100", cwd=tmp_path)

    assert done.returncode == 0, done.stderr
    assert ACTIVE.search(done.stdout) is None
    assert unseen("l-", done.stdout) == []


# ---------------------------------------------------------------- audit, eval, check-config


def invoke(*args: str, **env: str | None) -> tuple[int, str, str]:
    """`opsbot` in this process: its exit code, stdout and stderr, as a pipe receives them."""
    done = CliRunner().invoke(main, list(args), env={"OPENAI_API_KEY": None, "OPENAI_BASE_URL": None, **env})
    return done.exit_code, done.stdout, done.stderr


def test_the_audit_trail_is_read_back_inert(redis_server: RedisServer) -> None:
    redis_server.flush()
    argv = [f"u-{s.id}:{s.raw} end" for s in SEQUENCES]  # a write command's argv, as it was approved
    record = AuditRecord(kind="write_run", who="slack:U1", tool="restart", args=ARGS, argv=argv, status="ok")
    RedisAudit(redis_server.client(), ttl_s=3600).record(record)

    code, out, _ = invoke("audit", REDIS_URL=redis_server.url)
    assert code == 0 and ACTIVE.search(out) is None
    assert unseen("u-", out) == []
    assert leaked("k-", out) == []
    code, out, _ = invoke("audit", "--json", REDIS_URL=redis_server.url)
    assert code == 0 and ACTIVE.search(out) is None
    assert json.loads(out)["argv"] == argv and json.loads(out)["args"] == ARGS


def squeezed(text: str) -> str:
    """`text` without its whitespace: a table wraps a long title where it likes."""
    return re.sub(r"\s+", "", text)


def test_eval_prints_the_model_named_and_a_bad_suite_inert(
    tmp_path: Path, model_server: Callable[[Any], ModelServer]
) -> None:
    scenario = {"id": "quota", "kind": "single_tool", "question": "what does alpha log?"}
    suite = tmp_path / "suite.yaml"
    suite.write_text(yaml.safe_dump({"scenarios": [scenario]}))
    named = " ".join(f"m-{s.id}:{s.raw} end" for s in NO_NUL)  # the model's name, from the environment
    server = model_server(lambda body: Reply(content="alpha: disk quota exceeded"))
    code, out, err = invoke("eval", "--suite", str(suite), OPSBOT_MODEL=named, **model_env(server))
    assert code == 0, err
    assert ACTIVE.search(out) is None and ACTIVE.search(err) is None
    assert [s.id for s in NO_NUL if squeezed(f"m-{s.id}:{s.shown} end") not in squeezed(out)] == []

    # A scenario file's keys are named back in the message that refuses them.
    keys = {f"s-{s.id}:{s.raw} end": 1 for s in SEQUENCES}
    suite.write_text(yaml.safe_dump({"scenarios": [{**scenario, **keys}]}))
    code, out, err = invoke("eval", "--suite", str(suite), **model_env(server))
    assert code == 2 and ACTIVE.search(err) is None
    assert unseen("s-", err) == []


def test_a_config_files_problems_are_named_inert(tmp_path: Path) -> None:
    path = tmp_path / "opsbot.yaml"
    path.write_text(yaml.safe_dump({"loop": {f"y-{s.id}:{s.raw} end": 1 for s in SEQUENCES}}))

    for args in (("check-config", str(path)), ("--config", str(path), "ask", "services")):
        code, out, err = invoke(*args)
        assert code in (1, 2) and ACTIVE.search(out + err) is None, args
        assert unseen("y-", err) == [], args
