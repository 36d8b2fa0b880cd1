"""query_logs: the newest matching lines of a service's log files, read from the end.

A query runs over the service's files (globs and rotated siblings) newest data first. Plain files
are read backwards in blocks and .gz files are streamed forwards (gzip cannot be read backwards).
Each block is searched as a whole, at C speed, for lines that may match (a level word, the
substring, the regex); only those lines are checked one by one, so sparse matches in a huge file
cost little more than reading it. Time filters judge a block by its first and last timestamps, so
only blocks at the edges of the range are looked at line by line, and a plain file whose newest
lines are after `until` is bisected to where `until` is instead of being read down to it.

Every scan is capped in bytes read and wall time; a capped scan still answers and says that its
count is a lower bound. A regex refused for its shape (nested repetition) never runs, and one
that backtracks past its time box on a single search ends the query with a `timeout` result.

Two more sources (config/policy_services.py has their format), both run through tools/runner.py
(no shell, no stdin, minimal environment, process group killed on timeout, output capped):

- `journald` units: one run of
  `journalctl --no-pager --quiet --output=short-iso-precise --reverse --lines=JOURNAL_ENTRIES
  --unit=U... [--since=@EPOCH] [--until=@EPOCH] [--priority=err|warning|info|debug]`.
  The minimum level is journald's own priority (the short output shows none, so level words in
  the text are not looked for); since/until are passed to journalctl and checked again on each
  line's timestamp, with substring and regex, by the same matcher as files. The output is read
  newest entry first and only its head is kept (`Sandbox(keep="head")`), so a cap drops the
  oldest entries, never a stretch in the middle; entries (with their indented continuation
  lines) are then put back in time order. journalctl is found on the fixed system PATH when the
  tool is built (`query_logs_tool(policy, journalctl=...)` names another binary: tests only).
- `log_command`: a command of `policy.commands`, prepared by the run_command machinery
  (`CommandBook`: access, typed parameters, resolved executable) and run with its own timeout
  and output cap, keeping the tail (its output is oldest first). Contract: query_logs fills the
  parameter `since` with the query's since as whole seconds before now plus `s` (`7200s`) and
  `lines` with how many newest lines to fetch (the parameter's max, at most COMMAND_LINES);
  other parameters take their defaults. The asker needs the service's and the command's access;
  a missing, `risk: write` or unfillable command is found when the tool is built and answered
  with `unavailable` (Policy does not check it yet). Every filter, level words included, is
  opsbot's own, as for files.

A failing run is `unavailable` with a short excerpt of what it printed (redacted), a run past
its timeout is `timeout`. With several sources, each is read on its own, their lines are merged
by timestamp (an untimed line keeps its place after the line before it) and the newest `limit`
shown; a failing source is a note as long as another one answered.
"""

from __future__ import annotations

import dataclasses
import glob
import gzip
import math
import os
import re
import stat
import time
import zlib
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, tzinfo
from enum import Enum
from pathlib import Path
from typing import IO, Any, Literal, Protocol

import regex
from pydantic import BaseModel, ConfigDict, Field, field_validator

from config.policy import Command, Policy, Principal, Service
from tools.base import ErrorType, Tool, ToolResult
from tools.commands import CommandBook
from tools.redact import redact_text
from tools.runner import SYSTEM_PATH, Completed, Sandbox, run, which

LEVELS = ("DEBUG", "INFO", "WARN", "ERROR")

MIB = 1024 * 1024
BLOCK_BYTES = MIB
# Once `limit` lines are found, counting goes on only this far, so a plain "last 50 errors" stays fast.
COUNT_SCAN_BYTES = 16 * MIB
# Never read more than this per query (plain bytes plus decompressed .gz bytes), matches or not.
MAX_SCAN_BYTES = 256 * MIB
SCAN_SECONDS = 5.0
REGEX_SEARCH_SECONDS = 0.5
OUTPUT_BYTES = 16_000
MAX_LINE_CHARS = 2_000
# A "line" longer than this is cut into pieces rather than gathered whole into memory.
LONG_LINE_BYTES = 4 * MIB
# How many lines to look through for a timestamp before calling a block untimed.
STAMP_PROBE_LINES = 1_000
LEVEL_HEAD_CHARS = 200

# journald: at most this many entries per query, this much output, this long.
JOURNAL_ENTRIES = 10_000
JOURNAL_OUTPUT_BYTES = 8 * MIB
JOURNAL_TIMEOUT_S = 10.0
# log_command: at most this many lines asked for through a `lines` parameter.
COMMAND_LINES = 10_000
# The parameters of a log command that query_logs fills in itself.
FILLED_PARAMS = ("since", "lines")
EXCERPT_CHARS = 300
_PRIORITIES = {"DEBUG": "debug", "INFO": "info", "WARN": "warning", "ERROR": "err"}
# Killing and reaping a process group takes a moment after its own timeout.
_REAP_GRACE_S = 5.0

TIME_FORMATS = "ISO-8601 (2026-11-29T03:07:32Z), '2026-11-29 03:07:32' and syslog 'Nov 29 03:07:32'"
TIME_HINT = (
    "give a relative age such as 15m, 2h, 1d, 1w, or an ISO-8601 time such as 2026-11-29T03:00:00Z "
    "(times without an offset are in the service's time zone)"
)

_ALIASES = {"WARNING": "WARN", "ERR": "ERROR", "FATAL": "ERROR", "CRITICAL": "ERROR", "CRIT": "ERROR"}


class QueryLogsArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    service: str = Field(description="service name, as listed by list_services")
    level: Literal["DEBUG", "INFO", "WARN", "ERROR"] | None = Field(
        default=None, description="minimum level; ERROR shows only errors, WARN warnings and errors"
    )
    since: str | None = Field(
        default=None, max_length=40, description="only lines at or after this time: 15m, 2h, 1d or ISO-8601"
    )
    until: str | None = Field(
        default=None, max_length=40, description="only lines at or before this time: 15m, 2h, 1d or ISO-8601"
    )
    contains: str | None = Field(default=None, max_length=200, description="case-insensitive substring")
    regex: str | None = Field(
        default=None,
        max_length=200,
        description="regular expression searched within each line (Python syntax, case-sensitive unless (?i))",
    )
    limit: int = Field(default=50, ge=1, le=500, description="newest matching lines to return")

    @field_validator("level", mode="before")
    @classmethod
    def _level_aliases(cls, value: Any) -> Any:
        # Models write "error" or "WARNING" as often as "ERROR"; refusing those wastes a step.
        if isinstance(value, str):
            upper = value.strip().upper()
            return _ALIASES.get(upper, upper)
        return value


