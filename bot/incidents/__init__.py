"""Incident memory: what finished threads leave behind (record.py), where it is kept (store.py),
the past incidents a new question is like (recall.py), and a handoff built from what was recorded
(handoff.py). docs/incidents.md tells it for operators."""

from .handoff import Entry, render, summary, timeline
from .recall import LexicalRecall, Match, Recall, Recalled, Visible
from .record import Asked, CommandRun, IncidentRecord, first_sentence, record_id
from .store import Candidates, IncidentStore, IncidentsUnavailable, InProcessIncidents
from .terms import terms_of

__all__ = [
    "Asked",
    "Candidates",
    "CommandRun",
    "Entry",
    "IncidentRecord",
    "IncidentStore",
    "IncidentsUnavailable",
    "InProcessIncidents",
    "LexicalRecall",
    "Match",
    "Recall",
    "Recalled",
    "Visible",
    "first_sentence",
    "record_id",
    "render",
    "summary",
    "terms_of",
    "timeline",
]
