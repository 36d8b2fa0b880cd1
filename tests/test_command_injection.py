"""Command injection: a corpus of payloads, each through real command templates and real binaries.

Every payload must be refused (`invalid_args`), or run as exactly one inert argv element in its
slot; and the marker file the payload tries to create must never appear. Payloads come from the
usual shell metacharacters and from the public argument-injection corpora (GTFOBins, SonarSource's
argument-injection-vectors): options that write files or run programs in git, ssh, tar, find,
awk, rsync, zip, less and others.
"""

from __future__ import annotations

import json
import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from opsbot.config.policy import Command, Policy
from opsbot.config.settings import SAMPLE_CONFIG, Settings
from opsbot.tools.base import Registry, ToolResult
from opsbot.tools.catalog import ops_tools
from opsbot.tools.executor import Executor, RetryPolicy, ToolCall
from opsbot.tools.runner import which

M = "{MARKER}"  # replaced by the test's own marker path

SHELL = [
    f"; touch {M}",
    f"| touch {M}",
    f"& touch {M}",
    f"&& touch {M}",
    f"|| touch {M}",
    f"$(touch {M})",
    f"`touch {M}`",
    f"> {M}",
    f">> {M}",
    f"2> {M}",
    f"&> {M}",
    f"< /etc/passwd > {M}",
    f"a;touch {M}",
    f"a|touch {M}",
    f"a&&touch {M}",
    f"a||touch {M}",
    f"a$(touch {M})b",
    f"a`touch {M}`b",
    f"'; touch {M}; '",
    f'"; touch {M}; "',
    f"\\; touch {M}",
    f"${{IFS}}touch${{IFS}}{M}",
    f";${{IFS}}touch${{IFS}}{M}",
    f"touch$IFS{M}",
    "$IFS",
    "${PATH}",
    "$HOME",
    "$(id)",
    "`id`",
    f"$((1+1)) $(touch {M})",
    f"{{touch,{M}}}",
    f"<(touch {M})",
    f">(touch {M})",
    f"!touch {M}",
    f":!touch {M}",
    "!sh",
    f"x; exec sh -c 'touch {M}'",
    f"x\\ntouch {M}",
    f"%0atouch {M}",
    f"%0d%0atouch {M}",
    f"& calc.exe & touch {M}",
    "/c calc",
]
CONTROL = [
    f"a\ntouch {M}",
    f"a\rtouch {M}",
    f"a\r\ntouch {M}",
    "a\x00b",
    f"\x00touch {M}",
    "\n",
    f"a\ttouch {M}",
    "\x1b]0;title\x07",
    "\x1b[2J",
    f"\x7ftouch {M}",
]
# C1 controls, U+0080..U+009F: NEL (U+0085) ends a line for some programs, CSI (U+009B) and OSC
# (U+009D) start terminal sequences as ESC [ and ESC ] do.
C1 = [f"a{chr(code)}touch {M}" for code in range(0x80, 0xA0)]
GLOBS = ["*", "/*", "/etc/*", "?", "[a-z]*", "~", "~root", "**/*", f"{M}*", ".*", "/proc/self/environ"]
OPTIONS = [
    f"--output={M}",
    f"--output {M}",
    f"-o{M}",
    f"-o {M}",
    f"-oProxyCommand=touch {M}",
    f"-o ProxyCommand=touch {M}",
    f"-oLocalCommand=touch {M}",
    "-oPermitLocalCommand=yes",
    f"-F{M}",
    "--checkpoint=1",
    f"--checkpoint-action=exec=touch {M}",
    f"--to-command=touch {M}",
    f"--use-compress-program=touch {M}",
    f"-I touch {M}",
    f"--rsh-command=touch {M}",
    f"--info-script=touch {M}",
    f"-exec touch {M} ;",
    f"-exec sh -c 'touch {M}' ;",
    f"-execdir touch {M} ;",
    f"-ok touch {M} ;",
    f"-fprint {M}",
    f"-fprintf {M} x",
    "-delete",
    f"--upload-pack=touch {M}",
    f"--upload-pack touch {M}",
    f"-u touch {M}",
    f"--receive-pack=touch {M}",
    f"--exec=touch {M}",
    f"-c core.pager=touch {M}",
    f"-ccore.pager=touch {M}",
    f"-c core.sshCommand=touch {M}",
    f"-c core.fsmonitor=touch {M}",
    f"--config=core.pager=touch {M}",
    f"--open-files-in-pager=touch {M}",
    f"-Otouch {M}",
    "--ext-diff",
    f"--template={M}",
    f"-e touch {M}",
    f"--rsh=touch {M}",
    f"-e sh -c 'touch {M}'",
    f"--files-from={M}",
    f"-TT=touch {M}",
    f"--unzip-command=touch {M}",
    f"-TTtouch {M}",
    f"--post-file=/etc/passwd --output-document={M}",
    f"-O {M}",
    f"--use-askpass=touch {M}",
    f"-e system('touch {M}')",
    f"-c import os; os.system('touch {M}')",
    "--help",
    "--version",
    "-",
    "--",
    "-n",
    "-v x=1",
    f" --output={M}",  # a leading space: not an option, stays one element
    f"\t--output={M}",
]
CODE = [
    f'BEGIN{{system("touch {M}")}}',
    f'BEGIN {{ system("touch {M}") }}',
    f"'BEGIN{{system(\"touch {M}\")}}'",
    f'{{system("touch {M}")}}',
    f'x=1 BEGIN{{system("touch {M}")}}',
    f'ENVIRON["x"]; system("touch {M}")',
    f"__import__('os').system('touch {M}')",
    f"system('touch {M}')",
    f"exec('touch {M}')",
    f"os.execute('touch {M}')",
    f"PAGER=touch {M}",
    f"BASH_ENV={M}",
    "LD_PRELOAD=/tmp/x.so",
    f"HEAD --output={M}",
    f"HEAD;touch {M}",
    "@{-1}",
    "HEAD@{upstream}",
    ":/touch",
    "HEAD^{/touch}",
    "../../../../etc/passwd",
]
UNICODE = [
    f"\u2014output={M}",  # em dash
    f"\u2013output={M}",  # en dash
    f"\u2212o{M}",  # minus sign
    f"\u2010exec touch {M}",  # hyphen
    "\ufe63delete",  # small hyphen-minus
    f"\uff0d\uff0doutput={M}",  # fullwidth hyphen-minus
    "\u00ad-delete",  # soft hyphen, then a dash
    f"%2D%2Doutput={M}",
    f"\\x2d-output={M}",
    f"\\-\\-output={M}",
]
EDGES = ["", " ", "a" * 5000]
PAYLOADS = SHELL + CONTROL + C1 + GLOBS + OPTIONS + CODE + UNICODE + EDGES

