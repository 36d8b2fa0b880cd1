"""Levels (tools/logs/levels.py): the spellings real logs and people use, one table by rank; the
tool argument and the direct command read them alike, and refuse an unknown one with the levels
and the nearest one instead of turning it into a text search."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from opsbot.bot.commands import decide, parse_command, render_result
from opsbot.config.policy import Policy, Principal, Service
from opsbot.config.settings import SAMPLE_CONFIG, Settings
from opsbot.tools.base import Registry, Tool, ToolResult
from opsbot.tools.catalog import ops_tools
from opsbot.tools.executor import Executor, RetryPolicy, ToolCall
from opsbot.tools.logs import LEVELS, QueryLogsArgs, query_logs_tool
from opsbot.tools.logs.levels import (
    LETTER_RANKS,
    WORD_RANKS,
    Level,
    Scheme,
    UnknownLevel,
    level_rank,
    numeric_rank,
    parse_level,
    rank_of,
)

FAST = RetryPolicy(timeout_s=20, retries=0, backoff_s=0.01)
POLICY = Settings.load(SAMPLE_CONFIG).policy
SAMPLE_LOGS = SAMPLE_CONFIG.parent / "logs"
DEBUG, INFO, WARN, ERROR = range(4)


# ---------------------------------------------------------------- spellings from public sources

SPELLINGS = [
    # Python logging (docs.python.org, "Logging Levels"; WARN and FATAL are its aliases)
    ("DEBUG", DEBUG), ("INFO", INFO), ("WARNING", WARN), ("WARN", WARN), ("ERROR", ERROR),
    ("CRITICAL", ERROR), ("FATAL", ERROR),
    # log4j 2 (org.apache.logging.log4j.Level) and logback (ch.qos.logback.classic.Level)
    ("TRACE", DEBUG), ("debug", DEBUG), ("info", INFO), ("warn", WARN), ("error", ERROR), ("fatal", ERROR),
    # java.util.logging.Level
    ("SEVERE", ERROR),
    # Go log15 (github.com/inconshreveable/log15, Lvl.String: "dbug", "info", "warn", "eror", "crit")
    ("dbug", DEBUG), ("eror", ERROR), ("crit", ERROR), ("EROR", ERROR),
    # Go zap (zapcore.Level.String: debug, info, warn, error, dpanic, panic, fatal)
    ("dpanic", ERROR), ("panic", ERROR),
    # zerolog ConsoleWriter (TRC DBG INF WRN ERR FTL PNC) and Serilog's {Level:u3} (VRB ... FTL)
    ("TRC", DEBUG), ("DBG", DEBUG), ("VRB", DEBUG), ("INF", INFO), ("WRN", WARN), ("ERR", ERROR),
    ("FTL", ERROR), ("PNC", ERROR),
    # Serilog LogEventLevel and .NET Microsoft.Extensions.Logging.LogLevel
    ("Verbose", DEBUG), ("Information", INFO), ("Warning", WARN), ("Critical", ERROR),
    # klog / glog line prefixes (I, W, E, F)
    ("I", INFO), ("W", WARN), ("E", ERROR), ("F", ERROR),
    # Android logcat priorities (V, D, I, W, E, F, A: assert)
    ("V", DEBUG), ("D", DEBUG), ("A", ERROR), ("v", DEBUG), ("e", ERROR),
    # one letter for the other words (T trace, N notice, C critical)
    ("T", DEBUG), ("N", INFO), ("C", ERROR),
    # syslog, RFC 5424 section 6.2.1, and the keywords of syslog.conf(5) / rsyslog (panic, error
    # and warn are its deprecated synonyms of emerg, err, warning)
    ("emerg", ERROR), ("emergency", ERROR), ("alert", ERROR), ("crit", ERROR), ("err", ERROR),
    ("warning", WARN), ("notice", INFO), ("informational", INFO), ("debug", DEBUG),
    # nginx error_log levels: debug, info, notice, warn, error, crit, alert, emerg
    ("NOTICE", INFO), ("ALERT", ERROR), ("EMERG", ERROR),
]  # fmt: skip

NUMBERS = [
    # pino (getpino.io, "Levels") and bunyan (node-bunyan README, "Levels"): the same numbers
    (Scheme.pino, 10, DEBUG), (Scheme.pino, 20, DEBUG), (Scheme.pino, 30, INFO), (Scheme.pino, 40, WARN),
    (Scheme.pino, 50, ERROR), (Scheme.pino, 60, ERROR),
    # syslog severities, RFC 5424 section 6.2.1: 0 Emergency ... 7 Debug
    (Scheme.syslog, 0, ERROR), (Scheme.syslog, 1, ERROR), (Scheme.syslog, 2, ERROR), (Scheme.syslog, 3, ERROR),
    (Scheme.syslog, 4, WARN), (Scheme.syslog, 5, INFO), (Scheme.syslog, 6, INFO), (Scheme.syslog, 7, DEBUG),
    # Python logging's numeric levels: 10 DEBUG, 20 INFO, 30 WARNING, 40 ERROR, 50 CRITICAL
    (Scheme.python, 10, DEBUG), (Scheme.python, 20, INFO), (Scheme.python, 30, WARN), (Scheme.python, 40, ERROR),
    (Scheme.python, 50, ERROR),
]  # fmt: skip


@pytest.mark.parametrize(("spelling", "rank"), SPELLINGS)
def test_spellings_real_logs_use_name_their_rank(spelling: str, rank: int) -> None:
    level = parse_level(spelling)
    assert isinstance(level, Level) and level.rank == rank and level.value == LEVELS[rank]
    assert rank_of(spelling) == rank


@pytest.mark.parametrize(("scheme", "number", "rank"), NUMBERS)
def test_numbers_name_their_rank_in_their_scheme(scheme: Scheme, number: int, rank: int) -> None:
    assert numeric_rank(number, scheme) == rank


def test_numbers_out_of_a_scheme_and_custom_levels() -> None:
    assert numeric_rank(8, Scheme.syslog) is None and numeric_rank(-1, Scheme.syslog) is None
    assert numeric_rank(0, Scheme.pino) is None and numeric_rank(0, Scheme.python) is None  # silent, NOTSET
    # pino and Python let programs add levels in between: the standard level below is their rank.
    assert numeric_rank(35, Scheme.pino) == INFO and numeric_rank(45, Scheme.python) == ERROR
    assert rank_of("50") is None, "a number is a level only with its scheme"


@pytest.mark.parametrize(
    ("given", "rank"), [(0, ERROR), (3, ERROR), (4, WARN), (6, INFO), (7, DEBUG), (10, DEBUG), (30, INFO), (50, ERROR)]
)
def test_a_bare_number_given_as_a_level_is_syslog_or_pino(given: int, rank: int) -> None:
    for written in (given, str(given), f" {given} "):
        level = parse_level(written)
        assert isinstance(level, Level) and level.rank == rank


@pytest.mark.parametrize("given", [8, 9, 45, 100, -1, "45", "1e3", "", "   ", "LOUD", "ERROR!", "err or"])
def test_anything_else_is_unknown_and_says_the_levels(given: str | int) -> None:
    unknown = parse_level(given)
    assert isinstance(unknown, UnknownLevel)
    assert "DEBUG, INFO, WARN, ERROR" in unknown.message


@pytest.mark.parametrize(
    ("typo", "meant"),
    [("WARNNG", WARN), ("warnig", WARN), ("EROOR", ERROR), ("errror", ERROR), ("debgu", DEBUG), ("critcal", ERROR),
     ("infoo", INFO), ("fatl", ERROR), ("wrnn", WARN)],
)  # fmt: skip
def test_a_typo_gets_did_you_mean(typo: str, meant: int) -> None:
    unknown = parse_level(typo)
    assert isinstance(unknown, UnknownLevel) and unknown.suggestion is not None
    assert unknown.suggestion.rank == meant
    assert f"did you mean {LEVELS[meant]}?" in unknown.message


# ---------------------------------------------------------------- level words in lines


@pytest.mark.parametrize(
    ("line", "rank"),
    [
        # Go log15's logfmt (t=... lvl=... msg=...)
        ('t=2026-11-29T03:07:32+0000 lvl=eror msg="charge failed" err="card declined"', ERROR),
        ('t=2026-11-29T03:07:32+0000 lvl=dbug msg="cache miss"', DEBUG),
        ('t=2026-11-29T03:07:32+0000 lvl=crit msg="ledger unreachable"', ERROR),
        ('t=2026-11-29T03:07:32+0000 lvl=warn msg="slow charge"', WARN),
        # zerolog's ConsoleWriter and Serilog's default console template
        ("3:07AM INF charge accepted amount=12", INFO),
        ("[03:07:32 WRN] Pool nearly exhausted", WARN),
        ("[03:07:32 ERR] Charge failed", ERROR),
        # zap's development encoder
        ("2026-11-29T03:07:32.123Z\tDPANIC\tpay/charge.go:12\tinvariant broken", ERROR),
        # One letter stands for a level only where a format puts it; a number only under a JSON level key.
        ("2026-11-29T03:07:32Z I think the queue is stuck", None),
        ('{"level":50,"time":1764385652000,"msg":"boom"}', 3),  # pino's number under its JSON key
        # Unicode case folding would match these to level words they are not (and raised before).
        ("2026-11-29T03:07:32Z ſevere crıt İNFO", None),
    ],
)
def test_level_words_in_lines_include_the_new_aliases(line: str, rank: int | None) -> None:
    assert level_rank(line) == rank


def test_a_level_filter_finds_log15_lines(tmp_path: Path) -> None:
    lines = [
        't=2026-11-29T03:00:01+0000 lvl=dbug msg="cache miss"',
        't=2026-11-29T03:00:02+0000 lvl=info msg="charge accepted"',
        't=2026-11-29T03:00:03+0000 lvl=eror msg="charge failed"',
        't=2026-11-29T03:00:04+0000 lvl=warn msg="slow"',
        't=2026-11-29T03:00:05+0000 lvl=crit msg="ledger unreachable"',
    ]
    path = tmp_path / "shop.log"
    path.write_text("\n".join(lines) + "\n")
    executor = Executor(Registry([query_logs_tool(Policy(services={"shop": Service(logs=[path], timezone="UTC")}))]))
    result = call(executor, {"service": "shop", "level": "ERROR"})
    assert result.ok and result.data["lines"].splitlines() == [lines[2], lines[4]]
    result = call(executor, {"service": "shop", "level": "dbug"})
    assert result.ok and result.data["lines"].splitlines() == lines


# ---------------------------------------------------------------- the tool, as the model calls it


def call(executor: Executor, args: dict[str, Any]) -> ToolResult:
    return executor.run_one(ToolCall("call-1", "query_logs", json.dumps(args))).result


@pytest.fixture(scope="module")
def sample_ops() -> Executor:
    return Executor(Registry(ops_tools(POLICY)), FAST)


def sample_lines(service: str, min_rank: int) -> list[str]:
    lines = (SAMPLE_LOGS / f"{service}.log").read_text().splitlines()
    return [line for line in lines if LEVELS.index(line.split()[1]) >= min_rank]


@pytest.mark.parametrize(
    ("given", "means"),
    [("eror", "ERROR"), ("E", "ERROR"), (50, "ERROR"), ("3", "ERROR"), ("wrn", "WARN"), (40, "WARN"), ("W", "WARN")],
)
def test_the_tool_takes_any_known_spelling(sample_ops: Executor, given: object, means: str) -> None:
    loose = call(sample_ops, {"service": "payments", "level": given, "limit": 500})
    assert loose.ok and loose.data["lines"].splitlines() == sample_lines("payments", LEVELS.index(means))


@pytest.mark.parametrize(("given", "meant"), [("WARNNG", "WARN"), ("EROOR", "ERROR"), ("informaton", "INFO")])
def test_the_tool_refuses_an_unknown_level_with_the_levels_and_did_you_mean(
    sample_ops: Executor, given: str, meant: str
) -> None:
    result = call(sample_ops, {"service": "checkout", "level": given})
    assert result.status == "invalid_args" and result.error is not None
    seen = result.render()  # what the model reads
    assert f"unknown level '{given}'" in seen and f"did you mean {meant}?" in seen
    assert "DEBUG, INFO, WARN, ERROR" in seen


@pytest.mark.parametrize("given", ["LOUD", 45, True, ["ERROR"], {"min": "ERROR"}, 2.5])
def test_the_tool_refuses_what_is_no_level_at_all(sample_ops: Executor, given: object) -> None:
    result = call(sample_ops, {"service": "checkout", "level": given})
    assert result.status == "invalid_args" and result.error is not None and "level" in result.error.message
    assert "did you mean" not in result.error.message


def test_the_model_is_still_shown_the_four_levels() -> None:
    schema = QueryLogsArgs.model_json_schema()["properties"]["level"]
    assert [option.get("enum") for option in schema["anyOf"] if "enum" in option] == [list(LEVELS)]


# ---------------------------------------------------------------- the direct command


def direct_call(text: str) -> ToolCall:
    parsed = parse_command(POLICY, text)
    assert isinstance(parsed, ToolCall) and parsed.name == "query_logs"
    return parsed


def direct(text: str) -> dict[str, Any]:
    arguments: dict[str, Any] = json.loads(direct_call(text).arguments)
    return arguments


@pytest.mark.parametrize(
    ("word", "level", "min_rank"), [("EROR", "ERROR", ERROR), ("WARNING", "WARN", WARN), ("warn", "WARN", WARN),
                                    ("E", "ERROR", ERROR), ("Error", "ERROR", ERROR), ("info", "INFO", INFO)]
)  # fmt: skip
def test_a_level_in_the_direct_command_returns_that_level_and_above(
    sample_ops: Executor, word: str, level: str, min_rank: int
) -> None:
    args = direct(f"logs checkout {word} limit=500")
    assert args == {"service": "checkout", "level": level, "limit": "500"}
    result = sample_ops.run_one(direct_call(f"logs checkout {word} limit=500")).result
    expected = sample_lines("checkout", min_rank)
    shown = result.data["lines"].splitlines()  # the newest of them, within the tool's output cap
    assert result.ok and result.data["matches"] == len(expected) and shown and shown == expected[-len(shown) :]
    assert all(LEVELS.index(line.split()[1]) >= min_rank for line in shown)


def spied_tools() -> tuple[Executor, list[object]]:
    """The sample's tools, query_logs wrapped so that any run of it is seen."""
    runs: list[object] = []
    tools: list[Tool[Any]] = []
    for tool in ops_tools(POLICY):
        if tool.name == "query_logs":
            real = tool.run

            def spy(args: Any, principal: Principal | None, real: Any = real) -> Any:
                runs.append(args)
                return real(args, principal)

            tool = Tool(tool.name, tool.description, args_model=tool.args_model, run=spy, timeout_s=tool.timeout_s)
        tools.append(tool)
    return Executor(Registry(tools), FAST), runs


