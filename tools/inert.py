"""Text from outside made inert: what a log line, a command, a model or an alert wrote is shown as
text and can never act on the screen that shows it.

C0 and C1 control characters (all but newline and tab) and DEL are spelled out (`ESC` becomes the
four characters `\\x1b`): a log line holding `ESC ] 52 ;` would otherwise write an engineer's
clipboard, `ESC ] 0 ;` rename their window, `ESC ] 8 ;` hide a link behind other text, a CSI clear
their screen. Bidirectional overrides and isolates (U+202A-U+202E, U+2066-U+2069) are spelled out
too (`\\u202e`): they reorder what is shown, so a command could read differently from what runs.

C0 keeps the spelling people know (`\\x1b`); DEL, C1 and bidi are spelled as JSON escapes them
(`\\u009b`). JSON encoders always escape C0 themselves, but may leave DEL, C1 and bidi raw (pydantic
and `ensure_ascii=False` do), and in JSON text `\\x9b` would be no escape at all: so JSON text made
inert stays valid and decodes to the same data.
"""

from __future__ import annotations

import re
from typing import Any

_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _spelled(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    return f"\\x{code:02x}" if code < 0x20 else f"\\u{code:04x}"


def inert(text: str) -> str:
    """`text` with every control character and bidi override spelled out, visibly; idempotent."""
    return _CONTROLS.sub(_spelled, text)


def inert_data(value: Any) -> Any:
    """`inert` over every string in JSON-shaped data (keys included)."""
    if isinstance(value, str):
        return inert(value)
    if isinstance(value, dict):
        return {inert_data(k): inert_data(v) for k, v in value.items()}
    if isinstance(value, list):
        return [inert_data(v) for v in value]
    return value
