"""query_logs: the tool, one query over a service's sources, and the result the model sees
(lines merged by time, newest `limit` kept, within OUTPUT_BYTES, counts and notes)."""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from datetime import datetime
from typing import Any, NamedTuple

from ...config.policy import Policy, Principal, Service
from ..base import ErrorType, Tool, ToolResult
from ..runner import which
from ..text import plural
from .args import QueryLogsArgs
from .files import log_files
from .filters import Filters
from .match import LEVELS, REGEX_SEARCH_SECONDS, RegexTooSlow, compile_regex, prefilter_for, shape_of
from .scan import (
    ENTRY_HEAD_LINES,
    ENTRY_TAIL_LINES,
    MAX_LINE_CHARS,
    SCAN_SECONDS,
    Part,
    Scan,
    mb,
    scan_files,
)
from .sources import JOURNAL_TIMEOUT_S, REAP_GRACE_S, Readers, query_command, query_journal, readers_for
from .stamps import declared, stamp_at, understood
from .time import time_arg

OUTPUT_BYTES = 16_000


def query_logs_tool(policy: Policy, journalctl: str | None = None) -> Tool[QueryLogsArgs]:
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
            "Newest log entries of one service (newest last), with counts; an entry is a line with the lines "
            "that continue it, such as its stack trace. Filters combine: minimum level, since/until "
            "(relative like 15m, 2h, 1d, or ISO-8601), a case-insensitive substring, a regex searched "
            "within each entry. Large logs are scanned from the end within caps; the summary says when a "
            "count is only a lower bound."
        ),
        args_model=QueryLogsArgs,
        run=run,
        timeout_s=_tool_timeout(policy),
        summarize=brief,
        show=show,
    )


def brief(data: dict[str, Any]) -> str:
    """The summary's count clause: "37 matching lines, showing the last 20" (_summary writes it first)."""
    return str(data["summary"]).split(";", 1)[0].replace(" (newest last)", "")


def show(data: dict[str, Any]) -> str:
    """The result for a person: the summary and its notes, then the lines (newest last). The
    service is the one they named; the counts are in the summary; where the lines were read is
    the policy's business (`--json` has it all)."""
    head = [str(data["summary"]), *(f"note: {note}" for note in data.get("notes", []))]
    return "\n".join([*head, data["lines"]] if data["lines"] else head)


def _tool_timeout(policy: Policy) -> float | None:
    """How long the executor waits: None (its own timeout) for files only; with processes, the
    sum of every source's own cap, since each source stops itself."""
    services = policy.services.values()
    commands = [policy.commands[s.log_command] for s in services if s.log_command in policy.commands]
    if not commands and not any(s.journald for s in services):
        return None
    slowest = max((c.timeout_s for c in commands), default=0.0)
    return SCAN_SECONDS + JOURNAL_TIMEOUT_S + slowest + 2 * REAP_GRACE_S


def query_logs(
    args: QueryLogsArgs, service: Service, principal: Principal | None = None, readers: Readers | None = None
) -> ToolResult:
    """The query on `service`'s sources; every problem is a result, nothing raises."""
    filters = _filters(args, service, time.time())
    if isinstance(filters, ToolResult):
        return filters
    if readers is None:
        readers = Readers(journalctl=which("journalctl") if service.journald else None)
    parts: list[Part] = []
    failures: list[ToolResult] = []
    try:
        for source in _sources(args, service, filters, principal, readers):
            if isinstance(source, ToolResult):
                failures.append(source)
            else:
                parts.append(source)
    except RegexTooSlow:
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
    args: QueryLogsArgs, service: Service, f: Filters, principal: Principal | None, readers: Readers
) -> Iterator[Part | ToolResult]:
    if service.logs:
        yield _query_files(args.service, service, f, args.limit)
    if service.journald:
        yield query_journal(args, service.journald, f, readers.journalctl)
    if service.log_command:
        yield query_command(args, service.log_command, f, principal, readers)


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


def _query_files(name: str, service: Service, filters: Filters, limit: int) -> Part | ToolResult:
    files, missing = log_files(service.logs)
    if not files:
        return _unavailable(name, missing, [])
    scan = Scan(filters, limit)
    scan_files(files, scan)
    if not scan.read and not scan.past_since:
        return _unavailable(name, missing, scan.notes)
    # Files untouched since `since` hold nothing newer: that is an answer (no lines), not a failure.
    read = f"{mb(scan.scanned)} of {plural(len(scan.read), 'file')}" if scan.read else "no file written since then"
    return Part(scan, read, missing + scan.notes, "files")


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


def _filters(args: QueryLogsArgs, service: Service, now: float) -> Filters | ToolResult:
    zone = service.zone()
    since = time_arg("since", args.since, zone, now)
    if isinstance(since, ToolResult):
        return since
    until = time_arg("until", args.until, zone, now)
    if isinstance(until, ToolResult):
        return until
    if since is not None and until is not None and since > until:
        return ToolResult.failure(
            ErrorType.invalid_args,
            f"since ({args.since}) is later than until ({args.until})",
            hint="since is the older end of the range, until the newer one",
        )
    pattern = compile_regex(args.regex) if args.regex else None
    if isinstance(pattern, ToolResult):
        return pattern
    min_rank = LEVELS.index(args.level) if args.level else None
    needle = args.contains.lower() if args.contains else None
    logcat = service.format == "logcat"
    return Filters(
        min_rank=min_rank,
        needle=needle,
        prefilter=prefilter_for(needle, min_rank, args.regex, logcat),
        pattern=pattern,
        whole_block_regex=args.regex is not None and not shape_of(args.regex).lookaround,
        since=since,
        until=until,
        zone=zone,
        now=now,
        year=datetime.fromtimestamp(now, zone).year,
        deadline=time.monotonic() + SCAN_SECONDS,
        logcat=logcat,
        declared=None if service.time is None else declared(service.time),
    )


