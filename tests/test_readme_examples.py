"""The documents' direct-command examples give what they say, on the bundled sample, as a user runs them.

The examples are read from README.md and docs/*.md themselves: every `you> ...` line of a code
block (README's Quick start chat), every `$ opsbot ask "..."` line of one, and every
`opsbot ask "..."` in the text that is a direct command (docs/terminal.md's table). Each runs as
`opsbot ask "<command>"` in a real process without OPSBOT_CONFIG and with an empty cache, so it
renders the re-dated sample as a first start does. The answer must be of the kind its command
asks for (`logs checkout ERROR since=2h` gives ERROR lines of the last two hours, not "no
matching lines"); lines a document shows under an example must be in its output, in order,
timestamps aside (the sample's logs end near now, so the documents' times are examples).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace

import pytest

from opsbot.bot.commands import NotACommand, parse_command
from opsbot.config.settings import SAMPLE_CONFIG, Settings
from opsbot.tools.executor import ToolCall
from opsbot.tools.logs.time import stamp_at

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
DOCS = [README, *(page.read_text(encoding="utf-8") for page in sorted((ROOT / "docs").glob("*.md")))]
QUICK_START = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
SAMPLE = Settings.load(SAMPLE_CONFIG)

_BLOCK = re.compile(r"^```[^\n]*\n(.*?)^```", re.M | re.S)
_STARTS = re.compile(r'^(?:you> (?P<chat>.+)|\$ opsbot ask (?P<q>["\'])(?P<ask>.+?)(?P=q)(?:\s+#.*)?)$')
_NOTE = re.compile(r"\s{2,}\((?P<note>[^()]*)\)$")  # `you> config checkout      (lists the root; ...)`
_INLINE = re.compile(r'opsbot ask "([^"]+)"')
_TIME_AT_START = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z")
_PATH_IN_QUOTES = re.compile(r'"[^"]*/([^"/]+)"')
_LEVELS = ("DEBU", "INFO", "WARN", "ERRO")
# query_logs' first line, as `ask` prints it and as it follows chat's prompt
_SUMMARY = re.compile(r"(?:^|you> )(?:at least )?([\d,]+) matching (?:lines?|entr(?:y|ies))", re.M)


@dataclass
class Example:
    command: str
    note: str = ""  # what README says in passing of its output
    shown: list[str] = field(default_factory=list)  # the output README shows under it


def readme_examples(text: str) -> list[Example]:
    """Each example once; the same command shown in two places with different output is two examples."""
    found: list[Example] = []
    for block in _BLOCK.findall(text):
        current: Example | None = None
        for line in block.splitlines():
            start = _STARTS.match(line.rstrip())
            if start:
                command = start["chat"] or start["ask"]
                note = _NOTE.search(command)
                current = Example(
                    command[: note.start()].strip() if note else command.strip(), note["note"] if note else ""
                )
                found.append(current)
            elif line.startswith("$ "):
                current = None  # a shell command README shows without its output
            elif current is not None and line.strip() and line.strip() not in ("…", "..."):
                current.shown.append(line)
    found += [Example(command) for command in _INLINE.findall(text)]
    unique: dict[tuple[str, str, tuple[str, ...]], Example] = {}
    for example in found:
        unique.setdefault((example.command, example.note, tuple(example.shown)), example)
    shown = {e.command for e in unique.values() if e.shown or e.note}
    # A bare mention of a command shown elsewhere with its output adds nothing.
    return [e for e in unique.values() if _direct(e.command) and (e.shown or e.note or e.command not in shown)]


def _direct(command: str) -> bool:
    parsed = parse_command(SAMPLE.policy, command)
    return parsed is not None and not isinstance(parsed, NotACommand)


EXAMPLES = readme_examples("\n".join(DOCS))


def test_readme_has_the_examples_this_test_runs() -> None:
    commands = [e.command for e in EXAMPLES]
    # README's Quick start chat, then docs/terminal.md's `opsbot ask` examples: a change to the
    # documents that hides them from this test fails here instead of testing nothing.
    for expected in ("services", "logs checkout ERROR since=2h", "config checkout", "logs checkout ERROR"):
        assert expected in commands, commands
    assert len(commands) >= 7, commands
    assert "QUESTION" not in commands  # a question is no direct command: it needs a model


def clean_env(cache: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "REDIS_URL") and not k.startswith("OPSBOT_")
    }
    env["XDG_CACHE_HOME"] = str(cache)  # a user's first start: the re-dated sample is rendered
    return env


def opsbot(*args: str, cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "opsbot.bot", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=clean_env(cwd / "cache"),
        cwd=cwd,
        timeout=60,
    )


def line_time(line: str, now: float) -> float | None:
    return stamp_at(
        line,
        0,
        SimpleNamespace(zone=None, now=now, year=datetime.fromtimestamp(now).year, declared=None, last_written=None),
    )


def undated(line: str) -> str:
    return _PATH_IN_QUOTES.sub(r'"…/\1"', _TIME_AT_START.sub("<time>", line.rstrip()))


@pytest.mark.parametrize("example", EXAMPLES, ids=[f"{e.command} ({len(e.shown)} lines shown)" for e in EXAMPLES])
def test_a_readme_example_gives_what_readme_says(example: Example, tmp_path: Path) -> None:
    now = time.time()
    done = opsbot("ask", example.command, cwd=tmp_path)

    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip(), done.stderr
    parsed = parse_command(SAMPLE.policy, example.command)
    if isinstance(parsed, ToolCall):
        CHECKS.get(parsed.name, lambda *_: None)(json.loads(parsed.arguments), done.stdout, example, now)

    printed = [undated(line) for line in done.stdout.splitlines()]
    at = 0
    for shown in map(undated, example.shown):  # README's lines, in order, others between them
        assert shown in printed[at:], f"README shows {shown!r} for {example.command!r}; opsbot printed:\n{done.stdout}"
        at = printed.index(shown, at) + 1
    assert "bundled sample" in done.stderr and "re-dated" in done.stderr
    assert (tmp_path / "cache" / "opsbot" / "sample").is_dir()  # on the re-dated copy in the user's cache


def check_services(args: dict[str, object], out: str, example: Example, now: float) -> None:
    for name in [*SAMPLE.policy.services, *SAMPLE.policy.commands, *SAMPLE.policy.config_files]:
        assert f"  {name}: " in out, name


def check_logs(args: dict[str, object], out: str, example: Example, now: float) -> None:
    assert "no matching lines" not in out
    matches = _SUMMARY.search(out)
    assert matches and int(matches[1].replace(",", "")) > 0, out
    lines = [line for line in out.splitlines() if line_time(line, now) is not None]
    assert lines, out
    level = str(args.get("level", "DEBUG")).upper()[:4]
    since = args.get("since")
    hours = float(str(since)[:-1]) * {"m": 60, "h": 3600, "d": 86400}[str(since)[-1]] if since else None
    for line in lines:
        assert _LEVELS.index(line.split()[1][:4]) >= _LEVELS.index(level), line
        if "regex" in args:
            assert re.search(str(args["regex"]), line), line
        if "contains" in args:
            assert str(args["contains"]).lower() in line.lower(), line
        if hours is not None:
            assert line_time(line, now) >= now - hours, line  # type: ignore[operator]


def check_run(args: dict[str, object], out: str, example: Example, now: float) -> None:
    assert out.strip() and "(no output)" not in out and "(exit code" not in out, out  # exit code 0 goes unsaid


def check_config(args: dict[str, object], out: str, example: Example, now: float) -> None:
    if args.get("key"):
        assert out.strip(), out  # the value alone
        return
    listed, _, withheld = out.partition("withheld:")
    if "path" not in args:
        assert listed.strip() and "(no file here can be read)" not in listed, out
    # What README's note says is withheld is: `(lists the root; the .env and the certificate are withheld)`.
    if ".env" in example.note:
        assert re.search(r"\.env: never read", withheld), out
    if "certificate" in example.note:
        assert re.search(r"\.(pem|crt|key): never read", withheld), out


CHECKS = {
    "list_services": check_services,
    "query_logs": check_logs,
    "run_command": check_run,
    "read_config": check_config,
}


def test_quick_starts_chat_answers_every_command_there(tmp_path: Path) -> None:
    typed = [e.command for e in readme_examples(QUICK_START)]
    assert "logs checkout ERROR since=2h" in typed
    done = opsbot("chat", cwd=tmp_path, stdin="\n".join([*typed, "exit", ""]))

    assert done.returncode == 0, done.stderr
    assert "No model is configured" in done.stdout  # what Quick start says `make chat` does without one
    assert "no matching lines" not in done.stdout and "✗" not in done.stdout, done.stdout
    assert len(_SUMMARY.findall(done.stdout)) == sum(c.startswith("logs ") for c in typed)
    assert "Traceback" not in done.stderr


def test_readme_examples_outputs_are_checked_against_what_they_show() -> None:
    """The reader of this test's own parser: shown lines and notes go with their command."""
    text = (
        "```\n"
        "you> logs checkout ERROR since=2h\n"
        "38 matching lines (newest last); read 24 KB of 1 file\n"
        "…\n"
        "2026-12-01T17:52:46Z ERROR checkout-api POST /v1/checkout 502\n"
        "you> config checkout                      (lists the root; the .env is withheld)\n"
        "```\n"
        "```sh\n"
        '$ opsbot ask "services"\n'
        "services:\n"
        "$ make chat\n"
        "ignored\n"
        "```\n"
        'and `opsbot ask "config payments"` in the text, `opsbot ask "why?"` a question.\n'
    )
    examples = {e.command: e for e in readme_examples(text)}
    assert list(examples) == ["logs checkout ERROR since=2h", "config checkout", "services", "config payments"]
    assert examples["logs checkout ERROR since=2h"].shown[-1].endswith("502")
    assert len(examples["logs checkout ERROR since=2h"].shown) == 2
    assert examples["config checkout"].note == "lists the root; the .env is withheld"
    assert examples["services"].shown == ["services:"]
    assert (
        undated('2026-12-01T17:52:46Z ERROR x files: ["/a/b/checkout.log"]')
        == '<time> ERROR x files: ["…/checkout.log"]'
    )
