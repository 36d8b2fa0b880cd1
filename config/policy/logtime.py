"""How a service's log lines carry their time, declared when `format: auto` cannot know
(`time:` of a service; tools/logs/stamps.py reads lines by it).

```yaml
healthapp:                 # 20171223-22:15:29:606|Step_LSC|30002312|onStandStepChanged 3579
  logs: [logs/healthapp.log]
  time: {format: "%Y%m%d-%H:%M:%S:%f"}
proxifier:                 # [10.30 16:49:06] chrome.exe - proxy.cse.cuhk.edu.hk:5070 open
  logs: [logs/proxifier.log]
  time: {format: "[%m.%d %H:%M:%S]"}
collected:                 # node-7/app.log:2026-12-01 10:00:00 ERROR ... (a file name first)
  logs: [logs/collected.log]
  time: {regex: '^\\S+?:(?P<stamp>\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d)'}
events:                    # 1764583200 web-1 GET /cart 200
  logs: [logs/events.log]
  time: {epoch: s}
```

- `format` alone: a strptime format of the stamp at the start of each line (its literal
  characters are matched as written, a space as any run of spaces, as strptime does);
- `regex` alone: a Python regex searched in each line whose group `stamp` is read by auto's
  parser (the file-name prefix above);
- `regex` with `format` or `epoch`: the regex finds the stamp, `format`/`epoch` reads it;
- `epoch: s` or `ms` alone: a number of seconds or milliseconds since 1970 starting the line.

A format without a year takes the year of the file's last write (of now, for a command's output),
or the year before when that would put the line more than two days after that write; one without
a date is on the day of the last write, or the day before. Times without `%z` are in the
service's `timezone`.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Final, Literal

from pydantic import Field, model_validator

from .base import Strict

STAMP_GROUP: Final = "stamp"
# What each strptime directive a format may hold matches (strptime's own patterns, narrowed to
# what logs write); a space matches any run of spaces, as in strptime.
DIRECTIVES: Final = {
    "Y": r"\d{4}",
    "y": r"\d\d",
    "m": r"\d{1,2}",
    "d": r"\d{1,2}",
    "j": r"\d{1,3}",
    "H": r"\d{1,2}",
    "I": r"\d{1,2}",
    "M": r"\d{1,2}",
    "S": r"\d{1,2}",
    "f": r"\d{1,6}",
    "p": r"[AaPp][Mm]",
    "b": r"[A-Za-z]{3}",
    "B": r"[A-Za-z]{3,9}",
    "a": r"[A-Za-z]{3}",
    "A": r"[A-Za-z]{6,9}",
    "z": r"(?:Z|[+-]\d\d:?\d\d)",
    "%": "%",
}
# The moment a format is tried on: written with the format (strftime), then read back (strptime).
EXAMPLE_MOMENT: Final = datetime(2026, 12, 1, 13, 4, 5, 123456, tzinfo=UTC)
# A leap year, so that a year-less 02-29 can be read before its year is chosen.
LEAP_YEAR: Final = 2000
_DIRECTIVE = re.compile(r"%(.)|(\s+)|([^%\s]+)", re.S)


def format_regex(fmt: str) -> str:
    """The regex of what `fmt` writes, for finding a stamp at a line's start. Raises ValueError
    naming a directive it does not take."""
    parts: list[str] = []
    for directive, space, literal in _DIRECTIVE.findall(fmt):
        if directive:
            if directive not in DIRECTIVES:
                known = " ".join(f"%{d}" for d in DIRECTIVES)
                raise ValueError(f"time.format {fmt!r} uses %{directive}, which is not read; use these: {known}")
            parts.append(DIRECTIVES[directive])
        else:
            parts.append(r"\s+" if space else re.escape(literal))
    return "".join(parts)


def has_year(fmt: str) -> bool:
    return "%Y" in fmt or "%y" in fmt


def has_date(fmt: str) -> bool:
    return "%d" in fmt or "%j" in fmt


def read_format(text: str, fmt: str) -> datetime:
    """`text` read with `fmt`; a year-less one in LEAP_YEAR (strptime's own 1900 has no 29 Feb).
    Raises ValueError."""
    if has_year(fmt):
        return datetime.strptime(text, fmt)
    return datetime.strptime(f"{text}\x00{LEAP_YEAR}", f"{fmt}\x00%Y")


class LineTime(Strict):
    regex: str | None = Field(
        default=None,
        description="a Python regex searched in each line, whose group named stamp holds the time "
        "('^\\S+?:(?P<stamp>...)' for a file name first); alone, the group is read as auto reads a time",
    )
    format: str | None = Field(
        default=None,
        description="a strptime format of the stamp ('%Y%m%d-%H:%M:%S:%f', '[%m.%d %H:%M:%S]'); "
        "without regex, the stamp starts the line; without a year, the year of the file's last write",
    )
    epoch: Literal["s", "ms"] | None = Field(
        default=None,
        description="the stamp is a number of seconds (s) or milliseconds (ms) since 1970; without "
        "regex, the number starts the line",
    )

    @model_validator(mode="after")
    def _usable(self) -> LineTime:
        # Each problem found here would otherwise make every line of the service untimed, silently.
        if self.regex is None and self.format is None and self.epoch is None:
            raise ValueError("time needs a format, a regex or epoch (s or ms)")
        if self.format is not None and self.epoch is not None:
            raise ValueError("time has both format and epoch: a stamp is read one way, keep one")
        if self.regex is not None:
            _check_regex(self.regex)
        if self.format is not None:
            _check_format(self.format)
        return self

    def pattern(self) -> str:
        """The regex that finds the stamp, in its group STAMP_GROUP."""
        if self.regex is not None:
            return self.regex
        stamp = format_regex(self.format) if self.format is not None else r"\d{9,16}(?:\.\d+)?"
        return f"^(?P<{STAMP_GROUP}>{stamp})"


def _check_regex(regex: str) -> None:
    try:
        compiled = re.compile(regex)
    except re.error as exc:
        raise ValueError(f"time.regex {regex!r} does not compile: {exc}") from exc
    if STAMP_GROUP not in compiled.groupindex:
        raise ValueError(
            f"time.regex {regex!r} has no group named {STAMP_GROUP}: write the time's part as (?P<{STAMP_GROUP}>...)"
        )


def _check_format(fmt: str) -> None:
    """`fmt` must read back what it writes of EXAMPLE_MOMENT, and its regex must find it."""
    example = EXAMPLE_MOMENT.strftime(fmt)
    pattern = format_regex(fmt)
    if not any(f"%{d}" in fmt for d in "HIMSdjmbByY"):
        raise ValueError(f"time.format {fmt!r} holds no date or time directive (such as %Y, %m, %d, %H, %M, %S)")
    try:
        read_format(example, fmt)
    except (ValueError, re.error) as exc:  # re.error: strptime's own regex of `fmt` (a directive twice)
        raise ValueError(f"time.format {fmt!r} cannot read its own example {example!r}: {exc}") from exc
    if re.fullmatch(pattern, example) is None:
        raise ValueError(f"time.format {fmt!r} cannot be found in its own example {example!r}")
