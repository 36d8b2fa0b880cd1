"""Logs whose time `format: auto` cannot know, read by a service's declared `time:` (a strptime
format, a regex with a `stamp` group, an epoch in s or ms), and traces whose every line a
container runtime stamped (`kubectl logs --timestamps`, Docker's json-file): through the real
query_logs, one through the CLI's direct command, and the config's refusals through check-config.

The sample files in tests/fixtures/log_formats follow published formats (its README names each
source); the container runtime shapes are those kubectl and Docker write (see kube_trace)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from opsbot.config.policy import LineTime, Policy, Service
from opsbot.tools.base import Registry
from opsbot.tools.executor import Executor, RetryPolicy, ToolCall
from opsbot.tools.logs import query_logs_tool
from tests.test_cli import clean_env
from tests.test_log_sources import BASE, call, fake_binary, jline, journald

FORMATS = Path(__file__).parent / "fixtures" / "log_formats"


def query(path: Path, time: dict[str, str] | None, **args: str) -> dict[str, Any]:
    """query_logs on one service reading `path` (times without an offset in UTC)."""
    service = Service(logs=[path], timezone="UTC", time=None if time is None else LineTime.model_validate(time))
    executor = Executor(
        Registry([query_logs_tool(Policy(services={"svc": service}))]),
        RetryPolicy(timeout_s=20, retries=0, backoff_s=0.01),
    )
    call = ToolCall(f"c{uuid.uuid4().hex[:6]}", "query_logs", json.dumps({"service": "svc", **args}))
    result = executor.run_one(call).result
    assert result.ok, result
    return result.data


def lines(data: dict[str, Any]) -> list[str]:
    return data["lines"].split("\n") if data["lines"] else []


def fixture_lines(name: str) -> list[str]:
    return (FORMATS / name).read_text().splitlines()


def copied(name: str, tmp_path: Path, written: datetime) -> Path:
    """The fixture in tmp_path, last written at `written` (what year-less stamps are dated from)."""
    path = tmp_path / name
    shutil.copy(FORMATS / name, path)
    os.utime(path, (written.timestamp(), written.timestamp()))
    return path


def iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat()


# ---------------------------------------------------------------- declared times, each format


HEALTHAPP = {"format": "%Y%m%d-%H:%M:%S:%f"}


def test_healthapp_stamps_are_read_by_their_format_padded_or_not() -> None:
    path, every = FORMATS / "healthapp.log", fixture_lines("healthapp.log")

    assert lines(query(path, HEALTHAPP, since="2017-12-23T22:16:00", until="2017-12-23T23:59:59.990")) == every[4:6]
    # 20171224-0:0:0:232, 20171224-0:1:7:1: strptime reads unpadded fields, milliseconds as .232 and .001
    assert lines(query(path, HEALTHAPP, since="2017-12-24T00:00:00.232")) == every[6:]
    assert lines(query(path, HEALTHAPP, until="2017-12-23T22:15:29.615")) == every[:2]


def test_without_a_declared_time_the_same_lines_are_left_out_and_the_note_says_what_is_read() -> None:
    path = FORMATS / "healthapp.log"

    auto = query(path, None, since="2017-12-23T22:16:00")
    declared = query(path, HEALTHAPP, contains="nothing like this", since="2017-12-23T22:16:00")

    assert auto["matches"] == 0 and "no time I could read" in " ".join(auto["notes"])
    assert "ISO-8601" in " ".join(auto["notes"])
    assert declared["matches"] == 0 and "notes" not in declared


def test_lines_the_declared_time_cannot_read_are_noted_with_the_declaration(tmp_path: Path) -> None:
    """Declared, the time is read that way only: a syslog line auto would read is not."""
    path = tmp_path / "healthapp.log"
    path.write_text("Dec 23 22:16:00 ERROR rebooted\n")

    data = query(path, HEALTHAPP, level="ERROR", since="2017-12-23T22:00:00")

    assert data["matches"] == 0
    assert "understood: the service's time: format '%Y%m%d-%H:%M:%S:%f'" in " ".join(data["notes"])


PROXIFIER = {"format": "[%m.%d %H:%M:%S]"}


def test_proxifier_stamps_take_the_year_of_the_files_last_write(tmp_path: Path) -> None:
    every = fixture_lines("proxifier.log")
    path = copied("proxifier.log", tmp_path, datetime(2026, 11, 1, tzinfo=UTC))

    assert lines(query(path, PROXIFIER, since="2026-10-30T16:50:00", until="2026-10-30T18:00:00")) == every[3:5]
    assert lines(query(path, PROXIFIER, since="2025-10-30T16:50:00", until="2025-10-30T18:00:00")) == []
    # Proxifier's `error :` is its error level.
    assert lines(query(path, PROXIFIER, level="ERROR", since="2026-10-30T16:00:00")) == every[3:4]


def test_a_year_less_stamp_after_the_files_last_write_is_of_the_year_before(tmp_path: Path) -> None:
    """Written on 20 October: its 30 October lines cannot be of that year."""
    every = fixture_lines("proxifier.log")
    path = copied("proxifier.log", tmp_path, datetime(2026, 10, 20, tzinfo=UTC))

    assert lines(query(path, PROXIFIER, since="2025-10-30T16:50:00", until="2025-10-30T18:00:00")) == every[3:5]
    assert lines(query(path, PROXIFIER, since="2026-01-01T00:00:00")) == []


def test_syslog_stamps_take_the_year_of_the_files_last_write_too(tmp_path: Path) -> None:
    """One rule for every year-less stamp: a rotated syslog file last written in June 2025 holds
    lines of May 2025, not of May this year."""
    path = tmp_path / "syslog.1"
    path.write_text("May 31 10:00:00 web-1 app[42]: marker0\nJun  1 09:00:00 web-1 app[42]: marker1\n")
    written = datetime(2025, 6, 1, 12, tzinfo=UTC).timestamp()
    os.utime(path, (written, written))

    assert lines(query(path, None, since="2025-05-31T00:00:00", until="2025-05-31T23:00:00")) == [
        "May 31 10:00:00 web-1 app[42]: marker0"
    ]


def test_an_epoch_in_seconds_found_by_a_regex_is_the_lines_time() -> None:
    """Thunderbird's second field; the syslog stamp after it has no year and is not read."""
    path, every = FORMATS / "thunderbird.log", fixture_lines("thunderbird.log")
    time = {"epoch": "s", "regex": r"^\S+ (?P<stamp>\d{10}) "}

    assert lines(query(path, time, since=iso(1131566500), until=iso(1131570061))) == every[2:4]
    assert lines(query(path, time, level="WARN", since=iso(1131566400))) == every[3:4]


