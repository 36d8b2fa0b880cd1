"""Token estimates for budgeting (what fits in a window). Accounting uses the API's `usage`.

A character-based estimate needs no tokenizer download, errs on the generous side for English
and log text (about 4 characters a token), and is fast enough to run on every message.
"""

from __future__ import annotations

from collections.abc import Iterable

from ...tools.text import cut_middle as middle
from ..messages import Block, Message

CHARS_PER_TOKEN = 4
MESSAGE_OVERHEAD = 4


def estimate_tokens(text: str) -> int:
    return (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


def message_tokens(message: Message) -> int:
    tokens = MESSAGE_OVERHEAD + estimate_tokens(message.content or "")
    for call in message.tool_calls:  # a loop, not a sum over a generator: every request asks for every message
        tokens += estimate_tokens(call.name) + estimate_tokens(call.arguments) + 3
    return tokens


def blocks_tokens(blocks: Iterable[Block]) -> int:
    return sum(message_tokens(m) for block in blocks for m in block.messages)


def cut_middle(text: str, max_tokens: int) -> str:
    """`text` within `max_tokens`, keeping head and tail and saying what was cut."""
    limit = max_tokens * CHARS_PER_TOKEN
    if len(text) <= limit:
        return text
    return middle(text, max(limit - 60, 40)).text
