"""Runs tool calls: parse, validate, invoke with a timeout, retry transient failures, redact.

Every path ends in a `ToolResult`; nothing a tool or the model does raises past this module.
"""

from __future__ import annotations

import contextvars
import json
import random
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, NamedTuple

from pydantic import ValidationError
from pydantic_core import to_jsonable_python

from ..config.policy import Principal
from . import cancel
from .background import Job
from .base import ArgsT, ErrorType, Registry, Tool, ToolResult
from .inert import inert, inert_data
from .redact import redact

# What to do about a tool that did not finish in time: per tool where there is something
# better to say than trying later.
_TIMEOUT_HINT = "try again later; if it keeps timing out, ask for less at once"
TIMEOUT_HINTS = {
    "query_logs": "narrow the query (shorter time range, fewer lines) or try later",
    "read_config": "the file system of the opsbot host may be slow; try again later or read one key",
    "run_command": "the host may be overloaded; try later or a command that does less",
}


# After a cancel, how long a running tool has to stop by itself and say what it stopped.
CANCEL_GRACE_S = 1.0


@dataclass(frozen=True)
class ToolCall:
    """One call as the model sent it: `arguments` is the raw JSON text, unparsed."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class RetryPolicy:
    timeout_s: float = 30.0  # for tools that set no timeout of their own
    retries: int = 2
    backoff_s: float = 0.2
    ceiling_s: float | None = None  # no attempt waits longer, whatever the tool's own timeout (runbook steps)


class _Tried(NamedTuple):
    """A call's result before redaction, and the attempts it took (0: it never ran)."""

    result: ToolResult
    attempts: int


@dataclass(frozen=True)
class Outcome:
    call: ToolCall
    result: ToolResult
    attempts: int
    duration_s: float


