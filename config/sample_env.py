"""The bundled sample environment as opsbot runs on it: a copy whose logs end a few minutes ago.

The shipped sample (config/sample/) is a set of templates with fixed dates: an installed package
may be read-only, and tests rely on those files as they are. Without OPSBOT_CONFIG, `opsbot` loads
a copy of the whole sample directory instead, rendered into the user's cache, in which every log
timestamp is shifted by one offset so that the newest line is a few minutes old and every line
keeps its distance to every other (checkout's 502s still line up with payments' pool errors).
`--config config/sample/opsbot.yaml` still reads the shipped files as they are.

A copy is reused while it is less than MAX_AGE_S old. It is written into a temporary directory
and renamed into place, so a process never sees half of one; two processes rendering at once
each end up with a whole copy.
"""

from __future__ import annotations

import gzip
import hashlib
import math
import os
import re
import shutil
import stat
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from pathlib import Path
from typing import NamedTuple

LEAD_S = 120  # the newest line is this much (at most a minute more) older than the copy
MAX_AGE_S = 3600  # a copy this old is rendered again: `since=2h` in README still finds its errors
KEEP_S = 86400  # older copies are removed (a process still running on one had a day)
LOGS = "logs"  # the sample directory's log files, rotated siblings included; the rest is copied as it is
RENDERING = "1"  # part of the cache key: change it when rendering changes, so old copies are not reused

_MONTHS = "Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split()
# A line's own timestamp, in the forms query_logs reads at a line start (tools/logs/):
# ISO-8601 with T or a space, '-' or '/', optional seconds, fraction and offset, optionally bracketed
# or behind ts=/t=/time=/"@timestamp": or a syslog <PRI>, and syslog's 'Nov 29 03:07:32' (the
# other styles query_logs reads appear in no sample log; tests/test_sample_env.py fails if one
# comes to and is not moved). Only the line's own stamp moves:
# a date inside a message (a certificate's expiry) says something and stays.
_STAMP = re.compile(
    r'^(?P<pre>(?:<\d{1,3}>(?:1 )?)?[\[{]?(?:"?(?:@?timestamp|time|ts|t)"?\s*[=:]\s*"?)?)'
    r"(?:(?P<Y>\d{4})(?P<s1>[-/])(?P<M>\d\d)(?P<s2>[-/])(?P<D>\d\d)(?P<T>[T ])(?P<h>\d\d):(?P<m>\d\d)"
    r"(?::(?P<s>\d\d)(?P<frac>[.,]\d{1,9})?)?(?P<zone> ?(?:Z|[+-]\d\d(?::?\d\d)?))?"
    r"|(?P<mon>" + "|".join(_MONTHS) + r")(?P<gap> {1,2})(?P<day>\d{1,2}) (?P<sh>\d\d):(?P<sm>\d\d):(?P<ss>\d\d))",
    re.M,
)


@dataclass(frozen=True)
class _Stamp:
    moment: datetime  # aware; a stamp without an offset is this host's local time, as query_logs reads it
    zone: tzinfo | None  # None: written without an offset, so written back in local time


def prepare_sample(source: Path, version: str, *, now: float | None = None, cache_home: Path | None = None) -> Path:
    """The opsbot.yaml of a re-dated copy of `source`'s directory: a fresh one reused, else one rendered.

    Tried in turn: the user's cache ($XDG_CACHE_HOME or ~/.cache, or `cache_home`), a directory of
    this user's own in the temporary directory, a private temporary directory. `source` itself
    (fixed dates) only when none of them can be written.
    """
    now = time.time() if now is None else now
    digest = _digest(source.parent)
    for root in _roots(cache_home):
        key_dir = root / "opsbot" / "sample" / f"{_safe(version)}-{digest}"
        try:
            copy = _fresh(key_dir, now, source.name) or _render(source, key_dir, now)
        except OSError:
            continue  # not writable, full, gone: the next place
        _clean(key_dir, now, keep=copy.parent)
        return copy
    return source


