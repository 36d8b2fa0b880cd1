"""The scan of query_logs: what a query found so far and its caps (bytes read, wall time), and
how files (plain backwards, .gz forwards, through the safe open) and whole outputs go through it.

Each block gets the redaction rules that span lines (private keys, whose lines a filter would
otherwise show one by one without their BEGIN line) before anything looks at it; tools/logs/match.py
redacts the lines themselves before judging them.

The needle search: with no since/until, a contains or regex filter whose prefilter has one word
(match.prefilter_for) reads a plain file in raw chunks and searches them for the word at C speed;
only the stretches of lines around what it finds are decoded, redacted and judged, exactly as a
block of the other path is. It finds every line the other path would find, for the reason that
path is sound: the word is marker-free, so a line whose redacted form holds it held it raw, and
the raw search folds case as match.py's `str.lower()` does (see `FOLDS_INTO_ASCII`). A line found
raw that no longer matches once redacted is not counted, since it is judged redacted. Being cheap
per byte, it may read NEEDLE_SCAN_BYTES: a needle anywhere in a 1 GiB file is found."""

from __future__ import annotations

import dataclasses
import gzip
import os
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from typing import IO, Any

import regex

from ..redact import redact_spanning
from ..span import Span
from .entries import Grouping
from .files import (
    BLOCK_BYTES,
    DAMAGE,
    MIB,
    Chunk,
    LogFile,
    backwards,
    end_before,
    forwards,
    open_log,
    pieces,
    raw_backwards,
    windows,
)
from .filters import Filters
from .match import Found, OutOfTime, match_block
from .time import Judged, Verdict, judge

# Once `limit` lines are found, counting goes on only this far, so a plain "last 50 errors" stays fast.
COUNT_SCAN_BYTES = 16 * MIB
# Never read more than this per query (plain bytes plus decompressed .gz bytes), matches or not.
MAX_SCAN_BYTES = 256 * MIB
# The needle search reads 1 GiB in about 0.3 s from the page cache and 0.6 s from disk (docs/benchmarks.md,
# Figures): a cap of its own, far within SCAN_SECONDS, which stays the one time cap of a query.
NEEDLE_SCAN_BYTES = 1024 * MIB
SCAN_SECONDS = 5.0

# What the result shows of an entry (query.py): each line up to MAX_LINE_CHARS, and an entry
# longer than HEAD + TAIL + 1 lines its first HEAD lines (the exception and its top frames) and its
# last TAIL (a Java trace's root cause is its last `Caused by:`). An entry is cut as the scan
# keeps it, not when the result is made: a 256 MB line is read as 4 MiB pieces (files.py), and
# the `limit` newest pieces kept whole held hundreds of MB until the result cut each to 2,000
# characters (tests/test_resource_bombs.py).
MAX_LINE_CHARS = 2_000
ENTRY_HEAD_LINES = 30
ENTRY_TAIL_LINES = 20


@dataclass
class Part:
    """What one source gave: its scan, and how to say what was read."""

    scan: Scan
    read: str  # "1.2 MB of 2 files", "14 KB of the journal of nginx.service"
    notes: list[str]
    source: str  # "files", "journald: nginx.service", "command: pod-logs"


# ---------------------------------------------------------------- the scan


