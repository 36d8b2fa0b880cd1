"""The specific facts an answer states: what the check looks for in the tool results.

Numbers (with units: durations, sizes, percentages), versions, hosts and addresses, ports, ids,
error codes, file paths, dates and times, and `key: value` / `key=value` pairs; a number said of
something ("the pool size is 10") keeps what it was said of, its key, so a result giving that key
another value contradicts it. Not claims: citations (`[2]`), numbers naming steps, list ordinals,
anything the question itself says, fenced code (commands to run, lines quoted), and sentences
that recommend rather than state ("raise pool_size to 20").
"""

from __future__ import annotations

import bisect
import functools
import re
from enum import StrEnum
from typing import NamedTuple

from .citations import CITATION


class Kind(StrEnum):
    number = "number"
    name = "name"  # hosts, addresses, paths, versions, ids, codes, dates and times: found as written
    pair = "pair"


class Quantity(NamedTuple):
    """A number as a value in its dimension's base unit (seconds, bytes, percent, or none)."""

    value: float
    dimension: str
    decimals: int
    raw: float


class Fact(NamedTuple):
    kind: Kind
    text: str
    start: int
    end: int
    key: tuple[str, ...] = ()  # what the number or pair is said of, as words: ("pool", "size")
    value: str = ""  # the value as written (a pair's, a number's digits)


_TIME = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_SIZE = {"b": 1.0, "kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12, "kib": 1024.0, "mib": 1024.0**2, "gib": 1024.0**3}
_SIZE["tib"] = 1024.0**4
_UNIT_WORDS = {"sec": "s", "secs": "s", "second": "s", "seconds": "s", "min": "m", "mins": "m", "minute": "m"}
_UNIT_WORDS |= {"minutes": "m", "hr": "h", "hrs": "h", "hour": "h", "hours": "h", "day": "d", "days": "d"}
_UNIT_WORDS |= {"byte": "b", "bytes": "b"}

_UNIT = r"%|(?i:ns|µs|us|ms|secs?|seconds?|s|mins?|minutes?|m|hrs?|hours?|h|days?|d|[kmgt]i?b|bytes?|b)"
# Every fact but a citation starts where no word goes on (each alternative says more): asserted
# once before the alternation, the scan skips the middle of words at one test, not one per kind.
_FACTS = re.compile(
    rf"(?P<cite>{CITATION.pattern})|(?<!\w)(?=[\w~./])(?:"
    + "|".join(
        (
            r"(?P<skip>\bHTTP/\d(?:\.\d)?\b)",
            r"(?P<url>\bhttps?://[^\s<>`'\")\]]*[^\s<>`'\")\].,;:!?])",
            r"(?<![\w.\-])(?P<pkey>[A-Za-z][\w\-]*[_.][\w.\-]*[A-Za-z0-9]|[a-z]+[A-Z]\w*)"
            r"(?::[ \t]+|[ \t]*=[ \t]*)(?P<pval>[^\s,;`'\")\]]+)",
            r"(?P<date>\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2})?(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?)?)",
            r"(?P<clock>(?<![\w:])\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?![\w:]))",
            r"(?P<ip>(?<![\w.])\d{1,3}(?:\.\d{1,3}){3}(?::\d{1,5})?(?![\w.]))",
            r"(?P<version>(?<![\w.])v?\d+(?:\.\d+){2,}(?:-[\w.]+)?(?!\w)|(?<![\w.])v\d+(?:\.\d+)+(?!\w))",
            r"(?P<path>(?<![\w.:/])(?:~|\.{1,2})?(?:/[\w.@\-]*[\w@\-])+)",
            rf"(?P<number>(?<![\w.])(?P<digits>\d{{1,3}}(?:,\d{{3}})+(?:\.\d+)?|\d+(?:\.\d+)?)"
            rf"(?:[ \t]?(?P<unit>{_UNIT})(?!\w))?(?!\w|\.\d))",
            r"(?P<code>(?<![\w\-])(?:E(?:CONN\w+|TIMEDOUT|NOENT|ACCES|PIPE|NOSPC|ADDRINUSE|HOSTUNREACH|NETUNREACH|AGAIN|MFILE|NOMEM)"
            r"|[A-Z]{2,}-\d+|[A-Z][A-Z0-9]*_[A-Z0-9_]+)(?![\w\-]))",
            r"(?P<host>(?<![\w.\-/])(?=[\w.\-]*[A-Za-z])[A-Za-z0-9][\w\-]*(?:\.[\w\-]+)+(?![\w\-]))",
            r"(?P<id>(?<![\w\-])(?=[\w\-]*\d)(?=[\w\-]*[A-Za-z])[A-Za-z0-9][\w\-]{6,}(?![\w\-]))",
        )
    )
    + ")"
)
_FENCED = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)
_ORDINAL = re.compile(r"(?:^|\n)[ \t]*(?:[-*][ \t]+)?#?$")
_STEP_WORD = re.compile(r"(?i)\bsteps?[ \t]+(?:\d+[ \t]*(?:,|and|or|to|-)[ \t]*)*$")
# What links a number to what it is said of, right before it: "pool size is 10", "`pool_size`: 10".
_LINK_BEFORE = re.compile(
    r"(?:\b(?:is|are|was|were|of|at|set to)|=|:(?=[ \t`'\"]))"
    r"(?:[ \t]+(?:only|now|currently|still|just|about|around|roughly|set to|at))*[ \t`'\"~]*$"
)
_KEY_WORDS_BEFORE = re.compile(r"(?:[A-Za-z_][\w.\-]*[ \t`'\"]*){1,6}$")
_ADVICE = re.compile(
    r"(?i)\b(?:should|could|consider|recommend\w*|suggest\w*|try|might want|next step|to check)\b|(?i:\bnext:)|"
    r"(?i:^[ \t]*(?:[-*][ \t]+|\d+[.)][ \t]+)?(?:raise|increase|decrease|lower|set|reduce|bump|scale|restart|run|"
    r"roll ?back|revert|check|add|change|update|use)\b)"
)
_SENTENCE_END = re.compile(r"[.!?](?=\s)|\n")
_STOP_WORDS = frozenset(
    {"the", "a", "an", "and", "or", "on", "in", "for", "with", "its", "their", "this", "that", "current", "configured"}
)
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SPLIT = re.compile(r"[^a-z0-9]+")


