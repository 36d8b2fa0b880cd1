"""Where incident records live: this process (`InProcessIncidents`, for the terminal without
Redis and for tests) or Redis (`RedisIncidents`, redis.py, imported only where Redis is used).
Both answer the questions recall and the handoff ask: which records hold these terms
(postings), the records themselves, and the records updated since a time.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Protocol

from pydantic import BaseModel, ValidationError

from .record import IncidentRecord
from .terms import rarity


class IncidentsUnavailable(Exception):
    """Redis did not answer, or held something that is not a record."""


class Candidates(BaseModel):
    """What rarity is made of (the live records, how many hold each term) and the records worth
    scoring in full: the `limit` whose terms weigh most together, best first."""

    total: int
    holding: dict[str, int]
    ids: list[str]


class IncidentStore(Protocol):
    clock: Callable[[], float]

    def put(self, record: IncidentRecord) -> None: ...

    def get(self, record_id: str) -> IncidentRecord | None: ...

    def fetch(self, ids: Iterable[str]) -> list[IncidentRecord]: ...

    def candidates(self, terms: list[str], limit: int, exclude: str | None = None) -> Candidates: ...

    def updated_since(self, since: float) -> list[IncidentRecord]: ...


class InProcessIncidents:
    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock
        self._records: dict[str, IncidentRecord] = {}

    def _alive(self) -> dict[str, IncidentRecord]:
        now = self.clock()
        return {key: record for key, record in self._records.items() if record.expires_at > now}

    def put(self, record: IncidentRecord) -> None:
        self._records[record.id] = record

    def get(self, record_id: str) -> IncidentRecord | None:
        return self._alive().get(record_id)

    def fetch(self, ids: Iterable[str]) -> list[IncidentRecord]:
        alive = self._alive()
        return [alive[key] for key in ids if key in alive]

    def candidates(self, terms: list[str], limit: int, exclude: str | None = None) -> Candidates:
        alive = self._alive()
        holding = {term: sum(term in r.terms for r in alive.values()) for term in terms}
        weight = {term: rarity(len(alive), count) for term, count in holding.items()}
        summed = {
            key: sum(weight[t] for t in terms if t in r.terms)
            for key, r in alive.items()
            if key != exclude and any(t in r.terms for t in terms)
        }
        best = sorted(summed, key=lambda key: (-summed[key], key))[:limit]
        return Candidates(total=len(alive), holding=holding, ids=best)

    def updated_since(self, since: float) -> list[IncidentRecord]:
        return sorted((r for r in self._alive().values() if r.updated.timestamp() >= since), key=lambda r: r.updated)

    def describe(self) -> str:
        return "in process"


def parse(raw: str | bytes) -> IncidentRecord:
    try:
        return IncidentRecord.model_validate_json(raw)
    except ValidationError as exc:
        raise IncidentsUnavailable(f"an incident record in Redis is not one opsbot wrote: {exc}") from exc


def text_of(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else value
