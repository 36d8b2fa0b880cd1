"""Matching for query_logs: level words, the substring, and a regex
that is refused for its shape or bounded in time (per search and by the query's deadline).

Every filter judges redacted lines, so no sequence of queries can learn what redaction hides
(`prefilter_for` says how that stays fast)."""

from __future__ import annotations

import functools
import re
import re._constants as sre_constants
import re._parser as sre_parse
import time
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

import ahocorasick
import regex

from ..base import ErrorType, ToolResult
from ..redact import MARKER as PEM_MARKER
from ..redact import in_body_run, marker_free, redact_body_runs, redact_lines
from ..span import EndsByStart
from .entries import Grouping
from .filters import Filters, Prefilter
from .levels import LEVELS as LEVELS  # query.py reads it from here
from .levels import level_rank
from .levels import level_tokens as _level_tokens  # its name before levels.py: prefilter_for unchanged
from .time import Judged, Verdict, time_of

REGEX_SEARCH_SECONDS = 0.5


# ---------------------------------------------------------------- regex safety


@dataclass(frozen=True)
class Shape:
    nested: bool  # a repeated group holding an unbounded repetition: (a+)+, (\w+\s?)*
    overlapping: bool  # a repeated group whose literal alternatives spell one text two ways: (a|aa)+
    string_anchor: bool  # \A, \Z, \z
    lookaround: bool


_BRACES = re.compile(r"\{(\d*)(,?)(\d*)\}")


def compile_regex(pattern: str) -> Any:
    """The compiled pattern, or `invalid_args` saying why it is refused."""
    shape = shape_of(pattern)
    if shape.nested:
        return ToolResult.failure(
            ErrorType.invalid_args,
            f"regex {pattern!r} repeats a group that itself holds an unbounded repetition, like (a+)+; "
            "such patterns can take exponential time",
            hint="drop the inner or the outer repetition, e.g. (ab)+ or a+, or use contains",
        )
    if shape.overlapping:
        return ToolResult.failure(
            ErrorType.invalid_args,
            f"regex {pattern!r} repeats a group whose alternatives overlap, like (a|aa)+ or (a|a)+; "
            "such patterns can take exponential time",
            hint="make the alternatives distinct, e.g. a+ for (a|aa)+, or use contains",
        )
    if shape.string_anchor:
        return ToolResult.failure(
            ErrorType.invalid_args,
            "\\A, \\Z and \\z are not supported: the regex is searched within each entry",
            hint="use ^ and $, which match at the start and end of each line",
        )
    try:
        return regex.compile(pattern, regex.MULTILINE | regex.VERSION0)
    except regex.error as exc:
        return ToolResult.failure(
            ErrorType.invalid_args,
            f"regex {pattern!r} does not compile: {exc}",
            hint="use Python regular expression syntax, or contains for a plain substring",
        )


def shape_of(pattern: str) -> Shape:
    """What a pattern's syntax says about its cost and meaning, read without compiling it."""
    nested = overlapping = anchor = look = False
    outer: list[bool] = []  # per open group: whether the enclosing group held an unbounded repetition
    bodies: list[int] = []  # per open group: where its body starts
    unbounded = False  # whether the current group holds one so far
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            anchor |= pattern[i + 1 : i + 2] in ("A", "Z", "z")
            i += 2
        elif char == "[":
            i = _class_end(pattern, i)
        elif char == "(":
            outer.append(unbounded)
            unbounded = False
            i, kind = _group_body(pattern, i)
            bodies.append(i)
            look |= kind == "lookaround"
        elif char == ")":
            inner = unbounded
            unbounded = (outer.pop() if outer else False) or inner
            body = pattern[bodies.pop() : i] if bodies else ""
            length, open_ended, repeats = _quantifier(pattern, i + 1)
            nested |= inner and repeats
            overlapping |= repeats and _ambiguous(body)
            unbounded |= open_ended
            i += 1 + length
        else:
            length, open_ended, _ = _quantifier(pattern, i)
            unbounded |= open_ended
            i += max(length, 1)
    return Shape(nested=nested, overlapping=overlapping, string_anchor=anchor, lookaround=look)


