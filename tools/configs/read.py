"""read_config: a file of one of the operator's config roots, whole or one key of it, or a listing.

The request is walked by confined.py; this module reads what it opened and answers.

A key is looked up in the redacted document, keys redacted too, never in the raw one: what a
lookup finds, misses, or lists as the keys nearby is what the model could see in the whole file
anyway, so no sequence of lookups can tell apart two files that differ only in a secret.
"""

from __future__ import annotations

import difflib
import errno
import stat
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ...config.policy import ConfigRoot, Policy, Principal
from .. import redact
from ..base import ErrorType, Tool, ToolResult
from ..text import plural, without_cut_words
from .confined import (
    LIST_DEPTH,
    LIST_FILES,
    Entry,
    HardLinked,
    Here,
    Listing,
    Missing,
    Outside,
    Refused,
    list_dir,
    lstat,
    open_regular,
    opened_root,
    read_bytes,
    refuse_never_read,
    request_parts,
    resolve,
    walk,
)
from .formats import MAX_KEY_TRIES, Miss, Unparsable, document, format_of, key_value, shown_value

NEARBY = 20


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


def read_config_tool(policy: Policy) -> Tool[ReadConfigArgs]:
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
        run=run,
        summarize=brief,
        show=show,
    )


def brief(data: dict[str, Any]) -> str:
    """ "app.yaml: yaml, 42 lines", "app.yaml: key db.pool found", "7 files, 2 withheld" (never the value: a step line
    is no place for a config's contents)."""
    if "files" in data:
        withheld = f", {len(data['withheld'])} withheld" if data.get("withheld") else ""
        return plural(len(data["files"]), "file") + withheld + (", more not listed" if "more" in data else "")
    where = data.get("path", data.get("name", ""))
    if "key" in data:
        return f"{where}: key {data['key']} found"
    return f"{where}: {data.get('format', 'text')}, {plural(len(str(data.get('content', '')).splitlines()), 'line')}"


def show(data: dict[str, Any]) -> str:
    """For a person who named the root: a listing's files and what is withheld, a file's text, or
    a key's value alone (the root, the path and the format are what they typed)."""
    if "files" in data:
        lines = list(data["files"]) or ["(no file here can be read)"]
        withheld = data.get("withheld", {})
        if withheld:
            lines += ["withheld:", *(f"  {name}: {why}" for name, why in withheld.items())]
        return "\n".join([*lines, *([f"({data['more']})"] if "more" in data else [])])
    if "key" in data:
        return shown_value(data["value"])
    return str(data["content"]).rstrip("\n")


# ---------------------------------------------------------------- the request


def _read_root(args: ReadConfigArgs, root: ConfigRoot) -> ToolResult:
    try:
        requested = request_parts(args.path or "")
        with opened_root(root) as (start, file_name):
            if file_name is not None:
                return _read_file_root(args, root, start, file_name, requested)
            return _read_in_directory(args, root, start, requested)
    except Outside as exc:
        return ToolResult.failure(
            ErrorType.denied,
            f"{_asked(args)} leads through a symbolic link that points outside the root",
            hint=exc.hint,
        )
    except HardLinked:
        return ToolResult.failure(
            ErrorType.denied,
            f"{_asked(args)}: the file has more than one hard link, so it may be a file from outside the root "
            "under a second name; this root does not read hard-linked files",
            hint=f"if its hard-linked files are meant to be read, set `allow_hardlinks: true` for config root "
            f"{args.name!r} in opsbot's policy",
        )
    except Refused as exc:
        return ToolResult.failure(ErrorType.denied, str(exc), hint=exc.hint)
    except OSError as exc:
        return _os_failure(args, exc)


def _asked(args: ReadConfigArgs) -> str:
    """What was asked for, in the words of the request: a path relative to the root, or the root."""
    return f"{args.path!r} in config root {args.name!r}" if args.path else f"config root {args.name!r}"


