"""Trying a pattern only where it can match: at the occurrences of a literal it starts with.

Python's regex engine jumps between occurrences of a case-sensitive literal prefix at C speed,
but a case-insensitive pattern, or one opening with a look-behind (`\\b`), is tried at every
position (~20 ms a megabyte each). Finding the literal in the lower-cased text first costs about
1 ms a megabyte, and the pattern then runs only where it could match.
"""

from __future__ import annotations

import re
from collections.abc import Callable


def sub_at(needle: str, pattern: re.Pattern[str], replace: Callable[[re.Match[str]], str], text: str) -> str:
    """What `pattern.sub(replace, text)` gives, for a pattern whose every match starts with
    `needle` (lower case, matched in any case)."""
    lowered = text.lower()
    if len(lowered) != len(text):  # lower() lengthened a character (İ): offsets would not line up
        return pattern.sub(replace, text)
    pieces: list[str] = []
    done = 0
    at = lowered.find(needle)
    while at != -1:
        match = pattern.match(text, at)
        if match is None:
            at = lowered.find(needle, at + 1)
            continue
        pieces += [text[done:at], replace(match)]
        done = match.end()
        at = lowered.find(needle, done)
    return "".join(pieces) + text[done:] if pieces else text