@dataclass
class Scan:
    f: Filters
    limit: int
    newest_first: list[str] = field(default_factory=list)
    matches: int = 0
    untimed: int = 0
    scanned: int = 0
    searched: int = 0  # the part of `scanned` the needle search read (NEEDLE_SCAN_BYTES caps it)
    total: int = 0  # bytes in the plain files listed, to say how much of them a capped search saw
    read: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    stopped: str | None = None  # the cap that ended the scan while there was more to read
    past_since: bool = False  # older data is all before `since`: nothing more to read
    out_of_time: bool = False  # the deadline passed in the middle of a block
    cut_lines: bool = False  # an entry kept had a line longer than MAX_LINE_CHARS
    cut_entries: bool = False  # an entry kept had more than ENTRY_HEAD_LINES + ENTRY_TAIL_LINES + 1 lines

    def match(self, text: str, need: int, judged: Judged, grouping: Grouping) -> Found:
        """match_block, stopping the scan with what the block gave so far when time is up; the
        entries it gives are shortened as the result shows them."""
        try:
            count, entries, untimed = match_block(text, self.f, need, judged, grouping)
        except OutOfTime as exc:
            self.out_of_time = True
            self.stopped = self.stopped or self.out_of_seconds()
            count, entries, untimed = exc.partial
        return Found(count, [self.shortened(entry) for entry in entries], untimed)

    def shortened(self, entry: str) -> str:
        """`entry` as the result shows it (see MAX_LINE_CHARS), noting what was cut."""
        lines = entry.split("\n")
        if any(len(line) > MAX_LINE_CHARS for line in lines):
            self.cut_lines = True
        left_out = len(lines) - ENTRY_HEAD_LINES - ENTRY_TAIL_LINES
        if left_out > 1:
            self.cut_entries = True
            lines = [*lines[:ENTRY_HEAD_LINES], f"…[{left_out:,} more lines of this entry]", *lines[-ENTRY_TAIL_LINES:]]
        return "\n".join(_short_line(line) for line in lines)

    def out_of_seconds(self) -> str:
        reason = f"it ran for its cap of {SCAN_SECONDS:g} s"
        return f"{reason}, having searched {self.how_far()}" if self.searched else reason

    def how_far(self) -> str:
        """E.g. "the newest 1.00 GB of 3.20 GB": what a needle search saw of the plain files."""
        return f"the newest {size_text(self.scanned)} of {size_text(max(self.total, self.scanned))}"

    @property
    def need(self) -> int:
        return self.limit - len(self.newest_first)

    def add(self, count: int, oldest_first: list[str], untimed: int) -> None:
        self.matches += count
        self.untimed += untimed
        if self.need > 0:
            self.newest_first.extend(reversed(oldest_first[-self.need :]))

    def may_go_on(self, searching: bool = False) -> bool:
        """False once a cap ends the scan; called only when there is more to read, so a cap
        hit by the last block does not make a complete count look partial. The byte caps are
        NEEDLE_SCAN_BYTES on all a needle search (`searching`) has read, MAX_SCAN_BYTES on what
        the other path read, so a rotated .gz after a searched file still gets its share."""
        if self.stopped is None:
            if searching and self.scanned >= NEEDLE_SCAN_BYTES:
                self.stopped = f"it searched its cap of {size_text(NEEDLE_SCAN_BYTES)}, {self.how_far()}"
            elif not searching and self.scanned - self.searched >= MAX_SCAN_BYTES:
                self.stopped = f"it read its cap of {mb(MAX_SCAN_BYTES)}"
            elif self.need <= 0 and self.scanned >= COUNT_SCAN_BYTES:
                self.stopped = f"the {self.limit} asked for were found within the newest {mb(self.scanned)}"
            elif self.untimed >= self.limit and self.scanned >= COUNT_SCAN_BYTES:
                self.stopped = f"{self.untimed:,} lines without a time had been found in the newest {mb(self.scanned)}"
            elif time.monotonic() > self.f.deadline:
                self.stopped = self.out_of_seconds()
        return self.stopped is None


def scan_files(files: list[LogFile], scan: Scan) -> None:
    needle = needle_for(scan.f)
    scan.total = sum(file.size for file in files if not file.path.name.endswith(".gz"))
    for file in files:
        gz = file.path.name.endswith(".gz")
        if scan.past_since or not scan.may_go_on(searching=needle is not None and not gz):
            return
        if scan.f.since is not None and file.mtime < scan.f.since:
            scan.past_since = True  # not written to since then, nor is anything older
            return
        # Year-less and time-only lines are dated back from this file's last write (stamps.py).
        year = datetime.fromtimestamp(file.mtime, scan.f.zone).year
        scan.f = dataclasses.replace(scan.f, last_written=file.mtime, year=year)
        try:
            if gz:
                _scan_gz(file, scan)
            else:
                _scan_plain(file, scan, needle)
        except OSError as exc:
            scan.notes.append(f"{file.path} could not be read: {exc.strerror or exc}")


