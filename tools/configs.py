"""read_config: a file of one of the operator's config roots, whole or one key of it, or a listing.

Confinement does not rest on path strings. The walk starts from a descriptor of the root and
opens one name at a time beneath the descriptor of the directory before it, never following a
symbolic link (`O_NOFOLLOW`, `dir_fd`), so a link or a directory swapped in between a check and
an open is refused rather than followed: there is no separate check to race. `..` is refused in
the request in every spelling; with `follow_symlinks` a link's target is walked the same way, one
name at a time, and its `..` may climb back only as far as the root. The file finally opened must
be a regular file (no FIFO, device or socket is ever opened for reading) with one hard link
unless the root allows more (checked on the descriptor opened, so no swap can race it), is opened
non-blocking and is read up to the root's byte cap.

A key is looked up in the redacted document, keys redacted too, never in the raw one: what a
lookup finds, misses, or lists as the keys nearby is what the model could see in the whole file
anyway, so no sequence of lookups can tell apart two files that differ only in a secret.
"""

from __future__ import annotations

import difflib
import errno
import os
import stat
import unicodedata
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from pydantic import BaseModel, ConfigDict, Field

from config.policy import Policy, Principal
from config.policy_commands import control_character
from config.policy_configs import ConfigRoot
from tools import redact
from tools.base import ErrorType, Tool, ToolResult
from tools.config_formats import MAX_KEY_TRIES, Miss, Unparsable, document, format_of, key_value
from tools.text import without_cut_words

MAX_PATH_CHARS = 1024
MAX_LINK_HOPS = 40  # as the kernel's own limit: a loop of links ends, it does not spin
LIST_FILES = 200
LIST_VISITS = 5_000
LIST_DEPTH = 8
NEARBY = 20

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
# The root's own path is the operator's word and may itself be a link; non-blocking so that a
# FIFO declared as a root cannot hang the open.
_ROOT = os.O_RDONLY | os.O_DIRECTORY | os.O_NONBLOCK | os.O_CLOEXEC


class ReadConfigArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="config root, as listed by list_services")
    path: str | None = Field(
        default=None,
        description="file relative to the root, e.g. app/settings.yaml; leave out for a single-file root. "
        "A directory (or a directory root without path) lists the files that can be read",
    )
    key: str | None = Field(
        default=None, max_length=200, description="dotted key path, e.g. db.primary.host; list items by index"
    )


_PATH_HINT = "give a path relative to the root, as read_config without path lists them"
_LIST_HINT = "read_config without path lists the files that can be read"
_SECRET_HINT = "it is never shown; ask someone with access to the host for the value you need"


class _Refused(Exception):
    """The request would leave the root or read what is never read; the texts are for the model."""

    def __init__(self, message: str, hint: str = _LIST_HINT) -> None:
        super().__init__(message)
        self.hint = hint


class _Outside(_Refused):
    """A symbolic link on the way leads out of the root; said about the path asked for, never
    about where the link points."""

    def __init__(self) -> None:
        super().__init__("a symbolic link points outside the root")


class _HardLinked(_Refused):
    """The file has more than one hard link, so it may be a file from outside the root under a
    second name; said about the path asked for, never about where its other names are."""

    def __init__(self) -> None:
        super().__init__("the file has more than one hard link")


class Missing(Exception):
    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


def read_config_tool(policy: Policy) -> Tool:
    def run(args: ReadConfigArgs, principal: Principal | None) -> ToolResult:
        root = policy.config_files.get(args.name)
        if root is None:
            return ToolResult.unknown("config root", args.name, policy.config_files)
        if not root.access.allows(principal):
            return ToolResult.failure(
                ErrorType.denied, f"you may not read config root {args.name!r}", hint="ask someone who may"
            )
        return _read_root(args, root)

    return Tool(
        name="read_config",
        description="Read a file of a declared config root (YAML, JSON, TOML, INI, .env, .properties), or one "
        "value of it by dotted key path. A directory root without path lists the files you may read.",
        args_model=ReadConfigArgs,
        run=run,  # type: ignore[arg-type]
    )


