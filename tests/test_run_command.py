"""run_command and the runner: typed parameters, end of options, authorization, approvals, and a
sandbox that kills whole process trees, caps output and leaks no environment."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from opsbot.bot.commands import NotACommand, parse_command
from opsbot.config.check import ConfigError
from opsbot.config.policy import Access, Command, Policy, Principal
from opsbot.config.settings import SAMPLE_CONFIG, Settings, load_file_config
from opsbot.tools.base import Registry, ToolResult
from opsbot.tools.catalog import ops_tools
from opsbot.tools.commands import ApprovalRequest, CommandBook, run_approved, run_command_tool
from opsbot.tools.executor import Executor, RetryPolicy, ToolCall
from opsbot.tools.runner import BASE_ENV, Sandbox, as_tool_result, run, which
from tests.fakes.waiting import until

FAST = RetryPolicy(timeout_s=20, retries=0, backoff_s=0.01)
ALICE = Principal(platform="slack", user="U_ALICE", team="T1", channel="C_OPS", groups=frozenset({"oncall"}))
BOB = Principal(platform="slack", user="U_BOB", team="T1", channel="C_OPS", groups=frozenset({"oncall"}))
MALLORY = Principal(platform="slack", user="U_MALLORY", team="T1", channel="C_RANDOM")


def command(argv: list[str], params: dict[str, Any] | None = None, **fields: Any) -> Command:
    return Command.model_validate({"description": "test command", "argv": argv, "params": params or {}, **fields})


def executor(**commands: Command) -> Executor:
    return Executor(Registry(ops_tools(Policy(commands=commands))), FAST)


def call(ex: Executor, name: str, params: dict[str, Any] | None = None, who: Principal | None = None) -> ToolResult:
    arguments: dict[str, Any] = {"command": name, **({"params": params} if params is not None else {})}
    return ex.run_one(ToolCall(f"call-{uuid.uuid4().hex[:6]}", "run_command", json.dumps(arguments)), who).result


def argv_of(result: ToolResult) -> list[str]:
    assert result.ok, result
    argv: list[str] = result.data["argv"]
    return argv


@pytest.fixture(scope="module")
def sample_ops() -> Executor:
    return Executor(Registry(ops_tools(Settings.load(SAMPLE_CONFIG).policy)), FAST)


# ================================================================ the sample commands


def test_unknown_command_lists_the_allowed(sample_ops: Executor) -> None:
    result = call(sample_ops, "rm -rf /")
    assert result.status == "not_found"
    assert "disk-usage, memory, mount-usage, restart, uptime" in result.error.hint


def test_uptime_runs_with_its_resolved_executable(sample_ops: Executor) -> None:
    result = call(sample_ops, "uptime")
    assert result.ok, result
    assert result.data["exit_code"] == 0
    assert "load average" in result.data["output"]
    assert os.path.isabs(result.data["argv"][0]) and result.data["argv"][0].endswith("/uptime")


def test_sample_parameterised_read_command(sample_ops: Executor) -> None:
    assert argv_of(call(sample_ops, "mount-usage"))[1:] == ["-h", "--", "/"]
    result = call(sample_ops, "mount-usage", {"path": "/tmp"})
    assert argv_of(result)[1:] == ["-h", "--", "/tmp"] and result.data["exit_code"] == 0
    assert call(sample_ops, "mount-usage", {"path": "/tmp; rm -rf /"}).status == "invalid_args"


def test_sample_write_command_waits_for_approval(sample_ops: Executor) -> None:
    result = call(sample_ops, "restart", {"service": "payments"}, ALICE)
    assert result.status == "needs_approval"
    request = ApprovalRequest.model_validate(result.data)
    assert request.argv[-1] == "payments" and request.requested_by == ALICE


def test_list_services_shows_parameters_and_approval(sample_ops: Executor) -> None:
    entries = sample_ops.run_one(ToolCall("l", "list_services", "{}")).result.data["commands"]
    listed = {entry["name"]: entry["about"] for entry in entries}
    assert "path (text matching" in listed["mount-usage"] and "default /" in listed["mount-usage"]
    assert "one of checkout, payments, auth" in listed["restart"] and "approval" in listed["restart"]


@pytest.mark.parametrize(
    "text, arguments",
    [
        ("run uptime", {"command": "uptime"}),
        ("run mount-usage path=/var/log", {"command": "mount-usage", "params": {"path": "/var/log"}}),
        ("run restart service=auth", {"command": "restart", "params": {"service": "auth"}}),
    ],
)
def test_direct_run_takes_name_value_parameters(sample: Settings, text: str, arguments: dict[str, Any]) -> None:
    parsed = parse_command(sample.policy, text)
    assert isinstance(parsed, ToolCall) and json.loads(parsed.arguments) == arguments


@pytest.mark.parametrize("text", ["run mount-usage /tmp", "run mount-usage path=/a path=/b", "run uptime =x"])
def test_direct_run_with_other_words_is_not_a_command(sample: Settings, text: str) -> None:
    parsed = parse_command(sample.policy, text)
    assert isinstance(parsed, NotACommand) and "name=value" in parsed.why


# ================================================================ typed parameters


@pytest.fixture(scope="module")
def typed() -> Executor:
    return executor(
        show=command(
            ["printf", "--", "%s|%s|%s\\n", "{color}", "{code}", "{count}"],
            {
                "color": {"enum": ["red", "green"]},
                "code": {"pattern": "[A-Z]{3}-[0-9]{2}"},
                "count": {"min": 1, "max": 50, "default": 10},
            },
        )
    )


def test_valid_values_fill_one_element_each_and_defaults_apply(typed: Executor) -> None:
    result = call(typed, "show", {"color": "red", "code": "ABC-12"})
    assert argv_of(result)[1:] == ["--", "%s|%s|%s\\n", "red", "ABC-12", "10"]
    assert result.data["output"] == "red|ABC-12|10\n"
    assert call(typed, "show", {"color": "green", "code": "XYZ-00", "count": 50}).data["output"] == "green|XYZ-00|50\n"
    assert call(typed, "show", {"color": "green", "code": "XYZ-00", "count": "7"}).data["output"] == "green|XYZ-00|7\n"


@pytest.mark.parametrize(
    "params, words",
    [
        ({"color": "blue", "code": "ABC-12"}, "'blue' is not one of the allowed values"),
        ({"color": "red", "code": "ABC-123"}, "does not match the pattern"),  # fullmatch, not search
        ({"color": "red", "code": "xABC-12"}, "does not match the pattern"),
        ({"color": "red", "code": "ABC-12", "count": 51}, "51 is outside 1..50"),
        ({"color": "red", "code": "ABC-12", "count": 0}, "0 is outside 1..50"),
        ({"color": "red", "code": "ABC-12", "count": "ten"}, "'ten' is not an integer"),
        ({"color": "red", "code": "ABC-12", "count": "1e3"}, "is not an integer"),
    ],
)
def test_values_outside_their_type_are_refused_with_what_is_expected(
    typed: Executor, params: dict[str, Any], words: str
) -> None:
    result = call(typed, "show", params)
    assert result.status == "invalid_args" and words in result.error.message, result
    assert "color: one of red, green" in result.error.hint
    assert "code: text matching [A-Z]{3}-[0-9]{2}" in result.error.hint
    assert "count: an integer from 1 to 50; default 10" in result.error.hint


@pytest.mark.parametrize("value", [True, 1.5, None, ["red"], {"a": 1}])
def test_values_that_are_not_strings_or_integers_are_refused_by_the_schema(typed: Executor, value: Any) -> None:
    assert call(typed, "show", {"color": value, "code": "ABC-12"}).status == "invalid_args"


def test_unknown_and_missing_parameters_are_all_named_at_once(typed: Executor) -> None:
    result = call(typed, "show", {"colour": "red", "extra": "x"})
    assert result.status == "invalid_args"
    for words in ("unknown parameter 'colour'", "unknown parameter 'extra'", "missing parameter 'color'"):
        assert words in result.error.message
    assert "color: one of red, green" in result.error.hint


def test_parameters_given_to_a_command_without_any_are_refused() -> None:
    result = call(executor(plain=command(["uptime"])), "plain", {"since": "1h"})
    assert result.status == "invalid_args" and "unknown parameter 'since'" in result.error.message
    assert "takes no parameters" in result.error.hint


# ================================================================ dashes, end of options, control characters


@pytest.fixture(scope="module")
def listing() -> Executor:
    return executor(
        ls=command(["ls", "-d", "--", "{path}"], {"path": {"pattern": ".+"}}),
        since=command(["echo", "--since={since}"], {"since": {"pattern": "-?[0-9]+h", "allow_dash": True}}),
    )


@pytest.mark.parametrize("value", ["-la", "--output=/tmp/x", "-", "--", "-oProxyCommand=id"])
def test_values_starting_with_a_dash_are_refused(listing: Executor, value: str) -> None:
    result = call(listing, "ls", {"path": value})
    assert result.status == "invalid_args" and "starts with '-'" in result.error.message


def test_the_authors_end_of_options_stays_before_the_slot(listing: Executor) -> None:
    result = call(listing, "ls", {"path": "/"})
    assert argv_of(result)[1:] == ["-d", "--", "/"] and result.data["output"] == "/\n"


def test_an_attached_option_value_may_allow_a_dash(listing: Executor) -> None:
    assert call(listing, "since", {"since": "-2h"}).data["output"] == "--since=-2h\n"
    assert call(listing, "since", {"since": "-2x"}).status == "invalid_args"


# C0 and C1: NEL (U+0085) is a line break, CSI (U+009B) and OSC...ST (U+009D, U+009C) terminal sequences.
@pytest.mark.parametrize("value", ["a\x00b", "a\nb", "a\rb", "\n", "a\tb", "\x1b[2J", "a\x85b", "\x9b2J", "\x9d0\x9c"])
def test_control_characters_are_refused(listing: Executor, value: str) -> None:
    result = call(listing, "ls", {"path": value})
    assert result.status == "invalid_args" and "control character" in result.error.message


def test_characters_just_outside_the_control_ranges_are_accepted(listing: Executor) -> None:
    """U+00A0 (no-break space) and é follow the C1 range: they are text, not controls."""
    for value in ("a\u00a0b", "caf\u00e9", "~"):
        assert argv_of(call(listing, "ls", {"path": value}))[-1] == value


def test_empty_and_overlong_values_are_refused(listing: Executor) -> None:
    assert "is empty" in call(listing, "ls", {"path": ""}).error.message
    assert "at most 1,024" in call(listing, "ls", {"path": "a" * 5000}).error.message


@pytest.mark.parametrize(
    "argv, params, words",
    [
        (["ls", "{path}"], {"path": {"pattern": ".+"}}, "put '--'"),
        (["ls", "-d", "{a}", "{b}"], {"a": {"pattern": ".+"}, "b": {"pattern": ".+"}}, "slot {b} would be"),
        (["ls", "--color=never", "{p}"], {"p": {"pattern": ".+"}}, "slot {p} would be a positional"),
        (["find", "--", "{p}"], {"p": {"pattern": ".+", "allow_dash": True}}, "allow_dash needs"),
        (["git", "log", "--end-of-options", "{r}"], {"r": {"pattern": ".+", "allow_dash": True}}, "allow_dash"),
        # --oneline takes no value, so a dash value after it would be an option of its own (--output=/x).
        (["git", "log", "--oneline", "{ref}"], {"ref": {"pattern": ".+", "allow_dash": True}}, "allow_dash needs"),
        (["journalctl", "--since", "{s}"], {"s": {"pattern": ".+", "allow_dash": True}}, "allow_dash needs"),
        (["grep", "-e", "{p}", "--", "f"], {"p": {"pattern": ".+", "allow_dash": True}}, "allow_dash needs"),
        (["ls", "-n", "{n}"], {"n": {"min": -5, "max": 5, "allow_dash": True}}, "allow_dash needs"),
        (["journalctl", "-S{since}"], {"since": {"pattern": ".+"}}, "inside a larger string"),
        (["ls", "--", "x{path}"], {"path": {"pattern": ".+"}}, "inside a larger string"),
        (["ls", "--", "--x={path}={path}"], {"path": {"pattern": ".+"}}, "inside a larger string"),
        (["sh", "-c", "echo {x}"], {"x": {"pattern": ".+"}}, "inside a larger string"),
        (["{prog}"], {"prog": {"enum": ["ls"]}}, "executable"),
        (["ls", "--", "{path}"], {}, "slot {path} has no parameter"),
        (["ls"], {"path": {"pattern": ".+"}}, "path have no slot"),
        (["ls", "--", "a\nb"], {}, "control character"),
        (["ls", "--", "a\x85b"], {}, "control character (U+0085"),
        (["ls", "--color\x9b=never", "--", "{p}"], {"p": {"pattern": ".+"}}, "control character (U+009B"),
    ],
)
def test_unsafe_templates_are_refused_at_load(argv: list[str], params: dict[str, Any], words: str) -> None:
    with pytest.raises(ValidationError) as caught:
        command(argv, params)
    assert words in str(caught.value)


@pytest.mark.parametrize(
    "param, words",
    [
        ({"enum": ["a"], "pattern": "a"}, "exactly one of"),
        ({"description": "nothing"}, "exactly one of"),
        ({"min": 1}, "both min and max"),
        ({"min": 5, "max": 1}, "greater than max"),
        ({"min": -5, "max": 5}, "negative"),
        ({"pattern": "("}, "not a valid regular expression"),
        ({"enum": ["--all"]}, "starts with '-'"),
        ({"enum": ["nginx\x85"]}, "control character (U+0085"),
        ({"enum": [""]}, "empty"),
        ({"enum": ["a", "b"], "default": "c"}, "not one of the allowed values"),
        ({"min": 1, "max": 5, "default": 9}, "outside 1..5"),
    ],
)
def test_bad_parameters_are_refused_at_load(param: dict[str, Any], words: str) -> None:
    with pytest.raises(ValidationError) as caught:
        command(["ls", "-n", "{p}"], {"p": param})
    assert words in str(caught.value)


@pytest.mark.skipif(which("git") is None, reason="git is not installed")
def test_a_slot_attached_to_a_long_option_is_one_element_whatever_its_value(tmp_path: Path) -> None:
    # Split, `git log --author --help` prints help: git reads some options before the value.
    env = {"PATH": "/usr/bin:/bin", "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@x", "GIT_COMMITTER_NAME": "a"}
    for args in (["init", "-q"], ["commit", "-q", "--allow-empty", "-m", "one"]):
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, env={**env, "GIT_COMMITTER_EMAIL": "a@x"})
    ex = executor(
        authors=command(
            ["git", "-C", str(tmp_path), "log", "--format=%an", "--fixed-strings", "--author={who}"],
            {"who": {"pattern": ".+", "allow_dash": True}},
        )
    )
    result = call(ex, "authors", {"who": "--help"})
    assert argv_of(result)[-1] == "--author=--help"
    assert result.data["exit_code"] == 0 and result.data["output"] == ""  # no author called "--help"
    assert call(ex, "authors", {"who": "a"}).data["output"] == "a\n"


def test_option_argument_and_end_of_options_templates_load() -> None:
    command(["journalctl", "--since={since}"], {"since": {"pattern": "-?[0-9]+h", "allow_dash": True}})
    command(["journalctl", "-u", "{unit}", "--since", "{since}"], {"unit": {"enum": ["a"]}, "since": {"enum": ["1h"]}})
    command(["git", "log", "--end-of-options", "{ref}", "--"], {"ref": {"pattern": "[a-f0-9]{7,40}"}})
    command(["awk", "--", "{print $1}", "{file}"], {"file": {"enum": ["/etc/hostname"]}})  # literal braces


def test_template_errors_reach_check_config_with_their_line(tmp_path: Path) -> None:
    path = tmp_path / "opsbot.yaml"
    path.write_text(
        "policy:\n  commands:\n    journal:\n      description: j\n"
        "      argv: [journalctl, '-S{since}']\n      params:\n        since: {pattern: '[0-9]+h'}\n"
    )
    with pytest.raises(ConfigError) as caught:
        load_file_config(path)
    [problem] = caught.value.problems
    assert problem.where == f"{path}:5" and "inside a larger string" in problem.message


def test_relative_executables_resolve_against_the_config_directory(tmp_path: Path) -> None:
    script = tmp_path / "bin" / "hello.sh"
    script.parent.mkdir()
    script.write_text("#!/bin/sh\necho hello from the script\n")
    script.chmod(0o755)
    policy = Policy(commands={"hello": command(["bin/hello.sh"])}).resolved(tmp_path)
    result = call(Executor(Registry(ops_tools(policy)), FAST), "hello")
    assert result.data["argv"] == [str(script)] and result.data["output"] == "hello from the script\n"


def test_a_missing_binary_is_unavailable_with_a_clear_message() -> None:
    result = call(executor(gone=command(["opsbot-no-such-binary", "--version"])), "gone")
    assert result.status == "unavailable"
    assert "'opsbot-no-such-binary'" in result.error.message and "not installed" in result.error.message


def test_executables_are_resolved_when_the_tool_is_built(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    decoy = tmp_path / "uptime"
    decoy.write_text("#!/bin/sh\necho decoy\n")
    decoy.chmod(0o755)
    tool = run_command_tool(Policy(commands={"up": command(["uptime"])}))
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    result = tool.run(tool.args_model(command="up"), None)
    assert result.ok and "decoy" not in result.data["output"] and result.data["argv"][0] != str(decoy)


# ================================================================ authorization


@pytest.fixture(scope="module")
def guarded() -> Executor:
    return executor(
        oncall_only=command(["uptime"], access={"groups": ["oncall"], "channels": ["C_OPS"]}),
        alice_only=command(["uptime"], access={"users": ["U_ALICE"]}),
    )


def test_a_principal_inside_access_runs_the_command(guarded: Executor) -> None:
    assert call(guarded, "oncall_only", who=ALICE).ok
    assert call(guarded, "alice_only", who=ALICE).ok


def test_a_principal_outside_access_is_denied_with_what_is_missing(guarded: Executor) -> None:
    result = call(guarded, "oncall_only", who=MALLORY)
    assert result.status == "denied"
    assert "group among oncall" in result.error.message and "channel among C_OPS" in result.error.message
    result = call(guarded, "alice_only", who=BOB)
    assert result.status == "denied" and "user U_BOB is not one of U_ALICE" in result.error.message


def test_nobody_in_particular_is_denied_a_restricted_command(guarded: Executor) -> None:
    result = call(guarded, "alice_only", who=None)
    assert result.status == "denied" and "known user" in result.error.message


def test_denial_comes_before_parameter_checks() -> None:
    ex = executor(secret=command(["ls", "-d", "--", "{p}"], {"p": {"enum": ["/"]}}, access={"users": ["U_ALICE"]}))
    assert call(ex, "secret", {"p": "nope"}, MALLORY).status == "denied"


# ================================================================ write commands and approvals


@pytest.fixture
def restart_policy(tmp_path: Path) -> Policy:
    return Policy(
        commands={
            "restart": command(
                ["touch", "--", "{target}"],
                {"target": {"enum": [str(tmp_path / "restarted-a"), str(tmp_path / "restarted-b")]}},
                risk="write",
                access={"groups": ["oncall"]},
                approvers={"users": ["U_ALICE", "U_BOB"]},
            )
        }
    )


def ask(policy: Policy, target: str, who: Principal = BOB) -> ApprovalRequest:
    result = call(Executor(Registry(ops_tools(policy)), FAST), "restart", {"target": target}, who)
    assert result.status == "needs_approval", result
    return ApprovalRequest.model_validate(result.data)


def test_a_write_command_is_not_run_by_the_tool(restart_policy: Policy, tmp_path: Path) -> None:
    target = str(tmp_path / "restarted-a")
    request = ask(restart_policy, target)
    assert not Path(target).exists()
    assert request.command == "restart" and request.params == {"target": target}
    assert request.argv == (which("touch"), "--", target)
    assert request.requested_by == BOB and request.expires_at - request.created_at == timedelta(seconds=900)


def test_run_approved_runs_exactly_the_approved_argv(restart_policy: Policy, tmp_path: Path) -> None:
    target = tmp_path / "restarted-a"
    request = ask(restart_policy, str(target))
    result = run_approved(restart_policy, request, ALICE)
    assert result.ok, result
    assert tuple(result.data["argv"]) == request.argv and result.data["exit_code"] == 0
    assert target.exists() and not (tmp_path / "restarted-b").exists()


def tampered(request: ApprovalRequest, tmp_path: Path) -> list[ApprovalRequest]:
    other = str(tmp_path / "restarted-b")
    return [
        request.model_copy(update={"params": {"target": other}}),  # argv still says a: mismatch
        request.model_copy(update={"argv": (request.argv[0], "--", other)}),  # params still say a
        request.model_copy(update={"argv": ("/bin/sh", "-c", f"touch {other}")}),
        request.model_copy(update={"argv": (*request.argv, other)}),
        request.model_copy(update={"params": {"target": "/etc/x"}, "argv": (request.argv[0], "--", "/etc/x")}),
        request.model_copy(update={"params": {"target": other, "extra": "x"}}),
        request.model_copy(update={"command": "uptime"}),
    ]


def test_run_approved_refuses_a_tampered_request(restart_policy: Policy, tmp_path: Path) -> None:
    request = ask(restart_policy, str(tmp_path / "restarted-a"))
    for bad in tampered(request, tmp_path):
        result = run_approved(restart_policy, bad, ALICE)
        assert not result.ok and result.status in ("denied", "invalid_args", "not_found"), (bad, result)
    assert not (tmp_path / "restarted-a").exists() and not (tmp_path / "restarted-b").exists()


def test_run_approved_checks_who_approves(restart_policy: Policy, tmp_path: Path) -> None:
    request = ask(restart_policy, str(tmp_path / "restarted-a"))
    own = run_approved(restart_policy, request, BOB)
    assert own.status == "denied" and "person who asked" in own.error.message
    outsider = run_approved(restart_policy, request, MALLORY)
    assert outsider.status == "denied" and "approve 'restart'" in outsider.error.message
    assert not (tmp_path / "restarted-a").exists()


def test_run_approved_checks_the_current_policy(restart_policy: Policy, tmp_path: Path) -> None:
    request = ask(restart_policy, str(tmp_path / "restarted-a"))
    spec = restart_policy.commands["restart"]
    narrowed = Policy(commands={"restart": spec.model_copy(update={"access": Access(users=frozenset({"U_ALICE"}))})})
    assert run_approved(narrowed, request, ALICE).status == "denied"  # the asker may no longer run it
    moved = Policy(commands={"restart": spec.model_copy(update={"argv": ["rm", "-f", "--", "{target}"]})})
    assert "differs" in run_approved(moved, request, ALICE).error.message
    assert run_approved(Policy(), request, ALICE).status == "not_found"
    assert not (tmp_path / "restarted-a").exists()


@pytest.mark.parametrize(
    "change",
    [
        {"env": {"RESTART_MODE": "hard"}},
        {"run_as": "nobody"},
        {"limits": {"cpu_s": 1}},
        {"timeout_s": 300},
        {"max_output_bytes": 10},
    ],
)
def test_run_approved_refuses_when_how_it_runs_changed(
    restart_policy: Policy, tmp_path: Path, change: dict[str, Any]
) -> None:
    request = ask(restart_policy, str(tmp_path / "restarted-a"))
    spec = restart_policy.commands["restart"]
    changed = Command.model_validate({**spec.model_dump(), **change})
    result = run_approved(Policy(commands={"restart": changed}), request, ALICE)
    assert result.status == "denied" and "changed in the policy" in result.error.message, result
    assert not (tmp_path / "restarted-a").exists()


def test_a_tampered_digest_is_refused(restart_policy: Policy, tmp_path: Path) -> None:
    request = ask(restart_policy, str(tmp_path / "restarted-a"))
    assert run_approved(restart_policy, request.model_copy(update={"digest": "0" * 64}), ALICE).status == "denied"
    assert not (tmp_path / "restarted-a").exists()


def test_run_approved_refuses_an_expired_request(restart_policy: Policy, tmp_path: Path) -> None:
    request = ask(restart_policy, str(tmp_path / "restarted-a"))
    late = datetime.now(UTC) + timedelta(seconds=901)
    assert "expired" in run_approved(restart_policy, request, ALICE, now=late).error.message
    stretched = request.model_copy(update={"expires_at": request.expires_at + timedelta(days=30)})
    assert "expired" in run_approved(restart_policy, stretched, ALICE, now=late).error.message


def test_run_approved_is_not_a_tool(restart_policy: Policy) -> None:
    names = {tool.name for tool in ops_tools(restart_policy)}
    assert not any("approv" in name for name in names)


# ================================================================ the runner: timeouts and process trees


def _live_processes_with(marker: str) -> list[int]:
    """Pids whose command line contains `marker` and that are not zombies."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker in cmdline and state != "Z":
            pids.append(int(entry.name))
    return pids