class Executor:
    def __init__(
        self,
        registry: Registry,
        retry: RetryPolicy | None = None,
        max_parallel: int = 4,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        """`sleep` waits between attempts (tests give one that records the waits)."""
        self.registry = registry
        self.retry = retry or RetryPolicy()
        self.max_parallel = max_parallel
        self.sleep = sleep

    def run_many(self, calls: list[ToolCall], principal: Principal | None = None) -> list[Outcome]:
        """Run calls concurrently (bounded); outcomes come back in the order of `calls`."""
        if len(calls) <= 1 or self.max_parallel == 1:
            return [self.run_one(call, principal) for call in calls]
        # Each call runs in a copy of the caller's context: whatever the caller keeps in context
        # variables (the span a trace is at) follows the call onto the pool's thread.
        contexts = [contextvars.copy_context() for _ in calls]
        with ThreadPoolExecutor(max_workers=min(self.max_parallel, len(calls)), thread_name_prefix="tool") as pool:
            return list(pool.map(lambda context, call: context.run(self.run_one, call, principal), contexts, calls))

    def run_one(
        self, call: ToolCall, principal: Principal | None = None, *, retry: RetryPolicy | None = None
    ) -> Outcome:
        """Run one call; `retry`, when given, instead of the executor's own (a runbook step's
        timeout and retries, on the one executor a runbook engine keeps)."""
        started = time.monotonic()
        result, attempts = self._result(call, principal, retry or self.retry)
        return Outcome(call, redact_result(result), attempts, time.monotonic() - started)

    def _result(self, call: ToolCall, principal: Principal | None, retry: RetryPolicy) -> _Tried:
        tool = self.registry.get(call.name)
        if tool is None:
            return _Tried(
                ToolResult.failure(
                    ErrorType.unknown_tool,
                    f"there is no tool named {call.name!r}",
                    hint=f"available tools: {', '.join(self.registry.names) or 'none'}",
                ),
                0,
            )
        args = parse_arguments(tool, call.arguments)
        if isinstance(args, ToolResult):
            return _Tried(args, 0)
        attempts = 0
        while True:
            if cancel.requested():
                return _Tried(_cancelled(tool), attempts)
            attempts += 1
            result = self._invoke(tool, args, principal, retry)
            transient = result.error is not None and result.error.retryable
            if not transient or attempts > retry.retries or cancel.requested():
                return _Tried(result, attempts)
            self.sleep(retry.backoff_s * 2 ** (attempts - 1) * random.uniform(0.8, 1.2))

    def _invoke(self, tool: Tool[ArgsT], args: ArgsT, principal: Principal | None, retry: RetryPolicy) -> ToolResult:
        """Call the tool on a daemon thread so a hung tool costs a thread, never the loop. The
        thread sees the caller's context: a cancel reaches the process the tool starts."""
        job = Job(lambda: tool.run(args, principal), f"tool-{tool.name}")
        limit = tool.timeout_s if tool.timeout_s is not None else retry.timeout_s
        if retry.ceiling_s is not None:
            limit = min(limit, retry.ceiling_s)
        if not _joined(job, limit):
            # The tool is left to finish on its own, as on timeout; its process, if any, is killed.
            return _cancelled(tool)
        if job.running:
            return ToolResult.failure(
                ErrorType.timeout,
                f"{tool.name} did not finish within {limit:g}s",
                hint=TIMEOUT_HINTS.get(tool.name, _TIMEOUT_HINT),
                retryable=True,
            )
        if job.error is not None:
            return _from_exception(tool, job.error)
        value = job.value
        if isinstance(value, ToolResult):
            return value
        # Dataclasses, models, bytes, sets...: made JSON-shaped first, so redaction sees every string.
        return ToolResult.success(_jsonable(value))


def _joined(job: Job[Any], limit: float) -> bool:
    """Wait for `job` up to `limit` seconds; False if the user cancelled and it did not stop
    within CANCEL_GRACE_S of that (a tool that watches the cancel has killed its process by then)."""
    if not cancel.watched():
        job.join(limit)
        return True
    deadline = time.monotonic() + limit
    while job.running and (remaining := deadline - time.monotonic()) > 0:
        if cancel.requested():
            job.join(CANCEL_GRACE_S)
            return not job.running
        job.join(min(remaining, cancel.POLL_S))
    return True


def _cancelled(tool: Tool[Any]) -> ToolResult:
    return ToolResult.failure(ErrorType.cancelled, f"{tool.name} was stopped because the user cancelled the question")


def parse_arguments(tool: Tool[ArgsT], raw: str) -> ArgsT | ToolResult:
    """Validated arguments, or an `invalid_args` result that says exactly what is wrong."""
    if not raw.strip():
        # Some servers send "" for a tool without parameters; for any other tool it is a mistake.
        if tool.args_model.model_fields:
            return ToolResult.failure(
                ErrorType.invalid_args,
                "arguments are empty",
                hint=f"call {tool.name} with a JSON object of its parameters",
            )
        raw = "{}"
    try:
        parsed = json.loads(raw)
    except json.JSONDecodeError as exc:
        return ToolResult.failure(
            ErrorType.invalid_args,
            f"arguments are not valid JSON ({exc.msg} at character {exc.pos} of {len(raw)}); "
            "they may have been cut off",
            hint=f"call {tool.name} again with one complete JSON object",
        )
    if not isinstance(parsed, dict):
        return ToolResult.failure(
            ErrorType.invalid_args,
            f"arguments must be a JSON object, not {type(parsed).__name__}",
            hint=f'call {tool.name} with an object such as {{"field": value}}',
        )
    try:
        return tool.args_model.model_validate(parsed)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '(arguments)'}: {err['msg']}" for err in exc.errors()
        )
        schema = tool.args_model.model_json_schema()
        return ToolResult.failure(
            ErrorType.invalid_args,
            f"arguments do not fit {tool.name}: {problems}",
            hint=f"required: {', '.join(schema.get('required', [])) or 'nothing'}; "
            f"allowed: {', '.join(schema.get('properties', {})) or 'nothing'}",
        )


def _jsonable(value: Any) -> Any:
    try:
        return to_jsonable_python(value, fallback=repr)
    except ValueError:  # e.g. bytes that are not UTF-8
        return repr(value)


def _from_exception(tool: Tool[Any], exc: BaseException) -> ToolResult:
    if isinstance(exc, TimeoutError):
        return ToolResult.failure(
            ErrorType.timeout,
            f"{tool.name} timed out: {exc}",
            hint="try again later or narrow the query",
            retryable=True,
        )
    if isinstance(exc, ConnectionError):
        return ToolResult.failure(
            ErrorType.unavailable,
            f"{tool.name} could not reach its backend: {exc}",
            hint="the backend may be down; try another source or later",
            retryable=True,
        )
    return ToolResult.failure(
        ErrorType.failed,
        f"{tool.name} failed: {type(exc).__name__}: {exc}",
        hint="this looks like a fault in the tool, not in your arguments; use another tool or report it",
    )


def redact_result(result: ToolResult) -> ToolResult:
    """What may leave a tool: JSON-shaped first (a pydantic model in `data` would otherwise pass the
    walk unseen), secrets redacted, terminal control sequences neutralised."""
    update: dict[str, Any] = {"data": inert_data(redact(_jsonable(result.data)))}
    if result.error is not None:
        update["error"] = result.error.model_copy(
            update={
                "message": inert(redact(result.error.message)),
                "hint": inert(redact(result.error.hint)),
            }
        )
    return result.model_copy(update=update)
