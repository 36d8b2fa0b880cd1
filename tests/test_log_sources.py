"""query_logs over journald units and allowlisted log commands (tools/logs/), with fake
binaries written to tmp_path: what argv they get, what filters opsbot applies on top, ordering,
caps, and failures (missing, failing, hanging)."""

from __future__ import annotations

import json
import os
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

import opsbot.tools.logs.sources as log_sources
from opsbot.config.policy import Access, Command, Policy, Principal, Service
from opsbot.tools.base import Registry, ToolResult
from opsbot.tools.executor import Executor, RetryPolicy, ToolCall
from opsbot.tools.logs import QueryLogsArgs, Readers, query_logs, query_logs_tool, readers_for
from opsbot.tools.runner import SYSTEM_PATH, Sandbox, run, which
from tests.fakes.waiting import until

FAST = RetryPolicy(timeout_s=20, retries=0, backoff_s=0.01)
BASE = datetime(2026, 11, 29, 3, 0, 0, tzinfo=UTC)
ALICE = Principal(platform="slack", user="U_ALICE", groups=frozenset({"oncall"}))
MALLORY = Principal(platform="slack", user="U_MALLORY")

# The fake reads what to do from files beside it: the environment a sandboxed process gets is
# the runner's minimal one, so nothing can be passed that way.
FAKE = """#!{python}
import json, os, subprocess, sys
from pathlib import Path
here = Path(__file__).resolve().parent
(here / "argv.json").write_text(json.dumps({{"argv": sys.argv, "ppid": os.getppid(), "env": dict(os.environ)}}))
mode = (here / "mode").read_text().strip() if (here / "mode").exists() else "ok"
if mode == "fail":
    sys.stderr.write("Failed to open journal: token=hunter2hunter2hunter2 Permission denied\\n")
    sys.exit(1)
if mode == "hang":
    child = subprocess.Popen(["/bin/sleep", (here / "marker").read_text()])
    (here / "pids").write_text(f"{{os.getpid()}} {{child.pid}}")
    sys.stdout.write("2026-11-29T03:00:00.000000+00:00 host app[1]: before the hang\\n")
    sys.stdout.flush()
    child.wait()  # as long as its child sleeps: half a minute
sys.stdout.write((here / "out.txt").read_text() if (here / "out.txt").exists() else "")
"""


# ---------------------------------------------------------------- helpers


def fake_binary(directory: Path, name: str, output: list[str] | None = None, mode: str = "ok") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(FAKE.format(python=sys.executable))
    path.chmod(0o755)
    if output is not None:
        (directory / "out.txt").write_text("".join(line + "\n" for line in output))
    (directory / "mode").write_text(mode)
    return path


