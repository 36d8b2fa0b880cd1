"""Recall: the past incidents a new question or alert is like, or a plain "none I can vouch for".

Lexical and in process, over the candidates the store's inverted index returns (no service to
run): BM25's weighting, where a term counts for more the rarer it is among the records alive.
The score is read as a share: a record of average length holding each of the question's terms
once scores 1; a question whose rare words no record holds scores low however common its other
words are. Recall abstains, and says why, when the best match is below `min_score`, or when the
strong matches disagree on the cause (different causes, different fixes): a guess between them
would be worse than none. A `Recall` is anything with this `recall`, so a vector index can take
the lexical one's place where the Redis in use has one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple, Protocol

from pydantic import BaseModel, ConfigDict

from .record import IncidentRecord
from .store import IncidentStore
from .terms import rarity, terms_of

K1 = 1.2
B = 0.75
CANDIDATES = 20  # records fetched and scored in full, of those sharing the most rare terms
AGREE = 0.2  # causes sharing less than this share of their terms disagree


class Match(BaseModel):
    model_config = ConfigDict(frozen=True)

    record: IncidentRecord
    strength: float  # the score as a share (see the module's docstring)


class Recalled(BaseModel):
    """What recall found: strong matches, or why it abstains (`matches` then holds what it weighed)."""

    model_config = ConfigDict(frozen=True)

    matches: list[Match] = []
    abstained: str | None = None

    @property
    def strong(self) -> list[Match]:
        """The matches to tell of: none when recall abstained."""
        return [] if self.abstained else self.matches


Visible = Callable[[IncidentRecord], bool]


class Recall(Protocol):
    def recall(self, text: str, visible: Visible, exclude: str | None = None) -> Recalled: ...


class LexicalRecall:
    def __init__(self, store: IncidentStore, min_score: float, max_shown: int) -> None:
        self.store = store
        self.min_score = min_score
        self.max_shown = max_shown

    def recall(self, text: str, visible: Visible, exclude: str | None = None) -> Recalled:
        """Past incidents like `text` that `visible` lets the asker see; `exclude`: the asking thread's own."""
        query = list(terms_of([text]))
        if not query:
            return Recalled()
        found = self.store.candidates(query, CANDIDATES, exclude)
        if not found.ids:
            return Recalled()
        weights = {term: rarity(found.total, found.holding[term]) for term in query}
        fetched = [r for r in self.store.fetch(found.ids) if visible(r)]
        matches = _scored(fetched, weights)
        return self._judged(matches)

    def _judged(self, matches: list[Match]) -> Recalled:
        if not matches:
            return Recalled()
        strong = [m for m in matches if m.strength >= self.min_score][: self.max_shown]
        if not strong:
            best = matches[0]
            why = f"the closest past incident matches only {best.strength:.0%} of this question's rarer words"
            return Recalled(matches=matches[:1], abstained=why)
        split = _disagreeing(strong)
        if split is not None:
            one, other = split
            why = f"similar past incidents disagree on the cause ({_cause(one)!r} vs {_cause(other)!r})"
            return Recalled(matches=[one, other], abstained=why)
        return Recalled(matches=strong)


def _scored(records: list[IncidentRecord], weights: dict[str, float]) -> list[Match]:
    if not records:
        return []
    lengths = [sum(r.terms.values()) for r in records]
    average = sum(lengths) / len(lengths) or 1.0
    ideal = sum(weights.values()) or 1.0
    matches = []
    for record, length in zip(records, lengths, strict=True):
        score = 0.0
        for term, weight in weights.items():
            tf = record.terms.get(term, 0)
            if tf:
                score += weight * tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / average))
        matches.append(Match(record=record, strength=round(min(score / ideal, 1.0), 3)))
    return sorted(matches, key=lambda m: (m.strength, m.record.updated), reverse=True)


class Split(NamedTuple):
    one: Match
    other: Match


def _disagreeing(strong: list[Match]) -> Split | None:
    """Two strong matches whose causes share too few terms, unless the same fix mended both."""
    said = [m for m in strong if m.record.cause or m.record.fixes]
    for i, one in enumerate(said):
        for other in said[i + 1 :]:
            a, b = _cause_terms(one.record), _cause_terms(other.record)
            fixes = {f.command for f in one.record.fixes}
            same_fix = bool(fixes) and fixes == {f.command for f in other.record.fixes}
            if a and b and len(a & b) / len(a | b) < AGREE and not same_fix:
                return Split(one, other)
    return None


def _cause_terms(record: IncidentRecord) -> set[str]:
    return set(terms_of([record.cause, *(f.command for f in record.fixes)]))


def _cause(match: Match) -> str:
    return match.record.cause or ", ".join(f.command for f in match.record.fixes)
