"""What one model call is shown: the system prompt, the summary, the window, this turn, notes —
fitted to a token budget so no request can outgrow the model's context.

Over budget, older turns of the window are left out of the request first (they stay in memory
and reach the summary when folded), oldest first; then this turn's older tool results are
replaced by a one-line stand-in, which keeps every tool call paired with a result.
"""

from __future__ import annotations

import json

from ..messages import Block, Message
from .tokens import message_tokens


def fit_prompt(
    head: list[Message], window: list[Block], turn: list[Block], tail: list[Message], budget: int
) -> list[Message]:
    turns = _split_turns(window)
    current = [list(block.messages) for block in turn]
    # Each message is estimated once; what is left out or shortened is taken off the total.
    turn_sizes = [sum(message_tokens(m) for b in t for m in b.messages) for t in turns]
    block_sizes = [sum(message_tokens(m) for m in block) for block in current]
    size = sum(message_tokens(m) for m in [*head, *tail]) + sum(turn_sizes) + sum(block_sizes)
    left_out = 0
    while size > budget and turns:
        turns.pop(0)
        size -= turn_sizes.pop(0)
        left_out += 1
    for n, block in enumerate(current[:-1]):  # the newest results are what the model is about to read
        if size <= budget:
            break
        block[:] = [_elided(m) if m.role == "tool" else m for m in block]
        shortened = sum(message_tokens(m) for m in block)
        size += shortened - block_sizes[n]
    notes = [Message.system(f"{left_out} earlier turn(s) of this thread were left out to fit the context.")]
    messages = [*head, *(notes if left_out else [])]
    messages += [m for t in turns for b in t for m in b.messages]
    messages += [m for block in current for m in block]
    return messages + tail


def _split_turns(blocks: list[Block]) -> list[list[Block]]:
    turns: list[list[Block]] = []
    for block in blocks:
        if block.starts_turn or not turns:
            turns.append([])
        turns[-1].append(block)
    return turns


def _elided(message: Message) -> Message:
    try:
        result = json.loads(message.content or "{}")
        status, step = ("ok" if result.get("ok") else "error"), result.get("step")
    except (ValueError, AttributeError):
        status, step = "unknown", None
    said = f"this {status} result was left out to fit the context; call again, narrower, if it is needed"
    # Its step stays: what the answer cites from it still points at the right line.
    stand_in = json.dumps({"step": step, "elided": said} if step is not None else {"elided": said})
    return Message.tool(message.tool_call_id or "", stand_in)
