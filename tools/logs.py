"""query_logs: the newest matching lines of a service's log files, read from the end."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from config.policy import Policy, Principal
from tools.base import ErrorType, Tool, ToolResult

LEVELS = ("DEBUG", "INFO", "WARN", "ERROR")
_ALIASES = {"WARNING": "WARN", "ERR": "ERROR", "FATAL": "ERROR", "CRITICAL": "ERROR"}
SCAN_LIMIT_BYTES = 16 * 1024 * 1024
BLOCK_BYTES = 64 * 1024


class QueryLogsArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    service: str = Field(description="service name, as listed by list_services")
    level: Literal["DEBUG", "INFO", "WARN", "ERROR"] | None = Field(
        default=None, description="minimum level; ERROR shows only errors"
    )
    contains: str | None = Field(default=None, max_length=200, description="case-insensitive substring")
    limit: int = Field(default=50, ge=1, le=500, description="newest matching lines to return")


def query_logs_tool(policy: Policy) -> Tool:
    def run(args: QueryLogsArgs, principal: Principal | None) -> ToolResult:
        service = policy.services.get(args.service)
        if service is None:
            return ToolResult.unknown("service", args.service, policy.services)
        return _query(args, service.logs)

    return Tool(
        name="query_logs",
        description="Newest log lines of one service, optionally filtered by minimum level and a substring.",
        args_model=QueryLogsArgs,
        run=run,  # type: ignore[arg-type]
    )


def _query(args: QueryLogsArgs, files: list[Path]) -> ToolResult:
    missing = [str(p) for p in files if not p.is_file()]
    if len(missing) == len(files):
        return ToolResult.failure(
            ErrorType.unavailable,
            f"no log file of {args.service} can be read: {', '.join(missing)}",
            hint="the service may not have logged yet; tell the user which file is missing",
        )
    wanted = LEVELS[LEVELS.index(args.level) :] if args.level else None
    needle = args.contains.lower() if args.contains else None
    newest_first: list[str] = []
    scanned = 0
    for path in reversed([p for p in files if p.is_file()]):
        for line in _lines_from_end(path):
            scanned += 1
            if _matches(line, wanted, needle):
                newest_first.append(line)
                if len(newest_first) == args.limit:
                    break
        if len(newest_first) == args.limit:
            break
    lines = list(reversed(newest_first))
    summary = f"{len(lines)} matching line(s), newest last; scanned the last {scanned} line(s)"
    return ToolResult.success({"service": args.service, "summary": summary, "lines": "\n".join(lines)})


def _matches(line: str, wanted: tuple[str, ...] | None, needle: str | None) -> bool:
    if wanted is not None and _level_of(line) not in wanted:
        return False
    return needle is None or needle in line.lower()


def _level_of(line: str) -> str | None:
    for word in line.split(maxsplit=3)[:3]:
        word = word.strip("[]:").upper()
        word = _ALIASES.get(word, word)
        if word in LEVELS:
            return word
    return None


def _lines_from_end(path: Path) -> Iterator[str]:
    """Lines of `path`, last first, reading fixed blocks backwards; never more than SCAN_LIMIT_BYTES."""
    with open(path, "rb") as handle:
        position = handle.seek(0, os.SEEK_END)
        floor = max(0, position - SCAN_LIMIT_BYTES)
        remainder = b""
        while position > floor:
            size = min(BLOCK_BYTES, position - floor)
            position -= size
            handle.seek(position)
            parts = (handle.read(size) + remainder).split(b"\n")
            remainder = parts[0]
            for raw in reversed(parts[1:]):
                if raw:
                    yield raw.decode("utf-8", errors="replace")
        if remainder and floor == 0:
            yield remainder.decode("utf-8", errors="replace")