def _kill_leftovers(marker: str) -> None:
    for pid in _live_processes_with(marker):  # only the sleeps this test started
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass


def _assert_gone(marker: str) -> None:
    until(lambda: not _live_processes_with(marker), 2, interval=0.05)
    assert _live_processes_with(marker) == [], "a process started by the command survived"


def unique_sleep() -> str:
    # A unique duration is the marker: no other process on the machine sleeps exactly this long.
    return f"30.{uuid.uuid4().int % 10**9:09d}"


def test_timeout_kills_the_whole_process_tree() -> None:
    marker = unique_sleep()
    script = f"sleep {marker} & (sleep {marker} & sleep {marker}) & sleep {marker}"
    ex = executor(hang=command(["sh", "-c", script], timeout_s=0.5))
    try:
        begun = time.monotonic()
        result = call(ex, "hang")
        elapsed = time.monotonic() - begun
        assert result.status == "timeout" and "killed" in result.error.message
        assert elapsed < 3
        _assert_gone(f"sleep {marker}")
    finally:
        _kill_leftovers(f"sleep {marker}")


def test_background_children_do_not_outlive_a_finished_command() -> None:
    marker = unique_sleep()
    try:
        begun = time.monotonic()
        done = run(["/bin/sh", "-c", f"sleep {marker} & echo started"], Sandbox(timeout_s=10))
        assert time.monotonic() - begun < 2, "waited for a background child holding the pipe"
        assert done.exit_code == 0 and done.output == "started\n" and not done.timed_out
        _assert_gone(f"sleep {marker}")
    finally:
        _kill_leftovers(f"sleep {marker}")


