"""The check: an answer against the thread's tool results, in code, never by asking the model.

Each citation's step must have run, and its quote must be in that step's result or another of the
thread's (whitespace aside, after the same redaction). Each fact must be in some result: a name
as written (case aside), a number by value (10 is 10.0, 5GB is 5 GB, 200ms is 0.2s, 870ms may be
869.7 ms). A number or pair said of a key (`pool_size`, "the pool size") is looked up under that
key first: the same value there verifies it, only other values contradict it, quoted.
"""

from __future__ import annotations

import functools
import itertools
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import NamedTuple

from .citations import Cited, citations
from .facts import Fact, Kind, Quantity, facts, key_words, quantity, sentence
from .model import Citation, Evidence, Finding, Span
from .sources import Haystack, Source

SHOWN_CHARS = 160
KEY_PLACES = 50  # where a key appears, read for a value that agrees or the one to quote
# Markdown around a statement (table pipes, emphasis, a heading's or a list's mark): not quoted with it.
_MARKUP = re.compile(r"\||\*\*|__|^\s*(?:#+|>|[-*]|\d+[.)])\s")
# What follows a key in a result: `: 5`, `=5`, `": 5`, " is 5".
_BETWEEN = r"[\"']?(?:[ \t]*[:=]|[ \t]+(?:is|was|are|were)(?=[ \t]))[ \t]*[\"']?"
_AFTER_KEY = re.compile(_BETWEEN + r"(?P<v>[^\s\"',}#;\]]+)")
_VALUE = re.compile(r"(?P<digits>\d+(?:\.\d+)?)[ \t]?(?P<unit>[A-Za-zµ%]+)?")
_MORE_DIGITS = re.compile(r"\d*(?:\.\d+)?")
_DERIVED = {"s": (1e-3, 1.0, 60.0, 3600.0), "b": (1e3, 1e6, 1e9, 1024.0, 1024.0**2, 1024.0**3), "%": (1e2,)}


def check_answer(answer: str, question: str, sources: list[Source]) -> Evidence:
    """What of `answer` the `sources` back, leave unsupported or contradict. `answer` is given
    redacted, as the results are (Reply.text): a quote is compared after the same redaction."""
    started = time.perf_counter()
    hay = Haystack(sources)
    evidence = Evidence()
    cited_on: dict[int, list[int]] = {}  # a line of the answer -> the sources its citations name
    for cited in citations(answer):
        _cite(answer, cited, hay, evidence)
        line = answer.rfind("\n", 0, cited.start)
        cited_on.setdefault(line, []).extend(n for step in cited.steps for n in hay.made_at(step))
    for fact in facts(answer, question):
        hay.near = cited_on.get(answer.rfind("\n", 0, fact.start), [])
        _fact(answer, fact, hay, evidence)
    evidence.check_ms = round((time.perf_counter() - started) * 1000, 3)
    return evidence


def _cite(answer: str, cited: Cited, hay: Haystack, evidence: Evidence) -> None:
    for step in cited.steps:
        made = hay.made_at(step)
        if not made:
            evidence.unsupported.append(
                _span(answer, cited.start, cited.end, f"step {step} ran no tool in this answer")
            )
            continue
        tool = ", ".join(dict.fromkeys(hay.sources[n].tool for n in made))
        if cited.quote is None:
            evidence.citations.append(Citation(step=step, tool=tool))
            continue
        quote = " ".join(cited.quote.split())
        others = (n for n in range(len(hay.sources)) if n not in made)
        if quote and any(hay.holds(n, quote) for n in (*made, *others)):
            evidence.citations.append(Citation(step=step, tool=tool, quote=quote))
        else:
            why = f"the quote is not in step {step}'s result nor in any other of this thread"
            evidence.unsupported.append(_span(answer, cited.start, cited.end, why, claim=cited.quote))


def _fact(answer: str, fact: Fact, hay: Haystack, evidence: Evidence) -> None:
    if len(fact.key) >= 2:  # one generic word is not enough of a key (see _score)
        keyed = hay.once(("key", fact.key, fact.text), lambda: _by_key(hay, fact))
        if keyed is not None:
            if keyed.agrees:
                evidence.findings.append(_finding(fact, hay, keyed.offset, keyed.said))
            else:
                step = hay.source_at(keyed.offset).step
                where = f"step {step}" if step is not None else "an earlier result"
                span = _span(answer, fact.start, fact.end, f"{where} says {keyed.said}", claim=fact.text)
                evidence.contradicted.append(span.model_copy(update={"step": step, "evidence": keyed.said}))
            return
    if fact.kind is Kind.number:
        at = hay.once(("number", fact.text), lambda: _number_at(hay, _quantity(fact.text)))
    else:
        at = hay.once(("name", fact.text.lower()), lambda: _name_at(hay, fact.text.lower()))
    if at is None:
        evidence.unsupported.append(_span(answer, fact.start, fact.end, "not in any tool result", claim=fact.text))
    else:
        evidence.findings.append(_finding(fact, hay, at, hay.line_at(at).strip()))