def _scan_plain(file: LogFile, scan: Scan, needle: Needle | None) -> None:
    with os.fdopen(open_log(file), "rb") as handle:
        end = handle.seek(0, os.SEEK_END)
        if scan.f.until is not None and file.mtime > scan.f.until and end > 2 * BLOCK_BYTES:
            end = end_before(handle, end, scan.f)
        scan.read.append(str(file.path))
        if needle is not None:
            _search_plain(handle, end, needle, scan)
            return
        for index, (text, size, grouping) in enumerate(backwards(handle, end, scan.f)):
            if index and not scan.may_go_on():
                return
            scan.scanned += size
            text = redact_spanning(text)
            judged = judge(text, scan.f)
            if judged.verdict is Verdict.older:
                scan.past_since = True
                return
            scan.add(*scan.match(text, max(scan.need, 0), judged, grouping))
            if scan.out_of_time:
                return


def _search_plain(handle: IO[bytes], end: int, needle: Needle, scan: Scan) -> None:
    """The needle search of one plain file, newest chunk first; within a chunk the stretches
    around what it finds go through the matcher newest first, so the newest matches are kept."""
    # Reads stop at the cap itself, not at the chunk that passes it: a capped search says exactly
    # how far it got.
    budget = max(0, NEEDLE_SCAN_BYTES - scan.scanned)
    with ThreadPoolExecutor(1, thread_name_prefix="needle") as helper:
        for index, chunk in enumerate(raw_backwards(handle, end, budget, scan.f)):
            if index and not scan.may_go_on(searching=True):
                return
            scan.scanned += chunk.size
            scan.searched += chunk.size
            for start, stop in reversed(needle.stretches(chunk, helper)):
                text = redact_spanning(chunk.text(start, stop))
                scan.add(*scan.match(text, max(scan.need, 0), judge(text, scan.f), chunk.grouping))
                if scan.out_of_time:
                    return
    if budget < end:
        scan.may_go_on(searching=True)  # the rest of this file is past the cap: said so


# ---------------------------------------------------------------- the needle search

# The characters outside ASCII whose str.lower() holds an ASCII letter (all of Unicode, checked by
# tests/test_log_needles.py): KELVIN SIGN -> "k", and LATIN CAPITAL I WITH DOT ABOVE -> "i" + a
# combining dot. match.py finds words in `text.lower()`, so a chunk holding one of them where the
# word holds that letter may match where an ASCII-folding search sees nothing: it is judged whole.
FOLDS_INTO_ASCII = (("k", "\u212a".encode()), ("i", "\u0130".encode()))


# A chunk at least this large is searched in two halves at once (the `regex` module lets go of
# the GIL with concurrent=True): 1 GiB in 0.23 s instead of 0.33 s on two cores.
_SPLIT_BYTES = MIB


@dataclass(frozen=True)
class Needle:
    """The prefilter's word as a search of raw bytes (the `regex` module: a literal, folded or
    not, at several GB/s), and the UTF-8 of the characters that send a whole chunk to the matcher."""

    pattern: Any
    length: int  # of the word, in bytes
    whole_if: tuple[bytes, ...]

    def stretches(self, chunk: Chunk, helper: ThreadPoolExecutor) -> list[Span]:
        """The stretches of `chunk` the matcher must see, oldest first."""
        data = chunk.data
        for code in self.whole_if:
            # A one-byte find first: memchr skips a chunk without the lead byte at memory speed.
            at = data.find(code[:1], chunk.start, chunk.stop)
            if at != -1 and data.find(code, at, chunk.stop) != -1:
                return pieces(chunk)
        first = self._first(chunk, helper)
        return [] if first is None else windows(chunk, self.pattern, first)

    def _first(self, chunk: Chunk, helper: ThreadPoolExecutor) -> int | None:
        """Where the word is first found in `chunk`: most chunks hold none, so this is the search
        that costs, and it runs on two cores. The first half reaches past the middle by the
        word's length less one, so a match across the middle is found in it."""
        start, stop, search = chunk.start, chunk.stop, self.pattern.search
        if stop - start < _SPLIT_BYTES:
            found = search(chunk.data, start, stop)
            return None if found is None else int(found.start())
        middle = (start + stop) // 2
        later = helper.submit(search, chunk.data, middle, stop, concurrent=True)
        found = search(chunk.data, start, min(stop, middle + self.length - 1), concurrent=True)
        second = later.result()
        found = found if found is not None else second
        return None if found is None else int(found.start())


