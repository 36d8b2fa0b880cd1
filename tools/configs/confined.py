"""The confined walk of read_config: files and listings of a config root, and nothing outside it.

Confinement does not rest on path strings. The walk starts from a descriptor of the root and
opens one name at a time beneath the descriptor of the directory before it, never following a
symbolic link (`O_NOFOLLOW`, `dir_fd`), so a link or a directory swapped in between a check and
an open is refused rather than followed: there is no separate check to race. `..` is refused in
the request in every spelling; with `follow_symlinks` a link's target is walked the same way, one
name at a time, and its `..` may climb back only as far as the root. The file finally opened must
be a regular file (no FIFO, device or socket is ever opened for reading) with one hard link
unless the root allows more (checked on the descriptor opened, so no swap can race it), is opened
non-blocking and is read up to the root's byte cap.
"""

from __future__ import annotations

import errno
import os
import stat
import unicodedata
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import NamedTuple
from urllib.parse import unquote

from ...config.policy import ConfigRoot, control_character

MAX_PATH_CHARS = 1024
MAX_LINK_HOPS = 40  # as the kernel's own limit: a loop of links ends, it does not spin
LIST_FILES = 200
LIST_VISITS = 5_000
LIST_DEPTH = 8

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
# The root's own path is the operator's word and may itself be a link; non-blocking so that a
# FIFO declared as a root cannot hang the open.
_ROOT = os.O_RDONLY | os.O_DIRECTORY | os.O_NONBLOCK | os.O_CLOEXEC

_PATH_HINT = "give a path relative to the root, as read_config without path lists them"
_LIST_HINT = "read_config without path lists the files that can be read"
_SECRET_HINT = "it is never shown; ask someone with access to the host for the value you need"


class Refused(Exception):
    """The request would leave the root or read what is never read; the texts are for the model."""

    def __init__(self, message: str, hint: str = _LIST_HINT) -> None:
        super().__init__(message)
        self.hint = hint


class Outside(Refused):
    """A symbolic link on the way leads out of the root; said about the path asked for, never
    about where the link points."""

    def __init__(self) -> None:
        super().__init__("a symbolic link points outside the root")


class HardLinked(Refused):
    """The file has more than one hard link, so it may be a file from outside the root under a
    second name; said about the path asked for, never about where its other names are."""

    def __init__(self) -> None:
        super().__init__("the file has more than one hard link")


class Missing(Exception):
    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


# ---------------------------------------------------------------- the request


def request_parts(path: str) -> list[str]:
    """The names of a requested relative path, refusing anything that could mean leaving the root."""
    if len(path) > MAX_PATH_CHARS:
        raise Refused(f"the path is longer than {MAX_PATH_CHARS} characters", _PATH_HINT)
    if found := control_character(path):
        raise Refused(f"the path contains a control character ({found}), which no path here may contain", _PATH_HINT)
    if "\\" in path:
        raise Refused("backslashes are not path separators here; use /", _PATH_HINT)
    # Decoded and compatibility-folded spellings are checked too, so %2e%2e, fullwidth dots
    # (U+FF0E) and the one-dot leader (U+2024) are refused for what they stand for, not opened as names.
    for spelling in _spellings(path):
        if spelling.startswith(("/", "~")) or "\\" in spelling:
            raise Refused("absolute and home paths are not accepted; give a path relative to the root", _PATH_HINT)
        if ".." in spelling.split("/"):
            raise Refused("'..' is not allowed in a path", _PATH_HINT)
    return [part for part in path.split("/") if part not in ("", ".")]


def _spellings(path: str) -> set[str]:
    decoded = unquote(unquote(path))
    return {path, decoded, unicodedata.normalize("NFKC", path), unicodedata.normalize("NFKC", decoded)}


@contextmanager
def opened_root(root: ConfigRoot) -> Iterator[tuple[int, str | None]]:
    """A descriptor of the directory walks start from, and a single-file root's file name in it."""
    try:
        fd, file_name = os.open(root.path, _ROOT), None
    except NotADirectoryError:
        fd, file_name = os.open(root.path.parent, _ROOT), root.path.name
    try:
        yield fd, file_name
    finally:
        os.close(fd)