# ---------------------------------------------------------------- the request


def _read_root(args: ReadConfigArgs, root: ConfigRoot) -> ToolResult:
    try:
        requested = _parts(args.path or "")
        with _opened_root(root) as (start, file_name):
            if file_name is not None:
                return _read_file_root(args, root, start, file_name, requested)
            return _read_in_directory(args, root, start, requested)
    except _Outside as exc:
        return ToolResult.failure(
            ErrorType.denied,
            f"{_asked(args)} leads through a symbolic link that points outside the root",
            hint=exc.hint,
        )
    except _HardLinked:
        return ToolResult.failure(
            ErrorType.denied,
            f"{_asked(args)}: the file has more than one hard link, so it may be a file from outside the root "
            "under a second name; this root does not read hard-linked files",
            hint=f"if its hard-linked files are meant to be read, set `allow_hardlinks: true` for config root "
            f"{args.name!r} in opsbot's policy",
        )
    except _Refused as exc:
        return ToolResult.failure(ErrorType.denied, str(exc), hint=exc.hint)
    except OSError as exc:
        return _os_failure(args, exc)


def _asked(args: ReadConfigArgs) -> str:
    """What was asked for, in the words of the request: a path relative to the root, or the root."""
    return f"{args.path!r} in config root {args.name!r}" if args.path else f"config root {args.name!r}"


def _parts(path: str) -> list[str]:
    """The names of a requested relative path, refusing anything that could mean leaving the root."""
    if len(path) > MAX_PATH_CHARS:
        raise _Refused(f"the path is longer than {MAX_PATH_CHARS} characters", _PATH_HINT)
    if found := control_character(path):
        raise _Refused(f"the path contains a control character ({found}), which no path here may contain", _PATH_HINT)
    if "\\" in path:
        raise _Refused("backslashes are not path separators here; use /", _PATH_HINT)
    # Decoded and compatibility-folded spellings are checked too, so %2e%2e, fullwidth dots
    # (U+FF0E) and the one-dot leader (U+2024) are refused for what they stand for, not opened as names.
    for spelling in _spellings(path):
        if spelling.startswith(("/", "~")) or "\\" in spelling:
            raise _Refused("absolute and home paths are not accepted; give a path relative to the root", _PATH_HINT)
        if ".." in spelling.split("/"):
            raise _Refused("'..' is not allowed in a path", _PATH_HINT)
    return [part for part in path.split("/") if part not in ("", ".")]


def _spellings(path: str) -> set[str]:
    decoded = unquote(unquote(path))
    return {path, decoded, unicodedata.normalize("NFKC", path), unicodedata.normalize("NFKC", decoded)}


@contextmanager
def _opened_root(root: ConfigRoot) -> Iterator[tuple[int, str | None]]:
    """A descriptor of the directory walks start from, and a single-file root's file name in it."""
    try:
        fd, file_name = os.open(root.path, _ROOT), None
    except NotADirectoryError:
        fd, file_name = os.open(root.path.parent, _ROOT), root.path.name
    try:
        yield fd, file_name
    finally:
        os.close(fd)


def _read_file_root(args: ReadConfigArgs, root: ConfigRoot, start: int, name: str, requested: list[str]) -> ToolResult:
    if requested and requested != [name]:
        return ToolResult.failure(
            ErrorType.not_found,
            f"config root {args.name!r} is the single file {name!r}",
            hint="leave path out to read it",
        )
    with _walk(start) as here:
        try:
            _refuse_never_read(root, name)
            if not root.follow_symlinks and stat.S_ISLNK(_lstat(here, name).st_mode):
                # The usual Kubernetes ConfigMap mount: the operator's setting is what to change.
                raise _Refused(
                    f"the file of config root {args.name!r} is a symbolic link, and this root does not follow links",
                    hint=f"set `follow_symlinks: true` for config root {args.name!r} in opsbot's policy "
                    "(links that stay in its directory are then read)",
                )
            found = _resolve(root, here, [name])
            if found is None or not stat.S_ISREG(found[1].st_mode):
                raise _Refused(f"{name!r} is not a regular file")
            return _read_file(args, root, here, found, name)
        except Missing:
            return ToolResult.failure(
                ErrorType.unavailable,
                f"the file of config root {args.name!r} does not exist",
                hint="the operator's path for it does not exist on this host (opsbot check-config)",
            )


