"""What one model call comes to, whatever server answered and however it spoke."""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic import BaseModel

from ..faults import Fault, Part
from ..messages import ToolCallSpec


class Usage(BaseModel):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    model_calls: int = 0
    first_token_ms: float | None = None  # of the run's first model call: how long a person waited for a sign of life

    def add(self, other: Usage) -> None:
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.model_calls += other.model_calls
        if self.first_token_ms is None:
            self.first_token_ms = other.first_token_ms


@dataclass(frozen=True)
class ModelTurn:
    content: str  # the answer or a preamble to calls, reasoning taken out
    tool_calls: list[ToolCallSpec]
    usage: Usage
    duration_s: float = 0.0
    reasoning: str = ""  # the model's thinking: for the step log, never the answer
    # The model stopped at its output limit (`finish_reason: length`): an answer is incomplete,
    # a call's arguments are cut.
    cut: bool = False
    # Calls written with a namespace before an offered tool's name, mapped to it: for the step log.
    renamed: tuple[str, ...] = ()
    finish_reason: str | None = None  # as the server said it; the loop words the unusual ones
    refusal: str = ""  # OpenAI's `refusal`: the model declined, and this is why
    model: str = ""  # the model that answered (a fallback's name while the configured one is down)


@dataclass
class ModelUnavailable(Exception):
    """The model could not be used. `transient`: worth asking again later; otherwise an operator
    has to fix something (key, model name, a request the provider refuses)."""

    reason: str
    transient: bool = True
    status: int | None = field(default=None)
    too_long: bool = False  # the request outgrew the model's context: a shorter one may be answered

    def __str__(self) -> str:
        return self.reason

    @property
    def fault(self) -> Fault:
        return Fault(part=Part.model, lasting=not self.transient, detail=self.reason)
