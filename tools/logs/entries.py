"""Entries: a log line with the lines that continue it (a stack trace, a wrapped message), which
query_logs filters, counts and shows as one.

A block's lines are grouped by one of two rules, chosen by whether the block holds a time
(time.first_stamp: a timed line among its first STAMP_PROBE_LINES):

- timed: a line continues the entry above unless it has a time of its own (stamps.py) or begins
  as one does (a digit, `<PRI>`, `[2026-`, `Dec  1 `, klog's `E1201 `) or is a JSON object (a
  JSON log writes one object per entry, with a time key or without); a line a container
  runtime stamped (CRI, `kubectl logs --timestamps`, Docker's json-file) continues it when what
  the program wrote there has a trace's shape. This is the
  rule of Logstash's multiline codec on a timestamp pattern (`negate => true`, `what =>
  previous`) and of Fluent Bit's multiline parsers; it takes Java's `at` frames and `Caused by:`,
  Python's traceback and its last `ValueError: ...` line, Go's goroutine dumps and Node's frames.
- untimed: nothing says where an entry starts, so only a line that looks like a continuation
  continues one: an indented or blank line, or one of the lines traces print without indent
  (Java's `Caused by:`, `Suppressed:`, `... 12 more`; Python's `Traceback (most recent call
  last):`, `During handling of ...`, `The above exception ...`, and the exception line that ends
  a traceback; Go's `goroutine 1 [running]:`, `created by ...` and frames such as `main.main()`).

The first line of a block always starts an entry: the readers (files.py) give a block's leading
continuation lines to the block before it in the file, so an entry is split only when it is
longer than ENTRY_REACH. The readers choose each block's rule (`Modes`), and the matcher groups
the block by the rule its reader chose.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Iterator
from dataclasses import dataclass

from ..span import EndsByStart
from .filters import Filters
from .stamps import stamp_at
from .time import first_stamp

# How far the readers look for the start or the end of one entry; a longer one is split.
ENTRY_REACH = 4 * 1024 * 1024

# In a timed block, a line with this start begins an entry whether a time is read in it or not:
# a digit, a JSON object, a syslog PRI, a bracketed date, a syslog or klog stamp. Reading a time
# in each such line would cost a regex per line (a count of 16 MiB: 20 ms, not 120); the other
# lines are few in a timed log, and each is asked for a time in full.
_STARTS = (
    r"[\d{]|<\d{1,3}>|\[\d{4}[-/]|\[(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) "
    r"|(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [ \d]\d |[IWEF]\d{4} "
)
_STARTS_LINE = re.compile(_STARTS)
_MAYBE_CONTINUES = re.compile(rf"\n(?!{_STARTS})")
# A container runtime stamps every line it passes on, a stack trace's too: CRI (containerd,
# CRI-O: `<RFC 3339> stdout F <line>`), `kubectl logs --timestamps` (`<RFC 3339> <line>`) and
# Docker's json-file (`{"log":"<line>\n",...}`). Such a line continues the entry above when what
# the program wrote has a trace's shape: a tab, an indented `at `/`File "`, or a line traces print
# without indent (_TRACE_LINES), though its own stamp is a few nanoseconds after the line above.
# (Any indent would be too loose: Spring Boot pads its level.)
# Looking at every line for this costs a search as long as the others together, so a block is
# searched so only when a line near its start has a runtime's stamp: CRI's stream and tag,
# kubectl's nanoseconds in UTC, or Docker's "log" key.
_RUNTIME_STAMP = (
    r'\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?(?:Z|[+-]\d\d:\d\d) (?:(?:stdout|stderr) [FP] )?|\{"log":\s*"'
)
_RUNTIME_BLOCK = re.compile(
    r"^(?:\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?(?:Z|[+-]\d\d:\d\d) (?:stdout|stderr) [FP] "
    r'|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z |\{"log":\s*")',
    re.MULTILINE,
)
_RUNTIME_PROBE_CHARS = 4096
# The lines traces print without indent: Java's `Caused by:`, `Suppressed:`, `... 12 more`, and
# the exception line itself (`java.lang.IllegalStateException: boom`); Python's `Traceback (most
# recent call last):`, `During handling of ...`, `The above exception ...` and the exception line
# that ends a traceback; Go's `goroutine 1 [running]:`, `created by ...` and frames such as `main.main()`.
_TRACE_LINES = (
    r"(?:Caused by|Suppressed|Wrapped by): |\.\.\. \d+ (?:more|common frames omitted)"
    r"|Traceback \(most recent call last\):|During handling of the above exception"
    r"|The above exception was the direct cause"
    r"|[A-Za-z_][\w.]*(?:Error|Exception|Warning|Exit|Interrupt)(?::|$)"
    r"|goroutine \d+ \[|created by |[\w.*()/-]+\(.*\)$"
)
# What the program wrote after a runtime's stamp (JSON-escaped in Docker's: `\t` for a tab).
_TRACE_SHAPED = rf'(?:\t|\\t|\s+at |\s+File "|\s*(?:{_TRACE_LINES}))'
_RUNTIME_CONTINUES = re.compile(f"(?:{_RUNTIME_STAMP}){_TRACE_SHAPED}", re.MULTILINE)
_RUNTIME_CONTINUED_LINES = re.compile(rf"\n(?=(?:{_RUNTIME_STAMP}){_TRACE_SHAPED})", re.MULTILINE)
_LOOKS_CONTINUED = rf"[ \t]|$|{_TRACE_LINES}"
_CONTINUED = re.compile(_LOOKS_CONTINUED, re.MULTILINE)
_CONTINUED_LINES = re.compile(rf"\n(?={_LOOKS_CONTINUED})", re.MULTILINE)


@dataclass(frozen=True)
class Grouping:
    """How the lines of one block group into entries (spans are [start, end) of `text`, end at
    the entry's last line end, without its newline)."""

    f: Filters
    timed: bool
    runtime: bool = False  # lines a container runtime stamped (see _RUNTIME_STAMP)

    @classmethod
    def of(cls, text: str, f: Filters) -> Grouping:
        return cls(f, first_stamp(text, f) is not None, runtime_stamped(text))

    def continues(self, text: str, pos: int) -> bool:
        """Whether the line starting at `pos` continues the entry above it."""
        if self.timed:
            if _STARTS_LINE.match(text, pos) is not None:
                return self.runtime and _RUNTIME_CONTINUES.match(text, pos) is not None
            return stamp_at(text, pos, self.f) is None
        return _CONTINUED.match(text, pos) is not None

    def continuations(self, text: str) -> Iterator[int]:
        """Where each line that continues an entry starts, oldest first (never the first line),
        found by one search of the block."""
        if self.timed:
            unstamped = (m.end() for m in _MAYBE_CONTINUES.finditer(text) if stamp_at(text, m.end(), self.f) is None)
            if not self.runtime:
                return unstamped
            # Disjoint: a runtime's stamp starts with a digit or `{`, which no unstamped candidate does.
            return heapq.merge(unstamped, (m.end() for m in _RUNTIME_CONTINUED_LINES.finditer(text)))
        return (m.end() for m in _CONTINUED_LINES.finditer(text))

    def count(self, text: str) -> int:
        if not text:
            return 0
        return text.count("\n") + 1 - sum(1 for _ in self.continuations(text))

    def spans(self, text: str) -> EndsByStart:
        """Every entry of `text`, oldest first."""
        continued = set(self.continuations(text))
        entries: EndsByStart = {}
        start, at = 0, text.find("\n")
        while at != -1:
            if at + 1 not in continued:
                entries[start] = at
                start = at + 1
            at = text.find("\n", at + 1)
        entries[start] = len(text)
        return entries

    def start_of(self, text: str, pos: int) -> int:
        """The start of the entry holding the line that starts at `pos`."""
        while pos > 0 and self.continues(text, pos):
            pos = text.rfind("\n", 0, pos - 1) + 1
        return pos

    def end_of(self, text: str, end: int) -> int:
        """The end of the entry holding the line that ends at `end`."""
        while end < len(text) and self.continues(text, end + 1):
            following = text.find("\n", end + 1)
            end = len(text) if following == -1 else following
        return end

    def newest(self, text: str, need: int) -> list[str]:
        """The newest `need` entries of `text`, oldest first."""
        found: list[str] = []
        end = len(text)
        while text and len(found) < need and end >= 0:
            start = self.start_of(text, text.rfind("\n", 0, end) + 1)
            found.append(text[start:end])
            end = start - 1
        return found[::-1]

    def first_start(self, text: str) -> int:
        """Where the first line that starts an entry begins: 0 when the first line does,
        len(text) + 1 when none does. Past ENTRY_REACH the search gives up (0): the entry is split."""
        pos = 0
        while pos <= len(text) and self.continues(text, pos):
            if pos > ENTRY_REACH:
                return 0
            following = text.find("\n", pos)
            pos = len(text) + 1 if following == -1 else following + 1
        return pos

    def last_start(self, text: str) -> int:
        """Where the last entry of `text` starts; len(text) + 1 when it is longer than ENTRY_REACH
        (nothing is held back: the entry is split)."""
        pos = self.start_of(text, text.rfind("\n") + 1)
        return pos if len(text) - pos <= ENTRY_REACH else len(text) + 1


class Modes:
    """The grouping of each block one reader gives, in reading order. A block with no time of
    its own in a timed file is most likely the middle of a long trace: it keeps the timed rule
    while such blocks add up to no more than ENTRY_REACH (past it an entry is split anyway), and
    takes the untimed rule after that."""

    def __init__(self, f: Filters) -> None:
        self.f = f
        self.timed = False
        self.untimed_chars = 0

    def of(self, text: str) -> Grouping:
        if first_stamp(text, self.f) is not None:
            self.timed, self.untimed_chars = True, 0
            return Grouping(self.f, timed=True, runtime=runtime_stamped(text))
        self.untimed_chars += len(text)
        return Grouping(self.f, timed=self.timed and self.untimed_chars <= ENTRY_REACH)


def runtime_stamped(text: str) -> bool:
    """Whether a line near the start of `text` has a container runtime's stamp."""
    return _RUNTIME_BLOCK.search(text, 0, _RUNTIME_PROBE_CHARS) is not None
