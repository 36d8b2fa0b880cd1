"""The time of one log line, in the styles SREs meet: what query_logs reads since/until by.

At the start of a line (an optional syslog `<PRI>` and RFC 5424 version first, or a `[`, or a
`ts=`/`time=`/`t=` key): ISO-8601 and its log variants (`2026-12-01 10:00:00,123`,
`2026/12/01 10:00:00`, nanoseconds, CRI and journald short-iso), syslog `Dec  1 10:00:00`, klog
`E1201 10:00:00.123456`, Android logcat `12-01 10:00:00.123`, Apache's error log
`[Tue Dec 01 10:00:00.123456 2026]`, HDFS `081109 203615`, Spark `17/06/09 20:10:40`, and
logback's time-only `10:00:00.123`. Inside a line: a JSON object's time key wherever it stands
(`time`, `ts`, `timestamp`, `@timestamp`, ...; ISO text, Go's default format or an epoch in
s/ms/µs/ns), a logfmt `ts=`/`time=` key after others, and the access log's
`[01/Dec/2026:10:00:00 +0000]` (nginx, Apache).

A service that declares its `time:` (config/policy/logtime.py: a strptime format, a regex with a
`stamp` group, an epoch in s or ms) has its lines read that way only (`declared`), each in the
same rules of year, day and zone as auto's styles.

Styles without a year (syslog, klog, logcat, a declared format without %Y) are in the year of
the file's last write (of now, for output without a file), or the year before when that would put
the line more than two days after that write (a December line read in January); time-only lines
are on the day their file was last written, or the day before if that day would put them after
the last write (output without a file: today, or yesterday if today would be ahead of now).
Times without an offset are in the service's time zone.
"""

from __future__ import annotations

import re
from datetime import date, datetime, time, timedelta, timezone, tzinfo
from typing import Final

from ...config.policy import STAMP_GROUP, LineTime, has_date, has_year, read_format
from .filters import Declared, Filters

STYLES: Final = (
    "ISO-8601 and its log forms (2026-12-01T10:00:00Z, '2026-12-01 10:00:00,123', 2026/12/01 10:00:00), "
    "syslog (Dec  1 10:00:00, with or without <PRI>, RFC 5424), klog (E1201 10:00:00.123456), "
    "Android logcat (12-01 10:00:00.123), Apache error ([Tue Dec 01 10:00:00 2026]), access logs "
    "([01/Dec/2026:10:00:00 +0000]), HDFS (081109 203615), Spark (17/06/09 20:10:40), logback "
    "time-only (10:00:00.123), JSON time keys anywhere in the line (ISO or epoch s/ms/µs/ns) and "
    "logfmt ts=/time="
)

