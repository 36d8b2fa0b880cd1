"""A reasoning model's thinking, kept apart from its answer.

Served locally, reasoning models (DeepSeek-R1 distills, Qwen3, QwQ) write `<think>…</think>` into
`content`; with some chat templates the opening tag is part of the prompt, so the answer holds only
the closing one. vLLM's reasoning parsers move the thinking to `reasoning_content` (newer versions:
`reasoning`) instead. Whatever the form, the thinking is never the answer.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple

_BLOCK = re.compile(r"<think>(.*?)(?:</think>|\Z)", re.S)
_CLOSE = "</think>"


class Split(NamedTuple):
    """A message's content apart: what it says, and the thinking it held."""

    answer: str
    thinking: str


def split_thinking(content: str) -> Split:
    """(answer, thinking) of a message's content: closed blocks, an unclosed one at the end, and
    thinking before a closing tag that had no opening one."""
    thinking: list[str] = []
    if _CLOSE in content and "<think>" not in content.split(_CLOSE, 1)[0]:
        head, content = content.split(_CLOSE, 1)
        thinking.append(head)

    def keep(match: re.Match[str]) -> str:
        thinking.append(match.group(1))
        return ""

    answer = _BLOCK.sub(keep, content)
    if not thinking:
        return Split(content, "")  # as written: a continuation may begin with the space it needs
    return Split(answer.strip(), "\n".join(part.strip() for part in thinking if part.strip()))


def reasoning_field(message: Any) -> str:
    """The thinking a server put beside the content: `reasoning_content` or `reasoning`."""
    for value in reasoning_values(message):
        if value.strip():
            return value.strip()
    return ""


def reasoning_values(message: Any) -> list[str]:
    """What a message or a streamed delta holds as `reasoning_content`, then as `reasoning`: a
    declared field, or one the openai client keeps as an extra. Read from the object's fields,
    not by `getattr`: a field the model lacks costs pydantic a raised AttributeError each time,
    and a stream asks on every piece."""
    declared = getattr(message, "__dict__", None) or {}
    extra = getattr(message, "model_extra", None) or {}
    values = []
    for name in ("reasoning_content", "reasoning"):
        value = declared.get(name)
        if value is None:
            value = extra.get(name)
        if isinstance(value, str):
            values.append(value)
    return values