@pytest.mark.parametrize(
    ("text", "meant"),
    [("logs checkout WARNNG", "WARN"), ("logs checkout errror", "ERROR"), ("logs checkout debgu", "DEBUG"),
     ("logs checkout WARNNG timeout", "WARN"), ("logs checkout errors", "ERROR")],
)  # fmt: skip
def test_a_misspelt_level_is_refused_with_did_you_mean_and_runs_nothing(text: str, meant: str) -> None:
    args = direct(text)
    assert args["level"] == text.split()[2] and args.get("contains") != text.split()[2]
    executor, runs = spied_tools()
    result = executor.run_one(direct_call(text)).result
    shown = render_result(result)
    assert result.status == "invalid_args" and runs == []
    assert f"did you mean {meant}?" in shown and "DEBUG, INFO, WARN, ERROR" in shown
    assert "Traceback" not in shown


def test_a_misspelt_level_is_a_command_even_with_a_model_to_ask() -> None:
    # Otherwise the model would be asked, and guess a level or a search.
    assert isinstance(decide(POLICY, "logs checkout WARNNG", can_ask=True), ToolCall)


@pytest.mark.parametrize(
    ("text", "contains"),
    [("logs checkout timeout", "timeout"), ("logs checkout upstream timeout", "upstream timeout"),
     ("logs checkout OOM", "OOM"), ("logs checkout 502", "502"), ("logs checkout FAIL", "FAIL"),
     ("logs checkout fail", "fail"), ("logs checkout race", "race"), ("logs checkout db", "db"),
     ("logs checkout ERRNO", "ERRNO"), ("logs checkout status=502", "status=502"), ("logs checkout 3", "3"),
     ("logs checkout payments", "payments"), ("logs checkout request_id", "request_id")],
)  # fmt: skip
def test_other_words_stay_a_text_search(text: str, contains: str) -> None:
    assert direct(text) == {"service": "checkout", "contains": contains}


