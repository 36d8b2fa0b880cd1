"""What one query asks for, made ready for matching: the filters every source is read with.

Made by query.py from the arguments, read by time.py, match.py, files.py, scan.py and sources.py;
it holds no logic of theirs, so all of them can import it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import tzinfo
from typing import Any


@dataclass(frozen=True)
class Prefilter:
    """Words one of which the raw text of every line that matches in its redacted form holds;
    none when no filter has such words, and then every line of a block is redacted before any is
    judged. `cased` words are found as written, the others in the lower-cased text."""

    words: tuple[str, ...] = ()
    cased: bool = False


@dataclass(frozen=True)
class Declared:
    """A service's declared `time:` (config LineTime), made ready for reading: stamps.py reads
    each line by it instead of by auto's styles."""

    pattern: re.Pattern[str]  # finds the stamp in a line, in its group `stamp`
    format: str | None  # strptime format of the stamp; None: an epoch, or read as auto reads one
    scale: float | None  # an epoch's units per second (1 or 1000)
    dated: bool  # the format names a day (else: the day of the last write)
    yeared: bool  # the format names a year (else: the year of the last write)
    said: str  # how the service's time was declared, for notes about lines without one


@dataclass(frozen=True)
class Filters:
    min_rank: int | None
    needle: str | None  # lower-cased
    prefilter: Prefilter  # finds the lines worth redacting and judging (see match.prefilter_for)
    pattern: Any  # a compiled `regex` pattern, or None
    whole_block_regex: bool  # the pattern finds the same lines when run over a block as over each line
    since: float | None
    until: float | None
    zone: tzinfo | None
    now: float
    year: int  # the year where the service is, of the last write or now: syslog timestamps leave it out
    deadline: float
    logcat: bool = False  # the service's format is Android logcat: its one-letter level is read
    # When the file being read was last written: time-only lines (logback's default) are dated
    # back from it, not from now, so a rotated file's lines fall on the day they were written.
    last_written: float | None = None
    declared: Declared | None = None  # the service's own `time:`, if it has one

    @property
    def content(self) -> bool:
        return self.min_rank is not None or self.needle is not None or self.pattern is not None

    @property
    def timed(self) -> bool:
        return self.since is not None or self.until is not None

    def in_range(self, when: float) -> bool:
        return (self.since is None or when >= self.since) and (self.until is None or when <= self.until)