def _by_key(hay: Haystack, fact: Fact) -> _Lookup | None:
    """What the results give under the fact's key: its value in each form it may be written in."""
    same: Callable[[str], bool]
    if fact.kind is Kind.number:
        asked = _quantity(fact.text)
        same = lambda value: _same_number(asked, value)  # noqa: E731
        forms = [_written(value, decimals) for value, decimals in _forms(asked)]
    else:
        same = lambda value: value.strip("\"'`").lower() == fact.value.strip("\"'`").lower()  # noqa: E731
        forms = [fact.value.strip("\"'`").lower()]
    return _keyed(hay, fact.key, forms, same)


def _quantity(text: str) -> Quantity:
    match = _VALUE.search(text.replace(",", ""))
    assert match is not None  # a number fact is digits first
    return quantity(match["digits"], match["unit"])


def _finding(fact: Fact, hay: Haystack, offset: int, said: str) -> Finding:
    return Finding(fact=fact.text, step=hay.source_at(offset).step, evidence=_cut(said))


def _span(answer: str, start: int, end: int, why: str, claim: str | None = None) -> Span:
    begin, finish = sentence(answer, start, end)
    statement = _cut(" ".join(_MARKUP.sub(" ", answer[begin:finish]).split()))
    return Span(
        start=start, end=end, claim=claim if claim is not None else answer[start:end], statement=statement, why=why
    )


def _cut(text: str) -> str:
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 1] + "…"


@dataclass(frozen=True)
class _Keyed:
    score: int
    value: str
    offset: int
    said: str


class _Lookup(NamedTuple):
    """What the results give under a claim's key: the claimed value (`agrees`) or another, where, in what words."""

    agrees: bool
    offset: int
    said: str


def _keyed(hay: Haystack, key: tuple[str, ...], forms: list[str], same: Callable[[str], bool]) -> _Lookup | None:
    """Under the key the claim names, the value that agrees, else another; None when no result gives that key.

    The claimed value as written after the key anywhere is found in one search; otherwise the
    first KEY_PLACES places the key appears are read, the most specific key's value quoted."""
    # The key's last two words however a result joins them: pool_size, pool-size, pool.size, poolSize.
    needle = f"{re.escape(key[-2])}[_\\-. ]?{re.escape(key[-1])}"
    found = _agreeing(hay, key, needle, forms)
    if found is not None:
        return _Lookup(True, found.offset, found.said)
    best: list[_Keyed] = []
    for found in itertools.islice(_under(hay, key, needle), KEY_PLACES):
        if best and found.score < best[0].score:
            continue
        if best and found.score > best[0].score:
            best = []
        best.append(found)
    if not best:
        return None
    verdicts: dict[str, bool] = {}  # a value is judged once, however often the results repeat it
    agreeing = None
    for found in best:
        if found.value not in verdicts:
            verdicts[found.value] = same(found.value)
        if verdicts[found.value]:
            agreeing = found
            break
    chosen = agreeing or best[0]
    return _Lookup(agreeing is not None, chosen.offset, chosen.said)


def _agreeing(hay: Haystack, key: tuple[str, ...], needle: str, forms: list[str]) -> _Keyed | None:
    """The first place a result gives the key the claimed value, as the claim writes it."""
    wanted = re.compile(f"(?P<k>{needle}){_BETWEEN}(?P<v>{'|'.join(map(re.escape, forms))})(?!\\w|\\.\\d)")
    for match in wanted.finditer(hay.lower):
        start = _key_start(hay.text, match.start())
        if _score(key, hay.text[start : match.end("k")]):
            return _Keyed(0, match["v"], start, hay.text[start : match.end()].strip())
    return None


def _under(hay: Haystack, key: tuple[str, ...], needle: str) -> Iterator[_Keyed]:
    """Every `key: value`, `key=value` or "key is value" of the results whose key ends as the claim's does."""
    for match in re.finditer(needle, hay.lower):
        value = _AFTER_KEY.match(hay.text, match.end())
        if value is None:
            continue
        start = _key_start(hay.text, match.start())
        score = _score(key, hay.text[start : match.end()])
        if score:
            yield _Keyed(score, value["v"], start, hay.text[start : value.end()].strip())


def _key_start(text: str, offset: int) -> int:
    """Where the key whose end part starts at `offset` begins (`db.primary.` before `pool_size`)."""
    start = offset
    while start > 0 and (text[start - 1].isalnum() or text[start - 1] in "_.-"):
        start -= 1
    return start


@functools.lru_cache(maxsize=4096)
def _score(key: tuple[str, ...], theirs: str) -> int:
    """How much of the claim's key a result's key matches from its end (0: not the same key). One
    generic word ("count", "latency") is not enough to call a value contradicted."""
    last = key_words(theirs.rsplit(".", 1)[-1])
    whole = key_words(theirs)
    if not last or key[-len(last) :] != last:
        return 0
    common = 0
    while common < min(len(key), len(whole)) and key[-1 - common] == whole[-1 - common]:
        common += 1
    return common if common >= 2 else 0


def _occurrences(text: str, needle: str, start: int = 0, end: int | None = None) -> Iterator[int]:
    at = text.find(needle, start, end)
    while at >= 0:
        yield at
        at = text.find(needle, at + 1, end)


def _places(hay: Haystack, needle: str) -> Iterator[int]:
    """Where `needle` stands in the results: first in those the fact's line cites (a fact beside
    its citation is most likely there, and an 8 KB result is searched faster than a thread's)."""
    for n in hay.near:
        yield from _occurrences(hay.lower, needle, hay.starts[n], hay.starts[n] + len(hay.sources[n].text))
    yield from _occurrences(hay.lower, needle)


def _name_at(hay: Haystack, needle: str) -> int | None:
    for at in _places(hay, needle):
        before = hay.lower[at - 1 : at]
        after = hay.lower[at + len(needle) : at + len(needle) + 1]
        if not (_joined(before, needle[0]) or _joined(after, needle[-1])):
            return at
    return None


def _joined(beside: str, edge: str) -> bool:
    """Whether a character beside a match makes it part of a longer word or number: `db12` is not
    `db1`, but `T09:14` holds the time `09:14`."""
    return (beside.isdigit() and edge.isdigit()) or (beside.isalpha() and edge.isalpha()) or beside == "_"


def _same_number(asked: Quantity, value: str) -> bool:
    match = _VALUE.fullmatch(value.replace(",", ""))
    if match is None:
        return False
    try:
        theirs = quantity(match["digits"], match["unit"])
    except KeyError:
        return False
    if asked.dimension and theirs.dimension == asked.dimension:
        scale = asked.value / asked.raw if asked.raw else 1.0
        return round(theirs.value / scale, asked.decimals) == asked.raw
    if asked.dimension == "%" and not theirs.dimension and theirs.raw < 1:
        return round(theirs.raw * 100, asked.decimals) == asked.raw
    return round(theirs.raw, asked.decimals) == asked.raw


def _number_at(hay: Haystack, asked: Quantity) -> int | None:
    """Where a result holds the number, as written or in another unit of its kind, or rounded to it."""
    for value, decimals in _forms(asked):
        at = _digits_at(hay, _written(value, decimals), value, decimals)
        if at is not None:
            return at
    if len(_written(asked.raw, asked.decimals).replace(".", "")) < 3:
        return None  # "5" is no rounding of anything worth saying
    # 870 may be 869.7 rounded as written: the number below it, with more digits.
    below = asked.raw - 10.0**-asked.decimals
    return _digits_at(hay, _written(below, asked.decimals), asked.raw, asked.decimals)


def _forms(asked: Quantity) -> Iterator[tuple[float, int]]:
    yield asked.raw, asked.decimals
    base = asked.value if asked.dimension != "%" else asked.raw / 100
    for factor in _DERIVED.get(asked.dimension, ()):
        value = base / factor if asked.dimension != "%" else asked.raw / factor
        decimals = len(_written(value, 6).rstrip("0").split(".", 1)[1]) if "." in _written(value, 6) else 0
        if decimals <= 3 and value != asked.raw:
            yield value, decimals


def _written(value: float, decimals: int) -> str:
    return f"{value:.{decimals}f}"


def _digits_at(hay: Haystack, digits: str, value: float, decimals: int) -> int | None:
    """The first place `digits` stands as a whole number in the results that rounds to `value`."""
    if digits.startswith("-"):
        return None
    text = hay.lower
    for at in _places(hay, digits):
        before = text[at - 1 : at]
        if before.isdigit() or before == "." or (before in "-:/" and text[at - 2 : at - 1].isdigit()):
            continue
        end = at + len(digits)
        number = _MORE_DIGITS.match(text, end)
        whole = digits + (number.group() if number else "")
        if whole.endswith(".") or "." in whole and "." in digits and not whole.startswith(digits):
            continue
        try:
            if round(float(whole), decimals) == round(value, decimals):
                return at
        except ValueError:
            continue
    return None