def test_a_child_that_escapes_its_session_does_not_block_the_run() -> None:
    if which("setsid") is None:
        pytest.skip("setsid is not installed")
    marker = unique_sleep()
    try:
        begun = time.monotonic()
        done = run(["/bin/sh", "-c", f"setsid sleep {marker} & echo started"], Sandbox(timeout_s=10))
        assert time.monotonic() - begun < 2 and done.output == "started\n"
    finally:
        _kill_leftovers(f"sleep {marker}")


def test_timeout_keeps_the_output_so_far() -> None:
    done = run(["/bin/sh", "-c", "echo before; sleep 5"], Sandbox(timeout_s=0.5))
    assert done.timed_out and done.output == "before\n" and done.exit_code == -9


def test_a_timeout_message_names_the_configured_timeout_not_the_time_the_kill_took() -> None:
    done = run(["/bin/sh", "-c", "sleep 5"], Sandbox(timeout_s=0.5))
    slow_kill = dataclasses.replace(done, duration_s=1.734)  # killing and reaping took a while
    message = as_tool_result(slow_kill).error.message
    assert "timeout of 0.5s" in message and "1.7" not in message, message


# ================================================================ the runner: output, environment, stdin


def test_huge_output_is_capped_with_the_cut_stated() -> None:
    ex = executor(count=command(["seq", "--", "1", "1000000"], max_output_bytes=10_000))
    result = call(ex, "count")
    assert result.ok, result
    output, note = result.data["output"], result.data["note"]
    assert output.startswith("1\n2\n3\n") and output.endswith("999999\n1000000\n")
    assert len(output.encode()) < 10_100
    total = len("".join(f"{n}\n" for n in range(1, 1_000_001)).encode())
    assert f"output was {total:,} bytes" in note and "cut from the middle" in note
    assert f"[... {total - 10_000:,} bytes cut ...]" in output


