"""Timestamps in the log styles SREs meet, each from a public example of that style (its source
named beside it), read by tools/logs/stamps.py: the time of the example line, and since/until
through the real query_logs on a file of that style whose lines are an hour apart."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from opsbot.config.policy import Policy, Service
from opsbot.tools.base import Registry
from opsbot.tools.executor import Executor, RetryPolicy, ToolCall
from opsbot.tools.logs import query_logs_tool
from opsbot.tools.logs.filters import Filters, Prefilter
from opsbot.tools.logs.stamps import stamp_at

NOW = datetime(2026, 12, 1, 12, 0, 0, tzinfo=UTC)


def filters(now: datetime = NOW) -> Filters:
    return Filters(
        min_rank=None,
        needle=None,
        prefilter=Prefilter(),
        pattern=None,
        whole_block_regex=False,
        since=None,
        until=None,
        zone=UTC,
        now=now.timestamp(),
        year=now.year,
        deadline=float("inf"),
    )


def at(*parts: int, zone: timezone = UTC) -> float:
    return datetime(*parts, tzinfo=zone).timestamp()  # type: ignore[misc]


MINUS_4 = timezone(timedelta(hours=-4))
MINUS_7 = timezone(timedelta(hours=-7))

# (style, a documented example line, its time)
EXAMPLES = [
    # logrus README, JSONFormatter (github.com/sirupsen/logrus)
    (
        "logrus json",
        '{"animal":"walrus","level":"info","msg":"A group of walrus emerges from the ocean","size":10,'
        '"time":"2014-03-10 19:57:38.562264131 -0400 EDT"}',
        at(2014, 3, 10, 19, 57, 38, 562264, zone=MINUS_4),
    ),
    # logrus README, TextFormatter (logfmt) with full timestamps
    (
        "logrus text",
        'time="2015-03-26T01:27:38-04:00" level=debug msg="Started observing beach" animal=walrus number=8',
        at(2015, 3, 26, 1, 27, 38, zone=MINUS_4),
    ),
    # zap's production encoder: epoch seconds as a float under "ts" (pkg.go.dev/go.uber.org/zap)
    (
        "zap",
        '{"level":"info","ts":1257894000.123,"caller":"main.go:12","msg":"failed to fetch URL","attempt":3}',
        1257894000.123,
    ),
    # pino docs (getpino.io): epoch milliseconds under "time", numeric level
    (
        "pino",
        '{"level":30,"time":1531171074631,"msg":"hello world","pid":657,"hostname":"Davids-MBP-3.fritz.box"}',
        1531171074.631,
    ),
    # bunyan README: ISO under "time", after name, hostname, pid, level and msg
    (
        "bunyan",
        '{"name":"myapp","hostname":"banana.local","pid":40161,"level":30,"msg":"hi",'
        '"time":"2013-01-04T18:46:23.851Z","v":0}',
        at(2013, 1, 4, 18, 46, 23, 851000),
    ),
    # structlog's JSONRenderer with TimeStamper(fmt="iso") (structlog.org)
    (
        "structlog",
        '{"event": "hello", "level": "info", "timestamp": "2022-10-26T11:37:18.034117Z"}',
        at(2022, 10, 26, 11, 37, 18, 34117),
    ),
    # Google Cloud structured logging, special JSON fields (cloud.google.com/logging/docs/structured-logging)
    (
        "gcp",
        '{"severity":"ERROR","message":"There was an error in the application.",'
        '"httpRequest":{"requestMethod":"GET"},"time":"2020-10-12T07:20:50.52Z"}',
        at(2020, 10, 12, 7, 20, 50, 520000),
    ),
    # Docker's json-file logging driver docs: nanoseconds under "time"
    (
        "docker json-file",
        '{"log":"Log line is here\\n","stream":"stdout","time":"2019-01-01T11:11:11.111111111Z"}',
        at(2019, 1, 1, 11, 11, 11, 111111),
    ),
    # CRI container log format (kubernetes/design-proposals, kubelet-cri-logging)
    (
        "cri",
        "2016-10-06T00:17:09.669794202Z stdout F The content of the log entry 1",
        at(2016, 10, 6, 0, 17, 9, 669794),
    ),
    # Kubernetes docs, system logs: klog's header (no year)
    (
        "klog",
        "I1025 00:15:15.525108       1 httplog.go:79] GET /api/v1/namespaces/kube-system/pods: (1.512ms) 200",
        at(2026, 10, 25, 0, 15, 15, 525108),
    ),
    # RFC 3164, section 5.4, example 1 (PRI, no year)
    (
        "rfc3164",
        "<34>Oct 11 22:14:15 mymachine su: 'su root' failed for lonvick on /dev/pts/8",
        at(2026, 10, 11, 22, 14, 15),
    ),
    # RFC 5424, section 6.5, examples 1 and 3
    (
        "rfc5424",
        "<34>1 2003-10-11T22:14:15.003Z mymachine.example.com su - ID47 - 'su root' failed for lonvick",
        at(2003, 10, 11, 22, 14, 15, 3000),
    ),
    (
        "rfc5424 offset",
        "<165>1 2003-08-24T05:14:15.000003-07:00 192.0.2.1 myproc 8710 - - %% It's time to make the do-nuts.",
        at(2003, 8, 24, 5, 14, 15, 3, zone=MINUS_7),
    ),
    # syslog as rsyslog writes files (RSYSLOG_TraditionalFileFormat)
    ("syslog file", "Dec  1 03:07:32 web1 sshd[2211]: Accepted publickey for deploy", at(2026, 12, 1, 3, 7, 32)),
    # Apache httpd docs, log files: the Common Log Format example (nginx's combined format starts alike)
    (
        "access",
        '127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET /apache_pb.gif HTTP/1.0" 200 2326',
        at(2000, 10, 10, 13, 55, 36, zone=MINUS_7),
    ),
    # Apache httpd docs, log files: the error log example
    (
        "apache error",
        "[Fri Sep 09 10:42:29.902022 2011] [core:error] [pid 35708:tid 4328636416] [client 72.15.99.187] "
        "File does not exist: /usr/local/apache2/htdocs/favicon.ico",
        at(2011, 9, 9, 10, 42, 29, 902022),
    ),
    # nginx's error log (ngx_log_error_core: "%4d/%02d/%02d %02d:%02d:%02d [level] pid#tid: ")
    (
        "nginx error",
        '2023/01/01 12:00:00 [error] 1234#1234: *1 open() "/usr/share/nginx/html/favicon.ico" failed',
        at(2023, 1, 1, 12, 0, 0),
    ),
    # journalctl -o short-iso (man journalctl)
    ("journald short-iso", "2026-12-01T10:00:00+0000 web1 sshd[1234]: Accepted publickey", at(2026, 12, 1, 10, 0, 0)),
    # Python logging HOWTO: '%(asctime)s - %(name)s - %(levelname)s - %(message)s'
    (
        "python",
        "2005-03-19 15:10:26,618 - simple_example - DEBUG - debug message",
        at(2005, 3, 19, 15, 10, 26, 618000),
    ),
    # logback manual, chapter 1: the default pattern's time-only stamp (dated today, or yesterday)
    (
        "logback",
        "10:49:07.962 [main] DEBUG chapters.introduction.HelloWorld1 - Hello world.",
        at(2026, 12, 1, 10, 49, 7, 962000),
    ),
    (
        "logback later than now",
        "20:49:07.962 [main] DEBUG chapters.introduction.HelloWorld1 - Hello world.",
        at(2026, 11, 30, 20, 49, 7, 962000),
    ),
    # Android logcat -v threadtime (developer.android.com/tools/logcat)
    (
        "logcat",
        "08-22 14:39:58.102  1234  1234 E AndroidRuntime: FATAL EXCEPTION: main",
        at(2026, 8, 22, 14, 39, 58, 102000),
    ),
    # log15 README: logfmt with t= and lvl=
    (
        "log15",
        't=2014-05-02T16:07:23-0700 lvl=info msg="page accessed" path=/org/71/profile user_id=9',
        at(2014, 5, 2, 16, 7, 23, zone=MINUS_7),
    ),
    # logfmt with the time after other keys (Prometheus' go-kit logger)
    (
        "logfmt",
        'level=info ts=2026-12-01T09:30:00.123Z caller=main.go:333 msg="Server is ready to receive web requests."',
        at(2026, 12, 1, 9, 30, 0, 123000),
    ),
    # loghub HDFS_2k (github.com/logpai/loghub)
    (
        "hdfs",
        "081109 203615 148 INFO dfs.DataNode$PacketResponder: PacketResponder 1 for block blk_38865049064139660 "
        "terminating",
        at(2008, 11, 9, 20, 36, 15),
    ),
    # loghub Spark_2k
    (
        "spark",
        "17/06/09 20:10:40 INFO executor.CoarseGrainedExecutorBackend: Registered signal handlers for [TERM, HUP, INT]",
        at(2017, 6, 9, 20, 10, 40),
    ),
]


@pytest.mark.parametrize("style, line, when", EXAMPLES, ids=[e[0] for e in EXAMPLES])
def test_each_style_s_example_has_its_time(style: str, line: str, when: float) -> None:
    assert stamp_at(line, 0, filters()) == pytest.approx(when, abs=1e-3), style


@pytest.mark.parametrize(
    "line",
    [
        "Traceback (most recent call last):",
        "    at com.example.Foo.bar(Foo.java:12)",
        '{"level":"info","msg":"no time here","count":1234567890123}',
        "123456 654321 not a date, months run to 12",
        "2026-13-45T25:00:00Z is no time either",
        "",
    ],
)
def test_lines_without_a_readable_time_have_none(line: str) -> None:
    assert stamp_at(line, 0, filters()) is None


@given(st.text(max_size=200))
def test_any_text_gives_a_time_or_none_and_never_raises(text: str) -> None:
    when = stamp_at(text, 0, filters())
    assert when is None or isinstance(when, float)


# ---------------------------------------------------------------- since/until on a file of each style

Render = Callable[[datetime, str], str]

# One renderer per style family: a line of that style at a moment, with a marker to find it by.
RENDERERS: dict[str, Render] = {
    "json-ms": lambda t, m: json.dumps({"level": 30, "time": int(t.timestamp() * 1000), "msg": m}),
    "json-iso-last": lambda t, m: json.dumps({"msg": m, "level": "info", "time": t.isoformat()}),
    "json-ns-string": lambda t, m: json.dumps(
        {"log": m + "\n", "stream": "stdout", "time": t.strftime("%Y-%m-%dT%H:%M:%S.%f000Z")}
    ),
    "epoch-s": lambda t, m: json.dumps({"level": "info", "ts": t.timestamp(), "msg": m}),
    "logfmt": lambda t, m: f"level=info ts={t.strftime('%Y-%m-%dT%H:%M:%S.000Z')} msg={m}",
    "klog": lambda t, m: f"I{t.strftime('%m%d %H:%M:%S.%f')}       1 main.go:1] {m}",
    "rfc3164": lambda t, m: f"<34>{t.strftime('%b')} {t.day:>2} {t.strftime('%H:%M:%S')} host app: {m}",
    "rfc5424": lambda t, m: f"<165>1 {t.strftime('%Y-%m-%dT%H:%M:%S.%fZ')} host app 1 - - {m}",
    "access": lambda t, m: f'10.0.0.1 - - [{t.strftime("%d/%b/%Y:%H:%M:%S +0000")}] "GET /{m} HTTP/1.1" 200 5',
    "apache-error": lambda t, m: f"[{t.strftime('%a %b %d %H:%M:%S.%f %Y')}] [core:error] [pid 1] {m}",
    "cri": lambda t, m: f"{t.strftime('%Y-%m-%dT%H:%M:%S.%f')}123Z stdout F {m}",
    "python": lambda t, m: f"{t.strftime('%Y-%m-%d %H:%M:%S')},123 - app - INFO - {m}",
    "logcat": lambda t, m: f"{t.strftime('%m-%d %H:%M:%S')}.123  1234  1234 I Tag: {m}",
    "spark": lambda t, m: f"{t.strftime('%y/%m/%d %H:%M:%S')} INFO Executor: {m}",
}


@pytest.mark.parametrize("style", sorted(RENDERERS))
def test_since_and_until_read_each_style(style: str, tmp_path: Path) -> None:
    now = datetime.now(UTC).replace(microsecond=0)
    render = RENDERERS[style]
    moments = [now - timedelta(hours=h) for h in (5, 3, 1)]
    path = tmp_path / f"{style}.log"
    path.write_text("".join(render(t, f"marker{n}") + "\n" for n, t in enumerate(moments)))
    policy = Policy(services={"shop": Service(logs=[path], timezone="UTC")})
    executor = Executor(Registry([query_logs_tool(policy)]), RetryPolicy(timeout_s=20, retries=0, backoff_s=0.01))

    def found(**args: str) -> list[str]:
        call = ToolCall(f"c{uuid.uuid4().hex[:6]}", "query_logs", json.dumps({"service": "shop", **args}))
        result = executor.run_one(call).result
        assert result.ok, result
        return [f"marker{n}" for n in range(3) if f"marker{n}" in result.data["lines"]]

    assert found(since="2h") == ["marker2"]
    assert found(since="4h") == ["marker1", "marker2"]
    assert found(until="2h") == ["marker0", "marker1"]
    assert found(since="4h", until="2h") == ["marker1"]


# ---------------------------------------------------------------- stack traces below a line of each style

# The javadoc's chained trace (java.lang.Throwable#printStackTrace), cut to what a test needs.
TRACE = [
    "\tat Junk.a(Junk.java:13)",
    "Caused by: MidLevelException: LowLevelException",
    "\tat Junk.c(Junk.java:23)",
    "\t... 1 more",
]
# Styles a container runtime writes: it stamps every line the program writes, a trace's too.
RUNTIME_STYLES = {"cri", "json-ns-string"}


@pytest.mark.parametrize("style", sorted(RENDERERS))
def test_a_stack_trace_below_a_line_of_each_style_belongs_to_its_entry(style: str, tmp_path: Path) -> None:
    now = datetime.now(UTC).replace(microsecond=0)
    render = RENDERERS[style]
    failed, later = now - timedelta(hours=2), now - timedelta(hours=1)
    trace = [render(failed, frame) for frame in TRACE] if style in RUNTIME_STYLES else TRACE
    lines = [render(failed, "marker0"), *trace, render(later, "marker1")]
    path = tmp_path / f"{style}.log"
    path.write_text("\n".join(lines) + "\n")
    policy = Policy(services={"shop": Service(logs=[path], timezone="UTC")})
    executor = Executor(Registry([query_logs_tool(policy)]), RetryPolicy(timeout_s=20, retries=0, backoff_s=0.01))

    def found(**args: str) -> tuple[int, list[str]]:
        call = ToolCall(f"c{uuid.uuid4().hex[:6]}", "query_logs", json.dumps({"service": "shop", **args}))
        result = executor.run_one(call).result
        assert result.ok, result
        return result.data["matches"], result.data["lines"].split("\n")

    assert found(contains="LowLevelException") == (1, lines[:-1])
    assert found(until="90m") == (1, lines[:-1])
    assert found(since="90m") == (1, lines[-1:])
    assert found()[0] == 2


def test_time_only_lines_are_dated_from_the_day_their_file_was_last_written(tmp_path: Path) -> None:
    """logback's default layout has no date: a rotated file's lines are dated back from its last
    write, not from today (a file of two days ago would otherwise read as today's)."""
    day = (datetime.now(UTC) - timedelta(days=2)).replace(hour=12, minute=0, second=0, microsecond=0)
    path = tmp_path / "app.log"
    path.write_text(
        "23:00:00.000 [main] INFO  c.s.App - marker0\n"  # the evening before: later than the last write's time
        "10:00:00.000 [main] INFO  c.s.App - marker1\n"
        "11:00:00.000 [main] INFO  c.s.App - marker2\n"
    )
    os.utime(path, (day.timestamp(), day.timestamp()))
    policy = Policy(services={"shop": Service(logs=[path], timezone="UTC")})
    executor = Executor(Registry([query_logs_tool(policy)]), RetryPolicy(timeout_s=20, retries=0, backoff_s=0.01))

    def found(since: datetime, until: datetime) -> list[str]:
        args = {"service": "shop", "since": since.isoformat(), "until": until.isoformat()}
        result = executor.run_one(ToolCall(f"c{uuid.uuid4().hex[:6]}", "query_logs", json.dumps(args))).result
        assert result.ok, result
        return [f"marker{n}" for n in range(3) if f"marker{n}" in result.data["lines"]]

    evening = day - timedelta(hours=13)  # 23:00 the day before
    assert found(evening - timedelta(minutes=30), evening + timedelta(minutes=30)) == ["marker0"]
    assert found(day - timedelta(hours=1, minutes=30), day) == ["marker2"]
    assert found(day - timedelta(hours=3), day) == ["marker1", "marker2"]
