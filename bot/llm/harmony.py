"""gpt-oss's Harmony format, for servers that pass it through as text instead of parsing it.

gpt-oss writes every message with a channel (OpenAI's harmony guide, "Receiving tool calls" and
"Reasoning"): `analysis` is its thinking, `final` the answer, `commentary` a call when the header
names a recipient (`to=functions.query_logs`, before or after the channel, the arguments' format
as `<|constrain|>json` or a bare `json`) and otherwise a preamble the user may read. A server
without a Harmony parser hands that text over as `content`, special tokens included; one that
skips special tokens leaves the headers run together (`analysis…assistantfinal…`). Both are read
here into thinking, calls and answer; anything else is not Harmony and is left as it is.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from .textcalls import TextCall

_HEADER = re.compile(
    r"(?:<\|start\|>\s*(?:assistant)?(?P<before>[^<]*))?"
    r"<\|channel\|>\s*(?P<channel>\w+)(?P<after>[^<]*)"
    r"(?:<\|constrain\|>\s*\w+\s*)?<\|message\|>"
)
_END = re.compile(r"<\|(?:end|call|return)\|>")
_RECIPIENT = re.compile(r"\bto=(?:functions\.)?(?P<name>[\w.:/-]+)")
# Special tokens skipped by the server: the channel names run into the text around them.
_BARE_FINAL = re.compile(r"\A\s*analysis(?P<thinking>.*?)assistant\s*final(?P<answer>.*)\Z", re.S)
_BARE_CALL = re.compile(
    r"\A\s*(?:analysis(?P<thinking>.*?)assistant\s*)?commentary\s+to=(?:functions\.)?(?P<name>[\w.:/-]+)"
    r"\s*(?:<\|constrain\|>)?\s*(?:json|code)?\s*(?P<arguments>\{.*\})\s*\Z",
    re.S,
)


class Harmony(NamedTuple):
    """A Harmony reply apart: the answer (or a preamble to calls), the thinking, the calls."""

    answer: str
    thinking: str
    calls: list[TextCall]


def read_harmony(content: str) -> Harmony | None:
    """`content` read as Harmony messages, or None when it is not written in Harmony."""
    text = content.strip()
    if text.startswith(("<|channel|>", "<|start|>")):
        return _tokens(text)
    bare = _BARE_CALL.match(text)
    if bare is not None:
        return Harmony("", (bare["thinking"] or "").strip(), [TextCall(bare["name"], bare["arguments"])])
    final = _BARE_FINAL.match(text)
    if final is not None:
        return Harmony(final["answer"].strip(), final["thinking"].strip(), [])
    return None


def _tokens(text: str) -> Harmony | None:
    headers = list(_HEADER.finditer(text))
    if not headers or headers[0].start() != 0:
        return None
    answer: list[str] = []
    thinking: list[str] = []
    calls: list[TextCall] = []
    for index, header in enumerate(headers):
        stop = headers[index + 1].start() if index + 1 < len(headers) else len(text)
        body = text[header.end() : stop]
        end = _END.search(body)
        body = (body[: end.start()] if end else body).strip()
        recipient = _RECIPIENT.search(f"{header['before'] or ''} {header['after']}")
        if recipient is not None:
            calls.append(TextCall(recipient["name"], body))
        elif header["channel"] == "analysis":
            thinking.append(body)
        elif body:
            answer.append(body)  # final, or a commentary preamble meant for the user
    return Harmony("\n\n".join(answer), "\n".join(part for part in thinking if part), calls)