def test_a_text_search_still_runs(sample_ops: Executor) -> None:
    result = sample_ops.run_one(direct_call("logs checkout timeout limit=500")).result
    lines = result.data["lines"].splitlines()
    assert result.ok and lines and all("timeout" in line.lower() for line in lines)
    assert any(" ERROR " in line for line in lines)


def test_a_level_and_text_stay_both() -> None:
    assert direct("logs checkout ERROR timeout") == {"service": "checkout", "level": "ERROR", "contains": "timeout"}
    assert direct("logs checkout eror upstream timeout since=1h") == {
        "service": "checkout", "level": "ERROR", "contains": "upstream timeout", "since": "1h"
    }  # fmt: skip


# ---------------------------------------------------------------- properties

KNOWN = [*WORD_RANKS, *LETTER_RANKS, "0", "3", "7", "10", "30", "60"]


def _rank(spelling: str) -> int:
    level = parse_level(spelling)
    assert isinstance(level, Level)
    return level.rank


@given(
    spelling=st.sampled_from(KNOWN),
    flips=st.lists(st.booleans(), min_size=16, max_size=16),
    before=st.text(alphabet=" \t\n\r", max_size=3),
    after=st.text(alphabet=" \t\n\r", max_size=3),
)
def test_any_case_and_spacing_of_a_known_spelling_names_the_same_rank(
    spelling: str, flips: list[bool], before: str, after: str
) -> None:
    varied = "".join(c.upper() if flip else c.lower() for c, flip in zip(spelling, flips * 2, strict=False))
    level = parse_level(before + varied + after)
    assert isinstance(level, Level) and level.rank == _rank(spelling)
    assert QueryLogsArgs(service="s", level=before + varied + after).level == level.value