def test_endless_output_is_capped_in_memory_and_stopped_by_the_timeout() -> None:
    done = run(["/usr/bin/yes", "opsbot"], Sandbox(timeout_s=0.5, max_output_bytes=1000))
    assert done.timed_out and done.output_bytes > 100_000
    assert len(done.output) < 1100 and done.cut is not None


def test_small_output_is_whole_and_multibyte_text_is_kept() -> None:
    done = run(["/usr/bin/printf", "%s", "ünïcødé ✓"], Sandbox(max_output_bytes=100))
    assert done.output == "ünïcødé ✓" and done.cut is None


def test_the_environment_is_minimal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-must-not-leak")
    monkeypatch.setenv("LESSOPEN", "|touch /tmp/opsbot-lessopen %s")
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-must-not-leak")
    result = call(executor(env=command(["env"], env={"SYSTEMD_COLORS": "0"})), "env")
    seen = dict(line.split("=", 1) for line in result.data["output"].splitlines())
    assert "OPENAI_API_KEY" not in seen and "SLACK_BOT_TOKEN" not in seen and "LESSOPEN" not in seen
    assert seen["PAGER"] == seen["GIT_PAGER"] == seen["SYSTEMD_PAGER"] == "cat"
    assert seen["SYSTEMD_COLORS"] == "0" and seen["PATH"] == BASE_ENV["PATH"]
    assert set(seen) <= {*BASE_ENV, "SYSTEMD_COLORS", "PWD"}


