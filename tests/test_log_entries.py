"""Multi-line entries (tools/logs/entries.py): a line with the stack trace or continuation lines
below it is one entry, which every filter judges whole, counts once and shows whole.

The traces are public examples, each with its source beside it; the lines around them are in the
default format of the logger that would have written them. Every query goes through the real
query_logs, on plain files (read backwards), .gz files (read forwards) and the needle search (raw
chunks), with blocks made small so that entries straddle them."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import opsbot.tools.logs.files as log_files
from opsbot.config.policy import Service
from opsbot.tools.logs import QueryLogsArgs, query_logs
from opsbot.tools.logs.query import ENTRY_HEAD_LINES, ENTRY_TAIL_LINES, OUTPUT_BYTES

# java.lang.Throwable#printStackTrace, the javadoc's example of a chained exception
# (docs.oracle.com/en/java/javase/21/docs/api/java.base/java/lang/Throwable.html).
JAVA_TRACE = [
    "HighLevelException: MidLevelException: LowLevelException",
    "         at Junk.a(Junk.java:13)",
    "         at Junk.main(Junk.java:4)",
    " Caused by: MidLevelException: LowLevelException",
    "         at Junk.c(Junk.java:23)",
    "         at Junk.b(Junk.java:17)",
    "         at Junk.a(Junk.java:11)",
    "         ... 1 more",
    " Caused by: LowLevelException",
    "         at Junk.e(Junk.java:30)",
    "         at Junk.d(Junk.java:27)",
    "         at Junk.c(Junk.java:21)",
    "         ... 3 more",
]
# The Python tutorial, 8.5 Exception Chaining (docs.python.org/3/tutorial/errors.html), as
# logging.exception() writes it below its message: blank lines inside.
PYTHON_TRACE = [
    "Traceback (most recent call last):",
    '  File "<stdin>", line 2, in <module>',
    "ZeroDivisionError: division by zero",
    "",
    "During handling of the above exception, another exception occurred:",
    "",
    "Traceback (most recent call last):",
    '  File "<stdin>", line 4, in <module>',
    "RuntimeError: Something bad happened",
]
# Node.js, Errors: error.stack (nodejs.org/api/errors.html#errorstack).
NODE_TRACE = [
    "Error: Things keep happening!",
    "   at /home/gbusey/file.js:525:2",
    "   at Frobnicator.refrobulate (/home/gbusey/business-logic.js:424:21)",
    "   at Actor.<anonymous> (/home/gbusey/actors.js:400:8)",
    "   at increaseSynergy (/home/gbusey/actors.js:701:6)",
]
# What a Go program prints when it panics (runtime output, as the Go playground shows it for an
# index out of range): on stderr, without a time.
GO_PANIC = [
    "panic: runtime error: index out of range [5] with length 3",
    "",
    "goroutine 1 [running]:",
    "main.main()",
    "\t/tmp/sandbox/prog.go:8 +0x1d",
]

# Spring Boot's default console pattern, Python logging's default asctime, a Node logger's ISO line.
TIMED_LOG = [
    "2026-12-01T10:00:00.100Z  INFO 12345 --- [main] c.s.Checkout : started in 2.1 seconds",
    "2026-12-01T10:00:01.200Z ERROR 12345 --- [main] c.s.Checkout : payment failed",
    *JAVA_TRACE,
    "2026-12-01 10:00:02,300 ERROR checkout worker crashed",
    *PYTHON_TRACE,
    "2026-12-01T10:00:03.400Z WARN checkout request failed, retrying",
    *NODE_TRACE,
    "2026-12-01T10:00:04.500Z  INFO 12345 --- [main] c.s.Checkout : recovered",
]
JAVA = TIMED_LOG[1:15]
PYTHON = TIMED_LOG[15:25]
NODE = TIMED_LOG[25:31]


def service(path: Path) -> Service:
    return Service(logs=[path], timezone="UTC")


def ask(path: Path, **args: Any) -> dict[str, Any]:
    result = query_logs(QueryLogsArgs(service="shop", limit=500, **args), service(path))
    assert result.ok, result
    data: dict[str, Any] = result.data
    return data


def shown(data: dict[str, Any]) -> list[str]:
    text: str = data["lines"]
    return text.split("\n") if text else []


def written(path: Path, lines: list[str]) -> Path:
    data = ("\n".join(lines) + "\n").encode()
    if path.name.endswith(".gz"):
        path.write_bytes(gzip.compress(data))
    else:
        path.write_bytes(data)
    return path


@pytest.fixture(params=["plain", "gz"])
def log(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The timed log as a plain file and as a .gz, read in blocks of 64 bytes: every entry straddles some."""
    monkeypatch.setattr(log_files, "BLOCK_BYTES", 64)
    return written(tmp_path / ("shop.log" if request.param == "plain" else "shop.log.1.gz"), TIMED_LOG)


def test_a_level_filter_returns_each_error_with_its_whole_trace_and_counts_entries(log: Path) -> None:
    data = ask(log, level="ERROR")
    assert shown(data) == JAVA + PYTHON
    assert data["matches"] == 2 and data["shown"] == 2
    assert data["summary"].startswith("2 matching entries")
    assert any("an entry is a line with the lines below it" in note for note in data["notes"])


def test_warn_takes_the_level_of_the_first_line_not_of_words_in_the_trace(log: Path) -> None:
    assert shown(ask(log, level="WARN")) == JAVA + PYTHON + NODE


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({"contains": "Junk.e(Junk.java:30)"}, JAVA),  # a frame near the end of the trace
        ({"contains": "Something bad happened"}, PYTHON),  # the last line of a chained traceback
        ({"contains": "During handling"}, PYTHON),  # a line between two blank ones
        ({"regex": r"^ Caused by: LowLevelException$"}, JAVA),  # ^ and $ are the ends of a line of the entry
        ({"regex": r"refrobulate \(/home/\w+/"}, NODE),
        ({"contains": "Exception"}, JAVA + PYTHON),  # many lines of one entry: the entry once
    ],
)
def test_contains_and_regex_find_a_line_of_a_trace_and_return_its_whole_entry(
    log: Path, args: dict[str, str], expected: list[str]
) -> None:
    data = ask(log, **args)
    assert shown(data) == expected
    assert data["matches"] == len([line for line in expected if line.startswith("2026-")])


def test_an_entry_is_in_a_time_range_by_its_first_line(log: Path) -> None:
    assert shown(ask(log, since="2026-12-01T10:00:02Z", until="2026-12-01T10:00:03Z")) == PYTHON
    # The trace of the 10:00:01 error is below lines of 10:00:01 only: until 10:00:01.5 keeps it whole.
    assert shown(ask(log, until="2026-12-01T10:00:01.500Z", contains="junk")) == JAVA


def test_no_filter_counts_entries_and_the_newest_come_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(log_files, "BLOCK_BYTES", 64)
    path = written(tmp_path / "shop.log", TIMED_LOG)
    result = query_logs(QueryLogsArgs(service="shop", limit=2), service(path))
    assert result.ok and result.data["matches"] == 5
    assert shown(result.data) == NODE + TIMED_LOG[-1:]


def test_the_needle_search_returns_whole_entries_across_its_chunks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The raw search (no since/until, one word) over chunks of 256 bytes: the word is in a
    frame, the entry's start is in an older chunk."""
    monkeypatch.setattr(log_files, "CHUNK_BYTES", 256)
    monkeypatch.setattr(log_files, "BLOCK_BYTES", 128)
    path = written(tmp_path / "shop.log", TIMED_LOG * 3)
    data = ask(path, contains="Junk.d(Junk.java:27)")
    assert shown(data) == JAVA * 3 and data["matches"] == 3


# Untimed output (a process's stderr, a log_command): only lines that look like continuations
# continue, since no time says where an entry starts.
UNTIMED_LOG = [
    "starting worker",
    # The java launcher's report of an uncaught exception, then the javadoc's trace.
    'Exception in thread "main" java.lang.IllegalStateException: no payment provider',
    *JAVA_TRACE[1:],
    *GO_PANIC,
    "exit status 2",
    "ERROR:root:worker crashed",  # logging.basicConfig's default format: no time
    *PYTHON_TRACE,
    "worker stopped",
]