def _roots(cache_home: Path | None) -> Iterator[Path]:
    if cache_home is not None:
        yield cache_home
    else:
        xdg = os.environ.get("XDG_CACHE_HOME", "")
        if os.path.isabs(xdg):  # the XDG spec: a relative value is ignored
            yield Path(xdg)
        else:
            try:
                yield Path.home() / ".cache"
            except RuntimeError:  # no HOME and no passwd entry
                pass
    shared = Path(tempfile.gettempdir()) / f"opsbot-{os.getuid()}"
    if _own_private_dir(shared):
        yield shared
    try:
        yield Path(tempfile.mkdtemp(prefix="opsbot-sample-"))  # never reused: a copy for this process
    except OSError:
        pass


def _own_private_dir(path: Path) -> bool:
    """`path` is (or now is) a real directory of this user that nobody else may write.

    The temporary directory is shared: a directory someone else made there could hand opsbot
    logs of theirs.
    """
    try:
        path.mkdir(mode=0o700, exist_ok=True)
        info = path.lstat()
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and not info.st_mode & 0o022


def _fresh(key_dir: Path, now: float, config_name: str) -> Path | None:
    """The newest whole copy under MAX_AGE_S old (one from the future is not: its lines would be)."""
    try:
        entries = list(os.scandir(key_dir))
    except FileNotFoundError:
        return None
    best: tuple[int, str] | None = None
    for entry in entries:
        anchor = _anchor(entry.name)
        if anchor is not None and 0 <= now - anchor < MAX_AGE_S and (best is None or (anchor, entry.name) > best):
            best = (anchor, entry.name)
    if best is None:
        return None
    config = key_dir / best[1] / config_name
    return config if config.is_file() else None


def _anchor(name: str) -> int | None:
    """When a copy was rendered, from its name (`<epoch>-<random>`); None for a temporary one (`.tmp-...`)."""
    head = name.partition("-")[0]
    return int(head) if head.isdigit() else None


def _render(source: Path, key_dir: Path, now: float) -> Path:
    key_dir.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".tmp-", dir=key_dir))
    try:
        _copy_tree(source.parent, work, now)
        # Named after the moment it was rendered for; the random part keeps two renders apart.
        final = key_dir / f"{int(now)}-{work.name.removeprefix('.tmp-')}"
        os.rename(work, final)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return final / source.name


def _copy_tree(src: Path, dst: Path, now: float) -> None:
    files = list(_files(src))
    logs = {rel: _read_log(src / rel) for rel in files if rel.parts[0] == LOGS}
    stamps = [_stamp(m, now) for text in logs.values() for m in _STAMP.finditer(text)]
    moments = [s.moment for s in stamps if s is not None]
    # One offset for every file, in whole minutes so that a stamp without seconds moves exactly too.
    shift = 0.0 if not moments else math.floor((now - LEAD_S - max(moments).timestamp()) / 60) * 60
    for rel in files:
        target = dst / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if (src / rel).is_symlink():
            os.symlink(os.readlink(src / rel), target)  # a link stays a link: read_config refuses it alike
        elif rel in logs:
            text, newest = _redate(logs[rel], shift, now)
            data = text.encode("utf-8", "surrogateescape")
            target.write_bytes(gzip.compress(data, mtime=int(newest or now)) if rel.suffix == ".gz" else data)
            if newest is not None:
                # query_logs skips a file last written before `since`: written when its newest line was.
                os.utime(target, (newest, newest))
        else:
            shutil.copyfile(src / rel, target)  # its own inode: read_config refuses a file with two links


def _files(root: Path) -> Iterator[Path]:
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if "__pycache__" in rel.parts or path.is_dir() and not path.is_symlink():
            continue
        yield rel


def _read_log(path: Path) -> str:
    data = path.read_bytes()
    if path.suffix == ".gz":
        data = gzip.decompress(data)
    return data.decode("utf-8", "surrogateescape")  # whatever bytes a line holds are written back as they were


class Redated(NamedTuple):
    text: str  # every stamp moved by the shift
    newest: float | None  # the newest stamp written, in epoch seconds; None if there was none


def _redate(text: str, shift: float, now: float) -> Redated:
    newest: float | None = None

    def moved(found: re.Match[str]) -> str:
        nonlocal newest
        stamp = _stamp(found, now)
        if stamp is None:
            return found[0]
        moment = stamp.moment + timedelta(seconds=shift)
        newest = max(newest or moment.timestamp(), moment.timestamp())
        return found["pre"] + _written(found, moment.astimezone(stamp.zone) if stamp.zone else moment.astimezone())

    return Redated(_STAMP.sub(moved, text), newest)