def test_an_epoch_in_seconds_starting_the_line_needs_no_regex() -> None:
    path, every = FORMATS / "squid.log", fixture_lines("squid.log")

    assert lines(query(path, {"epoch": "s"}, since=iso(1286536309.450), until=iso(1286536909.123))) == every[1:3]
    assert lines(query(path, {"epoch": "s"}, since=iso(1286536909.124))) == every[3:]


def test_an_epoch_in_milliseconds(tmp_path: Path) -> None:
    """A JSON-less line that puts System.currentTimeMillis() after its level."""
    start = 1764583200000
    path = tmp_path / "app.log"
    path.write_text("".join(f"INFO at={start + n * 60_000} marker{n}\n" for n in range(4)))
    time = {"epoch": "ms", "regex": r"at=(?P<stamp>\d{13})"}

    found = lines(query(path, time, since=iso((start + 60_000) / 1000), until=iso((start + 120_000) / 1000)))

    assert found == ["INFO at=1764583260000 marker1", "INFO at=1764583320000 marker2"]


def test_a_file_name_before_the_stamp_is_passed_over_by_the_regex() -> None:
    """OpenStack's lines begin with their file's name, whose date (13:53) is not the line's time;
    the group alone is read as auto reads a time."""
    path, every = FORMATS / "openstack.log", fixture_lines("openstack.log")
    time = {"regex": r"^\S+ (?P<stamp>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+) "}

    assert lines(query(path, time, since="2017-05-16T00:05:00", until="2017-05-16T00:20:00")) == every[2:3]
    assert lines(query(path, time, level="ERROR", since="2017-05-16T00:00:00")) == every[2:3]
    assert lines(query(path, time, since="2017-05-16T13:00:00")) == []


def test_a_declared_time_is_the_files_own_the_journal_keeps_journalctls(tmp_path: Path) -> None:
    """Merged by time: the file's lines read by its format, the journal's by journalctl's stamps."""
    log = tmp_path / "shop.log"
    stamps = [BASE + timedelta(seconds=n) for n in (0, 2, 4)]
    log.write_text("".join(f"{moment:%Y%m%d-%H:%M:%S:%f}|Step_LSC|1|file {moment.second}\n" for moment in stamps))
    fake = fake_binary(tmp_path / "bin", "journalctl", [jline(n, f"journal {n}") for n in (5, 3, 1)])

    data = call(journald(fake, logs=[log], time=LineTime(format="%Y%m%d-%H:%M:%S:%f")), since=iso(BASE.timestamp() + 1))

    assert data.ok, data
    assert [line.split()[-1] for line in lines(data.data)] == ["1", "2", "3", "4", "5"]


# ---------------------------------------------------------------- traces a container runtime stamped

# A Java trace as a Spring Boot service writes it: the logged line, the exception, its frames, two
# causes (Throwable#printStackTrace's shape). 33 lines.
JAVA_TRACE = [
    "2026-12-02 10:00:00.123 ERROR 1 --- [nio-8080-exec-3] c.e.shop.CheckoutController : checkout failed",
    "java.lang.IllegalStateException: payment declined by upstream",
    *(f"\tat com.example.shop.Checkout.step{n}(Checkout.java:{40 + n})" for n in range(24)),
    "Caused by: java.io.IOException: Broken pipe",
    "\tat java.base/sun.nio.ch.SocketDispatcher.write0(Native Method)",
    "\tat java.base/sun.nio.ch.SocketChannelImpl.write(SocketChannelImpl.java:541)",
    "\t... 24 more",
    "Caused by: java.net.SocketException: Connection reset",
    "\tat java.base/sun.nio.ch.NioSocketImpl.implRead(NioSocketImpl.java:323)",
    "\t... 27 more",
]
BEFORE = "2026-12-02 09:59:59.001  INFO 1 --- [nio-8080-exec-2] c.e.shop.CheckoutController : cart 42 read"
AFTER = "2026-12-02 10:00:01.500  INFO 1 --- [nio-8080-exec-4] c.e.shop.CheckoutController : cart 43 read"


def rfc3339_nano(moment: datetime, nanos: int) -> str:
    """Go's time.RFC3339Nano as the kubelet writes it: trailing zeros of the fraction dropped."""
    fraction = f"{moment.microsecond * 1000 + nanos:09d}".rstrip("0")
    return moment.strftime("%Y-%m-%dT%H:%M:%S") + (f".{fraction}" if fraction else "") + "Z"


def kube_trace(moment: datetime) -> list[str]:
    """`kubectl logs --timestamps`: the runtime's RFC3339Nano stamp and a space before every line
    the program wrote, each line of the trace a few nanoseconds after the one above."""
    program = [BEFORE, *JAVA_TRACE, AFTER]
    stamps = [moment - timedelta(seconds=1), *([moment] * len(JAVA_TRACE)), moment + timedelta(seconds=1)]
    stamped = enumerate(zip(stamps, program, strict=True))
    return [f"{rfc3339_nano(when, 7 * n + 3)} {line}" for n, (when, line) in stamped]


