"""Time for query_logs: since/until arguments, and where a block of lines lies against the asked
range (each line's time is read by stamps.py)."""

from __future__ import annotations

from datetime import datetime, tzinfo
from enum import Enum
from typing import NamedTuple

from ..base import ErrorType, ToolResult
from ..durations import duration_seconds
from .filters import Filters
from .stamps import epoch, stamp_at

# How many lines to look through for a timestamp before calling a block untimed.
STAMP_PROBE_LINES = 1_000

TIME_HINT = (
    "give a relative age such as 15m, 2h, 1d, 1w, or an ISO-8601 time such as 2026-11-29T03:00:00Z "
    "(times without an offset are in the service's time zone)"
)


def time_arg(name: str, text: str | None, zone: tzinfo | None, now: float) -> float | None | ToolResult:
    if text is None or not text.strip():
        return None
    when = _parse_time(text.strip(), zone, now)
    if when is None:
        return ToolResult.failure(ErrorType.invalid_args, f"{name} {text!r} is not a time I understand", hint=TIME_HINT)
    return when


def _parse_time(text: str, zone: tzinfo | None, now: float) -> float | None:
    """Epoch seconds of a relative age (`15m`, `2h ago`), `now`, or an ISO-8601 date or time."""
    age = duration_seconds(text)
    if age is not None:
        return now - age
    if text.lower() == "now":
        return now
    try:
        return epoch(datetime.fromisoformat(text.upper().replace("/", "-")), zone)
    except (ValueError, OverflowError, OSError):  # not ISO-8601, or a year no clock can hold
        return None


class Verdict(Enum):
    inside = "every line is in the time range"
    newer = "every line is after until"
    older = "every line is before since"
    edge = "lines must be judged one by one"
    untimed = "no line has a timestamp"


class Judged(NamedTuple):
    """Where a block lies against since/until, and its first timestamp (0.0 when it has none)."""

    verdict: Verdict
    first: float


def judge(text: str, f: Filters) -> Judged:
    """Where a block lies against since/until, by its first and last timestamps.

    Logs are written in time order, so a block whose ends are both inside the range is inside
    whole; lines before the block's first timestamp (the tail of a stack trace) go with it.
    """
    if not f.timed:
        return Judged(Verdict.inside, 0.0)
    first = first_stamp(text, f)
    if first is None:
        return Judged(Verdict.untimed, 0.0)
    last = time_of(text, text.rfind("\n") + 1, f, fallback=first)
    if f.since is not None and last < f.since:
        return Judged(Verdict.older, first)
    if f.until is not None and first > f.until:
        return Judged(Verdict.newer, first)
    if (f.since is None or first >= f.since) and (f.until is None or last <= f.until):
        return Judged(Verdict.inside, first)
    return Judged(Verdict.edge, first)


def first_stamp(text: str, f: Filters) -> float | None:
    """The time of the first timed line among the first STAMP_PROBE_LINES of `text`."""
    pos = 0
    for _ in range(STAMP_PROBE_LINES):
        when = stamp_at(text, pos, f)
        if when is not None:
            return when
        pos = text.find("\n", pos) + 1
        if pos == 0:
            return None
    return None


def time_of(text: str, start: int, f: Filters, fallback: float) -> float:
    """The time of the line starting at `start`: its own, or that of the nearest timed line
    above it (a stack trace belongs to the entry that logged it)."""
    pos = start
    for _ in range(STAMP_PROBE_LINES):
        when = stamp_at(text, pos, f)
        if when is not None:
            return when
        if pos == 0:
            break
        pos = text.rfind("\n", 0, pos - 1) + 1
    return fallback
