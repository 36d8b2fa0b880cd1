"""A step as the terminal shows it, in words both views use (plain.py, live.py)."""

from __future__ import annotations

import json
from typing import Any

from ...tools.base import CallStatus
from ..agent import CallRecord, Reply, evidence_lines
from ..agent.prompts import answer_warning

# The model's own words about a step, set apart from opsbot's lines about it.
PREAMBLE_STYLE = "italic"


def preamble_lines(text: str) -> list[str]:
    """What the model wrote beside a step's calls (`Step.preamble`), as the step's first lines."""
    return [f"  {line}".rstrip() for line in text.splitlines()]


def shown_args(args: Any) -> str:
    if isinstance(args, dict):
        return "(" + ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in args.items()) + ")"
    return repr(args)


def started_line(step: int, tool: str, args: Any) -> str:
    return f"step {step}: {tool} {shown_args(args)}"


def call_line(step: int, call: CallRecord) -> str:
    """`✓ step 1: query_logs(service="checkout") → ok: 37 matching lines, showing the last 20 (12 ms)`."""
    mark = "✓" if call.status is CallStatus.ok else "✗"
    return f"{mark} {started_line(step, call.tool, call.args)} → {call.outcome} ({call.duration_ms:.0f} ms)"


def call_style(call: CallRecord) -> str:
    return "green" if call.status is CallStatus.ok else "yellow"


def checked_lines(reply: Reply) -> list[tuple[str, str]]:
    """What the check of the answer found, as (line, style), after the answer: its flagged
    statements, footnotes pointing at the step lines above, what was not looked at, and last,
    above the footer, a warning when nothing backs it."""
    lines = evidence_lines(reply.evidence) if reply.evidence is not None else []
    said = [(s.line, "yellow" if s.warns else "bright_black") for s in lines]
    warning = answer_warning(reply)
    return [*said, *([(warning, "yellow")] if warning else [])]