# ---------------------------------------------------------------- the result


def _result(service: str, parts: list[Part], f: Filters, limit: int, with_sources: bool) -> ToolResult:
    scan = parts[0].scan if len(parts) == 1 else _merged(parts, f, limit)
    found = list(reversed(scan.newest_first))  # each already shortened as it was kept (Scan.shortened)
    entries, cut = _within_bytes(found, OUTPUT_BYTES)
    grouped = any("\n" in entry for entry in found)
    notes = [note for part in parts for note in part.notes]
    if grouped:
        notes.append(
            "an entry is a line with the lines below it that continue it (a stack trace): counts and "
            "limit count entries"
        )
    if len(entries) < len(found):
        notes.append(f"older {'entries' if grouped else 'lines'} were left out to stay within {OUTPUT_BYTES:,} bytes")
    if cut:
        notes.append(f"the oldest entry shown was cut to stay within {OUTPUT_BYTES:,} bytes")
    if scan.cut_lines:
        notes.append(f"lines longer than {MAX_LINE_CHARS:,} characters were cut")
    if scan.cut_entries:
        notes.append(
            f"entries longer than {ENTRY_HEAD_LINES + ENTRY_TAIL_LINES + 1} lines show their first "
            f"{ENTRY_HEAD_LINES} and last {ENTRY_TAIL_LINES} lines"
        )
    if scan.untimed:
        notes.append(
            f"{scan.untimed:,} matching {'entries' if grouped else 'line(s)'} had no time I could read and "
            f"were left out by since/until (understood: {understood(f)}); ask without since/until to see them"
        )
    noun = ("matching entry", "matching entries") if grouped else ("matching line", "matching lines")
    data: dict[str, Any] = {
        "service": service,
        "summary": _summary(scan, len(entries), ", ".join(part.read for part in parts), noun),
        "matches": scan.matches,
        "complete": scan.stopped is None,
        "shown": len(entries),
        "lines": "\n".join(entries),
        "files": [path for part in parts for path in part.scan.read],
    }
    if with_sources:
        data["sources"] = [part.source for part in parts]
    if notes:
        data["notes"] = notes
    return ToolResult.success(data)


def _merged(parts: list[Part], f: Filters, limit: int) -> Scan:
    """One scan of several sources: counts added up, lines merged by time, the newest `limit` kept."""
    merged = Scan(f, limit)
    keyed: list[tuple[float, int, int, str]] = []
    for index, part in enumerate(parts):
        merged.matches += part.scan.matches
        merged.untimed += part.scan.untimed
        merged.scanned += part.scan.scanned
        when = -math.inf  # an untimed line keeps the time of the line before it
        for seq, line in enumerate(reversed(part.scan.newest_first)):
            stamp = stamp_at(line, 0, part.scan.f)  # a source's own filters: journald's times are its own
            when = when if stamp is None else stamp
            keyed.append((when, index, seq, line))
    keyed.sort(key=lambda k: k[:3])
    merged.newest_first = [line for *_, line in reversed(keyed[-limit:])]
    merged.cut_lines = any(part.scan.cut_lines for part in parts)
    merged.cut_entries = any(part.scan.cut_entries for part in parts)
    stopped = [part.scan.stopped for part in parts if part.scan.stopped]
    merged.stopped = " and ".join(stopped) if stopped else None
    return merged


def _summary(scan: Scan, shown: int, read: str, noun: tuple[str, str]) -> str:
    """E.g. "37 matching lines, showing the last 20 (newest last); read 1.2 MB of 2 files"."""
    parts = [f"{'at least ' if scan.stopped else ''}{scan.matches:,} {noun[scan.matches != 1]}"]
    if scan.matches == 0:
        parts = [f"no {noun[1]}"]
    if shown:
        parts.append(f", showing the last {shown} (newest last)" if shown < scan.matches else " (newest last)")
    parts.append(f"; read {read}")
    if scan.stopped:
        parts.append(f"; the scan stopped early because {scan.stopped}: narrow with since/until to count further")
    return "".join(parts)


class Shown(NamedTuple):
    entries: list[str]  # oldest first
    oldest_cut: bool  # the oldest shown is cut to its first lines


def _within_bytes(entries: list[str], budget: int) -> Shown:
    """The newest entries whose text fits `budget` bytes (the oldest give way), and whether the
    oldest of them was cut to its first lines: an entry too long to fit whole shows its start
    while there is room for it."""
    total, keep = 0, 0
    for entry in reversed(entries):
        size = len(entry.encode()) + 1
        if total + size > budget:
            head = _head_within(entry, budget - total)
            return Shown(([head] if head else []) + entries[len(entries) - keep :], oldest_cut=bool(head))
        total += size
        keep += 1
    return Shown(entries, oldest_cut=False)


def _head_within(entry: str, budget: int) -> str:
    """The first lines of a multi-line `entry` that fit `budget` bytes with a note of the rest."""
    lines = entry.split("\n")
    kept, size = 0, 0
    while kept < len(lines) - 1 and size + len(lines[kept].encode()) + 1 + 60 <= budget:
        size += len(lines[kept].encode()) + 1
        kept += 1
    if not kept:
        return ""
    return "\n".join([*lines[:kept], f"…[{len(lines) - kept:,} more lines of this entry]"])
