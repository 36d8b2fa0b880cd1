"""The bare loop the table compares opsbot's with: what a loop written in an afternoon does.

Native tool calling (chat completions `tools=`), the whole history sent every time, a tool's
validation errors reduced to "invalid call" (no feedback on what was wrong), no retries, no
guards against repeats or circling, nothing cut to fit, a step cap. The same model, system
prompt, tools (results still redacted: opsbot never hands a secret to a model) and step cap."""

from __future__ import annotations

import json
import time
from typing import Any

from ...tools.base import ErrorType, Registry, ToolResult
from ...tools.executor import Executor, RetryPolicy, ToolCall
from ...tools.redact import redact_text
from ..agent.prompts import SYSTEM_PROMPT
from .results import CallSeen, Transcript

_NO_FEEDBACK = {ErrorType.invalid_args, ErrorType.unknown_tool}


class BareLoop:
    def __init__(self, client: Any, model: str, *, registry: Registry, max_steps: int, request: dict[str, Any]) -> None:
        self.client = client  # an openai.OpenAI
        self.model = model
        self.registry = registry
        self.executor = Executor(registry, RetryPolicy(retries=0))
        self.max_steps = max_steps
        self.request = request  # temperature, max_tokens
        self.messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM_PROMPT}]

    def ask(self, question: str, into: Transcript) -> None:
        """One turn of the thread, added to `into` (its answer and stop reason are the turn's)."""
        import openai

        started = time.monotonic()
        self.messages.append({"role": "user", "content": question})
        into.answer, into.stop_reason = "", "max_steps"
        try:
            for _ in range(self.max_steps):
                if self._step(into):
                    into.stop_reason = "answered"
                    break
        except openai.APIError as exc:
            into.answer, into.stop_reason = f"the model server failed: {exc}", "llm_unavailable"
        into.wall_s += time.monotonic() - started

    def _step(self, into: Transcript) -> bool:
        response = self.client.chat.completions.create(
            model=self.model, messages=self.messages, tools=self.registry.schemas(), **self.request
        )
        into.model_calls += 1
        if response.usage is not None:
            into.prompt_tokens += response.usage.prompt_tokens or 0
            into.completion_tokens += response.usage.completion_tokens or 0
        message = response.choices[0].message
        calls = message.tool_calls or []
        self.messages.append(message.model_dump(exclude_none=True, exclude={"refusal", "annotations", "audio"}))
        if not calls:
            into.answer = redact_text((message.content or "").strip())
            self.messages[-1]["content"] = into.answer
            return True
        for call in calls:
            outcome = self.executor.run_one(ToolCall(call.id, call.function.name, call.function.arguments))
            result = outcome.result
            if result.error is not None and result.error.type in _NO_FEEDBACK:
                result = ToolResult.failure(result.error.type, "invalid call")
            seen = CallSeen(tool=call.function.name, args=_args(call.function.arguments), status=result.status)
            into.calls.append(seen)
            self.messages.append({"role": "tool", "tool_call_id": call.id, "content": result.render()})
        return False


def _args(raw: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw
