"""The agent loop: one question in one thread becomes one `Reply`, step by step, bounded and
explained (loop.py).

This is the loop's face: front ends (the terminal, Slack, runbooks, eval) and the Python API
import from here. Below it, the loop's own helpers (budget, guards, context, summary, findings,
tokens) and its words to people and the model (reply, prompts, answer_stream)."""

from .loop import Agent
from .recalled import Style, recalled_text, seen_line
from .recollection import Recollection
from .reply import CallRecord, Progress, Reply, Step, StepDecision, StopReason

__all__ = [
    "Agent",
    "CallRecord",
    "Progress",
    "Recollection",
    "Reply",
    "Step",
    "StepDecision",
    "StopReason",
    "Style",
    "recalled_text",
    "seen_line",
]