def _read_in_directory(args: ReadConfigArgs, root: ConfigRoot, start: int, requested: list[str]) -> ToolResult:
    shown = "/".join(requested) or "."
    with _walk(start) as here:
        try:
            found = _resolve(root, here, requested)
            if found is None or stat.S_ISDIR(found[1].st_mode):
                if found is not None:
                    here.enter(found[0])
                return ToolResult.success(_listing(args.name, root, start, here))
            if stat.S_ISREG(found[1].st_mode) and not root.includes(shown):
                raise Missing(found[0])
            return _read_file(args, root, here, found, shown)
        except Missing as missing:
            return _not_found(args.name, root, here, shown, missing.name)


# ---------------------------------------------------------------- the walk


@dataclass
class _Here:
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
                raise _Refused(f"{name!r} is a symbolic link; opsbot does not follow links in this root") from exc
            raise Missing(name) from exc

    def _is_link(self, name: str) -> bool:
        try:
            return stat.S_ISLNK(os.stat(name, dir_fd=self.fds[-1], follow_symlinks=False).st_mode)
        except OSError:
            return False

    def leave(self) -> None:
        if len(self.fds) == 1:
            raise _Outside()
        os.close(self.fds.pop())
        self.names.pop()


@contextmanager
def _walk(start: int) -> Iterator[_Here]:
    here = _Here([start])
    try:
        yield here
    finally:
        for fd in here.fds[1:]:
            os.close(fd)


def _resolve(root: ConfigRoot, here: _Here, parts: list[str]) -> tuple[str, os.stat_result] | None:
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
        _refuse_never_read(root, part)
        status = _lstat(here, part)
        if stat.S_ISLNK(status.st_mode):
            hops = _follow(root, here, part, pending, hops)
        elif not pending:
            return part, status
        elif stat.S_ISDIR(status.st_mode):
            here.enter(part)
        else:
            raise Missing(part)
    return None


def _lstat(here: _Here, name: str) -> os.stat_result:
    try:
        return os.stat(name, dir_fd=here.fds[-1], follow_symlinks=False)
    except (FileNotFoundError, NotADirectoryError) as exc:
        raise Missing(name) from exc
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:
            raise Missing(name[:40] + "...") from exc
        raise


def _follow(root: ConfigRoot, here: _Here, name: str, pending: deque[str], hops: int) -> int:
    if not root.follow_symlinks:
        raise _Refused(f"{name!r} is a symbolic link; opsbot does not follow links in this root")
    if hops >= MAX_LINK_HOPS:
        raise _Refused(f"{name!r}: too many levels of symbolic links")
    target = os.readlink(name, dir_fd=here.fds[-1])
    if target.startswith("/"):
        # Where it points is not said: that would tell the model about paths outside the root.
        raise _Refused(f"{name!r} is a symbolic link out of the root")
    pending.extendleft(reversed(target.split("/")))
    return hops + 1


def _refuse_never_read(root: ConfigRoot, name: str) -> None:
    pattern = root.refusing(name)
    if pattern is not None:
        raise _Refused(f"{name!r} is never read: it matches {pattern!r} (keys, certificates, secrets)", _SECRET_HINT)


# ---------------------------------------------------------------- reading a file