@dataclass(frozen=True)
class Readers:
    """How the sources that are not files are read: the journalctl binary (None: not installed),
    the policy's commands, and why a command cannot serve as a log command, by command name."""

    journalctl: str | None = None
    commands: CommandBook | None = None
    broken: Mapping[str, str] = field(default_factory=dict)


def readers_for(policy: Policy, journalctl: str | None = None) -> Readers:
    """Everything resolved once, when the tool is built: journalctl on the fixed system PATH
    (`journalctl` overrides it: an absolute path, for tests), commands' executables by CommandBook."""
    wanted = {s.log_command for s in policy.services.values() if s.log_command is not None}
    broken = {}
    for name in sorted(wanted):
        problem = log_command_problem(policy, name)
        if problem is not None:
            broken[name] = problem
    return Readers(
        journalctl=journalctl if journalctl is not None else which("journalctl"),
        commands=CommandBook(policy) if wanted else None,
        broken=broken,
    )


def log_command_problem(policy: Policy, name: str) -> str | None:
    """Why command `name` cannot be a service's log_command, or None. (A Policy-level validator
    should say this when the file is loaded; until then query_logs says it.)"""
    spec = policy.commands.get(name)
    if spec is None:
        declared = ", ".join(sorted(policy.commands)) or "none"
        return f"log_command {name!r} is not declared under policy.commands (declared: {declared})"
    if spec.risk != "read":
        return f"log_command {name!r} is risk: {spec.risk}; a command that reads logs must be risk: read"
    unfilled = sorted(key for key, param in spec.params.items() if key not in FILLED_PARAMS and param.required)
    if unfilled:
        return (
            f"log_command {name!r} has parameter(s) {', '.join(unfilled)} without a default; query_logs fills "
            f"only {' and '.join(FILLED_PARAMS)}"
        )
    return None


def query_logs_tool(policy: Policy, journalctl: str | None = None) -> Tool:
    """The query_logs tool on `policy`'s services. `journalctl` replaces the binary found on the
    system PATH (tests point it at a fake); leave it None in production."""
    readers = readers_for(policy, journalctl)

    def run(args: QueryLogsArgs, principal: Principal | None) -> ToolResult:
        service = policy.services.get(args.service)
        if service is None:
            return ToolResult.unknown("service", args.service, policy.services)
        if not service.access.allows(principal):
            return ToolResult.failure(
                ErrorType.denied,
                f"you may not read the logs of {args.service}",
                hint="tell the user who may read them; do not try other ways to get these logs",
            )
        return query_logs(args, service, principal, readers)

    return Tool(
        name="query_logs",
        description=(
            "Newest log lines of one service (newest last), with counts. Filters combine: minimum level, "
            "since/until (relative like 15m, 2h, 1d, or ISO-8601), a case-insensitive substring, a regex "
            "searched within each line. Large logs are scanned from the end within caps; the summary "
            "says when a count is only a lower bound."
        ),
        args_model=QueryLogsArgs,
        run=run,  # type: ignore[arg-type]
        timeout_s=_tool_timeout(policy),
    )


def _tool_timeout(policy: Policy) -> float | None:
    """How long the executor waits: None (its own timeout) for files only; with processes, the
    sum of every source's own cap, since each source stops itself."""
    services = policy.services.values()
    commands = [policy.commands[s.log_command] for s in services if s.log_command in policy.commands]
    if not commands and not any(s.journald for s in services):
        return None
    slowest = max((c.timeout_s for c in commands), default=0.0)
    return SCAN_SECONDS + JOURNAL_TIMEOUT_S + slowest + 2 * _REAP_GRACE_S


@dataclass
class _Part:
    """What one source gave: its scan, and how to say what was read."""

    scan: _Scan
    read: str  # "1.2 MB of 2 files", "14 KB of the journal of nginx.service"
    notes: list[str]
    source: str  # "files", "journald: nginx.service", "command: pod-logs"


def query_logs(
    args: QueryLogsArgs, service: Service, principal: Principal | None = None, readers: Readers | None = None
) -> ToolResult:
    """The query on `service`'s sources; every problem is a result, nothing raises."""
    filters = _filters(args, service.zone(), time.time())
    if isinstance(filters, ToolResult):
        return filters
    if readers is None:
        readers = Readers(journalctl=which("journalctl") if service.journald else None)
    parts: list[_Part] = []
    failures: list[ToolResult] = []
    try:
        for source in _sources(args, service, filters, principal, readers):
            if isinstance(source, ToolResult):
                failures.append(source)
            else:
                parts.append(source)
    except _RegexTooSlow:
        return _regex_too_slow()
    if not parts:
        return _failed(failures)
    for failure in failures:
        assert failure.error is not None
        parts[0].notes.append(failure.error.message)
    # Services with files only keep the result they always had; the others also say their sources.
    only_files = not (service.journald or service.log_command)
    return _result(args.service, parts, filters, args.limit, with_sources=not only_files)


def _sources(
    args: QueryLogsArgs, service: Service, f: _Filters, principal: Principal | None, readers: Readers
) -> Iterator[_Part | ToolResult]:
    if service.logs:
        yield _query_files(args.service, service, f, args.limit)
    if service.journald:
        yield _query_journal(args, service.journald, f, readers.journalctl)
    if service.log_command:
        yield _query_command(args, service.log_command, f, principal, readers)


def _failed(failures: list[ToolResult]) -> ToolResult:
    """The one failure, or all of them as one: `timeout` only if every source timed out."""
    if len(failures) == 1:
        return failures[0]
    errors = [r.error for r in failures if r.error is not None]
    every_timeout = all(e.type is ErrorType.timeout for e in errors)
    return ToolResult.failure(
        ErrorType.timeout if every_timeout else ErrorType.unavailable,
        "no log source answered: " + "; ".join(e.message for e in errors),
        hint=errors[0].hint if errors else "",
    )


def _query_files(name: str, service: Service, filters: _Filters, limit: int) -> _Part | ToolResult:
    files, missing = log_files(service.logs)
    if not files:
        return _unavailable(name, missing, [])
    scan = _Scan(filters, limit)
    _scan_files(files, scan)
    if not scan.read:
        return _unavailable(name, missing, scan.notes)
    read = f"{_mb(scan.scanned)} of {_plural(len(scan.read), 'file')}"
    return _Part(scan, read, missing + scan.notes, "files")