@functools.lru_cache(maxsize=4096)
def key_words(key: str) -> tuple[str, ...]:
    """`db.primary.pool_size`, `poolSize`, "the pool size" -> ("db", "primary", "pool", "size") and so on."""
    words = _SPLIT.split(_CAMEL.sub(" ", key).lower())
    return tuple(word for word in words if word and word not in _STOP_WORDS)


def quantity(digits: str, unit: str | None) -> Quantity:
    raw = float(digits.replace(",", ""))
    decimals = len(digits.split(".", 1)[1]) if "." in digits else 0
    if not unit:
        return Quantity(raw, "", decimals, raw)
    unit = unit.lower()
    unit = _UNIT_WORDS.get(unit, unit)
    if unit == "%":
        return Quantity(raw, "%", decimals, raw)
    if unit in _TIME:
        return Quantity(raw * _TIME[unit], "s", decimals, raw)
    return Quantity(raw * _SIZE.get(unit, 1.0), "b", decimals, raw)


class Bounds(NamedTuple):
    start: int
    end: int


def sentence(text: str, start: int, end: int) -> Bounds:
    """Where the sentence holding text[start:end] begins and ends (just after its closing mark)."""
    ends = _sentence_ends(text)
    at = bisect.bisect_right(ends, start) - 1
    after = bisect.bisect_right(ends, end)
    return Bounds(ends[at] if at >= 0 else 0, ends[after] if after < len(ends) else len(text))


@functools.lru_cache(maxsize=8)
def _sentence_ends(text: str) -> list[int]:
    """Where each sentence of `text` ends, found once for all the facts of an answer."""
    return [match.end() for match in _SENTENCE_END.finditer(text)]


def facts(answer: str, question: str = "") -> list[Fact]:
    """The facts `answer` states, in order, less those that are not claims (the module says which)."""
    said = {fact.text.lower() for fact in _scan(question, question, frozenset(), claims=False)}
    return _scan(answer, _FENCED.sub(lambda m: " " * len(m.group()), answer), frozenset(said), claims=True)


def _scan(answer: str, masked: str, said: frozenset[str], claims: bool) -> list[Fact]:
    """Every fact of `masked` (`answer` with what is no claim blanked out); with `claims`, less
    those that are not claims."""
    out: list[Fact] = []
    advice: dict[int, bool] = {}  # by where a sentence starts: judged once
    steps = "step" in answer.lower()  # else no number can be a step's: not looked for at each
    for match in _FACTS.finditer(masked):
        kind = match.lastgroup
        if kind in ("cite", "skip") or match.group().lower() in said:
            continue
        start, end = match.span()
        if kind == "number":
            group = "number"
        elif match["pkey"] is not None:
            group = "pair"
        else:
            group = "name"
        bounds = sentence(answer, start, end)
        if claims and _not_a_claim(answer, group, start, end, bounds, steps, advice):
            continue
        out.append(_fact(answer, match, group, bounds.start))
    return out


def _fact(answer: str, match: re.Match[str], group: str, begin: int) -> Fact:
    """The fact `match` found, its sentence starting at `begin`."""
    text, (start, end) = match.group(), match.span()
    if group == "pair":
        return Fact(Kind.pair, text, start, end, key_words(match["pkey"]), match["pval"])
    if group == "number":
        key = _key_before(answer[max(begin, start - 80) : start])
        return Fact(Kind.number, text, start, end, key, match["digits"])
    return Fact(Kind.name, text, start, end)


def _key_before(prefix: str) -> tuple[str, ...]:
    """The words a number is said of, from the text right before it ("the pool size is")."""
    link = _LINK_BEFORE.search(prefix, max(0, len(prefix) - 40))
    if link is None:
        return ()
    words = _KEY_WORDS_BEFORE.search(prefix, max(0, link.start() - 60), link.start())
    return key_words(words.group()) if words else ()


def _not_a_claim(
    answer: str, group: str, start: int, end: int, bounds: Bounds, steps: bool, advice: dict[int, bool]
) -> bool:
    """A step's number, a list's, or a fact in a sentence of advice."""
    if group == "number" and (
        (steps and _STEP_WORD.search(answer, max(0, start - 40), start)) or _ordinal(answer, start, end)
    ):
        return True
    if bounds.start not in advice:
        advice[bounds.start] = bool(_ADVICE.search(answer[bounds.start : bounds.end]))
    return advice[bounds.start]


def _ordinal(answer: str, start: int, end: int) -> bool:
    """A list's number: `1.` or `2)` opening a line."""
    return answer[end : end + 1] in (".", ")") and bool(_ORDINAL.search(answer, max(0, start - 8), start))
