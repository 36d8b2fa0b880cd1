"""Log files for query_logs: discovery (globs, rotated siblings, newest data first), the safe
open (O_NOFOLLOW except for a path the operator wrote out, O_NONBLOCK, a regular file by fstat),
and block readers: plain files backwards, .gz forwards.

A log path written out in the policy (no glob) may be a symbolic link: it is the operator's word,
and is followed to a regular file only. Files found beside it by rotation or by a glob are not
followed: a link there is left out with a note. Directories above the file are not checked.
"""

from __future__ import annotations

import errno
import glob
import gzip
import os
import re
import stat
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Protocol

from tools.logs.filters import Filters
from tools.logs.stamps import stamp_at

MIB = 1024 * 1024
BLOCK_BYTES = MIB
# A "line" longer than this is cut into pieces rather than gathered whole into memory.
LONG_LINE_BYTES = 4 * MIB


# ---------------------------------------------------------------- files


@dataclass(frozen=True)
class LogFile:
    path: Path
    mtime: float
    size: int
    # Only a path the operator wrote out (no glob) may be a symbolic link; rotated siblings and
    # glob matches are opened with O_NOFOLLOW.
    follow: bool = False
    key: tuple[int, int] = (0, 0)  # (st_dev, st_ino) when listed: the file opened must be this one


# app.log.1, app.log.2.gz, app.log-20261128(.gz), app.log.2026-11-28_03-00 (Python's timed handler)
_ROTATION = re.compile(r"(?:\.(\d{1,4})|[.-](\d{4}-?\d\d-?\d\d(?:[-_T.]?\d\d(?:[-:.]?\d\d){0,2})?))?(\.gz)?")


def log_files(entries: Iterable[Path]) -> tuple[list[LogFile], list[str]]:
    """The regular files a service's `logs` entries name, each with its rotated siblings, newest
    data first; and what is wrong with each entry that names none."""
    found: dict[tuple[int, int], LogFile] = {}
    missing: list[str] = []
    for entry in entries:
        declared = not _has_magic(str(entry))
        files = []
        for path in _expand(entry):
            file = _regular_file(path, follow=declared and path == entry)
            if isinstance(file, str):
                missing.append(file)
            elif file is not None:
                files.append(file)
        if not files:
            what = "matches no file" if _has_magic(str(entry)) else "is not a regular file" if entry.exists() else ""
            missing.append(f"{entry} {what or 'does not exist'}")
        for file in files:
            found.setdefault(file[0], file[1])
    return _newest_first(list(found.values())), missing


def _regular_file(path: Path, follow: bool) -> tuple[tuple[int, int], LogFile] | str | None:
    """The file keyed by inode (a glob and a rotation may name it twice); None unless regular,
    since opening a FIFO would block; a note if it is a symbolic link that is not followed."""
    try:
        info = os.stat(path) if follow else os.lstat(path)
    except OSError:
        return None
    if stat.S_ISLNK(info.st_mode):
        return f"{path} is a symbolic link and was not read (only a log path written out in the policy may be one)"
    if not stat.S_ISREG(info.st_mode):
        return None
    key = (info.st_dev, info.st_ino)
    return key, LogFile(path, info.st_mtime, info.st_size, follow=follow, key=key)


