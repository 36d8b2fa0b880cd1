"""A Secret's `data` and `stringData` in JSON text: `kubectl get secret -o json`, a List of
objects, a manifest quoted in a log line.

One pass over the text's strings and brackets, tracking which object each string belongs to:
`kubectl` prints `data` before `kind`, so an object's data is held until the object closes and
hidden only if the object said `"kind": "Secret"` (a ConfigMap in the same List keeps its data).
Strings are read whole, so a brace inside one (`"config.json": "{\\"a\\": 1}"`) ends nothing.
A text cut before an object closes (an output cap) still hides the data of a Secret seen so far.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..span import Span
from .markers import Kind, marker

SECRET = marker(Kind.kubernetes_secret)

# A string never spans a line in JSON: stray quotes in prose before the object cost one line.
# An unclosed one ends at the line's end (and is no value), so no stretch is read twice.
_TOKEN = re.compile(r"\"(?:[^\"\\\r\n]|\\.)*+\"?|[{}\[\]:,]")
_DATA_KEYS = frozenset({'"data"', '"stringData"'})
# Manifests nest a few levels; deeper objects are passed over, so a 100k-deep text costs no stack.
_MAX_DEPTH = 64


@dataclass
class _Frame:
    is_object: bool
    data: bool = False  # the object under a Secret-to-be's "data" or "stringData"
    secret: bool = False  # said "kind": "Secret" at its own level
    key: str | None = None  # the key whose value comes next, once its colon is read
    after_colon: bool = False
    spans: list[Span] = field(default_factory=list)  # string values of its data


def redact_data(text: str) -> str:
    hidden: list[Span] = []
    stack: list[_Frame] = []
    too_deep = 0
    for token in _TOKEN.finditer(text):
        kind = token.group(0)
        if kind in ("{", "["):
            if len(stack) >= _MAX_DEPTH:
                too_deep += 1
                continue
            parent = stack[-1] if stack else None
            under_data = parent is not None and parent.after_colon and parent.key in _DATA_KEYS
            stack.append(_Frame(is_object=kind == "{", data=under_data and kind == "{"))
        elif kind in ("}", "]"):
            if too_deep:
                too_deep -= 1
            elif stack:
                _close(stack, hidden)
        elif not stack or not stack[-1].is_object:
            continue
        elif kind == ":":
            stack[-1].after_colon = True
        elif kind == ",":
            stack[-1].key, stack[-1].after_colon = None, False
        else:
            _string(stack[-1], token)
    while stack:
        _close(stack, hidden)
    return _masked(text, hidden)


def _string(frame: _Frame, token: re.Match[str]) -> None:
    if len(token.group(0)) < 2 or not token.group(0).endswith('"'):
        return  # unclosed
    if not frame.after_colon:
        frame.key = token.group(0)
        return
    if frame.data and token.end() - token.start() > 2:
        frame.spans.append(Span(token.start() + 1, token.end() - 1))
    elif frame.key == '"kind"' and token.group(0) == '"Secret"':
        frame.secret = True


def _close(stack: list[_Frame], hidden: list[Span]) -> None:
    closed = stack.pop()
    parent = stack[-1] if stack else None
    if closed.data and parent is not None:
        parent.spans += closed.spans
    elif closed.secret:
        hidden += closed.spans
    if parent is not None:
        parent.key, parent.after_colon = None, False


def _masked(text: str, hidden: list[Span]) -> str:
    if not hidden:
        return text
    pieces: list[str] = []
    done = 0
    for start, end in sorted(hidden):
        if start < done or text[start:end] == SECRET:
            continue
        pieces += [text[done:start], SECRET]
        done = end
    return "".join(pieces) + text[done:]
