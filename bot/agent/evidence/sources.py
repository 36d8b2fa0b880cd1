"""The thread's tool results as the check reads them: each one's lines, searchable as one text.

A result is read as the model was given it (its rendered JSON): strings with line breaks become
their lines, every other value a `key: value` line (`{"key": k, "value": v}`, read_config's answer
for one key, becomes `k: v`), so a quote of a log line or a YAML line, and a fact beside its key,
are found as the model saw them. What the model asked a tool (its arguments) counts as well: "the
last 15 minutes" may come from `since=15m`.
"""

from __future__ import annotations

import bisect
import functools
import json
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, TypeVar, cast

T = TypeVar("T")


@dataclass(frozen=True)
class Source:
    """One tool result: the step of this run that made it (None: an earlier turn's), what ran, its text."""

    step: int | None
    tool: str
    text: str


def result_source(step: int | None, tool: str, rendered: str, arguments: str = "") -> Source:
    """A rendered result (and the call's arguments) as a Source."""
    return Source(step, tool, read_result(rendered, arguments))


# A thread's stored results are checked again at each of its answers: each is read once while it
# is among the last READ_KEPT (a result is capped, so this holds a few MB at most).
READ_KEPT = 256


@functools.lru_cache(maxsize=READ_KEPT)
def read_result(rendered: str, arguments: str) -> str:
    """A rendered result and its call's arguments as the lines the check reads."""
    lines: list[str] = []
    _flatten(_loads(rendered), "", lines)
    if arguments:
        _flatten(_loads(arguments), "", lines)
    return "\n".join(lines)


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _flatten(value: Any, key: str, out: list[str]) -> None:
    if isinstance(value, dict):
        pair_key, pair_value = value.get("key"), value.get("value")
        if isinstance(pair_key, str) and pair_value is not None and not isinstance(pair_value, dict | list):
            out.append(f"{pair_key}: {_scalar(pair_value)}")
        for name, item in value.items():
            if name != "step":  # the loop's own number for the result, not the tool's word
                _flatten(item, str(name), out)
    elif isinstance(value, list):
        for item in value:
            _flatten(item, key, out)
    elif isinstance(value, str) and (not key or "\n" in value):
        out.extend(value.splitlines())
    else:
        out.append(f"{key}: {_scalar(value)}")


def _scalar(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


@dataclass
class Haystack:
    """Every source's text, joined, with where each begins: one search over all of them."""

    sources: list[Source]
    starts: list[int] = field(init=False)
    text: str = field(init=False)
    found: dict[Hashable, Any] = field(init=False, default_factory=dict)
    squeezed: dict[int, str] = field(init=False, default_factory=dict)  # a source's text, whitespace runs as one
    near: list[int] = field(init=False, default_factory=list)  # the sources a fact's line cites: searched first

    def __post_init__(self) -> None:
        self.starts, at = [], 0
        for source in self.sources:
            self.starts.append(at)
            at += len(source.text) + 1
        self.text = "\n".join(source.text for source in self.sources)

    @cached_property
    def by_step(self) -> dict[int | None, list[int]]:
        made: dict[int | None, list[int]] = {}
        for n, source in enumerate(self.sources):
            made.setdefault(source.step, []).append(n)
        return made

    @cached_property
    def lower(self) -> str:
        return self.text.lower()

    def holds(self, n: int, quote: str) -> bool:
        """Whether source `n` holds `quote` (whitespace runs as one space): as written, else squeezed."""
        text = self.sources[n].text
        if quote in text:
            return True
        if n not in self.squeezed:
            self.squeezed[n] = " ".join(text.split())
        return quote in self.squeezed[n]

    def made_at(self, step: int) -> list[int]:
        """The sources step `step` of this run made, by their place in `sources`."""
        return self.by_step.get(step, [])

    def once(self, what: Hashable, look: Callable[[], T]) -> T:
        """What `look` finds, looked for once however often an answer states the same thing."""
        if what not in self.found:
            self.found[what] = look()
        return cast(T, self.found[what])

    def source_at(self, offset: int) -> Source:
        return self.sources[bisect.bisect_right(self.starts, offset) - 1]

    def line_at(self, offset: int) -> str:
        start = self.text.rfind("\n", 0, offset) + 1
        end = self.text.find("\n", offset)
        return self.text[start : end if end >= 0 else len(self.text)]