def docker_trace(moment: datetime) -> list[str]:
    """Docker's json-file driver: one JSON object per line the program wrote."""
    kube = kube_trace(moment)
    return [
        json.dumps({"log": line.split(" ", 1)[1] + "\n", "stream": "stderr", "time": line.split(" ", 1)[0]})
        for line in kube
    ]


@pytest.mark.parametrize("shape", [kube_trace, docker_trace], ids=["kubectl --timestamps", "docker json-file"])
def test_a_trace_whose_every_line_the_runtime_stamped_is_one_entry(shape: Any, tmp_path: Path) -> None:
    moment = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=10)
    written = shape(moment)
    path = tmp_path / "pod.log"
    path.write_text("\n".join(written) + "\n")

    errors = query(path, None, level="ERROR")
    window = query(path, None, since=iso(moment.timestamp() - 0.5), until=iso(moment.timestamp() + 0.5))
    found = query(path, None, contains="Connection reset")

    assert (errors["matches"], len(lines(errors))) == (1, 33)
    assert lines(errors) == written[1:-1]
    assert lines(window) == written[1:-1]
    assert lines(found) == written[1:-1]
    assert query(path, None)["matches"] == 3


# ---------------------------------------------------------------- the CLI, and what the config refuses


def opsbot(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "opsbot.bot", *args],
        capture_output=True,
        text=True,
        env=clean_env(),
        cwd=cwd,
        timeout=60,
    )


def write_config(tmp_path: Path, time: str) -> None:
    shutil.copy(FORMATS / "healthapp.log", tmp_path / "healthapp.log")
    config = f"""
    policy:
      services:
        healthapp:
          logs: [healthapp.log]
          timezone: UTC
          time: {time}
    """
    (tmp_path / "opsbot.yaml").write_text(textwrap.dedent(config).lstrip("\n"))


def test_the_direct_command_reads_a_declared_time(tmp_path: Path) -> None:
    write_config(tmp_path, "{format: '%Y%m%d-%H:%M:%S:%f'}")

    command = "logs healthapp since=2017-12-24T00:00:00 until=2017-12-24T00:00:01"
    done = opsbot("--config", "opsbot.yaml", "ask", command, cwd=tmp_path)

    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1:] == ["20171224-0:0:0:232|Step_SPUtils|30002312|setDiffTotalSteps=8874"]


@pytest.mark.parametrize(
    ("time", "said"),
    [
        (
            r"{regex: '^\S+ (\d{10}) ', epoch: s}",
            "time.regex '^\\\\S+ (\\\\d{10}) ' has no group named stamp: write the time's part as (?P<stamp>...)",
        ),
        ("{format: '%Y%m%d %Q'}", "time.format '%Y%m%d %Q' uses %Q, which is not read; use these:"),
        ("{format: '%H:%M:%S %H'}", "time.format '%H:%M:%S %H' cannot read its own example '13:04:05 13':"),
        ("{format: 'at noon'}", "time.format 'at noon' holds no date or time directive"),
        ("{format: '%Y', epoch: ms}", "time has both format and epoch: a stamp is read one way, keep one"),
        ("{epoch: s, regex: '(?P<stamp>'}", "time.regex '(?P<stamp>' does not compile:"),
    ],
)
def test_check_config_refuses_a_time_that_cannot_be_read(tmp_path: Path, time: str, said: str) -> None:
    write_config(tmp_path, time)

    done = opsbot("check-config", "opsbot.yaml", cwd=tmp_path)

    assert done.returncode == 1, done.stdout
    problem = next(line for line in done.stderr.splitlines() if "policy.services.healthapp" in line)
    assert problem.startswith("  opsbot.yaml:6: policy.services.healthapp.time: "), problem
    assert said in problem, problem
