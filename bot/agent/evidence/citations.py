"""Citations as the model writes them, and the step number it cites them by.

`[2]` after a sentence refers to step 2; `[2: "exact words"]` quotes its result; `[2, 3]` cites
both. Few tokens, plain text: the same in native tool calling and the text protocols. Each result
the model is given carries its step first (`{"step":2,...}`), so it knows what to cite.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# What `numbered` adds to a result at most (steps stay under 1000): room kept when results are capped.
STEP_FIELD_CHARS = len('"step":999,')
CITATION = re.compile(r"\[(?P<steps>\d{1,3}(?:\s*,\s*\d{1,3})*)(?:\s*:\s*[\"“](?P<quote>.*?)[\"”])?\]")


@dataclass(frozen=True)
class Cited:
    """One citation in the answer: where it stands, the steps it names, the quote if any."""

    start: int
    end: int
    steps: tuple[int, ...]
    quote: str | None


def citations(answer: str) -> list[Cited]:
    return [
        Cited(
            match.start(),
            match.end(),
            tuple(int(n) for n in match["steps"].split(",")),
            match["quote"] if match["quote"] else None,
        )
        for match in CITATION.finditer(answer)
    ]


def numbered(step: int, rendered: str) -> str:
    """A rendered result (a JSON object) with its step as the first field, for the model to cite."""
    if not rendered.startswith("{"):
        return rendered
    rest = rendered[1:]
    return f'{{"step":{step}{"," if rest != "}" else ""}{rest}'
