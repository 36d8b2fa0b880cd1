"""The bare loop the table compares opsbot's with: what a loop written in an afternoon does.

Native tool calling (chat completions `tools=`), the whole history sent every time, a tool's
validation errors reduced to "invalid call" (no feedback on what was wrong), no retries, no
guards against repeats or circling, nothing cut to fit, a step cap. The same model, system
prompt, tools (results still redacted: opsbot never hands a secret to a model) and step cap."""

from __future__ import annotations

import dataclasses
import json
import time
from typing import Any

from ...tools.base import ErrorType, Registry, ToolResult
from ...tools.executor import Executor, RetryPolicy, ToolCall
from ...tools.redact import redact_text
from ..agent import Source, check_answer, numbered, result_source
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
        # Every result of the thread, for the check of its answers (earlier turns' without a step).
        self.sources: list[Source] = []

    def ask(self, question: str, into: Transcript) -> None:
        """One turn of the thread, added to `into` (its answer and stop reason are the turn's)."""
        import openai

        started = time.monotonic()
        self.messages.append({"role": "user", "content": question})
        into.answer, into.stop_reason, into.evidence = "", "max_steps", None
        earlier, self.sources = [dataclasses.replace(s, step=None) for s in self.sources], []
        try:
            for step in range(1, self.max_steps + 1):
                if self._step(into, step):
                    into.stop_reason = "answered"
                    # The same check as opsbot's loop, on the same thread's results.
                    into.evidence = check_answer(into.answer, redact_text(question), [*earlier, *self.sources])
                    break
        except openai.APIError as exc:
            into.answer, into.stop_reason = f"the model server failed: {exc}", "llm_unavailable"
        self.sources = [*earlier, *self.sources]
        into.wall_s += time.monotonic() - started

    def _step(self, into: Transcript, step: int) -> bool:
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
            # Numbered as opsbot numbers them: the system prompt asks both loops to cite steps.
            rendered = numbered(step, result.render())
            self.sources.append(result_source(step, call.function.name, rendered, call.function.arguments))
            self.messages.append({"role": "tool", "tool_call_id": call.id, "content": rendered})
        return False


def _args(raw: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw
