"""What was not looked at: calls refused or failed, and what the question named that no tool was asked about."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any, NamedTuple

# Not a gap: a write waiting for a person is said by the approval request itself.
_NOT_GAPS = frozenset({"ok", "needs_approval"})
ARGS_CHARS = 60


class Ran(NamedTuple):
    """A call as the check needs it: what ran, with what, and how it went."""

    tool: str
    args: Any
    status: str


def not_looked_at(question: str, calls: Iterable[Ran], subjects: Iterable[str]) -> list[str]:
    """A short line for each call denied or failed, and for each of `subjects` (the policy's
    services and config roots) the question names but no call's arguments do."""
    ran = list(calls)
    lines: dict[str, None] = {}
    for call in ran:
        if call.status not in _NOT_GAPS:
            lines[f"{call.tool}({_shown(call.args)}): {call.status}"] = None
    named = [subject for subject in subjects if _named(subject, question)]
    asked = " ".join(_shown(call.args, limit=None) for call in ran).lower() if named else ""
    for subject in named:
        if not _named(subject, asked):
            lines[f"{subject}: no tool was asked about it"] = None
    return list(lines)


def _named(word: str, text: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(word.lower())}(?![\w-])", text.lower()) is not None


def _shown(args: Any, limit: int | None = ARGS_CHARS) -> str:
    if isinstance(args, dict):
        text = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in args.items())
    else:
        text = str(args)
    return text if limit is None or len(text) <= limit else text[: limit - 1] + "…"