def _read_file(
    args: ReadConfigArgs, root: ConfigRoot, here: _Here, found: tuple[str, os.stat_result], shown: str
) -> ToolResult:
    data, cut = _read_bytes(_open_regular(root, here, *found), root.max_bytes)
    if b"\x00" in data[:8192]:
        return ToolResult.failure(ErrorType.failed, f"{shown!r} is not a text file", hint="read a text config file")
    text = without_cut_words(data.decode("utf-8", errors="replace"), end=cut)
    where = {"name": args.name, **({"path": shown} if args.path else {})}
    if args.key is None:
        note = f"cut at {root.max_bytes:,} bytes: the file is larger than the root's max_bytes" if cut else None
        kind, parsed = format_of(found[0], text)
        content = _masked(text, parsed)
        return ToolResult(ok=True, data={**where, "format": kind, "content": content}, truncated=note)
    if cut:
        return ToolResult.failure(
            ErrorType.failed,
            f"{shown!r} is larger than {root.max_bytes:,} bytes; a key cannot be looked up in part of it",
            hint="read it without key to see its beginning",
        )
    return _lookup(where, found[0], text, args.key)


def _open_regular(root: ConfigRoot, here: _Here, name: str, seen: os.stat_result) -> int:
    if not stat.S_ISREG(seen.st_mode):
        raise _Refused(f"{name!r} is not a regular file")
    fd = here.open(name, _FILE)
    now = os.fstat(fd)
    if not stat.S_ISREG(now.st_mode) or (now.st_dev, now.st_ino) != (seen.st_dev, seen.st_ino):
        os.close(fd)
        raise _Refused(f"{name!r} changed while it was being opened")
    # The link count of what was opened, not of what the name showed a moment before.
    if _hard_linked(root, now):
        os.close(fd)
        raise _HardLinked()
    return fd


def _hard_linked(root: ConfigRoot, status: os.stat_result) -> bool:
    # Only regular files: a directory's link count counts its subdirectories, and directories
    # cannot be hard-linked anyway.
    return stat.S_ISREG(status.st_mode) and status.st_nlink > 1 and not root.allow_hardlinks


def _read_bytes(fd: int, limit: int) -> tuple[bytes, bool]:
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
    return data[:limit], len(data) > limit


def _os_failure(args: ReadConfigArgs, exc: OSError) -> ToolResult:
    # The OS's message carries no path (strerror only): the root's place on disk stays unsaid.
    name = args.name
    if exc.errno == errno.ELOOP:
        return ToolResult.failure(
            ErrorType.denied, f"{_asked(args)} is a symbolic link; opsbot does not follow links there"
        )
    if exc.errno in (errno.EACCES, errno.EPERM):
        return ToolResult.failure(
            ErrorType.denied,
            f"the filesystem does not let opsbot read {_asked(args)} ({exc.strerror})",
            hint="the user opsbot runs as lacks read permission on it; someone with access to the host can "
            "grant it or read it",
        )
    if exc.errno in (errno.ENOENT, errno.ENOTDIR):
        return ToolResult.failure(
            ErrorType.unavailable,
            f"config root {name!r} is not there ({exc.strerror})",
            hint="the operator's path for it does not exist on this host (opsbot check-config)",
        )
    return ToolResult.failure(
        ErrorType.unavailable, f"config root {name!r} could not be read ({exc.strerror})", retryable=True
    )


# ---------------------------------------------------------------- listing


@dataclass
class _Listing:
    files: list[str] = field(default_factory=list)
    withheld: dict[str, str] = field(default_factory=dict)
    visits: int = 0
    more: bool = False


def _listing(name: str, root: ConfigRoot, start: int, here: _Here) -> dict[str, Any]:
    found = _Listing()
    _list_dir(root, start, here.fds[-1], here.names, found, depth=0)
    data: dict[str, Any] = {"name": name, "path": "/".join(here.names) or ".", "files": found.files}
    if found.withheld:
        data["withheld"] = found.withheld
    if found.more:
        data["more"] = f"stopped after {LIST_FILES} files; list a subdirectory with path"
    return data


def _list_dir(root: ConfigRoot, start: int, fd: int, prefix: list[str], found: _Listing, depth: int) -> None:
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
    root: ConfigRoot, start: int, fd: int, name: str, prefix: list[str], found: _Listing, depth: int
) -> None:
    # Hidden directories (.git, a ConfigMap's ..data) are walked only when asked for by path.
    if name.startswith(".") or depth >= LIST_DEPTH or root.refusing(name) is not None:
        return
    try:
        sub = os.open(name, _DIR, dir_fd=fd)
    except OSError:  # gone or swapped for a link since it was listed: nothing to show
        return
    try:
        _list_dir(root, start, sub, [*prefix, name], found, depth + 1)
    finally:
        os.close(sub)