# ---------------------------------------------------------------- the walk


@dataclass
class Here:
    """Where a walk stands: the open directories from the start down, and their names."""

    fds: list[int]
    names: list[str] = field(default_factory=list)

    def enter(self, name: str) -> None:
        self.fds.append(self.open(name, _DIR))
        self.names.append(name)

    def open(self, name: str, flags: int) -> int:
        """`name` in the current directory; a link, a vanished or a swapped entry is never followed."""
        try:
            return os.open(name, flags, dir_fd=self.fds[-1])
        except OSError as exc:
            if exc.errno not in (errno.ELOOP, errno.ENOENT, errno.ENOTDIR):
                raise
            # O_DIRECTORY|O_NOFOLLOW on a link says ENOTDIR: look again to tell the model the truth.
            if exc.errno == errno.ELOOP or self._is_link(name):
                raise Refused(f"{name!r} is a symbolic link; opsbot does not follow links in this root") from exc
            raise Missing(name) from exc

    def _is_link(self, name: str) -> bool:
        try:
            return stat.S_ISLNK(os.stat(name, dir_fd=self.fds[-1], follow_symlinks=False).st_mode)
        except OSError:
            return False

    def leave(self) -> None:
        if len(self.fds) == 1:
            raise Outside()
        os.close(self.fds.pop())
        self.names.pop()


@contextmanager
def walk(start: int) -> Iterator[Here]:
    here = Here([start])
    try:
        yield here
    finally:
        for fd in here.fds[1:]:
            os.close(fd)


class Entry(NamedTuple):
    """The last entry of a walk: its name in the directory the walk ended in, and its own status."""

    name: str
    status: os.stat_result


def resolve(root: ConfigRoot, here: Here, parts: list[str]) -> Entry | None:
    """Walk `parts` down from where `here` stands; the last entry (a name in `here`) and its own
    status, not its target's. None when the parts name the starting directory itself."""
    pending = deque(parts)
    hops = 0
    while pending:
        part = pending.popleft()
        if part in ("", "."):
            continue
        if part == "..":
            here.leave()
            continue
        refuse_never_read(root, part)
        status = lstat(here, part)
        if stat.S_ISLNK(status.st_mode):
            hops = _follow(root, here, part, pending, hops)
        elif not pending:
            return Entry(part, status)
        elif stat.S_ISDIR(status.st_mode):
            here.enter(part)
        else:
            raise Missing(part)
    return None


def lstat(here: Here, name: str) -> os.stat_result:
    try:
        return os.stat(name, dir_fd=here.fds[-1], follow_symlinks=False)
    except (FileNotFoundError, NotADirectoryError) as exc:
        raise Missing(name) from exc
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:
            raise Missing(name[:40] + "...") from exc
        raise


def _follow(root: ConfigRoot, here: Here, name: str, pending: deque[str], hops: int) -> int:
    if not root.follow_symlinks:
        raise Refused(f"{name!r} is a symbolic link; opsbot does not follow links in this root")
    if hops >= MAX_LINK_HOPS:
        raise Refused(f"{name!r}: too many levels of symbolic links")
    target = os.readlink(name, dir_fd=here.fds[-1])
    if target.startswith("/"):
        # Where it points is not said: that would tell the model about paths outside the root.
        raise Refused(f"{name!r} is a symbolic link out of the root")
    pending.extendleft(reversed(target.split("/")))
    return hops + 1


def refuse_never_read(root: ConfigRoot, name: str) -> None:
    pattern = root.refusing(name)
    if pattern is not None:
        raise Refused(f"{name!r} is never read: it matches {pattern!r} (keys, certificates, secrets)", _SECRET_HINT)


# ---------------------------------------------------------------- opening a file


def open_regular(root: ConfigRoot, here: Here, name: str, seen: os.stat_result) -> int:
    if not stat.S_ISREG(seen.st_mode):
        raise Refused(f"{name!r} is not a regular file")
    fd = here.open(name, _FILE)
    now = os.fstat(fd)
    if not stat.S_ISREG(now.st_mode) or (now.st_dev, now.st_ino) != (seen.st_dev, seen.st_ino):
        os.close(fd)
        raise Refused(f"{name!r} changed while it was being opened")
    # The link count of what was opened, not of what the name showed a moment before.
    if _hard_linked(root, now):
        os.close(fd)
        raise HardLinked()
    return fd