def _unavailable(service: str, missing: list[str], problems: list[str]) -> ToolResult:
    what = "; ".join(missing + problems)
    return ToolResult.failure(
        ErrorType.unavailable,
        f"no log file of {service} can be read: {what}",
        hint="the service may not have logged yet, or its logs are elsewhere; tell the user which file is missing",
    )


def _regex_too_slow() -> ToolResult:
    return ToolResult.failure(
        ErrorType.timeout,
        f"the regex took more than {REGEX_SEARCH_SECONDS:g} s on a single search and was stopped",
        hint="it backtracks too much on these lines: use a simpler pattern (no overlapping alternatives "
        "such as (a|aa)+, no nested or adjacent repetitions), or use contains",
    )


# ---------------------------------------------------------------- filters


@dataclass(frozen=True)
class _Filters:
    min_rank: int | None
    needle: str | None  # lower-cased
    tokens: tuple[str, ...]  # lower-case words one of which every matching line holds
    pattern: Any  # a compiled `regex` pattern, or None
    whole_block_regex: bool  # the pattern finds the same lines when run over a block as over each line
    since: float | None
    until: float | None
    zone: tzinfo | None
    now: float
    year: int  # this year where the service is: syslog timestamps leave it out
    deadline: float

    @property
    def content(self) -> bool:
        return self.min_rank is not None or self.needle is not None or self.pattern is not None

    @property
    def timed(self) -> bool:
        return self.since is not None or self.until is not None

    def in_range(self, when: float) -> bool:
        return (self.since is None or when >= self.since) and (self.until is None or when <= self.until)


def _filters(args: QueryLogsArgs, zone: tzinfo | None, now: float) -> _Filters | ToolResult:
    since = _time_arg("since", args.since, zone, now)
    if isinstance(since, ToolResult):
        return since
    until = _time_arg("until", args.until, zone, now)
    if isinstance(until, ToolResult):
        return until
    if since is not None and until is not None and since > until:
        return ToolResult.failure(
            ErrorType.invalid_args,
            f"since ({args.since}) is later than until ({args.until})",
            hint="since is the older end of the range, until the newer one",
        )
    pattern = _compile(args.regex) if args.regex else None
    if isinstance(pattern, ToolResult):
        return pattern
    min_rank = LEVELS.index(args.level) if args.level else None
    needle = args.contains.lower() if args.contains else None
    return _Filters(
        min_rank=min_rank,
        needle=needle,
        # The substring is usually the rarer: fewer lines to check one by one, one search, not seven.
        tokens=(needle,) if needle else _level_tokens(min_rank) if min_rank is not None else (),
        pattern=pattern,
        whole_block_regex=args.regex is not None and not _shape(args.regex).lookaround,
        since=since,
        until=until,
        zone=zone,
        now=now,
        year=datetime.fromtimestamp(now, zone).year,
        deadline=time.monotonic() + SCAN_SECONDS,
    )


# ---------------------------------------------------------------- time