def _stamp(found: re.Match[str], now: float) -> _Stamp | None:
    try:
        if found["Y"]:
            zone = _zone(found["zone"])
            y, mo, d, h, mi = (int(found[k]) for k in ("Y", "M", "D", "h", "m"))
            micros = int((found["frac"] or ".0")[1:].ljust(6, "0")[:6])
            written = datetime(y, mo, d, h, mi, int(found["s"] or 0), micros, tzinfo=zone)
            moment = written if zone else written.astimezone()
            return _Stamp(moment, zone)
        return _Stamp(_syslog(found, now), None)
    except (ValueError, OverflowError):  # 2026-13-45: looks like a time, is not one; it stays as it is
        return None


def _zone(text: str | None) -> tzinfo | None:
    if not text:
        return None
    text = text.lstrip(" ")
    if text == "Z":
        return UTC
    digits = text[1:].replace(":", "")
    offset = timedelta(hours=int(digits[:2]), minutes=int(digits[2:] or 0))
    return timezone(-offset if text[0] == "-" else offset)


def _syslog(found: re.Match[str], now: float) -> datetime:
    # Syslog has no year: this one, unless that puts the line after now (as query_logs reads it).
    # A 29 February not in this year's calendar is looked for in the years before.
    parts = (_MONTHS.index(found["mon"]) + 1, int(found["day"]), int(found["sh"]), int(found["sm"]), int(found["ss"]))
    year = datetime.fromtimestamp(now).year
    for back in range(8):
        try:
            moment = datetime(year - back, *parts).astimezone()
        except ValueError:
            continue
        if moment.timestamp() <= now + 2 * 86400:
            return moment
    raise ValueError("no year holds this day")


def _written(found: re.Match[str], m: datetime) -> str:
    """`m` written as the stamp `found` was: same separators, precision, fraction and offset text."""
    if found["Y"]:
        text = f"{m.year:04d}{found['s1']}{m.month:02d}{found['s2']}{m.day:02d}{found['T']}{m.hour:02d}:{m.minute:02d}"
        if found["s"] is not None:
            text += f":{m.second:02d}{found['frac'] or ''}"  # the shift is whole minutes: the fraction stays
        return text + (found["zone"] or "")
    # 'Nov  9' (syslog's own) and 'Nov 09' keep the day two places wide; 'Nov 9' keeps it one.
    if found["day"].startswith("0"):
        day = f"{m.day:02d}"
    elif len(found["gap"]) + len(found["day"]) == 3:
        day = f"{m.day:>2}"
    else:
        day = str(m.day)
    return f"{_MONTHS[m.month - 1]} {day} {m.hour:02d}:{m.minute:02d}:{m.second:02d}"


def _digest(root: Path) -> str:
    """What the copy is made of: the sample's files, their names and how they are rendered."""
    h = hashlib.blake2b(RENDERING.encode(), digest_size=6)
    for rel in _files(root):
        path = root / rel
        h.update(rel.as_posix().encode() + b"\0")
        h.update(os.readlink(path).encode() if path.is_symlink() else path.read_bytes())
        h.update(b"\0")
    return h.hexdigest()


def _safe(version: str) -> str:
    return re.sub(r"[^A-Za-z0-9._+]", "_", version)


def _clean(key_dir: Path, now: float, keep: Path) -> None:
    """Copies older than KEEP_S, temporary directories a crashed render left, samples of other versions."""
    sample_dir = key_dir.parent
    try:
        for entry in os.scandir(key_dir):
            path = Path(entry.path)
            anchor = _anchor(entry.name)
            old = anchor < now - KEEP_S if anchor is not None else entry.stat().st_mtime < now - MAX_AGE_S
            if old and path != keep:
                shutil.rmtree(path, ignore_errors=True)
        for entry in os.scandir(sample_dir):
            if entry.path != str(key_dir) and entry.stat().st_mtime < now - KEEP_S:
                shutil.rmtree(entry.path, ignore_errors=True)
    except OSError:
        pass  # someone else cleaning at the same time, or a read-only cache: nothing lost