def needle_for(f: Filters) -> Needle | None:
    """The needle search for `f`, or None when a query takes the other path: since/until (blocks
    are judged by their timestamps, and bisected), no contains or regex, several words (level
    words: in nearly every block), or a word that is not printable ASCII (case folding beyond
    ASCII, and a newline or CR, which decoding changes, are left to match.py)."""
    if f.timed or (f.needle is None and f.pattern is None) or len(f.prefilter.words) != 1:
        return None
    word = f.prefilter.words[0]
    if not word or not word.isascii() or not word.isprintable():
        return None
    literal = regex.escape(word.encode())
    if f.prefilter.cased:
        return Needle(regex.compile(literal), len(word), ())
    folds = tuple(code for letter, code in FOLDS_INTO_ASCII if letter in word)
    return Needle(regex.compile(literal, regex.IGNORECASE), len(word), folds)


def _scan_gz(file: LogFile, scan: Scan) -> None:
    """A .gz file from its start: the newest `need` matches are kept as they stream by."""
    kept: deque[str] = deque(maxlen=max(scan.need, 0))
    count = untimed = 0
    with os.fdopen(open_log(file), "rb") as raw, gzip.GzipFile(fileobj=raw, mode="rb") as stream:
        scan.read.append(str(file.path))
        try:
            for index, (text, size, grouping) in enumerate(forwards(stream, scan.f)):
                # Enough lines in `kept` is no reason to stop: the newest of this file come last.
                if index and not scan.may_go_on():
                    scan.notes.append(f"only the first {mb(stream.tell())} of {file.path.name} (uncompressed) was read")
                    break
                scan.scanned += size
                text = redact_spanning(text)
                judged = judge(text, scan.f)
                if judged.verdict is Verdict.newer:
                    break
                scan.past_since |= judged.verdict is Verdict.older
                found, lines, no_time = scan.match(text, kept.maxlen or 0, judged, grouping)
                count, untimed = count + found, untimed + no_time
                kept.extend(lines)
                if scan.out_of_time:
                    scan.notes.append(f"only the first {mb(stream.tell())} of {file.path.name} (uncompressed) was read")
                    break
        except DAMAGE as exc:
            scan.notes.append(f"{file.path.name} is damaged ({exc}); read up to the damage")
    scan.add(count, list(kept), untimed)


def _short_line(line: str) -> str:
    if len(line) <= MAX_LINE_CHARS:
        return line
    return f"{line[:MAX_LINE_CHARS]} …[{len(line) - MAX_LINE_CHARS:,} more characters]"


def mb(size: int) -> str:
    return f"{size / MIB:.1f} MB" if size >= MIB // 10 else f"{(size + 1023) // 1024} KB"


def size_text(size: int) -> str:
    """mb(), or GB from 1 GiB on (the needle search's sizes), to the hundredth: the cap is 1.00
    GB, and a 1.02 GB file should not read as "the newest 1.0 GB of 1.0 GB"."""
    return f"{size / (1024 * MIB):.2f} GB" if size >= 1024 * MIB else mb(size)


def scan_text(text: str, size: int, scan: Scan) -> None:
    """A whole output, oldest line first, through the matcher files go through."""
    scan.scanned += size
    text = redact_spanning(text)
    if text:
        scan.add(*scan.match(text, scan.limit, judge(text, scan.f), Grouping.of(text, scan.f)))
