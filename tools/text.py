"""Cutting long text: in the middle, the one way opsbot shortens what it shows, saying so aloud;
and at a cap that read no further, without the word the cut went through. And counting things in
words ("3 lines")."""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Cut:
    text: str  # head, a marker saying how much was cut, tail
    head: int  # characters kept from the start
    tail: int  # characters kept from the end
    cut: int  # characters left out


def cut_middle(text: str, keep: int, head_share: float = 0.5) -> Cut:
    """`text` with all but `keep` characters cut from the middle (head and tail matter most:
    the start says what something is, the end holds the newest lines)."""
    if len(text) <= keep:
        return Cut(text, len(text), 0, 0)
    head = text[: int(keep * head_share)]
    tail = text[len(text) - (keep - len(head)) :] if keep > len(head) else ""
    cut = len(text) - len(head) - len(tail)
    return Cut(f"{head}\n[... {cut:,} characters cut ...]\n{tail}", len(head), len(tail), cut)


_LAST_WORD = re.compile(r"\S+\Z")
_FIRST_WORD = re.compile(r"\A\S+")
CUT_WORD = "…"


def without_cut_words(text: str, *, start: bool = False, end: bool = False) -> str:
    """`text`, cut short at its `start` and/or `end` before redaction, without the word each cut
    went through: half a token matches no shape, so its visible half would leave unredacted."""
    if end and text and not text[-1].isspace():
        text = _LAST_WORD.sub(CUT_WORD, text)
    if start and text and not text[0].isspace():
        text = _FIRST_WORD.sub(CUT_WORD, text)
    return text


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    """ "1 line", "3 lines", "2 entries" (`nouns` where adding an s does not make the plural)."""
    return f"{count:,} {noun if count == 1 else (nouns or noun + 's')}"