def open_log(file: LogFile) -> int:
    """A read-only descriptor of `file`, which must still be the regular file that was listed.

    Non-blocking (a FIFO swapped in since would block a plain open forever), close-on-exec, and
    not through a symbolic link unless the operator wrote this very path out. Raises OSError."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if file.follow else os.O_NOFOLLOW)
    try:
        fd = os.open(file.path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP and not file.follow:
            raise OSError(errno.ELOOP, "it became a symbolic link, which is not followed") from exc
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, "it is no longer a regular file")
        if file.key != (0, 0) and (info.st_dev, info.st_ino) != file.key:
            raise OSError(errno.ESTALE, "it was replaced by another file since it was listed")
    except BaseException:
        os.close(fd)
        raise
    return fd


def _has_magic(text: str) -> bool:
    return any(char in text for char in "*?[")


def _expand(entry: Path) -> list[Path]:
    bases = [Path(p) for p in sorted(glob.glob(str(entry)))] if _has_magic(str(entry)) else [entry]
    return [rotated for base in bases for rotated in _with_rotations(base)]


def _with_rotations(base: Path) -> list[Path]:
    """`base` (if it exists) and the files beside it that rotating it made."""
    try:
        names = os.listdir(base.parent)
    except OSError:
        return []
    return [
        base.parent / name
        for name in names
        if name.startswith(base.name) and _ROTATION.fullmatch(name, len(base.name)) is not None
    ]


def _rotation_rank(path: Path) -> tuple[str, tuple[int, int]]:
    """(family, rank): files of one family sort newest first by rank (app.log, .1, .2.gz ...)."""
    for cut in range(len(path.name)):
        found = _ROTATION.fullmatch(path.name, cut) if cut else None
        if found is not None and found.group(0):
            number, date = found[1], found[2]
            if number is not None:
                return path.name[:cut], (1, int(number))
            if date is not None:
                return path.name[:cut], (1, -int(re.sub(r"\D", "", date)))
            return path.name[:cut], (1, 0)
    return path.name, (0, 0)


def _newest_first(files: list[LogFile]) -> list[LogFile]:
    """Newest data first: by modification time, except that within a rotation family the
    rotation number wins (a touched app.log.3 is still older than app.log.1)."""
    families: dict[tuple[Path, str], list[tuple[tuple[int, int], LogFile]]] = {}
    for file in files:
        family, rank = _rotation_rank(file.path)
        families.setdefault((file.path.parent, family), []).append((rank, file))
    keyed: list[tuple[float, tuple[int, int], str, LogFile]] = []
    for members in families.values():
        newest = float("inf")
        for rank, file in sorted(members, key=lambda m: m[0]):
            newest = min(newest, file.mtime)
            keyed.append((-newest, rank, str(file.path), file))
    return [file for *_, file in sorted(keyed, key=lambda k: k[:3])]


# ---------------------------------------------------------------- reading


class _Stream(Protocol):
    def read1(self, size: int = -1, /) -> bytes: ...


def _decode(data: bytes) -> str:
    text = data.decode("utf-8", errors="replace")
    return text.replace("\r\n", "\n") if "\r" in text else text


def backwards(handle: IO[bytes], end: int) -> Iterator[tuple[str, int]]:
    """Blocks of whole lines from `end` towards the start, newest first, with the bytes read for each."""
    position, carry, unreported = end, b"", 0
    while position > 0:
        size = min(BLOCK_BYTES, position)
        position -= size
        handle.seek(position)
        data = handle.read(size) + carry
        unreported += size
        if position > 0:
            cut = data.find(b"\n")
            if cut == -1 and len(data) < LONG_LINE_BYTES:
                carry = data
                continue
            carry, data = (data[:cut], data[cut + 1 :]) if cut != -1 else (b"", data)
        else:
            carry = b""
        if data.endswith(b"\n"):
            data = data[:-1]
        yield _decode(data), unreported
        unreported = 0


DAMAGE = (EOFError, gzip.BadGzipFile, zlib.error)


def forwards(stream: _Stream) -> Iterator[tuple[str, int]]:
    """Blocks of whole lines from the start, oldest first, with the bytes read for each. A
    damaged stream (a .gz cut short) yields what came before the damage, then raises."""
    carry, unreported, damage = b"", 0, None
    while damage is None:
        block, damage = _read_block(stream)
        if not block:
            break
        data = carry + block
        unreported += len(block)
        cut = data.rfind(b"\n")
        if cut == -1 and len(data) < LONG_LINE_BYTES:
            carry = data
            continue
        carry, data = (data[cut + 1 :], data[:cut]) if cut != -1 else (b"", data)
        yield _decode(data), unreported
        unreported = 0
    if carry or unreported:
        yield _decode(carry), unreported
    if damage is not None:
        raise damage


def _read_block(stream: _Stream) -> tuple[bytes, Exception | None]:
    # read1 a piece at a time: read(n) drops everything it had decompressed when it hits damage.
    pieces: list[bytes] = []
    size = 0
    try:
        while size < BLOCK_BYTES and (piece := stream.read1(BLOCK_BYTES - size)):
            pieces.append(piece)
            size += len(piece)
    except DAMAGE as exc:
        return b"".join(pieces), exc
    return b"".join(pieces), None


def end_before(handle: IO[bytes], size: int, f: Filters) -> int:
    """An offset after which every line is later than `until`, found by bisection on the
    timestamps (about 20 small reads for a gigabyte) instead of reading all the newer lines."""
    assert f.until is not None
    low, high = 0, size
    while high - low > BLOCK_BYTES:
        found = _stamp_after(handle, (low + high) // 2, f)
        if found is None or found[0] >= high:
            break
        offset, when = found
        if when > f.until:
            high = offset
        else:
            low = offset + 1
    return high


def _stamp_after(handle: IO[bytes], at: int, f: Filters) -> tuple[int, float] | None:
    """The offset and time of the first timed line starting after `at`."""
    handle.seek(at)
    data = handle.read(64 * 1024)
    offset = data.find(b"\n") + 1
    while 0 < offset < len(data):
        end = data.find(b"\n", offset)
        if end == -1:
            return None
        when = stamp_at(data[offset : min(end, offset + 80)].decode("utf-8", errors="replace"), 0, f)
        if when is not None:
            return at + offset, when
        offset = end + 1
    return None