def _list_file(root: ConfigRoot, start: int, entry: os.DirEntry[str], relative: str, found: _Listing) -> None:
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
    with _walk(start) as here:
        try:
            found = _resolve(root, here, relative.split("/"))
        except (_Refused, Missing, OSError):
            return "symbolic link that cannot be followed"
    if found is None or stat.S_ISDIR(found[1].st_mode):
        return _A_DIRECTORY
    if not stat.S_ISREG(found[1].st_mode):
        return "symbolic link to something other than a file"
    return _HARD_LINK if _hard_linked(root, found[1]) else None


def _quoted(text: str) -> str:
    """A requested path for a message: the model's own words, but not thousands of them."""
    return repr(text if len(text) <= 120 else text[:100] + "...")


def _not_found(name: str, root: ConfigRoot, here: _Here, shown: str, missing: str) -> ToolResult:
    found = _Listing()
    _list_dir(root, here.fds[0], here.fds[-1], here.names, found, depth=LIST_DEPTH - 1)
    ranked = difflib.get_close_matches(missing, found.files, n=NEARBY, cutoff=0.0)
    nearby = ranked or found.files[:NEARBY]
    return ToolResult.failure(
        ErrorType.not_found,
        f"config root {name!r} has no readable file {_quoted(shown)}",
        hint=f"readable files near it: {', '.join(nearby) or 'none'}",
    )


def _lookup(where: dict[str, str], file_name: str, text: str, key: str) -> ToolResult:
    try:
        kind, parsed = document(file_name, text)
    except Unparsable as exc:
        return ToolResult.failure(ErrorType.failed, f"{file_name!r} could not be parsed: {exc}", hint="read it whole")
    found = key_value(_redacted_document(parsed), key.split("."), [MAX_KEY_TRIES])
    if isinstance(found, Miss):
        return ToolResult.failure(
            ErrorType.not_found,
            f"{file_name!r} has no key {key!r} (stopped at {found.part!r})",
            hint=f"keys at that level: {', '.join(found.keys) or 'none'}",
        )
    return ToolResult.success({**where, "format": kind, "key": key, "value": found})


def _redacted_document(parsed: Any) -> Any:
    """The parsed file as the model may see it (tools/redact/structure.py): every string redacted,
    dict keys included, and every value under a key that names a secret."""
    return redact.redact(parsed)


def _masked(text: str, parsed: Any) -> str:
    """The file's text with every value that redaction hides in its parsed form masked too.

    Text redaction alone misses what only the structure shows: a YAML block scalar under
    `password: |`, a list under `passwords:`, a value on the line after its JSON key, an anchor
    defined under an innocent key and used under a secret one."""
    if parsed is None:
        return text
    for secret in sorted(_hidden_values(parsed, _redacted_document(parsed)), key=len, reverse=True):
        text = text.replace(secret, "[REDACTED:secret-value]")
    return text


# Shorter values would mask unrelated text; they are also too short to be worth stealing.
_MIN_MASKED = 4


def _hidden_values(original: Any, redacted: Any) -> set[str]:
    # Paired by position: the redacted document has the same items in the same order, under keys
    # that may be redacted themselves.
    if isinstance(original, dict) and isinstance(redacted, dict) and len(original) == len(redacted):
        pairs = zip(original.values(), redacted.values(), strict=True)
        return set().union(*(_hidden_values(o, r) for o, r in pairs))
    if isinstance(original, list) and isinstance(redacted, list) and len(original) == len(redacted):
        return set().union(*(_hidden_values(o, r) for o, r in zip(original, redacted, strict=True)))
    if isinstance(redacted, str) and redacted.startswith("[REDACTED") and redacted != original:
        # A block scalar appears in the text line by line, indented: mask each line.
        return {line.strip() for line in str(original).splitlines() if len(line.strip()) >= _MIN_MASKED}
    return set()