@given(st.one_of(st.text(max_size=30), st.integers(), st.from_regex(r"\s*[A-Za-z]{1,10}\s*", fullmatch=True)))
def test_parse_level_never_raises(given_level: str | int) -> None:
    assert isinstance(parse_level(given_level), Level | UnknownLevel)
    try:
        QueryLogsArgs(service="s", level=given_level)
    except ValidationError as exc:
        assert [e["loc"] for e in exc.errors()] == [("level",)]


@given(
    spelling=st.sampled_from([w for w in WORD_RANKS if len(w) >= 4]),
    at=st.integers(min_value=1, max_value=20),
    edit=st.sampled_from(["delete", "insert", "replace", "swap"]),
    letter=st.sampled_from("abcdefghijklmnopqrstuvwxyz"),
)
def test_a_one_edit_typo_in_the_direct_command_is_a_level_or_refused(
    spelling: str, at: int, edit: str, letter: str
) -> None:
    """Whatever one edit after the first letter makes of a level word, the direct command never
    searches it as text: it is a level, or the tool refuses it naming the nearest level."""
    at = 1 + at % (len(spelling) - 1) if edit != "swap" else 2 + at % (len(spelling) - 2)
    typo = {
        "delete": spelling[:at] + spelling[at + 1 :],
        "insert": spelling[:at] + letter + spelling[at:],
        "replace": spelling[:at] + letter + spelling[at + 1 :],
        "swap": spelling[: at - 1] + spelling[at : at + 1] + spelling[at - 1 : at] + spelling[at + 1 :],
    }[edit]
    if len(typo) < 4:
        return  # short words are text by the rule (`db`, `tls`)
    args = direct(f"logs checkout {typo}")
    assert "contains" not in args
    known = parse_level(typo)
    if isinstance(known, Level):
        assert args["level"] == known.value
    else:
        assert args["level"] == typo and known.suggestion is not None


