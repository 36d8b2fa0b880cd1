"""Every claim shows its evidence: the answer's citations and facts checked in code against the
thread's tool results (check.py), and said to people (words.py).

The model cites steps (`[2]`, `[2: "quote"]`, citations.py), each result it is given numbered
first; facts.py finds the specific facts an answer states; sources.py reads the results as the
model saw them; gaps.py says what was not looked at; model.py is what `Reply.evidence` carries."""

from .check import check_answer
from .citations import STEP_FIELD_CHARS, numbered
from .gaps import Ran, not_looked_at
from .model import Citation, Evidence, Finding, Span
from .sources import Source, result_source
from .words import UNBACKED, Said, evidence_lines, marked

__all__ = [
    "STEP_FIELD_CHARS",
    "UNBACKED",
    "Citation",
    "Evidence",
    "Finding",
    "Ran",
    "Said",
    "Source",
    "Span",
    "check_answer",
    "evidence_lines",
    "marked",
    "not_looked_at",
    "numbered",
    "result_source",
]