FAST = RetryPolicy(timeout_s=20, retries=0, backoff_s=0.01)
ANY = {"pattern": "(?s).+"}  # lets every payload reach the program: the structure must hold alone


@dataclass(frozen=True)
class Template:
    """A real command with one slot; `echo` says whether the program prints the value back verbatim."""

    argv: list[str]
    param: dict[str, Any]
    echo: str | None = None  # the expected output, with {v} standing for the value

    @property
    def available(self) -> bool:
        return which(self.argv[0]) is not None


def templates(repo: Path) -> dict[str, Template]:
    return {
        "printf": Template(["printf", "--", "[%s]", "{v}"], ANY, echo="[{v}]"),
        "awk": Template(["awk", "--", 'BEGIN { printf "%s", ARGV[1] }', "{v}"], ANY, echo="{v}"),
        "ls": Template(["ls", "-d", "--", "{v}"], ANY),
        "find": Template(["find", "--", "{v}", "-maxdepth", "0"], ANY),
        # --force-local: GNU tar reads "host:file" as a remote archive and runs a remote shell.
        "tar": Template(["tar", "--force-local", "-t", "--file={v}"], {**ANY, "allow_dash": True}),
        "git-rev": Template(["git", "-C", str(repo), "log", "--oneline", "--end-of-options", "{v}", "--"], ANY),
        "git-author": Template(
            ["git", "-C", str(repo), "log", "--format=%an", "--fixed-strings", "--author={v}"],
            {**ANY, "allow_dash": True},
        ),
        "grep": Template(["grep", "-c", "-F", "--regexp={v}", "--", "/etc/hostname"], {**ANY, "allow_dash": True}),
    }


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("repo")
    if which("git") is None:
        return path
    env = {"GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@x", "GIT_COMMITTER_NAME": "a", "GIT_COMMITTER_EMAIL": "a@x"}
    for args in (["init", "-q"], ["commit", "-q", "--allow-empty", "-m", "first"]):
        subprocess.run(["git", "-C", str(path), *args], check=True, env={"PATH": "/usr/bin:/bin", **env})
    return path


@pytest.fixture(scope="module")
def corpus_executor(repo: Path) -> Executor:
    commands = {
        name: Command.model_validate(
            {"description": name, "argv": template.argv, "params": {"v": template.param}, "timeout_s": 10}
        )
        for name, template in templates(repo).items()
        if template.available
    }
    return Executor(Registry(ops_tools(Policy(commands=commands))), FAST)


def run_payload(executor: Executor, name: str, value: str) -> ToolResult:
    arguments = json.dumps({"command": name, "params": {"v": value}})
    return executor.run_one(ToolCall(f"call-{uuid.uuid4().hex[:6]}", "run_command", arguments)).result


