"""Loop guards: exact repeats (stored per thread), near-repeats and A/B oscillation (per run).

An identical call (same tool, same canonical arguments) after an `ok` result is not run again:
it is answered with `repeated_call` and the earlier result; after `repeat_warnings` such answers
the next one stops the loop. A call repeated after an error result is a retry and runs.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from pydantic import BaseModel

from config.settings import LoopLimits
from tools.base import ErrorType, ToolResult
from tools.executor import ToolCall


class RepeatRecord(BaseModel):
    tool: str
    args: str
    status: str
    result: str
    repeats: int = 0


class Verdict(StrEnum):
    run = "run"
    repeat = "repeat"
    stop = "stop"


@dataclass(frozen=True)
class Check:
    verdict: Verdict
    earlier: RepeatRecord | None = None

    def result(self) -> ToolResult:
        """The `repeated_call` answer given instead of running the call again."""
        assert self.earlier is not None
        stopping = self.verdict is Verdict.stop
        return ToolResult.failure(
            ErrorType.repeated_call,
            f"{self.earlier.tool} was already called with exactly these arguments in this turn "
            f"({self.earlier.repeats} repeat(s)); it was not run again"
            + ("; the loop is stopping, answer with what you have" if stopping else ""),
            hint="use the earlier result below, change the arguments, or answer the user",
            data={"earlier_result": self.earlier.result},
        )


def canonical_arguments(raw: str) -> tuple[str, dict[str, Any] | None]:
    """Arguments in one spelling (sorted keys, no spaces), and the parsed object when there is one."""
    try:
        parsed = json.loads(raw) if raw.strip() else {}
    except json.JSONDecodeError:
        return raw, None
    if not isinstance(parsed, dict):
        return raw, None
    return json.dumps(parsed, sort_keys=True, separators=(",", ":")), parsed


def call_key(call: ToolCall) -> str:
    canonical, _ = canonical_arguments(call.arguments)
    return hashlib.sha256(f"{call.name}\0{canonical}".encode()).hexdigest()[:32]


class LoopGuard:
    def __init__(self, limits: LoopLimits, stored: dict[str, str]) -> None:
        self.limits = limits
        self.records = {key: RepeatRecord.model_validate_json(value) for key, value in stored.items()}
        self._changed: set[str] = set()
        self._variations: dict[tuple[str, str, str], set[str]] = defaultdict(set)
        self._step_signatures: list[str] = []

    def check(self, call: ToolCall) -> Check:
        key = call_key(call)
        earlier = self.records.get(key)
        if earlier is None or earlier.status != "ok":
            return Check(Verdict.run)
        earlier = earlier.model_copy(update={"repeats": earlier.repeats + 1})
        self.records[key] = earlier
        self._changed.add(key)
        return Check(Verdict.stop if earlier.repeats > self.limits.repeat_warnings else Verdict.repeat, earlier)

    def record(self, call: ToolCall, result: ToolResult) -> None:
        """Remember what a call that actually ran came to."""
        key = call_key(call)
        canonical, _ = canonical_arguments(call.arguments)
        self.records[key] = RepeatRecord(tool=call.name, args=canonical, status=result.status, result=result.render())
        self._changed.add(key)

    def drift(self, calls: list[ToolCall]) -> str | None:
        """Why this step looks like the loop is circling, or None."""
        reason = None
        for call in calls:
            _, parsed = canonical_arguments(call.arguments)
            for name, value in (parsed or {}).items():
                rest = {k: v for k, v in parsed.items() if k != name}  # type: ignore[union-attr]
                seen = self._variations[(call.name, name, json.dumps(rest, sort_keys=True))]
                seen.add(json.dumps(value, sort_keys=True))
                if len(seen) >= self.limits.near_repeat_limit:
                    reason = f"{call.name} was called {len(seen)} times changing only {name!r}"
        signature = "|".join(sorted(f"{c.name}:{canonical_arguments(c.arguments)[0]}" for c in calls))
        self._step_signatures.append(signature)
        s = self._step_signatures
        if len(s) >= 4 and s[-1] == s[-3] and s[-2] == s[-4] and s[-1] != s[-2]:
            reason = "the last four steps alternated between the same two calls"
        return reason

    def changed(self) -> dict[str, str]:
        """Records changed since the last call, serialised for memory."""
        out = {key: self.records[key].model_dump_json() for key in self._changed}
        self._changed.clear()
        return out