def test_untimed_output_groups_traces_by_their_shape(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(log_files, "BLOCK_BYTES", 64)
    path = written(tmp_path / "worker.log", UNTIMED_LOG)
    java, go, python = UNTIMED_LOG[1:14], UNTIMED_LOG[14:19], UNTIMED_LOG[20:30]
    assert shown(ask(path, contains="Junk.e")) == java
    assert shown(ask(path, contains="goroutine")) == go
    assert shown(ask(path, contains="Something bad")) == python
    assert shown(ask(path, level="ERROR")) == go + python  # "panic" is a level word: Go's panic is an error
    assert ask(path)["matches"] == 6  # starting, java, go, exit status, python, stopped
    assert shown(ask(path, contains="exit status")) == ["exit status 2"]


def test_a_long_trace_shows_its_head_and_its_root_cause(tmp_path: Path) -> None:
    frames = [f"\tat com.shop.Frame{n}.call(Frame{n}.java:{n})" for n in range(300)]
    lines = ["2026-12-01T10:00:00Z ERROR checkout deep failure", *frames, "Caused by: java.io.IOException: disk full"]
    data = ask(written(tmp_path / "shop.log", lines), level="ERROR")
    got = shown(data)
    assert got[:ENTRY_HEAD_LINES] == lines[:ENTRY_HEAD_LINES]
    assert got[-ENTRY_TAIL_LINES:] == lines[-ENTRY_TAIL_LINES:]
    assert got[ENTRY_HEAD_LINES] == f"…[{len(lines) - ENTRY_HEAD_LINES - ENTRY_TAIL_LINES:,} more lines of this entry]"
    assert any("show their first 30 and last 20 lines" in note for note in data["notes"])


def test_an_entry_too_big_for_the_result_shows_its_start_and_says_it_was_cut(tmp_path: Path) -> None:
    detail = "x" * 1_500
    lines = ["2026-12-01T10:00:00Z ERROR checkout huge failure", *[f"  detail {n} {detail}" for n in range(40)]]
    data = ask(written(tmp_path / "shop.log", lines), level="ERROR")
    got = shown(data)
    assert len(data["lines"].encode()) <= OUTPUT_BYTES
    assert got[0] == lines[0] and got[-1].endswith("more lines of this entry]")
    assert any("the oldest entry shown was cut" in note for note in data["notes"])


# ---------------------------------------------------------------- properties

_CONTINUATIONS = [
    "\tat com.shop.Pay.charge(Pay.java:42)",
    "Caused by: java.net.SocketTimeoutException: Read timed out",
    "\t... 12 more",
    '  File "/srv/app.py", line 7, in handle',
    "KeyError: 'order'",
    "",
    "    at process.processTicksAndRejections (node:internal/process/task_queues:95:5)",
    "goroutine 7 [running]:",
    '    payload: {"order": 7}',
]


@st.composite
def timed_entries(draw: st.DrawFn) -> list[list[str]]:
    entries = []
    for n in range(draw(st.integers(1, 30))):
        head = f"2026-12-01T10:{n // 60:02d}:{n % 60:02d}Z {draw(st.sampled_from(['INFO', 'ERROR']))} shop seq{n}"
        entries.append([head, *draw(st.lists(st.sampled_from(_CONTINUATIONS), max_size=5))])
    return entries


@st.composite
def untimed_entries(draw: st.DrawFn) -> list[list[str]]:
    starts = st.sampled_from(["worker started", "panic: boom", "ERROR:root:failed", "Exception in thread main"])
    return [
        [f"{draw(starts)} seq{n}", *draw(st.lists(st.sampled_from(_CONTINUATIONS), max_size=4))]
        for n in range(draw(st.integers(1, 20)))
    ]


READERS = ["plain", "gz", "needle", "since"]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    entries=st.one_of(timed_entries(), untimed_entries()),
    block=st.integers(16, 400),
    reader=st.sampled_from(READERS),
)
def test_grouping_never_drops_or_duplicates_a_line(
    tmp_path: Path, entries: list[list[str]], block: int, reader: str
) -> None:
    """Every line of the file comes back once, in order, in as many entries as were written,
    whichever reader reads it and wherever its blocks or chunks end."""
    timed = entries[0][0].startswith("2026-")
    lines = [line for entry in entries for line in entry]
    args: dict[str, Any] = {}
    if reader in ("needle", "since"):
        args["contains"] = "seq"  # in every entry's first line (the needle search: no since/until)
    if reader == "since" and timed:
        args["since"] = "2026-12-01T00:00:00Z"
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(log_files, "BLOCK_BYTES", block)
        patched.setattr(log_files, "CHUNK_BYTES", block)
        name = f"shop-{block}-{reader}-{len(lines)}.log" + (".1.gz" if reader == "gz" else "")
        data = ask(written(tmp_path / name, lines), **args)
    if "since" in args or timed or reader != "since":
        assert shown(data) == lines
        assert data["matches"] == len(entries)
