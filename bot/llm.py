"""The model: any OpenAI-compatible chat-completions endpoint, with native tool calling.

Retries of 429/5xx/timeouts are the `openai` client's own (it honours `Retry-After`); once they
are spent, every failure becomes one `ModelUnavailable` whose message says what to do.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import openai
from pydantic import BaseModel

from bot.messages import ToolCallSpec
from tools.redact import redact_text


class Usage(BaseModel):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    model_calls: int = 0

    def add(self, other: Usage) -> None:
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.model_calls += other.model_calls


@dataclass(frozen=True)
class ModelTurn:
    content: str
    tool_calls: list[ToolCallSpec]
    usage: Usage
    duration_s: float = 0.0


@dataclass
class ModelUnavailable(Exception):
    """The model could not be used. `transient`: worth asking again later; otherwise an operator
    has to fix something (key, model name, a request the provider refuses)."""

    reason: str
    transient: bool = True
    status: int | None = field(default=None)

    def __str__(self) -> str:
        return self.reason


class ModelClient:
    def __init__(
        self,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout_s: float = 60.0,
        max_retries: int = 2,
        temperature: float = 0.0,
        max_answer_tokens: int = 1024,
    ) -> None:
        self.model = model
        self.base_url = base_url
        self.max_retries = max_retries
        self.timeout_s = timeout_s
        self.temperature = temperature
        self.max_answer_tokens = max_answer_tokens
        # Local OpenAI-compatible servers take no key, but the client insists on one.
        self._client = openai.OpenAI(
            api_key=api_key or "not-needed", base_url=base_url, timeout=timeout_s, max_retries=max_retries
        )

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> ModelTurn:
        started = time.monotonic()
        request: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "temperature": self.temperature,
            "max_tokens": self.max_answer_tokens,
        }
        if tools:
            request["tools"] = tools
        try:
            response = self._client.chat.completions.create(**request)
        except openai.APIError as exc:
            raise self._unavailable(exc) from exc
        try:
            return self._turn(response, time.monotonic() - started)
        except (AttributeError, IndexError, TypeError, ValueError) as exc:
            # A proxy's HTML error page or a half-compatible server: say so rather than crash.
            raise ModelUnavailable(
                f"{self._where} returned a response opsbot cannot read ({type(exc).__name__}); "
                "check that OPENAI_BASE_URL is an OpenAI-compatible chat-completions endpoint",
                transient=False,
            ) from exc

    @staticmethod
    def _turn(response: Any, duration_s: float) -> ModelTurn:
        choice = response.choices[0]
        calls = [
            ToolCallSpec(
                id=c.id or f"call_{uuid.uuid4().hex[:12]}", name=c.function.name, arguments=c.function.arguments or ""
            )
            for c in (choice.message.tool_calls or [])
            if getattr(c, "function", None) is not None
        ]
        usage = response.usage
        return ModelTurn(
            content=choice.message.content or "",
            tool_calls=calls,
            usage=Usage(
                prompt_tokens=(usage.prompt_tokens or 0) if usage else 0,
                completion_tokens=(usage.completion_tokens or 0) if usage else 0,
                model_calls=1,
            ),
            duration_s=duration_s,
        )

    @property
    def _where(self) -> str:
        return self.base_url or "the OpenAI API"

    def _unavailable(self, exc: openai.APIError) -> ModelUnavailable:
        attempts = f"after {self.max_retries + 1} attempt(s)"
        where = self._where
        if isinstance(exc, openai.AuthenticationError | openai.PermissionDeniedError):
            return ModelUnavailable(
                f"{where} rejected the API key (HTTP {exc.status_code}): check OPENAI_API_KEY", False, exc.status_code
            )
        if isinstance(exc, openai.NotFoundError):
            return ModelUnavailable(
                f"{where} does not know model {self.model!r} (HTTP 404): check OPSBOT_MODEL", False, 404
            )
        if isinstance(exc, openai.RateLimitError):
            return ModelUnavailable(f"{where} is rate-limiting opsbot (HTTP 429) {attempts}", True, 429)
        if isinstance(exc, openai.APITimeoutError):
            return ModelUnavailable(f"{where} did not answer within {self.timeout_s:g}s {attempts}")
        if isinstance(exc, openai.APIConnectionError):
            return ModelUnavailable(f"cannot connect to {where} {attempts}: check OPENAI_BASE_URL and the network")
        if isinstance(exc, openai.APIStatusError) and exc.status_code >= 500:
            return ModelUnavailable(f"{where} answered HTTP {exc.status_code} {attempts}", True, exc.status_code)
        if isinstance(exc, openai.APIStatusError):
            # 400/413/422: the provider refuses this request (often: too long). Retrying will not help.
            detail = redact_text(str(exc.message))[:300]
            return ModelUnavailable(
                f"{where} refused the request (HTTP {exc.status_code}: {detail})", False, exc.status_code
            )
        return ModelUnavailable(f"{where} failed: {redact_text(str(exc))[:300]}")