@pytest.mark.parametrize("name", ["PAGER", "GIT_PAGER", "LESSOPEN", "LD_PRELOAD"])
def test_config_cannot_turn_pagers_or_the_loader_back_on(name: str) -> None:
    with pytest.raises(ValidationError, match="cannot be set"):
        command(["env"], env={name: "x"})


def test_stdin_is_closed_so_nothing_waits_for_input() -> None:
    begun = time.monotonic()
    done = run(["/bin/cat"], Sandbox(timeout_s=5))
    assert done.exit_code == 0 and done.output == "" and time.monotonic() - begun < 2


def test_a_shell_is_never_involved() -> None:
    done = run(["/usr/bin/printf", "%s", "$(id) `id` ; id | id"], Sandbox())
    assert done.output == "$(id) `id` ; id | id"


# ================================================================ the runner: resource limits and user


needs_prlimit = pytest.mark.skipif(which("prlimit") is None, reason="prlimit (util-linux) is not installed")


@needs_prlimit
def test_cpu_limit_stops_a_busy_loop() -> None:
    ex = executor(spin=command(["sh", "-c", "while :; do :; done"], timeout_s=20, limits={"cpu_s": 1}))
    begun = time.monotonic()
    result = call(ex, "spin")
    assert result.ok, result
    assert result.data["exit_code"] < 0 and time.monotonic() - begun < 10  # killed by SIGXCPU / SIGKILL


@needs_prlimit
@pytest.mark.skipif(which("perl") is None, reason="perl is not installed")
def test_memory_limit_stops_a_large_allocation() -> None:
    big = ["perl", "-e", "my $x = 'a' x (300*1024*1024); print length($x)"]
    free = call(executor(big=command(big, timeout_s=20)), "big")
    assert free.ok and free.data["output"].strip() == str(300 * 1024 * 1024)
    limited = call(executor(big=command(big, timeout_s=20, limits={"memory_bytes": "100MiB"})), "big")
    assert limited.ok and limited.data["exit_code"] != 0 and "Out of memory" in limited.data["output"]


def test_missing_prlimit_is_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("opsbot.tools.runner.which", lambda program: None)
    done = run(["/usr/bin/true"], Sandbox(cpu_s=1))
    assert done.error is not None and "prlimit" in done.error


@pytest.mark.skipif(os.geteuid() != 0, reason="switching users needs root")
def test_run_as_switches_user_and_groups() -> None:
    result = call(executor(who=command(["id"], run_as="nobody")), "who")
    assert result.ok, result
    assert result.data["output"].startswith("uid=65534(nobody)") and "groups=0(" not in result.data["output"]


def test_run_as_an_unknown_user_is_unavailable() -> None:
    result = call(executor(who=command(["id"], run_as="opsbot-no-such-user")), "who")
    assert result.status == "unavailable" and "no user 'opsbot-no-such-user'" in result.error.message


def test_command_book_shares_one_resolution_for_tool_and_approval(restart_policy: Policy, tmp_path: Path) -> None:
    book = CommandBook(restart_policy)
    assert book.executables["restart"] == shutil.which("touch", path=BASE_ENV["PATH"])


def test_a_command_slower_than_the_executor_timeout_runs_once_to_its_own_timeout(tmp_path) -> None:
    """The executor's own timeout (here 0.3 s) must not cut short, and then re-run, a command
    whose declared timeout is longer: it would start a second copy while the first still runs."""
    from opsbot.config.policy import Command, Policy
    from opsbot.tools.base import Registry
    from opsbot.tools.commands import run_command_tool
    from opsbot.tools.executor import Executor, RetryPolicy, ToolCall

    counter = tmp_path / "runs"
    script = f"echo run >> {counter}; sleep 1; echo done"
    policy = Policy(commands={"slow": Command(description="slow", argv=["sh", "-c", script], timeout_s=3)})
    executor = Executor(Registry([run_command_tool(policy)]), RetryPolicy(timeout_s=0.3, retries=2, backoff_s=0))
    outcome = executor.run_one(ToolCall("1", "run_command", '{"command": "slow"}'))
    assert outcome.result.ok and "done" in outcome.result.data["output"]
    assert counter.read_text().count("run") == 1