def _read_file_root(args: ReadConfigArgs, root: ConfigRoot, start: int, name: str, requested: list[str]) -> ToolResult:
    if requested and requested != [name]:
        return ToolResult.failure(
            ErrorType.not_found,
            f"config root {args.name!r} is the single file {name!r}",
            hint="leave path out to read it",
        )
    with walk(start) as here:
        try:
            refuse_never_read(root, name)
            if not root.follow_symlinks and stat.S_ISLNK(lstat(here, name).st_mode):
                # The usual Kubernetes ConfigMap mount: the operator's setting is what to change.
                raise Refused(
                    f"the file of config root {args.name!r} is a symbolic link, and this root does not follow links",
                    hint=f"set `follow_symlinks: true` for config root {args.name!r} in opsbot's policy "
                    "(links that stay in its directory are then read)",
                )
            found = resolve(root, here, [name])
            if found is None or not stat.S_ISREG(found.status.st_mode):
                raise Refused(f"{name!r} is not a regular file")
            return _read_file(args, root, here, found, name)
        except Missing:
            return ToolResult.failure(
                ErrorType.unavailable,
                f"the file of config root {args.name!r} does not exist",
                hint="the operator's path for it does not exist on this host (opsbot check-config)",
            )


def _read_in_directory(args: ReadConfigArgs, root: ConfigRoot, start: int, requested: list[str]) -> ToolResult:
    shown = "/".join(requested) or "."
    with walk(start) as here:
        try:
            found = resolve(root, here, requested)
            if found is None or stat.S_ISDIR(found.status.st_mode):
                if found is not None:
                    here.enter(found.name)
                return ToolResult.success(_listing(args.name, root, start, here))
            if stat.S_ISREG(found.status.st_mode) and not root.includes(shown):
                raise Missing(found.name)
            return _read_file(args, root, here, found, shown)
        except Missing as missing:
            return _not_found(args.name, root, here, shown, missing.name)


# ---------------------------------------------------------------- reading a file


def _read_file(args: ReadConfigArgs, root: ConfigRoot, here: Here, found: Entry, shown: str) -> ToolResult:
    data, cut = read_bytes(open_regular(root, here, *found), root.max_bytes)
    if b"\x00" in data[:8192]:
        return ToolResult.failure(ErrorType.failed, f"{shown!r} is not a text file", hint="read a text config file")
    text = without_cut_words(data.decode("utf-8", errors="replace"), end=cut)
    where = {"name": args.name, **({"path": shown} if args.path else {})}
    if args.key is None:
        note = f"cut at {root.max_bytes:,} bytes: the file is larger than the root's max_bytes" if cut else None
        kind, parsed = format_of(found.name, text)
        content = _masked(text, parsed)
        return ToolResult(ok=True, data={**where, "format": kind, "content": content}, truncated=note)
    if cut:
        return ToolResult.failure(
            ErrorType.failed,
            f"{shown!r} is larger than {root.max_bytes:,} bytes; a key cannot be looked up in part of it",
            hint="read it without key to see its beginning",
        )
    return _lookup(where, found.name, text, args.key)


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


def _listing(name: str, root: ConfigRoot, start: int, here: Here) -> dict[str, Any]:
    found = Listing()
    list_dir(root, start, here.fds[-1], here.names, found, depth=0)
    data: dict[str, Any] = {"name": name, "path": "/".join(here.names) or ".", "files": found.files}
    if found.withheld:
        data["withheld"] = found.withheld
    if found.more:
        data["more"] = f"stopped after {LIST_FILES} files; list a subdirectory with path"
    return data


def _quoted(text: str) -> str:
    """A requested path for a message: the model's own words, but not thousands of them."""
    return repr(text if len(text) <= 120 else text[:100] + "...")


def _not_found(name: str, root: ConfigRoot, here: Here, shown: str, missing: str) -> ToolResult:
    found = Listing()
    list_dir(root, here.fds[0], here.fds[-1], here.names, found, depth=LIST_DEPTH - 1)
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