def _hard_linked(root: ConfigRoot, status: os.stat_result) -> bool:
    # Only regular files: a directory's link count counts its subdirectories, and directories
    # cannot be hard-linked anyway.
    return stat.S_ISREG(status.st_mode) and status.st_nlink > 1 and not root.allow_hardlinks


class Read(NamedTuple):
    """Up to a limit of a file's bytes, and whether there was more."""

    data: bytes
    cut: bool


def read_bytes(fd: int, limit: int) -> Read:
    """Up to `limit` bytes, and whether there was more. Closes `fd`."""
    chunks: list[bytes] = []
    size = 0
    try:
        while size <= limit:
            chunk = os.read(fd, min(65_536, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    finally:
        os.close(fd)
    data = b"".join(chunks)
    return Read(data[:limit], len(data) > limit)


# ---------------------------------------------------------------- listing


@dataclass
class Listing:
    files: list[str] = field(default_factory=list)
    withheld: dict[str, str] = field(default_factory=dict)
    visits: int = 0
    more: bool = False


def list_dir(root: ConfigRoot, start: int, fd: int, prefix: list[str], found: Listing, depth: int) -> None:
    with os.scandir(fd) as entries:
        ordered = sorted(entries, key=lambda e: e.name)
    for entry in ordered:
        found.visits += 1
        if len(found.files) >= LIST_FILES or found.visits > LIST_VISITS:
            found.more = True
            return
        relative = "/".join([*prefix, entry.name])
        if entry.is_dir(follow_symlinks=False):
            _list_subdir(root, start, fd, entry.name, prefix, found, depth)
        elif root.includes(relative):
            _list_file(root, start, entry, relative, found)


def _list_subdir(
    root: ConfigRoot, start: int, fd: int, name: str, prefix: list[str], found: Listing, depth: int
) -> None:
    # Hidden directories (.git, a ConfigMap's ..data) are walked only when asked for by path.
    if name.startswith(".") or depth >= LIST_DEPTH or root.refusing(name) is not None:
        return
    try:
        sub = os.open(name, _DIR, dir_fd=fd)
    except OSError:  # gone or swapped for a link since it was listed: nothing to show
        return
    try:
        list_dir(root, start, sub, [*prefix, name], found, depth + 1)
    finally:
        os.close(sub)


def _list_file(root: ConfigRoot, start: int, entry: os.DirEntry[str], relative: str, found: Listing) -> None:
    reason = _unreadable(root, start, entry, relative)
    if reason is None:
        found.files.append(relative)
    elif reason != _A_DIRECTORY:
        found.withheld[relative] = reason


# A link to a directory (a ConfigMap's ..data) is neither a file nor withheld: listings show files.
_A_DIRECTORY = "directory"
_HARD_LINK = "more than one hard link (may be a file from outside the root; see allow_hardlinks)"


def _unreadable(root: ConfigRoot, start: int, entry: os.DirEntry[str], relative: str) -> str | None:
    pattern = root.refusing(entry.name)
    if pattern is not None:
        return f"never read (matches {pattern!r})"
    if entry.is_symlink():
        return _link_verdict(root, start, relative)
    if not entry.is_file(follow_symlinks=False):
        return "not a regular file"
    try:
        status = entry.stat(follow_symlinks=False)
    except OSError:
        return "gone while the directory was listed"
    return _HARD_LINK if _hard_linked(root, status) else None


def _link_verdict(root: ConfigRoot, start: int, relative: str) -> str | None:
    if not root.follow_symlinks:
        return "symbolic link (not followed)"
    with walk(start) as here:
        try:
            found = resolve(root, here, relative.split("/"))
        except (Refused, Missing, OSError):
            return "symbolic link that cannot be followed"
    if found is None or stat.S_ISDIR(found[1].st_mode):
        return _A_DIRECTORY
    if not stat.S_ISREG(found[1].st_mode):
        return "symbolic link to something other than a file"
    return _HARD_LINK if _hard_linked(root, found[1]) else None