_RELATIVE = re.compile(
    r"(\d+(?:\.\d+)?)\s*(s|secs?|seconds?|m|mins?|minutes?|h|hrs?|hours?|d|days?|w|weeks?)(?:\s+ago)?", re.I
)
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_MONTHS = {m: i for i, m in enumerate("Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split(), 1)}
# A timestamp at the start of a line, optionally bracketed or behind a ts=/time=/"@timestamp": key.
_STAMP = re.compile(
    r'[\[{]?(?:"?(?:@?timestamp|time|ts)"?\s*[=:]\s*"?)?'
    r"(?:(?P<iso>\d{4}[-/]\d\d[-/]\d\d[T ]\d\d:\d\d(?::\d\d(?:[.,]\d{1,9})?)?(?:Z|[+-]\d\d(?::?\d\d)?)?)"
    r"|(?P<mon>Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) {1,2}(?P<day>\d{1,2}) "
    r"(?P<h>\d\d):(?P<m>\d\d):(?P<s>\d\d))"
)


def _time_arg(name: str, text: str | None, zone: tzinfo | None, now: float) -> float | None | ToolResult:
    if text is None or not text.strip():
        return None
    when = _parse_time(text.strip(), zone, now)
    if when is None:
        return ToolResult.failure(ErrorType.invalid_args, f"{name} {text!r} is not a time I understand", hint=TIME_HINT)
    return when


def _parse_time(text: str, zone: tzinfo | None, now: float) -> float | None:
    """Epoch seconds of a relative age (`15m`, `2h ago`), `now`, or an ISO-8601 date or time."""
    relative = _RELATIVE.fullmatch(text)
    if relative:
        return now - float(relative[1]) * _UNIT_SECONDS[relative[2][0].lower()]
    if text.lower() == "now":
        return now
    try:
        return _epoch(datetime.fromisoformat(text.upper().replace("/", "-")), zone)
    except (ValueError, OverflowError, OSError):  # not ISO-8601, or a year no clock can hold
        return None


def _epoch(moment: datetime, zone: tzinfo | None) -> float:
    if moment.tzinfo is None and zone is not None:
        moment = moment.replace(tzinfo=zone)
    # A naive datetime's timestamp() is local time, DST included: what syslog writes.
    return moment.timestamp()


def _stamp_at(text: str, pos: int, f: _Filters) -> float | None:
    found = _STAMP.match(text, pos)
    if found is None:
        return None
    try:
        if found["iso"]:
            return _epoch(datetime.fromisoformat(found["iso"].replace("/", "-")), f.zone)
        return _syslog_epoch(found, f)
    except (ValueError, OverflowError, OSError):  # 2026-13-45 and the like: looks like a time, is not one
        return None


def _syslog_epoch(found: re.Match[str], f: _Filters) -> float:
    # Syslog has no year: the current one, unless that puts the line in the future (a December
    # line read in January).
    year = f.year
    parts = (_MONTHS[found["mon"]], int(found["day"]), int(found["h"]), int(found["m"]), int(found["s"]))
    when = _epoch(datetime(year, *parts), f.zone)
    return when if when <= f.now + 2 * 86400 else _epoch(datetime(year - 1, *parts), f.zone)


class _Verdict(Enum):
    inside = "every line is in the time range"
    newer = "every line is after until"
    older = "every line is before since"
    edge = "lines must be judged one by one"
    untimed = "no line has a timestamp"


def _judge(text: str, f: _Filters) -> tuple[_Verdict, float]:
    """Where a block lies against since/until, by its first and last timestamps.

    Logs are written in time order, so a block whose ends are both inside the range is inside
    whole; lines before the block's first timestamp (the tail of a stack trace) go with it.
    """
    if not f.timed:
        return _Verdict.inside, 0.0
    first = _first_stamp(text, f)
    if first is None:
        return _Verdict.untimed, 0.0
    last = _time_of(text, text.rfind("\n") + 1, f, fallback=first)
    if f.since is not None and last < f.since:
        return _Verdict.older, first
    if f.until is not None and first > f.until:
        return _Verdict.newer, first
    if (f.since is None or first >= f.since) and (f.until is None or last <= f.until):
        return _Verdict.inside, first
    return _Verdict.edge, first


def _first_stamp(text: str, f: _Filters) -> float | None:
    pos = 0
    for _ in range(STAMP_PROBE_LINES):
        when = _stamp_at(text, pos, f)
        if when is not None:
            return when
        pos = text.find("\n", pos) + 1
        if pos == 0:
            return None
    return None


def _time_of(text: str, start: int, f: _Filters, fallback: float) -> float:
    """The time of the line starting at `start`: its own, or that of the nearest timed line
    above it (a stack trace belongs to the entry that logged it)."""
    pos = start
    for _ in range(STAMP_PROBE_LINES):
        when = _stamp_at(text, pos, f)
        if when is not None:
            return when
        if pos == 0:
            break
        pos = text.rfind("\n", 0, pos - 1) + 1
    return fallback


# ---------------------------------------------------------------- levels

_LEVEL_RANKS = {
    "trace": 0, "debug": 0, "info": 1, "notice": 1, "warn": 2, "warning": 2,
    "err": 3, "error": 3, "crit": 3, "critical": 3, "fatal": 3, "alert": 3,
    "emerg": 3, "emergency": 3, "panic": 3, "severe": 3,
}  # fmt: skip
# A level word standing on its own: "ERROR", "[warn]", "level=error", "<crit>", "error:".
_LEVEL_WORD = re.compile(
    r"(?<![^\s\[<(=:\"'|])(" + "|".join(sorted(_LEVEL_RANKS, key=len, reverse=True)) + r")(?![^\s\]>):\"',;|])",
    re.IGNORECASE,
)


def _level_rank(line: str) -> int | None:
    """The rank of the line's first level word (0 DEBUG ... 3 ERROR), looked for near its start."""
    found = _LEVEL_WORD.search(line, 0, LEVEL_HEAD_CHARS)
    return _LEVEL_RANKS[found[1].lower()] if found else None


def _level_tokens(min_rank: int) -> tuple[str, ...]:
    """Substrings one of which every line of at least `min_rank` holds, in lower case: "err"
    stands for "error" too, so a block is searched once per stem, not once per word."""
    words = sorted(w for w, rank in _LEVEL_RANKS.items() if rank >= min_rank)
    return tuple(w for w in words if not any(o != w and o in w for o in words))


# ---------------------------------------------------------------- regex safety


@dataclass(frozen=True)
class _Shape:
    nested: bool  # a repeated group holding an unbounded repetition: (a+)+, (\w+\s?)*
    string_anchor: bool  # \A, \Z, \z
    lookaround: bool


_BRACES = re.compile(r"\{(\d*)(,?)(\d*)\}")


def _compile(pattern: str) -> Any:
    """The compiled pattern, or `invalid_args` saying why it is refused."""
    shape = _shape(pattern)
    if shape.nested:
        return ToolResult.failure(
            ErrorType.invalid_args,
            f"regex {pattern!r} repeats a group that itself holds an unbounded repetition, like (a+)+; "
            "such patterns can take exponential time",
            hint="drop the inner or the outer repetition, e.g. (ab)+ or a+, or use contains",
        )
    if shape.string_anchor:
        return ToolResult.failure(
            ErrorType.invalid_args,
            "\\A, \\Z and \\z are not supported: the regex is searched within each line",
            hint="use ^ and $, which match at the start and end of each line",
        )
    try:
        return regex.compile(pattern, regex.MULTILINE | regex.VERSION0)
    except regex.error as exc:
        return ToolResult.failure(
            ErrorType.invalid_args,
            f"regex {pattern!r} does not compile: {exc}",
            hint="use Python regular expression syntax, or contains for a plain substring",
        )


def _shape(pattern: str) -> _Shape:
    """What a pattern's syntax says about its cost and meaning, read without compiling it."""
    nested = anchor = look = False
    outer: list[bool] = []  # per open group: whether the enclosing group held an unbounded repetition
    unbounded = False  # whether the current group holds one so far
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            anchor |= pattern[i + 1 : i + 2] in ("A", "Z", "z")
            i += 2
        elif char == "[":
            i = _class_end(pattern, i)
        elif char == "(":
            outer.append(unbounded)
            unbounded = False
            i, kind = _group_body(pattern, i)
            look |= kind == "lookaround"
        elif char == ")":
            inner = unbounded
            unbounded = (outer.pop() if outer else False) or inner
            length, open_ended, repeats = _quantifier(pattern, i + 1)
            nested |= inner and repeats
            unbounded |= open_ended
            i += 1 + length
        else:
            length, open_ended, _ = _quantifier(pattern, i)
            unbounded |= open_ended
            i += max(length, 1)
    return _Shape(nested=nested, string_anchor=anchor, lookaround=look)


def _quantifier(pattern: str, i: int) -> tuple[int, bool, bool]:
    """(length, unbounded, repeats many times) of a quantifier at `i`; length 0 if there is none."""
    char = pattern[i : i + 1]
    if char in ("*", "+"):
        length, unbounded, repeats = 1, True, True
    elif char == "?":
        length, unbounded, repeats = 1, False, False
    elif char == "{" and (braces := _BRACES.match(pattern, i)) and (braces[1] or braces[3]):
        low, comma, high = braces.groups()
        unbounded = bool(comma) and not high
        # A bounded group repeated a few times, such as an IPv4 (\d+\.){3}, stays polynomial.
        repeats = unbounded or int(high or low) >= 10
        length = braces.end() - i
    else:
        return 0, False, False
    if pattern[i + length : i + length + 1] in ("?", "+"):  # lazy or possessive
        length += 1
    return length, unbounded, repeats


def _class_end(pattern: str, i: int) -> int:
    j = i + 1
    if pattern[j : j + 1] == "^":
        j += 1
    if pattern[j : j + 1] == "]":
        j += 1
    while j < len(pattern) and pattern[j] != "]":
        j += 2 if pattern[j] == "\\" else 1
    return j + 1


def _group_body(pattern: str, i: int) -> tuple[int, str]:
    """Where the body of the group opened at `i` starts, and what kind of group it is."""
    if pattern[i + 1 : i + 2] != "?":
        return i + 1, "group"
    rest = pattern[i + 2 :]
    for prefix in ("<=", "<!", "=", "!"):
        if rest.startswith(prefix):
            return i + 2 + len(prefix), "lookaround"
    if rest[:1] == "#" or rest[:2] in ("P=", "P>", "&"):
        close = pattern.find(")", i)
        return (close if close != -1 else len(pattern)), "reference"
    if rest[:2] == "P<" or (rest[:1] == "<" and rest[1:2] not in ("=", "!")):
        close = pattern.find(">", i)
        return (close + 1 if close != -1 else len(pattern)), "group"
    j = i + 2
    while j < len(pattern) and pattern[j] in "aiLmsuxVwbefrp0123456789-|":
        j += 1
    return (j + 1 if pattern[j : j + 1] in (":", ">") else j), "group"


# ---------------------------------------------------------------- files


@dataclass(frozen=True)
class LogFile:
    path: Path
    mtime: float
    size: int


# app.log.1, app.log.2.gz, app.log-20261128(.gz), app.log.2026-11-28_03-00 (Python's timed handler)
_ROTATION = re.compile(r"(?:\.(\d{1,4})|[.-](\d{4}-?\d\d-?\d\d(?:[-_T.]?\d\d(?:[-:.]?\d\d){0,2})?))?(\.gz)?")


def log_files(entries: Iterable[Path]) -> tuple[list[LogFile], list[str]]:
    """The regular files a service's `logs` entries name, each with its rotated siblings, newest
    data first; and what is wrong with each entry that names none."""
    found: dict[tuple[int, int], LogFile] = {}
    missing: list[str] = []
    for entry in entries:
        files = [file for file in map(_regular_file, _expand(entry)) if file is not None]
        if not files:
            what = "matches no file" if _has_magic(str(entry)) else "is not a regular file" if entry.exists() else ""
            missing.append(f"{entry} {what or 'does not exist'}")
        for file in files:
            found.setdefault(file[0], file[1])
    return _newest_first(list(found.values())), missing


def _regular_file(path: Path) -> tuple[tuple[int, int], LogFile] | None:
    """The file keyed by inode (a glob and a rotation may name it twice); None unless regular,
    since opening a FIFO would block."""
    try:
        info = path.stat()
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode):
        return None
    return (info.st_dev, info.st_ino), LogFile(path, info.st_mtime, info.st_size)


def _has_magic(text: str) -> bool:
    return any(char in text for char in "*?[")


def _expand(entry: Path) -> list[Path]:
    bases = [Path(p) for p in sorted(glob.glob(str(entry)))] if _has_magic(str(entry)) else [entry]
    return [rotated for base in bases for rotated in _with_rotations(base)]


def _with_rotations(base: Path) -> list[Path]:
    """`base` (if it exists) and the files beside it that rotating it made."""
    try:
        names = os.listdir(base.parent)
    except OSError:
        return []
    return [
        base.parent / name
        for name in names
        if name.startswith(base.name) and _ROTATION.fullmatch(name, len(base.name)) is not None
    ]


def _rotation_rank(path: Path) -> tuple[str, tuple[int, int]]:
    """(family, rank): files of one family sort newest first by rank (app.log, .1, .2.gz ...)."""
    for cut in range(len(path.name)):
        found = _ROTATION.fullmatch(path.name, cut) if cut else None
        if found is not None and found.group(0):
            number, date = found[1], found[2]
            if number is not None:
                return path.name[:cut], (1, int(number))
            if date is not None:
                return path.name[:cut], (1, -int(re.sub(r"\D", "", date)))
            return path.name[:cut], (1, 0)
    return path.name, (0, 0)


def _newest_first(files: list[LogFile]) -> list[LogFile]:
    """Newest data first: by modification time, except that within a rotation family the
    rotation number wins (a touched app.log.3 is still older than app.log.1)."""
    families: dict[tuple[Path, str], list[tuple[tuple[int, int], LogFile]]] = {}
    for file in files:
        family, rank = _rotation_rank(file.path)
        families.setdefault((file.path.parent, family), []).append((rank, file))
    keyed: list[tuple[float, tuple[int, int], str, LogFile]] = []
    for members in families.values():
        newest = float("inf")
        for rank, file in sorted(members, key=lambda m: m[0]):
            newest = min(newest, file.mtime)
            keyed.append((-newest, rank, str(file.path), file))
    return [file for *_, file in sorted(keyed, key=lambda k: k[:3])]


# ---------------------------------------------------------------- reading


class _Stream(Protocol):
    def read1(self, size: int = -1, /) -> bytes: ...


def _decode(data: bytes) -> str:
    text = data.decode("utf-8", errors="replace")
    return text.replace("\r\n", "\n") if "\r" in text else text


def _backwards(handle: IO[bytes], end: int) -> Iterator[tuple[str, int]]:
    """Blocks of whole lines from `end` towards the start, newest first, with the bytes read for each."""
    position, carry, unreported = end, b"", 0
    while position > 0:
        size = min(BLOCK_BYTES, position)
        position -= size
        handle.seek(position)
        data = handle.read(size) + carry
        unreported += size
        if position > 0:
            cut = data.find(b"\n")
            if cut == -1 and len(data) < LONG_LINE_BYTES:
                carry = data
                continue
            carry, data = (data[:cut], data[cut + 1 :]) if cut != -1 else (b"", data)
        else:
            carry = b""
        if data.endswith(b"\n"):
            data = data[:-1]
        yield _decode(data), unreported
        unreported = 0


_DAMAGE = (EOFError, gzip.BadGzipFile, zlib.error)


def _forwards(stream: _Stream) -> Iterator[tuple[str, int]]:
    """Blocks of whole lines from the start, oldest first, with the bytes read for each. A
    damaged stream (a .gz cut short) yields what came before the damage, then raises."""
    carry, unreported, damage = b"", 0, None
    while damage is None:
        block, damage = _read_block(stream)
        if not block:
            break
        data = carry + block
        unreported += len(block)
        cut = data.rfind(b"\n")
        if cut == -1 and len(data) < LONG_LINE_BYTES:
            carry = data
            continue
        carry, data = (data[cut + 1 :], data[:cut]) if cut != -1 else (b"", data)
        yield _decode(data), unreported
        unreported = 0
    if carry or unreported:
        yield _decode(carry), unreported
    if damage is not None:
        raise damage


def _read_block(stream: _Stream) -> tuple[bytes, Exception | None]:
    # read1 a piece at a time: read(n) drops everything it had decompressed when it hits damage.
    pieces: list[bytes] = []
    size = 0
    try:
        while size < BLOCK_BYTES and (piece := stream.read1(BLOCK_BYTES - size)):
            pieces.append(piece)
            size += len(piece)
    except _DAMAGE as exc:
        return b"".join(pieces), exc
    return b"".join(pieces), None


def _end_before(handle: IO[bytes], size: int, f: _Filters) -> int:
    """An offset after which every line is later than `until`, found by bisection on the
    timestamps (about 20 small reads for a gigabyte) instead of reading all the newer lines."""
    assert f.until is not None
    low, high = 0, size
    while high - low > BLOCK_BYTES:
        found = _stamp_after(handle, (low + high) // 2, f)
        if found is None or found[0] >= high:
            break
        offset, when = found
        if when > f.until:
            high = offset
        else:
            low = offset + 1
    return high


def _stamp_after(handle: IO[bytes], at: int, f: _Filters) -> tuple[int, float] | None:
    """The offset and time of the first timed line starting after `at`."""
    handle.seek(at)
    data = handle.read(64 * 1024)
    offset = data.find(b"\n") + 1
    while 0 < offset < len(data):
        end = data.find(b"\n", offset)
        if end == -1:
            return None
        when = _stamp_at(data[offset : min(end, offset + 80)].decode("utf-8", errors="replace"), 0, f)
        if when is not None:
            return at + offset, when
        offset = end + 1
    return None


# ---------------------------------------------------------------- matching


def _match_block(text: str, f: _Filters, need: int, judged: tuple[_Verdict, float]) -> tuple[int, list[str], int]:
    """(matches, the newest `need` of them oldest first, matches without a time) in one block."""
    verdict, first = judged
    if verdict in (_Verdict.newer, _Verdict.older):
        return 0, [], 0
    if not f.content and verdict is _Verdict.inside:
        return _tail(text, need)
    if not f.content and verdict is _Verdict.untimed:
        return 0, [], text.count("\n") + 1
    kept: deque[str] = deque(maxlen=need)
    count = untimed = 0
    for start, end in _candidates(text, f):
        line = text[start:end]
        if not line or not _content_matches(line, f):
            continue
        if verdict is _Verdict.untimed:
            untimed += 1
            continue
        if verdict is _Verdict.edge and not f.in_range(_time_of(text, start, f, fallback=first)):
            continue
        count += 1
        kept.append(line)
    return count, list(kept), untimed


def _tail(text: str, need: int) -> tuple[int, list[str], int]:
    """Every line matches: count them at C speed and split off only the newest."""
    if not text:
        return 0, [], 0
    lines = text.rsplit("\n", need)[-need:] if need else []
    return text.count("\n") + 1, [line for line in lines if line], 0


def _content_matches(line: str, f: _Filters) -> bool:
    if f.min_rank is not None:
        rank = _level_rank(line)
        if rank is None or rank < f.min_rank:
            return False
    if f.needle is not None and f.needle not in line.lower():
        return False
    return f.pattern is None or _search(f, line, 0) is not None


class _RegexTooSlow(Exception):
    pass


def _search(f: _Filters, text: str, position: int) -> Any:
    try:
        return f.pattern.search(text, position, timeout=REGEX_SEARCH_SECONDS)
    except TimeoutError as exc:  # an OSError subclass: must not pass for a file that cannot be read
        raise _RegexTooSlow from exc


def _candidates(text: str, f: _Filters) -> Iterable[tuple[int, int]]:
    """Spans of the lines that may match, oldest first, found by searching the whole block."""
    if f.tokens:
        lowered = text.lower()
        # lower() lengthens a few characters (İ); then offsets would not line up.
        if len(lowered) == len(text):
            return _lines_holding(text, lowered, f.tokens)
    elif f.pattern is not None and f.whole_block_regex:
        return _lines_matching(text, f)
    return _all_lines(text)


def _line_around(text: str, at: int) -> tuple[int, int]:
    end = text.find("\n", at)
    return text.rfind("\n", 0, at) + 1, (len(text) if end == -1 else end)


def _lines_holding(text: str, lowered: str, tokens: tuple[str, ...]) -> list[tuple[int, int]]:
    spans: dict[int, int] = {}
    for token in tokens:
        at = lowered.find(token)
        while at != -1:
            start, end = _line_around(text, at)
            spans[start] = end
            at = lowered.find(token, end)
    return sorted(spans.items())


def _lines_matching(text: str, f: _Filters) -> Iterator[tuple[int, int]]:
    # Searched with MULTILINE, so ^ and $ are line ends: every line that matches alone holds a
    # match found here, and each such line is checked again alone.
    position = 0
    while position <= len(text):
        found = _search(f, text, position)
        if found is None:
            return
        start, end = _line_around(text, found.start())
        yield start, end
        position = end + 1


def _all_lines(text: str) -> Iterator[tuple[int, int]]:
    start = 0
    while start <= len(text):
        end = text.find("\n", start)
        end = len(text) if end == -1 else end
        yield start, end
        start = end + 1


# ---------------------------------------------------------------- the scan


@dataclass
class _Scan:
    f: _Filters
    limit: int
    newest_first: list[str] = field(default_factory=list)
    matches: int = 0
    untimed: int = 0
    scanned: int = 0
    read: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    stopped: str | None = None  # the cap that ended the scan while there was more to read
    past_since: bool = False  # older data is all before `since`: nothing more to read

    @property
    def need(self) -> int:
        return self.limit - len(self.newest_first)

    def add(self, count: int, oldest_first: list[str], untimed: int) -> None:
        self.matches += count
        self.untimed += untimed
        if self.need > 0:
            self.newest_first.extend(reversed(oldest_first[-self.need :]))

    def may_go_on(self) -> bool:
        """False once a cap ends the scan; called only when there is more to read, so a cap
        hit by the last block does not make a complete count look partial."""
        if self.stopped is None:
            if self.scanned >= MAX_SCAN_BYTES:
                self.stopped = f"it read its cap of {_mb(MAX_SCAN_BYTES)}"
            elif self.need <= 0 and self.scanned >= COUNT_SCAN_BYTES:
                self.stopped = f"the {self.limit} lines asked for were found within the newest {_mb(self.scanned)}"
            elif self.untimed >= self.limit and self.scanned >= COUNT_SCAN_BYTES:
                self.stopped = f"{self.untimed:,} lines without a time had been found in the newest {_mb(self.scanned)}"
            elif time.monotonic() > self.f.deadline:
                self.stopped = f"it ran for its cap of {SCAN_SECONDS:g} s"
        return self.stopped is None


def _scan_files(files: list[LogFile], scan: _Scan) -> None:
    for file in files:
        if scan.past_since or not scan.may_go_on():
            return
        if scan.f.since is not None and file.mtime < scan.f.since:
            scan.past_since = True  # not written to since then, nor is anything older
            return
        try:
            if file.path.name.endswith(".gz"):
                _scan_gz(file, scan)
            else:
                _scan_plain(file, scan)
        except OSError as exc:
            scan.notes.append(f"{file.path} could not be read: {exc.strerror or exc}")


def _scan_plain(file: LogFile, scan: _Scan) -> None:
    with open(file.path, "rb") as handle:
        end = handle.seek(0, os.SEEK_END)
        if scan.f.until is not None and file.mtime > scan.f.until and end > 2 * BLOCK_BYTES:
            end = _end_before(handle, end, scan.f)
        scan.read.append(str(file.path))
        for index, (text, size) in enumerate(_backwards(handle, end)):
            if index and not scan.may_go_on():
                return
            scan.scanned += size
            judged = _judge(text, scan.f)
            if judged[0] is _Verdict.older:
                scan.past_since = True
                return
            scan.add(*_match_block(text, scan.f, max(scan.need, 0), judged))


def _scan_gz(file: LogFile, scan: _Scan) -> None:
    """A .gz file from its start: the newest `need` matches are kept as they stream by."""
    kept: deque[str] = deque(maxlen=max(scan.need, 0))
    count = untimed = 0
    with gzip.open(file.path, "rb") as stream:
        scan.read.append(str(file.path))
        try:
            for index, (text, size) in enumerate(_forwards(stream)):
                # Enough lines in `kept` is no reason to stop: the newest of this file come last.
                if index and not scan.may_go_on():
                    scan.notes.append(
                        f"only the first {_mb(stream.tell())} of {file.path.name} (uncompressed) was read"
                    )
                    break
                scan.scanned += size
                judged = _judge(text, scan.f)
                if judged[0] is _Verdict.newer:
                    break
                scan.past_since |= judged[0] is _Verdict.older
                found, lines, no_time = _match_block(text, scan.f, kept.maxlen or 0, judged)
                count, untimed = count + found, untimed + no_time
                kept.extend(lines)
        except _DAMAGE as exc:
            scan.notes.append(f"{file.path.name} is damaged ({exc}); read up to the damage")
    scan.add(count, list(kept), untimed)


# ---------------------------------------------------------------- the result


def _mb(size: int) -> str:
    return f"{size / MIB:.1f} MB" if size >= MIB // 10 else f"{(size + 1023) // 1024} KB"


def _result(service: str, parts: list[_Part], f: _Filters, limit: int, with_sources: bool) -> ToolResult:
    scan = parts[0].scan if len(parts) == 1 else _merged(parts, f, limit)
    lines = _within_bytes([_shorten(line) for line in reversed(scan.newest_first)], OUTPUT_BYTES)
    notes = [note for part in parts for note in part.notes]
    if len(lines) < len(scan.newest_first):
        notes.append(f"older lines were left out to stay within {OUTPUT_BYTES:,} bytes")
    if any(len(line) > MAX_LINE_CHARS for line in scan.newest_first):
        notes.append(f"lines longer than {MAX_LINE_CHARS:,} characters were cut")
    if scan.untimed:
        notes.append(
            f"{scan.untimed:,} matching line(s) had no time I could read and were left out by since/until "
            f"(understood at line starts: {TIME_FORMATS}); ask without since/until to see them"
        )
    data: dict[str, Any] = {
        "service": service,
        "summary": _summary(scan, len(lines), ", ".join(part.read for part in parts)),
        "matches": scan.matches,
        "complete": scan.stopped is None,
        "shown": len(lines),
        "lines": "\n".join(lines),
        "files": [path for part in parts for path in part.scan.read],
    }
    if with_sources:
        data["sources"] = [part.source for part in parts]
    if notes:
        data["notes"] = notes
    return ToolResult.success(data)


def _merged(parts: list[_Part], f: _Filters, limit: int) -> _Scan:
    """One scan of several sources: counts added up, lines merged by time, the newest `limit` kept."""
    merged = _Scan(f, limit)
    keyed: list[tuple[float, int, int, str]] = []
    for index, part in enumerate(parts):
        merged.matches += part.scan.matches
        merged.untimed += part.scan.untimed
        merged.scanned += part.scan.scanned
        when = -math.inf  # an untimed line keeps the time of the line before it
        for seq, line in enumerate(reversed(part.scan.newest_first)):
            stamp = _stamp_at(line, 0, f)
            when = when if stamp is None else stamp
            keyed.append((when, index, seq, line))
    keyed.sort(key=lambda k: k[:3])
    merged.newest_first = [line for *_, line in reversed(keyed[-limit:])]
    stopped = [part.scan.stopped for part in parts if part.scan.stopped]
    merged.stopped = " and ".join(stopped) if stopped else None
    return merged


def _summary(scan: _Scan, shown: int, read: str) -> str:
    """E.g. "37 matching lines, showing the last 20 (newest last); read 1.2 MB of 2 files"."""
    parts = [f"{'at least ' if scan.stopped else ''}{_plural(scan.matches, 'matching line')}"]
    if scan.matches == 0:
        parts = ["no matching lines"]
    if shown:
        parts.append(f", showing the last {shown} (newest last)" if shown < scan.matches else " (newest last)")
    parts.append(f"; read {read}")
    if scan.stopped:
        parts.append(f"; the scan stopped early because {scan.stopped}: narrow with since/until to count further")
    return "".join(parts)


def _plural(count: int, noun: str) -> str:
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def _shorten(line: str) -> str:
    if len(line) <= MAX_LINE_CHARS:
        return line
    return f"{line[:MAX_LINE_CHARS]} …[{len(line) - MAX_LINE_CHARS:,} more characters]"


def _within_bytes(lines: list[str], budget: int) -> list[str]:
    """The newest lines whose text fits `budget` bytes (the oldest give way)."""
    total, keep = 0, 0
    for line in reversed(lines):
        total += len(line.encode()) + 1
        if total > budget:
            break
        keep += 1
    return lines[len(lines) - keep :]


# ---------------------------------------------------------------- journald and log commands


def journal_argv(journalctl: str, units: Iterable[str], level: str | None, f: _Filters) -> list[str]:
    """The one journalctl run of a query: newest entries first, journald's own filters first."""
    argv = [journalctl, "--no-pager", "--quiet", "--output=short-iso-precise", "--reverse"]
    argv.append(f"--lines={JOURNAL_ENTRIES}")
    argv += [f"--unit={unit}" for unit in units]
    if f.since is not None:
        argv.append(f"--since=@{math.floor(f.since)}")
    if f.until is not None:
        argv.append(f"--until=@{math.ceil(f.until)}")
    if level is not None:
        argv.append(f"--priority={_PRIORITIES[level]}")
    return argv


def _query_journal(args: QueryLogsArgs, units: list[str], f: _Filters, journalctl: str | None) -> _Part | ToolResult:
    what = f"the journal of {', '.join(units)}"
    if journalctl is None:
        return ToolResult.failure(
            ErrorType.unavailable,
            f"journalctl is not installed on the opsbot host (looked for on {SYSTEM_PATH}), so {what} cannot be read",
            hint="tell the user; the service's other log sources, if any, may still be read",
        )
    argv = journal_argv(journalctl, units, args.level, f)
    done = run(argv, Sandbox(timeout_s=JOURNAL_TIMEOUT_S, max_output_bytes=JOURNAL_OUTPUT_BYTES, keep="head"))
    failure = _run_failure(done, f"journalctl, reading {what},")
    if failure is not None:
        return failure
    lines = done.output.split("\n")
    if done.cut or lines[-1] == "":
        lines.pop()  # a line cut by the cap, or the empty string after the last newline
    entries = _entries(lines)
    # The level was journald's priority; level words in the text mean nothing more here.
    filters = dataclasses.replace(f, min_rank=None, tokens=(f.needle,) if f.needle else ())
    scan = _Scan(filters, args.limit)
    _scan_text("\n".join(line for entry in reversed(entries) for line in entry), done.output_bytes, scan)
    if done.cut:
        scan.stopped = f"journalctl's output reached its cap of {_mb(JOURNAL_OUTPUT_BYTES)}"
    elif len(entries) >= JOURNAL_ENTRIES:
        scan.stopped = f"journalctl returned its cap of {JOURNAL_ENTRIES:,} entries"
    return _Part(scan, f"{_mb(done.output_bytes)} of {what}", [], f"journald: {', '.join(units)}")


def _entries(newest_first: list[str]) -> list[list[str]]:
    """Journal entries, newest first, each its lines in order: a line starting with white space
    continues the entry above it (a multi-line message); "-- Boot ... --" markers are dropped."""
    entries: list[list[str]] = []
    for line in newest_first:
        if line.startswith("-- ") and line.endswith(" --"):
            continue
        if line[:1].isspace() and entries:
            entries[-1].append(line)
        elif line:
            entries.append([line])
    return entries


def _query_command(
    args: QueryLogsArgs, name: str, f: _Filters, principal: Principal | None, readers: Readers
) -> _Part | ToolResult:
    if name in readers.broken or readers.commands is None:
        problem = readers.broken.get(name, f"log_command {name!r} cannot be run")
        return ToolResult.failure(
            ErrorType.unavailable,
            f"the logs of {args.service} cannot be read with a command: {problem}",
            hint="tell the user the opsbot policy needs fixing; the service's other log sources may still be read",
        )
    spec = readers.commands.commands[name]
    params = _filled_params(spec, f)
    prepared = readers.commands.prepare(name, params, principal)
    if isinstance(prepared, ToolResult):
        if prepared.error is not None and prepared.error.type is ErrorType.invalid_args:
            return ToolResult.failure(
                ErrorType.unavailable,
                f"log_command {name!r} refused the values query_logs filled in: {prepared.error.message}",
                hint="tell the user the command's parameters in the opsbot policy need fixing",
            )
        return prepared
    done = run(prepared.argv, dataclasses.replace(prepared.sandbox(), keep="tail"))
    failure = _run_failure(done, f"command {name!r}")
    if failure is not None:
        return failure
    lines = done.output.split("\n")
    if done.cut:
        lines.pop(0)  # cut in the middle by the cap
    if lines and lines[-1] == "":
        lines.pop()
    scan = _Scan(f, args.limit)
    _scan_text("\n".join(lines), done.output_bytes, scan)
    asked = params.get("lines")
    if done.cut:
        scan.stopped = f"the output of {name!r} reached its cap of {_mb(spec.max_output_bytes)}"
    elif asked is not None and len(lines) >= int(asked):
        scan.stopped = f"{name!r} returned the {int(asked):,} lines asked for"
    return _Part(scan, f"{_mb(done.output_bytes)} of the output of {name!r}", [], f"command: {name}")


def _filled_params(spec: Command, f: _Filters) -> dict[str, str | int]:
    """The values query_logs gives a log command: `since` and `lines`, when it declares them."""
    params: dict[str, str | int] = {}
    if "since" in spec.params and f.since is not None:
        # Rounded first: now - (now - 7200) is 7200.0000002 in floating point, not 7201 s.
        params["since"] = f"{max(1, math.ceil(round(f.now - f.since, 3)))}s"
    if "lines" in spec.params:
        top = spec.params["lines"].max
        params["lines"] = min(COMMAND_LINES, top) if top is not None else COMMAND_LINES
    return params


def _scan_text(text: str, size: int, scan: _Scan) -> None:
    """A whole output, oldest line first, through the matcher files go through."""
    scan.scanned += size
    if text:
        scan.add(*_match_block(text, scan.f, scan.limit, _judge(text, scan.f)))


def _run_failure(done: Completed, what: str) -> ToolResult | None:
    """`unavailable` when the program could not start or failed, `timeout` when it was killed."""
    if done.error is not None:
        return ToolResult.failure(
            ErrorType.unavailable, f"{what} could not run: {done.error}", hint="tell the user; do not retry"
        )
    if done.timed_out:
        return ToolResult.failure(
            ErrorType.timeout,
            f"{what} was still running after {done.duration_s:.1f}s (its timeout) and was killed",
            hint="narrow the query with since/until, or try later",
        )
    if done.exit_code != 0:
        return ToolResult.failure(
            ErrorType.unavailable,
            f"{what} failed (exit code {done.exit_code}): {_excerpt(done.output)}",
            hint="tell the user what it said; do not retry the same query",
        )
    return None


def _excerpt(output: str) -> str:
    """The last few lines a failing program printed (where its error usually is), short and redacted."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    text = " | ".join(lines[-3:]) or "(it printed nothing)"
    if len(text) > EXCERPT_CHARS:
        text = "…" + text[-EXCERPT_CHARS:]
    return redact_text(text)