def assert_refused_or_inert(result: ToolResult, template: Template, value: str) -> None:
    if not result.ok:
        assert result.status == "invalid_args", result
        return
    argv = result.data["argv"]
    slot = next(i for i, element in enumerate(template.argv) if element.endswith("{v}"))
    assert len(argv) == len(template.argv), "the value became more than one argument"
    assert argv[slot] == template.argv[slot].replace("{v}", value), "the value was changed on its way"
    assert argv[:slot][1:] == template.argv[1:slot] and argv[slot + 1 :] == template.argv[slot + 1 :]
    if template.echo is not None:
        assert result.data["output"] == template.echo.replace("{v}", value), "the program saw something else"


def test_the_corpus_is_large_and_distinct() -> None:
    assert len(PAYLOADS) >= 100
    assert len(set(PAYLOADS)) == len(PAYLOADS)


def test_enough_real_programs_are_installed(repo: Path) -> None:
    installed = [name for name, template in templates(repo).items() if template.available]
    assert {"printf", "ls"} <= set(installed) and len(installed) >= 4, installed


@pytest.mark.parametrize("payload", PAYLOADS, ids=[f"p{i:03d}" for i in range(len(PAYLOADS))])
@pytest.mark.parametrize("name", list(templates(Path("/nonexistent"))))
def test_payload_is_refused_or_one_inert_argument(
    corpus_executor: Executor, repo: Path, tmp_path: Path, name: str, payload: str
) -> None:
    template = templates(repo)[name]
    if not template.available:
        pytest.skip(f"{template.argv[0]} is not installed")
    marker = tmp_path / "MARKER"
    value = payload.replace(M, str(marker))
    result = run_payload(corpus_executor, name, value)
    assert_refused_or_inert(result, template, value)
    assert not marker.exists(), f"{name} ran the payload {value!r}"
    assert sorted(p.name for p in tmp_path.iterdir()) == [], "the payload created a file"


@pytest.mark.parametrize("payload", [p for p in PAYLOADS if p.startswith("-")])
def test_every_dash_payload_is_refused_where_dashes_are_not_allowed(corpus_executor: Executor, payload: str) -> None:
    for name in ("printf", "ls", "find", "git-rev"):
        result = run_payload(corpus_executor, name, payload.replace(M, "/tmp/x"))
        assert result.status == "invalid_args" and "starts with '-'" in result.error.message


@pytest.mark.parametrize("payload", CONTROL + C1)
def test_every_control_character_payload_is_refused_everywhere(corpus_executor: Executor, payload: str) -> None:
    for name in ("printf", "tar", "grep", "git-author"):
        result = run_payload(corpus_executor, name, payload.replace(M, "/tmp/x"))
        assert result.status == "invalid_args" and "control character" in result.error.message


@pytest.mark.parametrize("code", range(0x80, 0xA0), ids=lambda code: f"U+{code:04X}")
def test_every_c1_control_is_refused_and_named(corpus_executor: Executor, code: int) -> None:
    for value in (chr(code), f"a{chr(code)}", f"{chr(code)}a", f"main{chr(code)}--output=/tmp/x"):
        result = run_payload(corpus_executor, "printf", value)
        assert result.status == "invalid_args", result
        assert f"contains a control character (U+{code:04X};" in result.error.message  # type: ignore[union-attr]


@pytest.mark.parametrize("payload", PAYLOADS, ids=[f"p{i:03d}" for i in range(len(PAYLOADS))])
def test_the_sample_commands_refuse_or_contain_every_payload(tmp_path: Path, payload: str) -> None:
    """The bundled sample's parameterised commands, as shipped."""
    ops = Executor(Registry(ops_tools(Settings.load(SAMPLE_CONFIG).policy)), FAST)
    marker = tmp_path / "MARKER"
    value = payload.replace(M, str(marker))
    for name, param in (("mount-usage", "path"), ("restart", "service")):
        arguments = json.dumps({"command": name, "params": {param: value}})
        result = ops.run_one(ToolCall("c", "run_command", arguments)).result
        if result.ok:
            assert result.data["argv"][-1] == value and len(result.data["argv"]) == 4
        else:
            assert result.status == "invalid_args", result
    assert not marker.exists()


def test_a_slot_can_never_reach_the_program_position_or_a_shell() -> None:
    """The templates that would make injection possible do not load at all."""
    for argv in (["{v}"], ["sh", "-c", "echo {v}"], ["ls", "{v}"], ["ls", "--", "x{v}"]):
        with pytest.raises(ValueError):
            Command.model_validate({"description": "x", "argv": argv, "params": {"v": ANY}})


def test_the_harness_notices_an_injection_when_there_is_one(tmp_path: Path) -> None:
    """A template that hands its value to a shell as code loads (the author chose it), and the
    checks above would catch it: the marker appears."""
    shell = Command.model_validate({"description": "x", "argv": ["sh", "-c", "{v}"], "params": {"v": ANY}})
    executor = Executor(Registry(ops_tools(Policy(commands={"shell": shell}))), FAST)
    marker = tmp_path / "MARKER"
    run_payload(executor, "shell", f"touch {marker}")
    assert marker.exists()