_MON = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)"
_MONTHS: Final = {m: i for i, m in enumerate("Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split(), 1)}
_ISO = r"\d{4}[-/]\d\d[-/]\d\d[T ]\d\d:\d\d(?::\d\d(?:[.,]\d{1,9})?)?(?: ?(?:Z|[+-]\d\d(?::?\d\d)?))?"
_CLOCK = r"(?P<{p}h>\d\d):(?P<{p}m>\d\d):(?P<{p}s>\d\d)"

# Anchored at a line's start. Order matters only where two styles could both match; they cannot.
_PREFIX = re.compile(
    r"(?:<\d{1,3}>(?:1 )?)?"  # syslog PRI, and RFC 5424's version
    r'[\[{]?(?:"?(?:@?timestamp|time|ts|t)"?\s*[=:]\s*"?)?'
    r"(?:(?P<iso>" + _ISO + r")"
    r"|(?P<mon>"
    + _MON
    + r") {1,2}(?P<day>\d{1,2}) "
    + _CLOCK.format(p="")
    + r"|(?P<klog>[IWEF])(?P<kmo>\d\d)(?P<kd>\d\d) "
    + _CLOCK.format(p="k")
    + r"(?:\.(?P<kf>\d{1,6}))?"
    + r"|(?P<lmo>\d\d)-(?P<ld>\d\d) "
    + _CLOCK.format(p="l")
    + r"\.(?P<lf>\d{3})"
    + r"|(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (?P<amon>"
    + _MON
    + r") (?P<ad>\d\d) "
    + _CLOCK.format(p="a")
    + r"(?:\.(?P<af>\d{1,6}))? (?P<ay>\d{4})\]"
    + r"|(?P<hy>\d\d)(?P<hmo>\d\d)(?P<hd>\d\d) (?P<hh>\d\d)(?P<hm>\d\d)(?P<hs>\d\d) "
    + r"|(?P<sy>\d\d)/(?P<smo>\d\d)/(?P<sd>\d\d) "
    + _CLOCK.format(p="s")
    + r" "
    + r"|"
    + _CLOCK.format(p="t")
    + r"[.,](?P<tf>\d{3})(?= )"
    + r")"
)
# How far into a line a time key or an access log's bracket is looked for.
SEARCH_CHARS = 2_000
_JSON_TIME = re.compile(
    r'"(?:@timestamp|timestamp|time|ts|t|@t|date|datetime|eventTime|logtime|asctime|time_local)"\s*:\s*'
    r'(?:"(?P<text>[^"]{6,48})"|(?P<number>\d{9,20}(?:\.\d+)?))'
)
_LOGFMT_TIME = re.compile(r'(?:^|\s)(?:ts|time|t|timestamp)=(?P<q>"?)(?P<iso>' + _ISO + r")(?P=q)(?=\s|$)")
_ACCESS = re.compile(
    r"\[(?P<d>\d\d)/(?P<mon>" + _MON + r")/(?P<y>\d{4}):" + _CLOCK.format(p="") + r" (?P<z>[+-]\d{4})\]"
)
_GO_DEFAULT = re.compile(r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d{1,9})?) ([+-]\d{4})(?: \w+)?")


def stamp_at(text: str, pos: int, f: Filters) -> float | None:
    """Epoch seconds of the line starting at `pos`, or None when it has no time opsbot can read."""
    if f.declared is not None:
        return _declared_at(text, pos, f, f.declared)
    return _auto_at(text, pos, f)


def declared(spec: LineTime) -> Declared:
    """A service's `time:` made ready for reading lines (validated when the config was loaded)."""
    fmt = spec.format
    return Declared(
        pattern=re.compile(spec.pattern(), re.MULTILINE),  # `^` at each line's start, as searched
        format=fmt,
        scale=None if spec.epoch is None else {"s": 1.0, "ms": 1e3}[spec.epoch],
        dated=fmt is None or has_date(fmt),
        yeared=fmt is None or has_year(fmt),
        said=", ".join(f"{key} {value!r}" for key, value in spec.model_dump(exclude_none=True).items()),
    )


def understood(f: Filters) -> str:
    """The times `f` reads, for a note about lines without one."""
    return STYLES if f.declared is None else f"the service's time: {f.declared.said}"


def _declared_at(text: str, pos: int, f: Filters, how: Declared) -> float | None:
    end = text.find("\n", pos)
    found = how.pattern.search(text, pos, min(len(text) if end < 0 else end, pos + SEARCH_CHARS))
    if found is None or found[STAMP_GROUP] is None:
        return None
    stamp = found[STAMP_GROUP]
    if how.format is None and how.scale is None:
        return _auto_at(stamp, 0, f)
    try:
        if how.scale is not None:
            return float(stamp) / how.scale
        assert how.format is not None
        return _formatted(read_format(stamp, how.format), how, f)
    except (ValueError, OverflowError, OSError):  # found, but no time: 29 Feb of a year without one
        return None


def _formatted(moment: datetime, how: Declared, f: Filters) -> float:
    clock = moment.time()
    if not how.dated:
        return _dayless(clock, f)
    if not how.yeared:
        return _yearless(moment.month, moment.day, clock, f)
    return epoch(moment, f.zone)


def _auto_at(text: str, pos: int, f: Filters) -> float | None:
    try:
        found = _PREFIX.match(text, pos)
        if found is not None:
            return _prefixed(found, f)
        end = text.find("\n", pos)
        line = text[pos : (end if end >= 0 else len(text))][:SEARCH_CHARS]
        if line.startswith("{"):
            return _json_time(line, f)
        keyed = _LOGFMT_TIME.search(line)
        if keyed is not None:
            return iso_epoch(keyed["iso"], f.zone)
        access = _ACCESS.search(line)
        return _access_time(access) if access is not None else None
    except (ValueError, OverflowError, OSError):  # 2026-13-45 and the like: looks like a time, is not one
        return None


def iso_epoch(text: str, zone: tzinfo | None) -> float:
    """An ISO-8601 time as logs write it (a space before the offset, `,` for the fraction, `/`)."""
    clean = text.replace("/", "-").replace(",", ".")
    if " " in clean[11:]:
        clean = clean[:19] + clean[19:].replace(" ", "")
    return epoch(datetime.fromisoformat(clean), zone)


def epoch(moment: datetime, zone: tzinfo | None) -> float:
    """Epoch seconds of `moment`, read in `zone` when it names no offset itself."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=zone)
    # A naive datetime's timestamp() is local time, DST included: what syslog writes.
    return moment.timestamp()


def _prefixed(found: re.Match[str], f: Filters) -> float:
    g = found.groupdict()
    if g["iso"]:
        return iso_epoch(g["iso"], f.zone)
    if g["mon"]:
        return _yearless(_MONTHS[g["mon"]], int(g["day"]), _clock(g, ""), f)
    if g["klog"]:
        return _yearless(int(g["kmo"]), int(g["kd"]), _clock(g, "k", _micros(g["kf"])), f)
    if g["lmo"]:
        return _yearless(int(g["lmo"]), int(g["ld"]), _clock(g, "l", _micros(g["lf"])), f)
    if g["amon"]:
        clock = _clock(g, "a", _micros(g["af"]))
        return epoch(datetime.combine(date(int(g["ay"]), _MONTHS[g["amon"]], int(g["ad"])), clock), f.zone)
    if g["hy"]:
        month, day, hour, minute, second = (int(g[k] or 0) for k in ("hmo", "hd", "hh", "hm", "hs"))
        return epoch(datetime(2000 + int(g["hy"] or 0), month, day, hour, minute, second), f.zone)
    if g["sy"]:
        return epoch(datetime.combine(date(2000 + int(g["sy"]), int(g["smo"]), int(g["sd"])), _clock(g, "s")), f.zone)
    return _dayless(_clock(g, "t", _micros(g["tf"])), f)


def _clock(g: dict[str, str | None], p: str, micros: int = 0) -> time:
    """The time of day of the groups named `p` + h, m, s."""
    return time(int(g[p + "h"] or 0), int(g[p + "m"] or 0), int(g[p + "s"] or 0), micros)


def _micros(fraction: str | None) -> int:
    return int((fraction or "0").ljust(6, "0")[:6])


def _yearless(month: int, day: int, clock: time, f: Filters) -> float:
    # No year: the year of the last write (f.year), unless that puts the line after it (a December
    # line read in January). Two days of slack: a zone set wrong must not cost a line a year.
    latest = f.now if f.last_written is None else f.last_written
    when = epoch(datetime.combine(date(f.year, month, day), clock), f.zone)
    return when if when <= latest + 2 * 86400 else epoch(datetime.combine(date(f.year - 1, month, day), clock), f.zone)


def _dayless(clock: time, f: Filters) -> float:
    latest = f.now if f.last_written is None else f.last_written
    day = datetime.fromtimestamp(latest, f.zone).date()
    moment = datetime.combine(day, clock)
    when = epoch(moment, f.zone)
    return when if when <= latest + 60 else epoch(moment - timedelta(days=1), f.zone)


def _json_time(line: str, f: Filters) -> float | None:
    for found in _JSON_TIME.finditer(line):
        when = _number_time(found["number"]) if found["number"] else _text_time(found["text"], f)
        if when is not None:
            return when
    return None


def _number_time(number: str) -> float:
    """An epoch in seconds, milliseconds, microseconds or nanoseconds, told apart by size."""
    value = float(number)
    for scale in (1, 1e3, 1e6, 1e9):
        if value / scale < 1e11:  # before the year 5138
            return value / scale
    raise ValueError(f"{number} is no epoch")


def _text_time(text: str, f: Filters) -> float | None:
    if text.isdigit():
        return _number_time(text)
    go = _GO_DEFAULT.fullmatch(text)
    if go is not None:  # logrus and Go's time.String(): "2026-12-01 10:00:00.123456789 +0000 UTC"
        return iso_epoch(f"{go[1]}{go[2]}", f.zone)
    access = _ACCESS.fullmatch(f"[{text}]")
    if access is not None:
        return _access_time(access)
    try:
        return iso_epoch(text, f.zone)
    except ValueError:
        return None


def _access_time(found: re.Match[str]) -> float:
    zone = found["z"]
    offset = timedelta(hours=int(zone[1:3]), minutes=int(zone[3:5])) * (-1 if zone[0] == "-" else 1)
    day = date(int(found["y"]), _MONTHS[found["mon"]], int(found["d"]))
    moment = datetime.combine(day, _clock(found.groupdict(), ""))
    return moment.replace(tzinfo=timezone(offset)).timestamp()
