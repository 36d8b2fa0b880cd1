"""What the loop needs of a model: the HTTP client (client.py) is one, a scripted stand-in another."""

from __future__ import annotations

from typing import Any, Protocol

from .streaming import TextSink
from .turns import ModelTurn


class Model(Protocol):
    @property
    def max_answer_tokens(self) -> int:
        """The output limit of one reply: a call cut at it is reported to the model with it."""

    def complete(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, sink: TextSink | None = None
    ) -> ModelTurn:
        """One model call. `tools` None or empty: the model must answer in words. `sink` gets the
        answer text as it is written, when the endpoint streams. Raises `ModelUnavailable`."""
