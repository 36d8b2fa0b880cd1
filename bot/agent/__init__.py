"""The agent loop: one question in one thread becomes one `Reply`, step by step, bounded and
explained (loop.py).

This is the loop's face: front ends (the terminal, Slack, runbooks, eval) and the Python API
import from here. Below it, the loop's own helpers (budget, guards, context, summary, findings,
tokens), the check of its answers against the tools' results (evidence/), and its words to people
and the model (reply, prompts, answer_stream)."""

from .evidence import (
    UNBACKED,
    Citation,
    Evidence,
    Finding,
    Source,
    Span,
    check_answer,
    evidence_lines,
    marked,
    numbered,
    result_source,
)
from .loop import Agent
from .recalled import Style, recalled_text, seen_line
from .recollection import Recollection
from .reply import CallRecord, Progress, Reply, Step, StepDecision, StopReason

__all__ = [
    "UNBACKED",
    "Agent",
    "CallRecord",
    "Citation",
    "Evidence",
    "Finding",
    "Progress",
    "Recollection",
    "Reply",
    "Source",
    "Span",
    "Step",
    "StepDecision",
    "StopReason",
    "Style",
    "check_answer",
    "evidence_lines",
    "marked",
    "numbered",
    "recalled_text",
    "result_source",
    "seen_line",
]
