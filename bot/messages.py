"""Chat messages as opsbot stores them, and the blocks that keep tool calls with their results."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class ToolCallSpec(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    name: str
    arguments: str = Field(description="raw JSON text as the model sent it")


class Message(BaseModel):
    model_config = ConfigDict(frozen=True)

    role: Literal["system", "user", "assistant", "tool"]
    content: str | None = None
    tool_calls: list[ToolCallSpec] = Field(default_factory=list)
    tool_call_id: str | None = None

    @classmethod
    def system(cls, text: str) -> Message:
        return cls(role="system", content=text)

    @classmethod
    def user(cls, text: str) -> Message:
        return cls(role="user", content=text)

    @classmethod
    def assistant(cls, text: str, tool_calls: list[ToolCallSpec] | None = None) -> Message:
        return cls(role="assistant", content=text, tool_calls=tool_calls or [])

    @classmethod
    def tool(cls, call_id: str, text: str) -> Message:
        return cls(role="tool", content=text, tool_call_id=call_id)

    def to_api(self) -> dict[str, Any]:
        """The chat-completions form of this message."""
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            out["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                for c in self.tool_calls
            ]
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        return out


class Block(BaseModel):
    """Messages stored, trimmed and folded together: a user message, an answer, or an assistant
    message with tool calls followed by exactly one result per call. Memory never splits a block,
    so the provider never sees a tool call without its result or a result without its call."""

    model_config = ConfigDict(frozen=True)

    messages: list[Message] = Field(min_length=1)

    @property
    def starts_turn(self) -> bool:
        return self.messages[0].role == "user"

    @classmethod
    def tool_step(cls, assistant: Message, results: list[Message]) -> Block:
        expected = [c.id for c in assistant.tool_calls]
        got = [m.tool_call_id for m in results]
        if expected != got:
            raise ValueError(f"tool results {got} do not pair with tool calls {expected}")
        return cls(messages=[assistant, *results])