def recorded(fake: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((fake.parent / "argv.json").read_text())
    return data


def stamp(seconds: float) -> str:
    """A journalctl short-iso-precise timestamp, BASE + seconds."""
    return (BASE + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%S.%f+00:00")


def jline(seconds: float, text: str) -> str:
    return f"{stamp(seconds)} web1 shop[42]: {text}"


def journal_newest_first(count: int) -> list[str]:
    """What `journalctl --reverse` prints: entry n at BASE + n seconds, newest first."""
    return [jline(n, f"entry {n:03d}") for n in reversed(range(count))]


def executor(policy: Policy, journalctl: Path | str | None = None) -> Executor:
    return Executor(Registry([query_logs_tool(policy, journalctl=str(journalctl) if journalctl else None)]), FAST)


def journald(fake: Path | str | None, units: list[str] | None = None, **service: Any) -> Executor:
    service.setdefault("timezone", "UTC")
    policy = Policy(services={"shop": Service(journald=units or ["shop.service"], **service)})
    return executor(policy, fake)


def call(ex: Executor, principal: Principal | None = None, **args: Any) -> ToolResult:
    payload = json.dumps({"service": "shop", **args})
    return ex.run_one(ToolCall(f"call-{uuid.uuid4().hex[:6]}", "query_logs", payload), principal).result


def ok(ex: Executor, principal: Principal | None = None, **args: Any) -> dict[str, Any]:
    result = call(ex, principal, **args)
    assert result.ok, result
    data: dict[str, Any] = result.data
    return data


def lines_of(data: dict[str, Any]) -> list[str]:
    text: str = data["lines"]
    return text.splitlines() if text else []


def epoch(seconds: float) -> float:
    return (BASE + timedelta(seconds=seconds)).timestamp()


# ---------------------------------------------------------------- config


def test_a_service_needs_at_least_one_source() -> None:
    with pytest.raises(ValidationError, match="at least one log source"):
        Service()
    assert Service(journald=["nginx.service"]).logs == []
    assert Service(log_command="pod-logs").log_command == "pod-logs"


@pytest.mark.parametrize("unit", ["-x", "--since=yesterday", "a b.service", "a;b", "", "x$(id).service"])
def test_unit_names_that_could_be_options_or_worse_are_refused(unit: str) -> None:
    with pytest.raises(ValidationError):
        Service(journald=[unit])


def test_production_journalctl_is_resolved_on_the_fixed_system_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    decoy = fake_binary(tmp_path / "bin", "journalctl", [])
    monkeypatch.setenv("PATH", f"{decoy.parent}:{os.environ['PATH']}")
    readers = readers_for(Policy(services={"shop": Service(journald=["shop.service"])}))
    assert readers.journalctl == which("journalctl")
    assert readers.journalctl != str(decoy)
    assert readers.journalctl is None or os.path.dirname(readers.journalctl) in SYSTEM_PATH.split(":")


# ---------------------------------------------------------------- journald: what it is asked


def test_journalctl_gets_units_times_priority_and_caps_as_separate_arguments(tmp_path: Path) -> None:
    fake = fake_binary(tmp_path / "bin", "journalctl", journal_newest_first(5))
    ex = journald(fake, ["shop.service", "shop-worker@1.service"])
    ok(ex, level="ERROR", since="2026-11-29T03:00:01Z", until="2026-11-29T03:00:03.5Z")

    argv = recorded(fake)["argv"]
    assert argv[0] == str(fake)
    assert argv[1:] == [
        "--no-pager",
        "--quiet",
        "--output=short-iso-precise",
        "--reverse",
        f"--lines={log_sources.JOURNAL_ENTRIES}",
        "--unit=shop.service",
        "--unit=shop-worker@1.service",
        f"--since=@{int(epoch(1))}",
        f"--until=@{int(epoch(4))}",  # rounded outwards; opsbot checks the exact bound itself
        "--priority=err",
    ]


@pytest.mark.parametrize(("level", "priority"), [("DEBUG", "debug"), ("INFO", "info"), ("warning", "warning")])
def test_levels_become_journald_priorities(tmp_path: Path, level: str, priority: str) -> None:
    fake = fake_binary(tmp_path / "bin", "journalctl", [])
    ok(journald(fake), level=level)
    assert f"--priority={priority}" in recorded(fake)["argv"]


def test_without_filters_journalctl_gets_no_time_or_priority(tmp_path: Path) -> None:
    fake = fake_binary(tmp_path / "bin", "journalctl", [])
    ok(journald(fake))
    argv = recorded(fake)["argv"]
    assert not [a for a in argv if a.startswith(("--since", "--until", "--priority"))]


def test_no_shell_is_involved_and_arguments_arrive_verbatim(tmp_path: Path) -> None:
    fake = fake_binary(tmp_path / "bin", "journalctl", [])
    unit = r"shop\x2dapi@*.service"  # systemd's escaping and a glob: shell-special, passed as is
    ok(journald(fake, [unit]), contains="$(touch /tmp/x) `id` ; | &")
    seen = recorded(fake)
    assert seen["ppid"] == os.getpid()  # started by opsbot itself, no shell in between
    assert f"--unit={unit}" in seen["argv"]
    assert not any("touch" in a for a in seen["argv"])  # the substring is opsbot's filter, never an argument
    assert "OPENAI_API_KEY" not in seen["env"] and seen["env"]["PATH"] == SYSTEM_PATH


# ---------------------------------------------------------------- journald: what opsbot makes of it


def test_entries_come_back_in_time_order_newest_last(tmp_path: Path) -> None:
    fake = fake_binary(tmp_path / "bin", "journalctl", journal_newest_first(30))
    data = ok(journald(fake), limit=5)
    assert [line.rsplit(" ", 1)[1] for line in lines_of(data)] == ["025", "026", "027", "028", "029"]
    assert data["matches"] == 30 and data["complete"] is True
    assert data["summary"].startswith("30 matching lines, showing the last 5 (newest last); read ")
    assert "of the journal of shop.service" in data["summary"]
    assert data["sources"] == ["journald: shop.service"] and data["files"] == []


def test_multi_line_entries_keep_their_continuation_lines_after_them(tmp_path: Path) -> None:
    output = [
        jline(3, "entry 3"),
        jline(2, "Traceback (most recent call last):"),
        '                                                  File "app.py", line 7',
        "                                                  ValueError: boom",
        "-- Boot 0123456789abcdef0123456789abcdef --",
        jline(1, "entry 1"),
    ]
    fake = fake_binary(tmp_path / "bin", "journalctl", output)
    got = lines_of(ok(journald(fake)))
    assert got[0].endswith("entry 1") and got[-1].endswith("entry 3")
    assert got[1].endswith("Traceback (most recent call last):")
    assert got[2].strip() == 'File "app.py", line 7' and got[3].strip() == "ValueError: boom"
    assert not any("Boot" in line for line in got)


def test_substring_regex_and_time_range_are_applied_by_opsbot(tmp_path: Path) -> None:
    output = [
        jline(9, "GET /health 200"),
        jline(8, "POST /pay 502 upstream timeout"),
        jline(7, "POST /pay 200"),
        jline(6, "POST /pay 502 upstream reset"),
        jline(2, "POST /pay 502 too early"),  # journalctl would not print it; opsbot checks anyway
    ]
    fake = fake_binary(tmp_path / "bin", "journalctl", output)
    ex = journald(fake)
    assert [x.rsplit(": ", 1)[1] for x in lines_of(ok(ex, contains="UPSTREAM"))] == [
        "POST /pay 502 upstream reset",
        "POST /pay 502 upstream timeout",
    ]
    assert [x.rsplit(": ", 1)[1] for x in lines_of(ok(ex, regex=r"/pay 5\d\d"))] == [
        "POST /pay 502 too early",
        "POST /pay 502 upstream reset",
        "POST /pay 502 upstream timeout",
    ]
    ranged = ok(ex, regex=r"/pay 5\d\d", since="2026-11-29T03:00:05Z", until="2026-11-29T03:00:07Z")
    assert [x.rsplit(": ", 1)[1] for x in lines_of(ranged)] == ["POST /pay 502 upstream reset"]
    assert ranged["matches"] == 1


def test_the_level_is_journalds_priority_not_words_in_the_text(tmp_path: Path) -> None:
    # journalctl --priority=err printed it, so it is an error even without the word.
    fake = fake_binary(tmp_path / "bin", "journalctl", [jline(1, "segfault at 0000 ip 00007f")])
    assert len(lines_of(ok(journald(fake), level="ERROR"))) == 1


def test_too_many_entries_make_the_count_a_lower_bound(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(log_sources, "JOURNAL_ENTRIES", 20)
    fake = fake_binary(tmp_path / "bin", "journalctl", journal_newest_first(20))
    data = ok(journald(fake), limit=3)
    assert data["complete"] is False and data["summary"].startswith("at least 20 matching lines")
    assert "journalctl returned its cap of 20 entries" in data["summary"]
    assert recorded(fake)["argv"][5] == "--lines=20"


def test_output_past_the_cap_keeps_the_newest_entries_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(log_sources, "JOURNAL_OUTPUT_BYTES", 1000)
    fake = fake_binary(tmp_path / "bin", "journalctl", journal_newest_first(100))
    data = ok(journald(fake), limit=500)
    got = lines_of(data)
    numbers = [int(line.rsplit(" ", 1)[1]) for line in got]
    assert numbers == list(range(100 - len(got), 100))  # the newest, contiguous: no gap, no partial line
    assert 10 <= len(got) < 20
    assert data["complete"] is False and "output reached its cap" in data["summary"]
    assert data["summary"].startswith(f"at least {len(got)} matching lines")


def test_the_runner_can_keep_only_the_head_or_the_tail() -> None:
    script = "for i in $(seq 1 1000); do echo line$i; done"
    head = run(["/bin/sh", "-c", script], Sandbox(max_output_bytes=100, keep="head"))
    # The word each cut went through is left out ("…"): half a token would match no redaction shape.
    assert head.output.startswith("line1\nline2\n") and "cut" not in head.output and head.output.endswith("\n…")
    assert head.cut is not None and "only the first 100" in head.cut
    tail = run(["/bin/sh", "-c", script], Sandbox(max_output_bytes=100, keep="tail"))
    assert tail.output.endswith("line999\nline1000\n") and tail.output.startswith("…\n")
    assert tail.cut is not None and "only the last 100" in tail.cut
    ends = run(["/bin/sh", "-c", script], Sandbox(max_output_bytes=100))
    assert "bytes cut" in ends.output  # the default is unchanged


# ---------------------------------------------------------------- journald: failures


def test_a_missing_journalctl_is_unavailable(tmp_path: Path) -> None:
    result = call(journald(tmp_path / "nowhere" / "journalctl"))
    assert result.status == "unavailable" and "not installed" in result.error.message
    assert "shop.service" in result.error.message

    service = Service(journald=["shop.service"])
    direct = query_logs(QueryLogsArgs(service="shop"), service, readers=Readers(journalctl=None))
    assert direct.status == "unavailable" and "journalctl is not installed" in direct.error.message


def test_a_failing_journalctl_is_unavailable_with_a_redacted_excerpt(tmp_path: Path) -> None:
    fake = fake_binary(tmp_path / "bin", "journalctl", mode="fail")
    result = call(journald(fake))
    assert result.status == "unavailable", result
    message = result.error.message
    assert "exit code 1" in message and "Failed to open journal" in message and "Permission denied" in message
    assert "hunter2" not in message and "REDACTED" in message


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_a_hanging_journalctl_is_a_timeout_and_killed_with_its_children(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(log_sources, "JOURNAL_TIMEOUT_S", 0.5)
    fake = fake_binary(tmp_path / "bin", "journalctl", mode="hang")
    (fake.parent / "marker").write_text(f"30.{uuid.uuid4().int % 10**9:09d}")
    pids: list[int] = []
    try:
        begun = time.monotonic()
        result = call(journald(fake))
        assert result.status == "timeout" and "killed" in result.error.message, result
        assert time.monotonic() - begun < 5
        pids = [int(p) for p in (fake.parent / "pids").read_text().split()]
        assert until(lambda: not any(map(_alive, pids)), 2, interval=0.05), "the fake or its child survived"
    finally:
        for pid in pids:
            if _alive(pid):
                os.kill(pid, 9)


# ---------------------------------------------------------------- log_command


def pod_logs(fake: Path, **fields: Any) -> Command:
    spec: dict[str, Any] = {
        "description": "pod logs",
        "argv": [str(fake), "logs", "--timestamps", "--since={since}", "--tail={lines}"],
        "params": {
            "since": {"pattern": "[0-9]{1,9}s", "default": "86400s"},
            "lines": {"min": 1, "max": 2000, "default": 100},
        },
        **fields,
    }
    return Command.model_validate(spec)


def command_service(fake: Path, command: Command | None = None, **service: Any) -> Executor:
    service.setdefault("timezone", "UTC")
    commands = {"pod-logs": command or pod_logs(fake)}
    return executor(Policy(services={"shop": Service(log_command="pod-logs", **service)}, commands=commands))


def kube_lines(count: int) -> list[str]:
    """What `kubectl logs --timestamps` prints: oldest first, every fifth line an ERROR."""
    return [
        f"{(BASE + timedelta(seconds=n)).strftime('%Y-%m-%dT%H:%M:%S.%fZ')} {'ERROR' if n % 5 == 0 else 'INFO'} "
        f"request {n:03d}"
        for n in range(count)
    ]


def test_a_log_command_gets_since_and_lines_filled_in(tmp_path: Path) -> None:
    fake = fake_binary(tmp_path / "bin", "kubectl", kube_lines(10))
    ex = command_service(fake)
    ok(ex, since="2h")
    assert recorded(fake)["argv"] == [str(fake), "logs", "--timestamps", "--since=7200s", "--tail=2000"]
    ok(ex)
    assert recorded(fake)["argv"][3] == "--since=86400s"  # no since: the parameter's default
    assert recorded(fake)["ppid"] == os.getpid()


def test_a_log_commands_output_is_matched_like_a_file(tmp_path: Path) -> None:
    fake = fake_binary(tmp_path / "bin", "kubectl", kube_lines(30))
    data = ok(command_service(fake), level="ERROR", limit=2)
    assert [line.rsplit(" ", 1)[1] for line in lines_of(data)] == ["020", "025"]
    assert data["matches"] == 6 and data["complete"] is True
    assert data["sources"] == ["command: pod-logs"] and "of the output of 'pod-logs'" in data["summary"]
    ranged = ok(command_service(fake), contains="request", since="2026-11-29T03:00:10Z", until="2026-11-29T03:00:12Z")
    assert ranged["matches"] == 3


def test_a_log_command_past_its_output_cap_keeps_the_newest_lines(tmp_path: Path) -> None:
    fake = fake_binary(tmp_path / "bin", "kubectl", kube_lines(200))
    data = ok(command_service(fake, pod_logs(fake, max_output_bytes=1000)), limit=500)
    numbers = [int(line.rsplit(" ", 1)[1]) for line in lines_of(data)]
    assert numbers == list(range(200 - len(numbers), 200)) and 10 < len(numbers) < 30
    assert data["complete"] is False and "reached its cap" in data["summary"]


def test_a_log_command_returning_all_lines_asked_for_is_a_lower_bound(tmp_path: Path) -> None:
    fake = fake_binary(tmp_path / "bin", "kubectl", kube_lines(20))
    command = pod_logs(
        fake, params={"since": {"pattern": "[0-9]{1,9}s", "default": "1s"}, "lines": {"min": 1, "max": 20}}
    )
    data = ok(command_service(fake, command))
    assert data["complete"] is False and "returned the 20 lines asked for" in data["summary"]


def test_a_log_command_checks_the_commands_access_too(tmp_path: Path) -> None:
    fake = fake_binary(tmp_path / "bin", "kubectl", kube_lines(3))
    ex = command_service(fake, pod_logs(fake, access={"groups": ["oncall"]}))
    assert call(ex, MALLORY).status == "denied"
    assert ok(ex, ALICE)["matches"] == 3
    guarded = command_service(fake, access=Access(users=frozenset({"U_ALICE"})))
    assert call(guarded, MALLORY).status == "denied"


@pytest.mark.parametrize(
    ("commands", "says"),
    [
        ({}, "'pod-logs' is not declared under policy.commands (declared: none)"),
        ({"pod-logs": {"argv": ["/bin/true"], "description": "x", "risk": "write"}}, "must be risk: read"),
        (
            {"pod-logs": {"argv": ["/bin/echo", "--", "{ns}"], "description": "x", "params": {"ns": {"enum": ["a"]}}}},
            "ns without a default",
        ),
    ],
)
def test_a_log_command_that_cannot_serve_is_unavailable_naming_why(commands: dict[str, Any], says: str) -> None:
    # Policy itself now refuses such a command when loaded; built without validation, query_logs
    # still says why on its own.
    policy = Policy.model_construct(
        services={"shop": Service(log_command="pod-logs")},
        commands={name: Command.model_validate(spec) for name, spec in commands.items()},
    )
    result = call(executor(policy))
    assert result.status == "unavailable" and says in result.error.message, result


def test_a_failing_log_command_is_unavailable(tmp_path: Path) -> None:
    fake = fake_binary(tmp_path / "bin", "kubectl", mode="fail")
    result = call(command_service(fake))
    assert result.status == "unavailable" and "'pod-logs' failed (exit code 1)" in result.error.message
    assert "hunter2" not in result.error.message


def test_a_hanging_log_command_is_a_timeout(tmp_path: Path) -> None:
    fake = fake_binary(tmp_path / "bin", "kubectl", mode="hang")
    (fake.parent / "marker").write_text(f"30.{uuid.uuid4().int % 10**9:09d}")
    pids: list[int] = []
    try:
        result = call(command_service(fake, pod_logs(fake, timeout_s=0.5)))
        assert result.status == "timeout", result
        pids = [int(p) for p in (fake.parent / "pids").read_text().split()]
        assert until(lambda: not any(map(_alive, pids)), 2, interval=0.05)
    finally:
        for pid in pids:
            if _alive(pid):
                os.kill(pid, 9)


# ---------------------------------------------------------------- several sources


def test_files_and_journal_are_merged_by_time(tmp_path: Path) -> None:
    log = tmp_path / "shop.log"
    log.write_text(
        "".join(f"{(BASE + timedelta(seconds=n)).strftime('%Y-%m-%dT%H:%M:%SZ')} INFO file {n}\n" for n in (0, 2, 4))
    )
    fake = fake_binary(
        tmp_path / "bin", "journalctl", [jline(5, "journal 5"), jline(3, "journal 3"), jline(1, "journal 1")]
    )
    ex = journald(fake, logs=[log])
    data = ok(ex, limit=4)
    assert [line.split()[-1] for line in lines_of(data)] == ["2", "3", "4", "5"]
    assert data["matches"] == 6 and data["sources"] == ["files", "journald: shop.service"]
    assert data["files"] == [str(log)]


def test_a_failing_source_is_a_note_when_another_answers(tmp_path: Path) -> None:
    log = tmp_path / "shop.log"
    log.write_text(f"{BASE.strftime('%Y-%m-%dT%H:%M:%SZ')} INFO from the file\n")
    data = ok(journald(tmp_path / "nowhere" / "journalctl", logs=[log]))
    assert lines_of(data)[0].endswith("from the file")
    assert any("not installed" in note for note in data["notes"])


def test_the_tool_waits_for_its_sources_own_timeouts(tmp_path: Path) -> None:
    fake = fake_binary(tmp_path / "bin", "kubectl", [])
    tool = query_logs_tool(
        Policy(services={"shop": Service(log_command="pod-logs")}, commands={"pod-logs": pod_logs(fake, timeout_s=40)})
    )
    assert tool.timeout_s is not None and tool.timeout_s > 40 + log_sources.JOURNAL_TIMEOUT_S
    assert query_logs_tool(Policy(services={"shop": Service(logs=[tmp_path / "a.log"])})).timeout_s is None
