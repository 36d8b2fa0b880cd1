"""read_config: one of the operator's declared config files, whole or one key of it."""

from __future__ import annotations

import errno
import json
import os
import stat
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field

from config.policy import ConfigFile, Policy, Principal
from tools.base import ErrorType, Tool, ToolResult


class ReadConfigArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="config file name, as listed by list_services")
    key: str | None = Field(default=None, max_length=200, description="dotted key path, e.g. db.primary.host")


def read_config_tool(policy: Policy) -> Tool:
    def run(args: ReadConfigArgs, principal: Principal | None) -> ToolResult:
        entry = policy.config_files.get(args.name)
        if entry is None:
            return ToolResult.unknown("config file", args.name, policy.config_files)
        text = _read(entry)
        if isinstance(text, ToolResult):
            return text
        if args.key is None:
            return ToolResult.success({"name": args.name, "content": text})
        return _lookup(args.name, text, args.key)

    return Tool(
        name="read_config",
        description="Read a declared config file, or one value of it by dotted key path.",
        args_model=ReadConfigArgs,
        run=run,  # type: ignore[arg-type]
    )


def _read(entry: ConfigFile) -> str | ToolResult:
    try:
        # O_NOFOLLOW and O_NONBLOCK: a swapped-in symlink or FIFO is refused, not followed or waited on.
        fd = os.open(entry.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return ToolResult.failure(
                ErrorType.denied, f"{entry.path.name} is a symbolic link; opsbot does not follow links"
            )
        return ToolResult.failure(ErrorType.unavailable, f"cannot open {entry.path.name}: {exc.strerror}")
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return ToolResult.failure(ErrorType.denied, f"{entry.path.name} is not a regular file")
        data = handle.read(entry.max_bytes + 1)
    text = data[: entry.max_bytes].decode("utf-8", errors="replace")
    if len(data) > entry.max_bytes:
        text += f"\n[... cut at {entry.max_bytes:,} bytes ...]"
    return text


def _lookup(name: str, text: str, key: str) -> ToolResult:
    try:
        document: Any = json.loads(text) if text.lstrip().startswith("{") else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as exc:
        return ToolResult.failure(ErrorType.failed, f"{name} could not be parsed: {exc}", hint="read it whole")
    node = document
    for part in key.split("."):
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            keys = sorted(map(str, node)) if isinstance(node, dict) else []
            return ToolResult.failure(
                ErrorType.not_found,
                f"{name} has no key {key!r} (stopped at {part!r})",
                hint=f"keys at that level: {', '.join(keys) or 'none'}",
            )
    return ToolResult.success({"name": name, "key": key, "value": node})
