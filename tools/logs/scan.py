"""The scan of query_logs: what a query found so far and its caps (bytes read, wall time), and
how files (plain backwards, .gz forwards, through the safe open) and whole outputs go through it.

Each block gets the redaction rules that span lines (private keys, whose lines a filter would
otherwise show one by one without their BEGIN line) before anything looks at it; tools/logs/match.py
redacts the lines themselves before judging them."""

from __future__ import annotations

import gzip
import os
import time
from collections import deque
from dataclasses import dataclass, field

from tools.logs.files import BLOCK_BYTES, DAMAGE, MIB, LogFile, backwards, end_before, forwards, open_log
from tools.logs.filters import Filters
from tools.logs.match import OutOfTime, match_block
from tools.logs.time import Verdict, judge
from tools.redact import redact_spanning

# Once `limit` lines are found, counting goes on only this far, so a plain "last 50 errors" stays fast.
COUNT_SCAN_BYTES = 16 * MIB
# Never read more than this per query (plain bytes plus decompressed .gz bytes), matches or not.
MAX_SCAN_BYTES = 256 * MIB
SCAN_SECONDS = 5.0


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
    read: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    stopped: str | None = None  # the cap that ended the scan while there was more to read
    past_since: bool = False  # older data is all before `since`: nothing more to read
    out_of_time: bool = False  # the deadline passed in the middle of a block

    def match(self, text: str, need: int, judged: tuple[Verdict, float]) -> tuple[int, list[str], int]:
        """match_block, stopping the scan with what the block gave so far when time is up."""
        try:
            return match_block(text, self.f, need, judged)
        except OutOfTime as exc:
            self.out_of_time = True
            self.stopped = self.stopped or f"it ran for its cap of {SCAN_SECONDS:g} s"
            return exc.partial

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
                self.stopped = f"it read its cap of {mb(MAX_SCAN_BYTES)}"
            elif self.need <= 0 and self.scanned >= COUNT_SCAN_BYTES:
                self.stopped = f"the {self.limit} lines asked for were found within the newest {mb(self.scanned)}"
            elif self.untimed >= self.limit and self.scanned >= COUNT_SCAN_BYTES:
                self.stopped = f"{self.untimed:,} lines without a time had been found in the newest {mb(self.scanned)}"
            elif time.monotonic() > self.f.deadline:
                self.stopped = f"it ran for its cap of {SCAN_SECONDS:g} s"
        return self.stopped is None


def scan_files(files: list[LogFile], scan: Scan) -> None:
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


def _scan_plain(file: LogFile, scan: Scan) -> None:
    with os.fdopen(open_log(file), "rb") as handle:
        end = handle.seek(0, os.SEEK_END)
        if scan.f.until is not None and file.mtime > scan.f.until and end > 2 * BLOCK_BYTES:
            end = end_before(handle, end, scan.f)
        scan.read.append(str(file.path))
        for index, (text, size) in enumerate(backwards(handle, end)):
            if index and not scan.may_go_on():
                return
            scan.scanned += size
            text = redact_spanning(text)
            judged = judge(text, scan.f)
            if judged[0] is Verdict.older:
                scan.past_since = True
                return
            scan.add(*scan.match(text, max(scan.need, 0), judged))
            if scan.out_of_time:
                return


def _scan_gz(file: LogFile, scan: Scan) -> None:
    """A .gz file from its start: the newest `need` matches are kept as they stream by."""
    kept: deque[str] = deque(maxlen=max(scan.need, 0))
    count = untimed = 0
    with os.fdopen(open_log(file), "rb") as raw, gzip.GzipFile(fileobj=raw, mode="rb") as stream:
        scan.read.append(str(file.path))
        try:
            for index, (text, size) in enumerate(forwards(stream)):
                # Enough lines in `kept` is no reason to stop: the newest of this file come last.
                if index and not scan.may_go_on():
                    scan.notes.append(f"only the first {mb(stream.tell())} of {file.path.name} (uncompressed) was read")
                    break
                scan.scanned += size
                text = redact_spanning(text)
                judged = judge(text, scan.f)
                if judged[0] is Verdict.newer:
                    break
                scan.past_since |= judged[0] is Verdict.older
                found, lines, no_time = scan.match(text, kept.maxlen or 0, judged)
                count, untimed = count + found, untimed + no_time
                kept.extend(lines)
                if scan.out_of_time:
                    scan.notes.append(f"only the first {mb(stream.tell())} of {file.path.name} (uncompressed) was read")
                    break
        except DAMAGE as exc:
            scan.notes.append(f"{file.path.name} is damaged ({exc}); read up to the damage")
    scan.add(count, list(kept), untimed)


def mb(size: int) -> str:
    return f"{size / MIB:.1f} MB" if size >= MIB // 10 else f"{(size + 1023) // 1024} KB"


def plural(count: int, noun: str) -> str:
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def scan_text(text: str, size: int, scan: Scan) -> None:
    """A whole output, oldest line first, through the matcher files go through."""
    scan.scanned += size
    text = redact_spanning(text)
    if text:
        scan.add(*scan.match(text, scan.limit, judge(text, scan.f)))