# ---------------------------------------------------------------- levels JSON lines carry under a key

PINO_AND_BUNYAN = [
    # pino docs (getpino.io): numeric levels under "level", before "time" and "msg"
    '{"level":30,"time":1531171074631,"msg":"hello world","pid":657,"hostname":"Davids-MBP-3.fritz.box"}',
    '{"level":40,"time":1531171074632,"msg":"disk info is stale","pid":657}',
    '{"level":50,"time":1531171074633,"msg":"info: payment failed","pid":657}',
    '{"level":60,"time":1531171074634,"msg":"out of memory","pid":657}',
    # bunyan README: the same numbers, after name, hostname and pid
    '{"name":"myapp","hostname":"banana.local","pid":40161,"level":50,"msg":"hi","time":"2013-01-04T18:46:23.851Z","v":0}',
    '{"name":"myapp","hostname":"banana.local","pid":40161,"level":20,"msg":"error budget recomputed","v":0}',
]


@pytest.mark.parametrize("line, rank", list(zip(PINO_AND_BUNYAN, [1, 2, 3, 3, 3, 0], strict=True)))
def test_a_json_line_s_level_is_its_level_key_not_a_word_of_its_message(line: str, rank: int) -> None:
    assert level_rank(line) == rank


def shown_at(level: str, lines: list[str], tmp_path: Path, **service: Any) -> list[str]:
    """Which of `lines`, written as one log of a service set up with `service`, query_logs shows
    at `level` (in file order)."""
    path = tmp_path / "levels.log"
    path.write_text("\n".join(lines) + "\n")
    policy = Policy(services={"app": Service(logs=[path], timezone="UTC", **service)})
    executor = Executor(Registry([query_logs_tool(policy)]), RetryPolicy(timeout_s=20, retries=0, backoff_s=0.01))
    result = executor.run_one(ToolCall("c1", "query_logs", json.dumps({"service": "app", "level": level}))).result
    assert result.ok, result
    return [line for line in lines if line in result.data["lines"]]


