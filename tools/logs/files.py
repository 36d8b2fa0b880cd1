"""Log files for query_logs: discovery (globs, rotated siblings, newest data first), the safe
open (O_NOFOLLOW except for a path the operator wrote out, O_NONBLOCK, a regular file by fstat),
and block readers: plain files backwards, .gz forwards; for a search of the raw bytes, plain files
backwards in large chunks, and the stretches of lines around what the search finds.

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
from dataclasses import KW_ONLY, dataclass
from pathlib import Path
from typing import IO, Any, NamedTuple, Protocol

from ..span import Span
from .entries import ENTRY_REACH, Grouping, Modes
from .filters import Filters
from .stamps import SEARCH_CHARS, stamp_at

MIB = 1024 * 1024
BLOCK_BYTES = MIB
# A "line" longer than this is cut into pieces rather than gathered whole into memory.
LONG_LINE_BYTES = 4 * MIB
# The raw search reads this much at a time into one reused buffer: a read and a search per chunk
# cost little beside the chunk's bytes, and 16 MiB stays below the size at which a fresh buffer
# per read (32 MiB and up) doubled the time of a gigabyte (page faults on new memory).
CHUNK_BYTES = 16 * MIB
# What the raw search gives the matcher on each side of a match: many times a private key or a
# Kubernetes Secret, whose lines the rules that span lines need together. Not the half block a
# block gave: a word every megabyte or so would then have most of a file redacted (a regex in
# the bench: 388 ms for 208 MB with half a block, 111 ms with this).
CONTEXT_BYTES = 64 * 1024


# ---------------------------------------------------------------- files


class FileId(NamedTuple):
    """Which file a path named when it was listed: a glob and a rotation may name one file twice,
    and the file opened later must still be this one."""

    device: int  # st_dev
    inode: int  # st_ino


_UNLISTED = FileId(0, 0)


@dataclass(frozen=True)
class LogFile:
    path: Path
    mtime: float
    size: int
    # Only a path the operator wrote out (no glob) may be a symbolic link; rotated siblings and
    # glob matches are opened with O_NOFOLLOW.
    follow: bool = False
    key: FileId = _UNLISTED  # when listed: the file opened must be this one


# app.log.1, app.log.2.gz, app.log-20261128(.gz), app.log.2026-11-28_03-00 (Python's timed handler)
_ROTATION = re.compile(r"(?:\.(\d{1,4})|[.-](\d{4}-?\d\d-?\d\d(?:[-_T.]?\d\d(?:[-:.]?\d\d){0,2})?))?(\.gz)?")


class LogFiles(NamedTuple):
    files: list[LogFile]  # newest data first
    missing: list[str]  # what is wrong with each entry that names no file, or names a link not followed


def log_files(entries: Iterable[Path]) -> LogFiles:
    """The regular files a service's `logs` entries name, each with its rotated siblings, newest
    data first; and what is wrong with each entry that names none."""
    found: dict[FileId, LogFile] = {}
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
            found.setdefault(file.key, file)
    return LogFiles(_newest_first(list(found.values())), missing)


def _regular_file(path: Path, follow: bool) -> LogFile | str | None:
    """The file with its FileId (a glob and a rotation may name it twice); None unless regular,
    since opening a FIFO would block; a note if it is a symbolic link that is not followed."""
    try:
        info = os.stat(path) if follow else os.lstat(path)
    except OSError:
        return None
    if stat.S_ISLNK(info.st_mode):
        return f"{path} is a symbolic link and was not read (only a log path written out in the policy may be one)"
    if not stat.S_ISREG(info.st_mode):
        return None
    return LogFile(path, info.st_mtime, info.st_size, follow=follow, key=FileId(info.st_dev, info.st_ino))


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
        if file.key != _UNLISTED and FileId(info.st_dev, info.st_ino) != file.key:
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


class Rotation(NamedTuple):
    """Where a file stands among its rotations: files of one family sort newest first by rank
    (app.log, .1, .2.gz ...)."""

    family: str  # the name rotation started from: app.log
    rank: tuple[int, int]  # (0, 0) for the file itself, (1, n) for its rotation n, (1, -date) for a dated one


def _rotation(path: Path) -> Rotation:
    for cut in range(len(path.name)):
        found = _ROTATION.fullmatch(path.name, cut) if cut else None
        if found is not None and found.group(0):
            number, date = found[1], found[2]
            if number is not None:
                return Rotation(path.name[:cut], (1, int(number)))
            if date is not None:
                return Rotation(path.name[:cut], (1, -int(re.sub(r"\D", "", date))))
            return Rotation(path.name[:cut], (1, 0))
    return Rotation(path.name, (0, 0))


def _newest_first(files: list[LogFile]) -> list[LogFile]:
    """Newest data first: by modification time, except that within a rotation family the
    rotation number wins (a touched app.log.3 is still older than app.log.1)."""
    families: dict[tuple[Path, str], list[tuple[tuple[int, int], LogFile]]] = {}
    for file in files:
        family, rank = _rotation(file.path)
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


def decode(data: bytes | bytearray) -> str:
    text = data.decode("utf-8", errors="replace")
    return text.replace("\r\n", "\n") if "\r" in text else text


def backwards(handle: IO[bytes], end: int, f: Filters) -> Iterator[tuple[str, int, Grouping]]:
    """Blocks of whole entries from `end` towards the start, newest first, with the bytes read for
    each and how their lines group: a block's leading lines that continue an entry (entries.py)
    are given to the block before."""
    modes = Modes(f)
    position, carry, unreported, at_end = end, b"", 0, True
    follow: str | None = None  # whole lines of the newer block that end this block's last entry
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
        # Only the newest read ends with the file's last newline; the others end with the carry,
        # the start of a line of the newer block, which may be empty.
        lines = bool(data) or not at_end
        if at_end and data.endswith(b"\n"):
            data = data[:-1]
        at_end = False
        text = "\n".join(part for part in (decode(data) if lines else None, follow) if part is not None)
        if not lines and follow is None and position > 0:
            continue
        follow = None
        grouping = modes.of(text)
        if position > 0:
            skip = grouping.first_start(text)
            if skip > len(text):  # every line continues an entry older than this block
                follow = text
                continue
            follow, text = (text[: skip - 1] if skip else None), text[skip:]
        yield text, unreported, grouping
        unreported = 0


@dataclass(frozen=True)
class Chunk:
    """Whole entries of raw bytes, `data[start:stop]` (no newline at either end), the bytes read
    for them, and how their lines group. `data` is the reader's buffer: valid until the next
    chunk is asked for."""

    data: bytearray
    start: int
    _: KW_ONLY
    stop: int
    size: int
    grouping: Grouping  # chosen by the reader (entries.Modes)

    def text(self, start: int, stop: int) -> str:
        """The lines of `data[start:stop]` as a block of text, as `backwards` gives them: decoded,
        CRLF made LF. The newline after `stop` is decoded with them (so a CR before it goes too),
        then dropped."""
        text = decode(self.data[start : stop + 1] if stop < self.stop else self.data[start:stop])
        return text[:-1] if stop < self.stop and text.endswith("\n") else text

    def continues(self, start: int) -> bool:
        """Whether the line at `start` continues the entry above it."""
        end = self.data.find(b"\n", start, self.stop)
        return self.grouping.continues(decode(self.data[start : self.stop if end == -1 else end]), 0)

    def entry_start(self, start: int) -> int:
        """The start of the entry holding the line at `start`, within ENTRY_REACH before it."""
        floor = max(self.start, start - ENTRY_REACH)
        while start > floor and self.continues(start):
            above = self.data.rfind(b"\n", self.start, start - 1)
            start = self.start if above == -1 else above + 1
        return start

    def entry_end(self, stop: int) -> int:
        """The end of the entry holding the line that ends at `stop`, within ENTRY_REACH after it."""
        ceiling = min(self.stop, stop + ENTRY_REACH)
        while stop < ceiling and self.continues(stop + 1):
            below = self.data.find(b"\n", stop + 1, self.stop)
            stop = self.stop if below == -1 else below
        return stop


# How much of a chunk is decoded to tell whether its lines have times (entries.Grouping.of).
_PROBE_BYTES = 256 * 1024


def _grouping(data: bytearray, start: int, stop: int, modes: Modes) -> Grouping:
    return modes.of(decode(data[start : min(stop, start + _PROBE_BYTES)]))


def raw_backwards(handle: IO[bytes], end: int, budget: int, f: Filters) -> Iterator[Chunk]:
    """Chunks of whole entries from `end` towards the start, newest first, as raw bytes read into
    one buffer: a gigabyte goes through CHUNK_BYTES of memory. At most `budget` bytes are read
    (a line cut by that edge is left out). A line that does not fit is cut into pieces, as
    `backwards` cuts one of LONG_LINE_BYTES, and a chunk's leading lines that continue an entry
    go with the chunk before (up to LONG_LINE_BYTES of them). A file that shrinks under the read
    (copytruncate) ends the chunks: what is left of it is not the data that was listed."""
    buffer = bytearray(CHUNK_BYTES + LONG_LINE_BYTES)
    view = memoryview(buffer)
    modes = Modes(f)
    fd = handle.fileno()
    floor = max(0, end - budget)
    position, carry, unreported, at_end = end, b"", 0, True
    while position > floor:
        size = min(CHUNK_BYTES, position - floor)
        position -= size
        if os.preadv(fd, [view[:size]], position) != size:
            return
        unreported += size
        if len(carry) > LONG_LINE_BYTES:  # the end of a line longer than that: a piece of its own
            yield Chunk(
                bytearray(carry), 0, stop=len(carry), size=0, grouping=_grouping(bytearray(carry), 0, len(carry), modes)
            )
            carry = b""
        length = size + len(carry)
        buffer[size:length] = carry
        start = 0
        # Only the newest chunk ends with the file's last newline; the others end with the carry,
        # the start of a line of the newer chunk, which may be empty.
        stop = length - 1 if at_end and length and buffer[length - 1] == 0x0A else length
        at_end = False
        grouping = _grouping(buffer, 0, stop, modes)
        if position > 0:
            cut = buffer.find(b"\n", 0, length)
            if cut == -1 and length < LONG_LINE_BYTES:
                carry = bytes(view[:length])  # one line so far: its start is further back
                continue
            start = cut + 1 if cut != -1 else 0
            start = _first_entry(Chunk(buffer, start, stop=stop, size=0, grouping=grouping), LONG_LINE_BYTES - start)
            if start > stop and length < LONG_LINE_BYTES:  # every line continues an older entry
                carry = bytes(view[:stop])
                continue
            start = min(start, stop)
            carry = bytes(view[: max(start - 1, 0)]) if start else b""
        else:
            carry = b""
        yield Chunk(buffer, start, stop=stop, size=unreported, grouping=grouping)
        unreported = 0
    if unreported:  # the budget ended inside a line, which is left out: its bytes were read
        yield Chunk(buffer, 0, stop=0, size=unreported, grouping=Grouping(f, timed=False))


def _first_entry(chunk: Chunk, reach: int) -> int:
    """Where the first line of `chunk` that starts an entry begins: chunk.start when its first line
    does, past chunk.stop when none does, chunk.start past `reach` bytes (the entry is split)."""
    start = chunk.start
    while start <= chunk.stop and chunk.continues(start):
        if start - chunk.start > reach:
            return chunk.start
        below = chunk.data.find(b"\n", start, chunk.stop)
        start = chunk.stop + 1 if below == -1 else below + 1
    return start


def windows(chunk: Chunk, pattern: Any, begin: int) -> list[Span]:
    """The stretches of whole entries of `chunk` within CONTEXT_BYTES (or half a
    block, if blocks are smaller) of each place the compiled bytes `pattern` is found from
    `begin` on, oldest first, none longer than 4 BLOCK_BYTES but for a long entry. A match in a
    line longer than LONG_LINE_BYTES gets that much of the line around it, as `backwards` cuts
    such a line into pieces: not the whole chunk (20 MiB, decoded and redacted several times over)."""
    data, reach = chunk.data, min(CONTEXT_BYTES, BLOCK_BYTES // 2)
    found: list[Span] = []
    match = pattern.search(data, begin, chunk.stop)
    while match is not None:
        at = match.start()
        piece = _long_line_piece(chunk, at, match.end())
        if piece is not None:
            start, stop = piece
        else:
            start = max(chunk.start, data.rfind(b"\n", chunk.start, max(chunk.start, at - reach)) + 1)
            start = chunk.entry_start(start)
            stop = data.find(b"\n", min(chunk.stop, at + reach), chunk.stop)
            stop = chunk.entry_end(chunk.stop if stop == -1 else stop)
        if found and start <= found[-1].end:
            if stop - found[-1].start <= 4 * BLOCK_BYTES:
                found[-1] = Span(found[-1].start, stop)
            else:
                found.append(Span(found[-1].end + 1, stop))
        else:
            found.append(Span(start, stop))
        match = pattern.search(data, stop + 1, chunk.stop) if stop < chunk.stop else None
    return found


def _long_line_piece(chunk: Chunk, at: int, end: int) -> Span | None:
    """LONG_LINE_BYTES of the line holding `data[at:end]` around it, when the line is longer than
    that; None otherwise."""
    data = chunk.data
    line_start = max(chunk.start, data.rfind(b"\n", chunk.start, at) + 1)
    line_stop = data.find(b"\n", end, chunk.stop)
    line_stop = chunk.stop if line_stop == -1 else line_stop
    if line_stop - line_start <= LONG_LINE_BYTES:
        return None
    start = max(line_start, min(at - LONG_LINE_BYTES // 2, line_stop - LONG_LINE_BYTES))
    return Span(start, min(line_stop, start + LONG_LINE_BYTES))


def pieces(chunk: Chunk) -> list[Span]:
    """The whole chunk as stretches of whole entries of about BLOCK_BYTES, oldest first."""
    found: list[Span] = []
    start = chunk.start
    while start < chunk.stop:
        stop = chunk.data.find(b"\n", min(chunk.stop, start + BLOCK_BYTES), chunk.stop)
        stop = chunk.entry_end(chunk.stop if stop == -1 else stop)
        found.append(Span(start, stop))
        start = stop + 1
    return found


DAMAGE = (EOFError, gzip.BadGzipFile, zlib.error)


def forwards(stream: _Stream, f: Filters) -> Iterator[tuple[str, int, Grouping]]:
    """Blocks of whole entries from the start, oldest first, with the bytes read for each and how
    their lines group: a block's last entry waits for the next block, whose first lines may
    continue it. A damaged stream (a .gz cut short) yields what came before the damage, then raises."""
    modes = Modes(f)
    carry, unreported, damage = b"", 0, None
    held: str | None = None  # the last entry of the block before
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
        text = decode(data) if held is None else f"{held}\n{decode(data)}"
        grouping = modes.of(text)
        last = grouping.last_start(text)
        held, text = text[last:], text[: max(last - 1, 0)]
        if last:
            yield text, unreported, grouping
            unreported = 0
    rest = "\n".join(part for part in (held, decode(carry) if carry else None) if part is not None)
    if rest or unreported:
        yield rest, unreported, modes.of(rest)
    if damage is not None:
        raise damage


class Block(NamedTuple):
    data: bytes  # up to BLOCK_BYTES: what could be read
    damage: Exception | None  # one of DAMAGE, which ended the read


def _read_block(stream: _Stream) -> Block:
    # read1 a piece at a time: read(n) drops everything it had decompressed when it hits damage.
    pieces: list[bytes] = []
    size = 0
    try:
        while size < BLOCK_BYTES and (piece := stream.read1(BLOCK_BYTES - size)):
            pieces.append(piece)
            size += len(piece)
    except DAMAGE as exc:
        return Block(b"".join(pieces), exc)
    return Block(b"".join(pieces), None)


def end_before(handle: IO[bytes], size: int, f: Filters) -> int:
    """An offset after which every line is later than `until`, found by bisection on the
    timestamps (about 20 small reads for a gigabyte) instead of reading all the newer lines."""
    assert f.until is not None
    low, high = 0, size
    while high - low > BLOCK_BYTES:
        found = _stamp_after(handle, (low + high) // 2, f)
        if found is None or found.offset >= high:
            break
        if found.when > f.until:
            high = found.offset
        else:
            low = found.offset + 1
    return high


class TimedLine(NamedTuple):
    offset: int  # where the line starts in the file
    when: float  # its time, in epoch seconds


def _stamp_after(handle: IO[bytes], at: int, f: Filters) -> TimedLine | None:
    """The first timed line starting after `at`."""
    handle.seek(at)
    data = handle.read(64 * 1024)
    offset = data.find(b"\n") + 1
    while 0 < offset < len(data):
        end = data.find(b"\n", offset)
        if end == -1:
            return None
        # A declared time may stand after a prefix (a file name): the line up to where a time is looked for.
        when = stamp_at(data[offset : min(end, offset + SEARCH_CHARS)].decode("utf-8", errors="replace"), 0, f)
        if when is not None:
            return TimedLine(at + offset, when)
        offset = end + 1
    return None
