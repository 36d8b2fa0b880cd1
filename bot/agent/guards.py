"""Loop guards: exact repeats (stored per thread), near-repeats and A/B oscillation (per run).

An identical call (same tool, same canonical arguments) after an `ok` result is not run again:
it is answered with `repeated_call` and the earlier result; after `repeat_warnings` such answers
the next one stops the loop. A call repeated after an error result is a retry and runs.
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, NamedTuple

from pydantic import BaseModel

from ...config.settings import LoopLimits
from ...tools.base import CallStatus, ErrorType, ToolResult
from ...tools.executor import ToolCall


class RepeatRecord(BaseModel):
    tool: str
    args: str
    status: CallStatus
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


class Arguments(NamedTuple):
    """A call's arguments in one spelling (sorted keys, no spaces: the raw text when they are no
    JSON object), and the parsed object when there is one."""

    canonical: str
    parsed: dict[str, Any] | None


def canonical_arguments(raw: str) -> Arguments:
    """Arguments in one spelling (sorted keys, no spaces), and the parsed object when there is one."""
    try:
        parsed = json.loads(raw) if raw.strip() else {}
    except json.JSONDecodeError:
        return Arguments(raw, None)
    if not isinstance(parsed, dict):
        return Arguments(raw, None)
    return Arguments(json.dumps(parsed, sort_keys=True, separators=(",", ":")), parsed)


@functools.lru_cache(maxsize=1024)
def canonical_text(raw: str) -> str:
    """`canonical_arguments(raw).canonical`, worked out once: a call's key, its repeat record and
    its step's signature each ask for it."""
    return canonical_arguments(raw).canonical


def call_key(call: ToolCall) -> str:
    return _key(call.name, call.arguments)


@functools.lru_cache(maxsize=1024)
def _key(name: str, arguments: str) -> str:
    """A call's key, worked out once: the loop, its guards and its budget each ask for it."""
    return hashlib.sha256(f"{name}\0{canonical_text(arguments)}".encode()).hexdigest()[:32]


# A call's tool, one argument's name, and every other argument as (name, JSON) pairs.
_Signature = tuple[str, str, tuple[tuple[str, str], ...]]


class LoopGuard:
    def __init__(self, limits: LoopLimits, stored: dict[str, str]) -> None:
        self.limits = limits
        self.records = {key: RepeatRecord.model_validate_json(value) for key, value in stored.items()}
        self.stop_requested = False
        self._changed: set[str] = set()
        self._step = 0
        # (tool, varied argument, the other arguments) -> (last step seen, consecutive steps, values)
        self._runs: dict[_Signature, tuple[int, int, set[str]]] = {}
        self._step_signatures: list[str] = []

    def check(self, call: ToolCall) -> Check:
        key = call_key(call)
        earlier = self.records.get(key)
        if earlier is None or earlier.status is not CallStatus.ok:
            return Check(Verdict.run)
        earlier = earlier.model_copy(update={"repeats": earlier.repeats + 1})
        self.records[key] = earlier
        self._changed.add(key)
        if earlier.repeats > self.limits.repeat_warnings:
            self.stop_requested = True
            return Check(Verdict.stop, earlier)
        return Check(Verdict.repeat, earlier)

    def record(self, call: ToolCall, result: ToolResult, rendered: str) -> None:
        """Remember what a call that actually ran came to (`rendered`: `result.render()`)."""
        self.records[call_key(call)] = RepeatRecord(
            tool=call.name, args=canonical_text(call.arguments), status=result.status, result=rendered
        )
        self._changed.add(call_key(call))

    def drift(self, calls: list[ToolCall]) -> str | None:
        """Why this step looks like the loop is circling, or None.

        Near-repeat: one tool called in `near_repeat_limit` consecutive steps with only one
        argument changing. Several calls in one message count once: fanning out over services
        in parallel is investigation, not circling. Oscillation: four steps alternating A, B, A, B.
        """
        self._step += 1
        reason = None
        touched: dict[_Signature, str] = {}
        for call in calls:
            _, parsed = canonical_arguments(call.arguments)
            spelt = {name: json.dumps(value, sort_keys=True) for name, value in (parsed or {}).items()}
            for name, value in spelt.items():
                rest = tuple((k, v) for k, v in sorted(spelt.items()) if k != name)
                touched[(call.name, name, rest)] = value
        for signature, value in touched.items():
            last, length, values = self._runs.get(signature, (0, 0, set()))
            if value in values:
                continue
            length = length + 1 if last == self._step - 1 else 1
            values = values | {value} if length > 1 else {value}
            self._runs[signature] = (self._step, length, values)
            if length >= self.limits.near_repeat_limit:
                reason = f"{signature[0]} was called in {length} steps in a row changing only {signature[1]!r}"
        step_signature = "|".join(sorted(f"{c.name}:{canonical_text(c.arguments)}" for c in calls))
        self._step_signatures.append(step_signature)
        s = self._step_signatures
        if len(s) >= 4 and s[-1] == s[-3] and s[-2] == s[-4] and s[-1] != s[-2]:
            reason = "the last four steps alternated between the same two calls"
        return reason

    def changed(self) -> dict[str, str]:
        """Records changed since the last call, serialised for memory."""
        out = {key: self.records[key].model_dump_json() for key in self._changed}
        self._changed.clear()
        return out