def test_a_level_filter_finds_pino_and_bunyan_lines_by_their_numbers(tmp_path: Path) -> None:
    def shown(level: str) -> list[str]:
        return shown_at(level, PINO_AND_BUNYAN, tmp_path)

    assert shown("ERROR") == [PINO_AND_BUNYAN[2], PINO_AND_BUNYAN[3], PINO_AND_BUNYAN[4]]
    assert shown("WARN") == PINO_AND_BUNYAN[1:5]
    assert shown("DEBUG") == PINO_AND_BUNYAN


# ---------------------------------------------------------------- levels a format puts where no word is

PLACED = [
    # RFC 3164, section 5.4: PRI 34 is facility 4, severity 2 (critical)
    ("<34>Oct 11 22:14:15 mymachine su: 'su root' failed for lonvick on /dev/pts/8", 3),
    # RFC 5424, section 6.5: PRI 165 is facility 20, severity 5 (notice), whatever the message says
    ("<165>1 2003-08-24T05:14:15.000003-07:00 192.0.2.1 myproc 8710 - - error budget: fine", 1),
    # Kubernetes docs, system logs: klog's letter before the date
    ("I1025 00:15:15.525108       1 httplog.go:79] GET /api/v1/namespaces/kube-system/pods: (1.512ms) 200", 1),
    ("E1025 00:15:16.000001       1 controller.go:114] error syncing 'kube-system/coredns': timeout", 3),
    ("W1025 00:15:17.000001       1 reflector.go:302] watch of *v1.Pod ended with: too old resource version", 2),
    # Apache httpd docs, the Common Log Format (nginx's combined starts alike): the status decides
    ('127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET /apache_pb.gif HTTP/1.0" 503 2326', 3),
    ('127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET /missing HTTP/1.0" 404 209', 2),
    ('127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET /error-page HTTP/1.0" 200 2326', 1),
]


@pytest.mark.parametrize("line, rank", PLACED)
def test_a_level_a_format_puts_at_a_line_s_start_is_read(line: str, rank: int) -> None:
    assert level_rank(line) == rank