def _ambiguous(body: str) -> bool:
    """Whether a group's alternatives can spell one text in two ways, which a repeat of the
    group turns into exponential backtracking: (a|a), (a|aa), (ab|a|b). Only alternatives that
    are plain literals are judged (by the Sardinas-Patterson test); (a|[a]) passes and is left
    to the time limits."""
    alternatives = _alternatives(body)
    if len(alternatives) < 2:
        return False
    if len(set(alternatives)) < len(alternatives):
        return True
    words = [_literal(a) for a in alternatives]
    literal = [w for w in words if w is not None]
    return len(literal) == len(words) and not _uniquely_decodable(literal)


def _alternatives(body: str) -> list[str]:
    """`body` split at its top-level |."""
    parts, depth, start, i = [], 0, 0, 0
    while i < len(body):
        char = body[i]
        if char == "\\":
            i += 2
            continue
        if char == "[":
            i = _class_end(body, i)
            continue
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "|" and depth == 0:
            parts.append(body[start:i])
            start = i + 1
        i += 1
    parts.append(body[start:])
    return parts


def _literal(text: str) -> str | None:
    """The text a plain literal alternative matches, or None if it holds any regex syntax."""
    out, i = [], 0
    while i < len(text):
        char = text[i]
        if char == "\\":
            escaped = text[i + 1 : i + 2]
            if not escaped or escaped.isalnum():
                return None
            out.append(escaped)
            i += 2
            continue
        if char in ".^$*+?{}[]()|":
            return None
        out.append(char)
        i += 1
    return "".join(out)


def _uniquely_decodable(words: list[str]) -> bool:
    """Sardinas-Patterson: no text is a concatenation of `words` in two different ways."""
    code = set(words)
    if "" in code:
        return False

    def quotients(prefixes: set[str], of: set[str]) -> set[str]:
        return {w[len(p) :] for p in prefixes for w in of if w.startswith(p)} - {""}

    dangling = {w[len(p) :] for p in code for w in code if p != w and w.startswith(p)}
    seen: set[frozenset[str]] = set()
    while dangling and frozenset(dangling) not in seen:
        if dangling & code:
            return False
        seen.add(frozenset(dangling))
        dangling = quotients(code, dangling) | quotients(dangling, code)
    return True


class Quantifier(NamedTuple):
    """A quantifier in a pattern (*, +, ?, {m,n}, lazy or possessive)."""

    length: int  # in characters; 0 where there is none
    unbounded: bool  # no upper limit: *, +, {m,}
    repeats: bool  # many times: unbounded, or an upper limit of 10 or more


def _quantifier(pattern: str, i: int) -> Quantifier:
    """The quantifier at `i`, of length 0 if there is none."""
    char = pattern[i : i + 1]
    if char in ("*", "+"):
        length, unbounded, repeats = 1, True, True
    elif char == "?":
        length, unbounded, repeats = 1, False, False
    elif char == "{" and (braces := _BRACES.match(pattern, i)) and (braces[1] or braces[3]):
        low, comma, high = braces.groups()
        unbounded = bool(comma) and not high
        # A bounded group repeated a few times, such as an IPv4 (\d+\.){3}, stays polynomial.
        repeats = unbounded or int(high or low) >= 10
        length = braces.end() - i
    else:
        return Quantifier(0, unbounded=False, repeats=False)
    if pattern[i + length : i + length + 1] in ("?", "+"):  # lazy or possessive
        length += 1
    return Quantifier(length, unbounded=unbounded, repeats=repeats)


def _class_end(pattern: str, i: int) -> int:
    j = i + 1
    if pattern[j : j + 1] == "^":
        j += 1
    if pattern[j : j + 1] == "]":
        j += 1
    while j < len(pattern) and pattern[j] != "]":
        j += 2 if pattern[j] == "\\" else 1
    return j + 1


class GroupBody(NamedTuple):
    start: int
    kind: Literal["group", "lookaround", "reference"]


def _group_body(pattern: str, i: int) -> GroupBody:
    """Where the body of the group opened at `i` starts, and what kind of group it is."""
    if pattern[i + 1 : i + 2] != "?":
        return GroupBody(i + 1, "group")
    rest = pattern[i + 2 :]
    for prefix in ("<=", "<!", "=", "!"):
        if rest.startswith(prefix):
            return GroupBody(i + 2 + len(prefix), "lookaround")
    if rest[:1] == "#" or rest[:2] in ("P=", "P>", "&"):
        close = pattern.find(")", i)
        return GroupBody(close if close != -1 else len(pattern), "reference")
    if rest[:2] == "P<" or (rest[:1] == "<" and rest[1:2] not in ("=", "!")):
        close = pattern.find(">", i)
        return GroupBody(close + 1 if close != -1 else len(pattern), "group")
    j = i + 2
    while j < len(pattern) and pattern[j] in "aiLmsuxVwbefrp0123456789-|":
        j += 1
    return GroupBody(j + 1 if pattern[j : j + 1] in (":", ">") else j, "group")


# ---------------------------------------------------------------- matching


def prefilter_for(needle: str | None, min_rank: int | None, regex_text: str | None, logcat: bool = False) -> Prefilter:
    """Words to find the lines worth redacting and judging, without redacting the others.

    Filters judge redacted text, so that no query can learn what redaction hides: a count of
    lines matching `ghp_.{3}c` would otherwise spell out a hidden token one character at a time.
    Redacting every line of a gigabyte first is slow, so lines are found in the raw text by a
    word every match must hold, and only they are redacted and judged. That finds every line
    whose redacted form matches, because such a word (`marker_free`) is never part of a marker:
    where redacted text holds it, the raw text held it unchanged. The substring is usually the
    rarest word, then a level's words, then a literal the regex cannot match without."""
    if needle is not None and marker_free(needle):
        return Prefilter((needle,))
    if min_rank is not None:
        return Prefilter(_level_tokens(min_rank, logcat))
    found = required_literal(regex_text) if regex_text is not None else None
    if found is not None and marker_free(found.text.lower()):
        # A case-sensitive regex's literal is found as written: no lower-cased copy of each block.
        return Prefilter((found.text.lower(),)) if found.ignore_case else Prefilter((found.text,), cased=True)
    return Prefilter()


_MIN_LITERAL = 3  # a shorter one is in nearly every line and saves nothing


class RequiredLiteral(NamedTuple):
    text: str
    ignore_case: bool  # the pattern's own flag: (?i)


def required_literal(pattern: str) -> RequiredLiteral | None:
    """The longest run of literal characters every match of `pattern` holds (the literals of its
    top-level sequence; none if it is an alternation), and whether the pattern ignores case.
    Read with the standard library's parser; a pattern only the `regex` module reads has none."""
    try:
        parsed = sre_parse.parse(pattern)
    except (re.error, RecursionError, OverflowError, ValueError):
        return None
    runs, run = [], ""
    for op, argument in parsed:
        if op is sre_constants.LITERAL:
            run += chr(argument)
        else:
            runs.append(run)
            run = ""
    runs.append(run)
    longest = max(runs, key=len)
    if len(longest) < _MIN_LITERAL:
        return None
    return RequiredLiteral(longest, bool(parsed.state.flags & re.IGNORECASE))


class Found(NamedTuple):
    """What one block gave: its matching entries, the newest `need` of them oldest first, and
    its matching entries without a time."""

    matches: int
    entries: list[str]
    untimed: int


def match_block(text: str, f: Filters, need: int, judged: Judged, grouping: Grouping) -> Found:
    """(matching entries, the newest `need` of them oldest first, matching entries without a time)
    in one block, judged on redacted entries. An entry is a line with the lines that continue it
    (entries.py), grouped as `grouping` says: the level is its first line's, the substring and the
    regex are looked for in all of it, its time is its first line's. `text` has had the rules
    that span lines (redact_spanning)."""
    verdict, first = judged
    if verdict in (Verdict.newer, Verdict.older):
        return Found(0, [], 0)
    if not f.content:
        # Every entry counts: the block's body runs are hidden first, so a key counts as one line.
        text = redact_body_runs(text)
        if verdict is Verdict.untimed:
            return Found(0, [], grouping.count(text))
        if verdict is Verdict.inside:
            return Found(grouping.count(text), _redacted(grouping.newest(text, need)), 0)
    kept: deque[str] = deque(maxlen=need)
    count = untimed = 0
    try:
        for start, entry in _judged_entries(text, f, grouping):
            if time.monotonic() > f.deadline:
                raise OutOfTime
            if not entry or not _content_matches(entry, f):
                continue
            if verdict is Verdict.untimed:
                untimed += 1
                continue
            if verdict is Verdict.edge and not f.in_range(time_of(text, start, f, fallback=first)):
                continue
            count += 1
            kept.append(entry)
    except OutOfTime:
        raise OutOfTime(Found(count, list(kept), untimed)) from None
    return Found(count, list(kept), untimed)


def _judged_entries(text: str, f: Filters, grouping: Grouping) -> Iterable[tuple[int, str]]:
    """(where each entry that may match starts in `text`, the entry redacted), oldest first."""
    lines = _token_lines(text, f)
    if lines is not None:
        entries = _widened(text, lines, grouping)
        redacted = _redacted([_unkeyed(text, start, end) for start, end in entries.items()])
        return zip(entries, redacted, strict=True)
    # No words to find lines by: the whole block is redacted and searched, and times are read
    # from it alike (redaction never touches a timestamp at a line's start).
    text = redact_lines(redact_body_runs(text))
    if f.pattern is not None and f.whole_block_regex:
        return _entries_matching(text, f, grouping)
    return ((start, text[start:end]) for start, end in grouping.spans(text).items())


def _widened(text: str, lines: EndsByStart, grouping: Grouping) -> EndsByStart:
    """The entries holding `lines`, each once, oldest first."""
    entries: EndsByStart = {}
    end = -1  # of the entry found last
    for start in sorted(lines):
        if start <= end:
            continue
        end = grouping.end_of(text, lines[start])
        entries[grouping.start_of(text, start)] = end
    return entries


def _unkeyed(text: str, start: int, end: int) -> str:
    """The entry at `text[start:end]` with each run of its lines that `redact_body_runs` would
    hide (key material without its armour) made one marker."""
    lines: list[str] = []
    at = start
    while at <= end:
        stop = text.find("\n", at, end)
        stop = end if stop == -1 else stop
        if not in_body_run(text, at, stop):
            lines.append(text[at:stop])
        elif not lines or lines[-1] != PEM_MARKER:
            lines.append(PEM_MARKER)
        at = stop + 1
    return "\n".join(lines)


def _redacted(entries: list[str]) -> list[str]:
    """Each entry with the line rules applied, in one pass over them all (the rules stay within a line)."""
    if not entries:
        return entries
    sizes = [entry.count("\n") + 1 for entry in entries]
    lines = redact_lines("\n".join(entries)).split("\n")
    if len(lines) != sum(sizes):
        return [redact_lines(entry) for entry in entries]
    redacted, at = [], 0
    for size in sizes:
        redacted.append("\n".join(lines[at : at + size]))
        at += size
    return redacted


def _content_matches(entry: str, f: Filters) -> bool:
    if f.min_rank is not None:
        rank = level_rank(entry.partition("\n")[0], f.logcat)
        if rank is None or rank < f.min_rank:
            return False
    if f.needle is not None and f.needle not in entry.lower():
        return False
    return f.pattern is None or _search(f, entry, 0) is not None


class RegexTooSlow(Exception):
    """One search ran past REGEX_SEARCH_SECONDS on its own: the pattern, not the data, is at fault."""


class OutOfTime(Exception):
    """The query's deadline passed in the middle of a block; `partial` is what the block gave so far."""

    def __init__(self, partial: Found | None = None) -> None:
        super().__init__("the query's time is up")
        self.partial = partial if partial is not None else Found(0, [], 0)


def _search(f: Filters, text: str, position: int) -> Any:
    """One search, time-boxed by REGEX_SEARCH_SECONDS and by what is left of the query's deadline."""
    remaining = f.deadline - time.monotonic()
    if remaining <= 0:
        raise OutOfTime
    box = min(REGEX_SEARCH_SECONDS, remaining)
    try:
        return f.pattern.search(text, position, timeout=box)
    except TimeoutError as exc:  # an OSError subclass: must not pass for a file that cannot be read
        if box < REGEX_SEARCH_SECONDS:
            raise OutOfTime from exc
        raise RegexTooSlow from exc


def _token_lines(text: str, f: Filters) -> EndsByStart | None:
    """The lines holding one of the filter's words, found by searching the whole block; None
    when there are no words (or lower() changed the text's length: offsets would not line up)."""
    if not f.prefilter.words:
        return None
    if f.prefilter.cased:
        return _lines_holding(text, text, f.prefilter.words)
    lowered = text.lower()
    if len(lowered) != len(text):
        return None
    return _lines_holding(text, lowered, f.prefilter.words)


def _line_start(text: str, at: int) -> int:
    return text.rfind("\n", 0, at) + 1


def _line_end(text: str, at: int) -> int:
    end = text.find("\n", at)
    return len(text) if end == -1 else end


def _lines_holding(text: str, lowered: str, tokens: tuple[str, ...]) -> EndsByStart:
    if len(tokens) > _FIND_TOKENS:
        return _lines_holding_any(text, lowered, tokens)
    lines: EndsByStart = {}
    for token in tokens:
        # A token starting with a newline stands at a line's start: the text's first line too.
        at_start = token.startswith("\n")
        at = 0 if at_start and lowered.startswith(token[1:]) else lowered.find(token)
        while at != -1:
            inside = at + 1 if at_start and lowered[at] == "\n" else at
            end = _line_end(text, inside)
            lines[_line_start(text, inside)] = end
            at = lowered.find(token, end)
    return lines


# Up to this many words, one str.find pass each is fastest; beyond, one Aho-Corasick pass for all
# (a level filter's words: 16 passes over each block were most of a level query's time).
_FIND_TOKENS = 4


@functools.lru_cache(maxsize=64)
def _automaton(tokens: tuple[str, ...]) -> Any:
    automaton = ahocorasick.Automaton()
    for token in tokens:
        automaton.add_word(token, token)
    automaton.make_automaton()
    return automaton


def _lines_holding_any(text: str, lowered: str, tokens: tuple[str, ...]) -> EndsByStart:
    """`_lines_holding` in one pass: every line holding any token (a token starting with a
    newline stands at a line's start, the text's first line too)."""
    lines: EndsByStart = {}
    # A newline before the text lets a token starting with one be found at its first line.
    for last, token in _automaton(tokens).iter("\n" + lowered):
        at = last - len(token) + 1  # in the text: one less for the newline put before it, one more past a token's own
        if token.startswith("\n"):
            at += 1
        at -= 1
        at = max(at, 0)
        lines[_line_start(text, at)] = _line_end(text, at)
    return lines


def _entries_matching(text: str, f: Filters, grouping: Grouping) -> Iterator[tuple[int, str]]:
    """(where each entry holding a match starts, the entry), oldest first, as `_judged_entries`
    gives them."""
    # Searched with MULTILINE, so ^ and $ are line ends: every entry that matches alone holds a
    # match found here, and each such entry is checked again alone.
    position = 0
    while position <= len(text):
        found = _search(f, text, position)
        if found is None:
            return
        start = grouping.start_of(text, _line_start(text, found.start()))
        end = grouping.end_of(text, _line_end(text, found.start()))
        yield start, text[start:end]
        position = end + 1
