"""A streamed reply put back together, and the part of it worth showing as it comes.

Chunks carry the content in pieces and each tool call as `tool_calls[i]` deltas (id and name
first, the arguments in pieces). Usage comes in a last chunk without choices when the request
asked for it (`stream_options.include_usage`), and not from every server.

Only what is surely answer text is passed on while it streams: text that could still turn out to
be a call written as text (`{`, a fence, `<tool_call>`, `[TOOL_CALLS]`), Harmony channels, or
thinking (`<think>`) is held back; a ReAct reply is shown from its `Final Answer:` on. A `</think>` arriving after
text was shown means that text was thinking: the sink is told to forget it.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from ...tools import cancel
from .protocols import Protocol as Speech
from .reasoning import reasoning_values


class TextSink(Protocol):
    """Where answer text goes as the model writes it."""

    def text(self, piece: str) -> None: ...

    def reset(self) -> None: ...


@dataclass
class Assembled:
    content: str = ""
    reasoning: str = ""
    refusal: str = ""
    calls: dict[int, dict[str, str]] = field(default_factory=dict)  # index -> id, name, arguments
    finish_reason: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    first_token_s: float | None = None


# Harmony: its channel headers, or with special tokens skipped, the channel names themselves.
_HARMONY = ("<|channel|>", "<|start|>", "analysis", "commentary to=")
_MARKERS = ("{", "[", "```", "<tool_call>", "[TOOL_CALLS]", "<|python_tag|>", "<function=", "<think>", *_HARMONY)
_FINAL = re.compile(r"(?im)^[ \t>*#-]*(?:final[ \t_]*answer|最终答案)[ \t]*[:：][ \t]*")


def assemble(chunks: Iterable[Any], started: float, speech: Speech, sink: TextSink | None) -> Assembled:
    out = Assembled()
    gate = _Gate(speech, sink)
    for chunk in chunks:
        cancel.check()  # the question was given up: read no more of the reply
        usage = getattr(chunk, "usage", None)
        if usage is not None:
            out.prompt_tokens = usage.prompt_tokens or 0
            out.completion_tokens = usage.completion_tokens or 0
        for choice in getattr(chunk, "choices", None) or []:
            delta = choice.delta
            reasoning = (reasoning_values(delta) or [""])[0]
            if out.first_token_s is None and (delta.content or delta.tool_calls or reasoning):
                out.first_token_s = time.monotonic() - started
            out.reasoning += reasoning
            refusal = getattr(delta, "refusal", None)
            if isinstance(refusal, str):
                out.refusal += refusal
            if delta.content:
                out.content += delta.content
                gate.add(delta.content)
            for call in delta.tool_calls or []:
                _add_call(out.calls, call)
            if choice.finish_reason:
                out.finish_reason = choice.finish_reason
    return out


def _add_call(calls: dict[int, dict[str, str]], delta: Any) -> None:
    """One `tool_calls[]` delta into the calls so far. OpenAI sends the id and whole name first, then
    the arguments in pieces, all under one index; servers differ, so: a delta without an index
    continues the last call unless it brings a new id; an id other than the one under its index
    starts another call (parallel calls all sent as index 0); a name sent again whole, and
    arguments sent again from their start (cumulative pieces) or as an object, are not doubled."""
    index = getattr(delta, "index", None)
    given_id = getattr(delta, "id", None) or ""
    function = getattr(delta, "function", None)
    name = (getattr(function, "name", None) or "") if function is not None else ""
    if index is None:
        last = max(calls, default=None)
        index = last if last is not None and not _another(calls[last], given_id, name) else len(calls)
    call = calls.get(index)
    if call is not None and given_id and call["id"] and given_id != call["id"]:
        index = max(calls) + 1
        call = None
    if call is None:
        call = calls[index] = {"id": "", "name": "", "arguments": ""}
    if given_id:
        call["id"] = given_id
    if function is None:
        return
    if name and not (call["name"] and name.startswith(call["name"])):
        call["name"] += name
    elif name:
        call["name"] = name  # sent again whole
    arguments = getattr(function, "arguments", None)
    if isinstance(arguments, dict):
        call["arguments"] = json.dumps(arguments)
    elif arguments:
        sofar = call["arguments"]
        call["arguments"] = arguments if len(sofar) > 1 and arguments.startswith(sofar) else sofar + arguments


def _another(last: dict[str, str], given_id: str, name: str) -> bool:
    """Whether a delta without an index starts a call after `last`: it brings another id, or,
    without one, another name once `last` has its arguments (a name's pieces come before them)."""
    if given_id:
        return bool(last["id"]) and given_id != last["id"]
    return bool(name and last["name"] and last["arguments"]) and not name.startswith(last["name"])


class _Gate:
    """Decides, as text arrives, whether it is answer text to pass on."""

    def __init__(self, speech: Speech, sink: TextSink | None) -> None:
        self.speech = speech
        self.sink = sink
        self.seen = ""  # everything since the last decision point
        self.state = "undecided"  # or "showing", "thinking", "held"
        self.shown = 0  # characters of `seen` already passed on

    def add(self, piece: str) -> None:
        if self.sink is None or self.state == "held":
            return
        self.seen += piece
        if self.state == "showing" and "</think>" in self.seen:
            # Thinking without its opening tag: what was shown was not the answer.
            self.sink.reset()
            self._restart_after("</think>")
        if self.state == "thinking":
            if "</think>" not in self.seen:
                return
            self._restart_after("</think>")
        if self.state == "undecided":
            self._decide()
        if self.state == "showing":
            self.sink.text(self.seen[self.shown :])
            self.shown = len(self.seen)

    def _restart_after(self, tag: str) -> None:
        self.seen = self.seen.split(tag, 1)[1]
        self.state, self.shown = "undecided", 0

    def _decide(self) -> None:
        if self.speech is Speech.json:
            self.state = "held"
            return
        if self.speech is Speech.react:
            final = _FINAL.search(self.seen)
            if final is not None:
                self.seen, self.state = self.seen[final.end() :], "showing"
            return
        head = self.seen.lstrip()
        if not head:
            return
        if head.startswith("<think>"):
            self.seen, self.state = head, "thinking"
            return
        if any(head.startswith(m) for m in _MARKERS):
            self.state = "held"
        elif not any(m.startswith(head) for m in _MARKERS):
            # Shown as written, leading space included: a continuation of a cut answer needs it.
            self.state = "showing"