def test_a_level_filter_finds_lines_whose_level_is_no_word(tmp_path: Path) -> None:
    lines = [line for line, _ in PLACED]  # the first line is one a level token must find at the start

    def shown(level: str) -> list[str]:
        return shown_at(level, lines, tmp_path)

    assert shown("ERROR") == [line for line, rank in PLACED if rank == 3]
    assert shown("WARN") == [line for line, rank in PLACED if rank >= 2]
    assert shown("INFO") == lines


# Android logcat's three layouts (developer.android.com/tools/logcat, "Control log output format"):
# threadtime (the default: date, time, pid, tid, priority, tag), time, and brief.
LOGCAT = [
    ("12-01 10:00:00.123  1901  4229 D EventBus: No subscribers registered for event class", 0),
    ("12-01 10:00:01.456  1901  1901 I ActivityManager: Start proc 4242:com.shop/u0a85", 1),
    ("12-01 10:00:02.789  1901  4229 W ConnectivityService: network 100 lost", 2),
    ("12-01 10:00:03.012  4242  4242 E AndroidRuntime: FATAL EXCEPTION: main", 3),
    ("12-01 10:00:04.345  4242  4260 F libc    : Fatal signal 11 (SIGSEGV), code 1", 3),
    ("12-01 10:00:05.678 E/CheckoutClient( 4242): payment request failed", 3),
    ("W/ActivityManager(  585): Activity pause timeout for ActivityRecord", 2),
]


def test_logcat_letters_are_levels_where_the_format_is_said_to_be_logcat() -> None:
    assert [level_rank(line, logcat=True) for line, _ in LOGCAT] == [rank for _, rank in LOGCAT]


def test_auto_leaves_logcat_letters_and_lone_letters_alone() -> None:
    # The levels of threadtime lines (their messages hold no level word) are not guessed at.
    assert [level_rank(line) for line, _ in LOGCAT[:3]] == [None, None, None]
    assert level_rank("2026-12-01 10:00:00 step E of the runbook done", logcat=False) is None


def test_a_level_filter_reads_logcat_letters_for_a_logcat_service(tmp_path: Path) -> None:
    timed = LOGCAT[:-1]  # brief has no time: in one file with the others it would continue the line above
    lines = [line for line, _ in timed]

    def shown(level: str, **service: Any) -> list[str]:
        return shown_at(level, lines, tmp_path, **service)

    assert shown("ERROR", format="logcat") == [line for line, rank in timed if rank == 3]
    assert shown("WARN", format="logcat") == [line for line, rank in timed if rank >= 2]
    # auto: only the lines whose messages hold a level word (FATAL EXCEPTION, Fatal signal)
    assert shown("ERROR") == [LOGCAT[3][0], LOGCAT[4][0]]


@pytest.mark.parametrize("named", ["json", "klog", "Logback", "cri"])
def test_a_format_auto_reads_anyway_is_refused_saying_so(named: str) -> None:
    with pytest.raises(ValidationError, match="is recognised without setting it"):
        Service(logs=[Path("/var/log/app.log")], format=named)


def test_an_unknown_format_is_refused_with_the_ones_there_are() -> None:
    with pytest.raises(ValidationError, match="'auto' or 'logcat'"):
        Service(logs=[Path("/var/log/app.log")], format="xml")


def test_a_spaced_json_level_number_is_not_read_in_pino_s_scheme() -> None:
    # Python's json.dumps spaces its keys; its programs number levels as logging does (40 ERROR).
    assert level_rank('{"level": 40, "msg": "x"}') is None


# One pass for many words finds the lines one find pass per word does (match.py picks by count).
_WORDS = st.sampled_from(["err", "crit", "\ne", "\n<", '" 5', '"level":5', "x"])


@given(
    st.lists(st.sampled_from(["err ", "crit", "\n", "e1", "<3>", '" 503', '"level":50', "ok ", "x"]), max_size=40),
    st.lists(_WORDS, min_size=1, max_size=7, unique=True),
)
def test_one_pass_for_many_words_finds_the_same_lines_as_a_pass_a_word(pieces: list[str], words: list[str]) -> None:
    from opsbot.tools.logs import match

    text = "".join(pieces)
    by_find = {}
    for word in words:
        by_find.update(dict(match._lines_holding(text, text, (word,))))
    assert dict(match._lines_holding_any(text, text, tuple(words))) == by_find
