"""query_logs: the newest matching lines of a service's log files, read from the end.

A query runs over the service's files (globs and rotated siblings) newest data first. Plain files
are read backwards in blocks and .gz files are streamed forwards (gzip cannot be read backwards).
Each block is searched as a whole, at C speed, for lines that may match (a level word, the
substring, the regex); only those lines are checked one by one, so sparse matches in a huge file
cost little more than reading it. Time filters judge a block by its first and last timestamps, so
only blocks at the edges of the range are looked at line by line, and a plain file whose newest
lines are after `until` is bisected to where `until` is instead of being read down to it.

Every scan is capped in bytes read and wall time; a capped scan still answers and says that its
count is a lower bound. A regex refused for its shape (nested repetition, overlapping literal
alternatives under a repeat such as (a|aa)+) never runs. The query has one deadline (SCAN_SECONDS):
every regex search is boxed by min(REGEX_SEARCH_SECONDS, what is left) and the line loop checks it.
A single search past REGEX_SEARCH_SECONDS ends the query with a `timeout` result; running out of
the deadline answers with what was found ("at least"), or `timeout` (not retryable) if a regex
had found nothing yet.

Files: tools/log_files.py opens each file with O_NONBLOCK|O_CLOEXEC, and O_NOFOLLOW except for a
path written out in the policy (the operator's word; followed), then requires by fstat the
regular file that was listed. The module layout: log_time (since/until, timestamps), log_match
(filters, levels, regex), log_files (discovery, safe open, readers), log_scan (the scan and its
caps), log_sources (journald, log_command); this module holds the tool and the result.

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

import math
import time
from collections.abc import Iterator
from datetime import datetime, tzinfo
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from config.policy import Policy, Principal, Service
from config.policy import log_command_problem as log_command_problem
from tools.base import ErrorType, Tool, ToolResult
from tools.log_files import BLOCK_BYTES as BLOCK_BYTES
from tools.log_files import MIB as MIB
from tools.log_files import _backwards as _backwards
from tools.log_files import log_files as log_files
from tools.log_match import LEVELS as LEVELS
from tools.log_match import REGEX_SEARCH_SECONDS as REGEX_SEARCH_SECONDS
from tools.log_match import _compile, _Filters, _RegexTooSlow, _shape, prefilter_for
from tools.log_match import _level_rank as _level_rank
from tools.log_scan import COUNT_SCAN_BYTES as COUNT_SCAN_BYTES
from tools.log_scan import MAX_SCAN_BYTES as MAX_SCAN_BYTES
from tools.log_scan import SCAN_SECONDS as SCAN_SECONDS
from tools.log_scan import _mb, _Part, _plural, _Scan, _scan_files
from tools.log_sources import _REAP_GRACE_S, _query_command, _query_journal
from tools.log_sources import JOURNAL_ENTRIES as JOURNAL_ENTRIES
from tools.log_sources import JOURNAL_TIMEOUT_S as JOURNAL_TIMEOUT_S
from tools.log_sources import Readers as Readers
from tools.log_sources import readers_for as readers_for
from tools.log_time import TIME_FORMATS, _stamp_at, _time_arg
from tools.runner import which

OUTPUT_BYTES = 16_000
MAX_LINE_CHARS = 2_000

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
    if args.regex and any(p.scan.out_of_time for p in parts) and not any(p.scan.matches for p in parts):
        return _regex_out_of_time()
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
    if not scan.read and not scan.past_since:
        return _unavailable(name, missing, scan.notes)
    # Files untouched since `since` hold nothing newer: that is an answer (no lines), not a failure.
    read = f"{_mb(scan.scanned)} of {_plural(len(scan.read), 'file')}" if scan.read else "no file written since then"
    return _Part(scan, read, missing + scan.notes, "files")


def _unavailable(service: str, missing: list[str], problems: list[str]) -> ToolResult:
    what = "; ".join(missing + problems)
    return ToolResult.failure(
        ErrorType.unavailable,
        f"no log file of {service} can be read: {what}",
        hint="the service may not have logged yet, or its logs are elsewhere; tell the user which file is missing",
    )


_SIMPLER_REGEX = (
    "it backtracks too much on these lines: use a simpler pattern (no overlapping alternatives "
    "such as (a|aa)+, no nested or adjacent repetitions), or use contains"
)


def _regex_too_slow() -> ToolResult:
    return ToolResult.failure(
        ErrorType.timeout,
        f"the regex took more than {REGEX_SEARCH_SECONDS:g} s on a single search and was stopped",
        hint=_SIMPLER_REGEX,
    )


def _regex_out_of_time() -> ToolResult:
    return ToolResult.failure(
        ErrorType.timeout,
        f"the regex found no line before the query's {SCAN_SECONDS:g} s were up, and was stopped",
        hint=f"{_SIMPLER_REGEX}, or narrow with since/until",
    )


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
        prefilter=prefilter_for(needle, min_rank, args.regex),
        pattern=pattern,
        whole_block_regex=args.regex is not None and not _shape(args.regex).lookaround,
        since=since,
        until=until,
        zone=zone,
        now=now,
        year=datetime.fromtimestamp(now, zone).year,
        deadline=time.monotonic() + SCAN_SECONDS,
    )


# ---------------------------------------------------------------- the result


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
