"""What recall says: to the model, a compact "seen before" note beside the question (never
stored); to people, each past incident with when, where, its cause, its fix and who approved it,
and its thread, or why nothing is recalled. Front ends choose how a channel, a person and a link
are written (`Style`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from ..incidents import Match, Recalled
from ..messages import Message
from .prompts import loop_note
from .reply import StopReason


def ago(then: datetime, now: float) -> str:
    seconds = max(now - then.timestamp(), 0)
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size:
            count = int(seconds // size)
            return f"{count} {unit}{'s' if count > 1 else ''} ago"
    return "just now"


@dataclass(frozen=True)
class Style:
    """How a front end writes a recalled incident's parts: its text made safe, a channel, a person, a link."""

    text: Callable[[str], str] = str
    channel: Callable[[str], str] = str
    person: Callable[[str], str] = str
    link: Callable[[str], str] = str


PLAIN = Style()


def seen_line(match: Match, now: float, style: Style = PLAIN) -> str:
    """One past incident for people: "3 days ago in C123: pool exhausted; fixed by
    restart-payments, approved by slack:U1 (link)"."""
    record = match.record
    fixes = [
        style.text(run.command) + (f", approved by {style.person(run.approved_by)}" if run.approved_by else "")
        for run in record.fixes
    ]
    told = record.outcome not in ("", StopReason.answered.value)  # an answer is what a record is of
    done = f"; fixed by {'; '.join(fixes)}" if fixes else (f"; {style.text(record.outcome)}" if told else "")
    where = f" ({style.link(record.link)})" if record.link else f" (thread {style.text(record.thread)})"
    cause = style.text(record.cause or "no cause recorded")
    return f"{ago(record.updated, now)} in {style.channel(record.channel)}: {cause}{done}{where}"


def recalled_text(recalled: Recalled | None, now: float, style: Style = PLAIN) -> str | None:
    """What people are told of recall with an answer: the strong matches, or that it abstained
    and why (nothing when no past incident shared the question's words)."""
    if recalled is None or not recalled.matches:
        return None
    if recalled.abstained:
        return f"Nothing recalled from past incidents: {style.text(recalled.abstained)}."
    return "\n".join(["Seen before:", *(f"• {seen_line(m, now, style)}" for m in recalled.strong)])


def seen_before_note(recalled: Recalled, now: float) -> Message | None:
    """The strong matches for the model: compact, marked as memory, not as evidence of today."""
    if not recalled.strong:
        return None
    lines = [f"- {seen_line(m, now)}" for m in recalled.strong]
    text = (
        "Seen before: past incidents like this question, "
        "from opsbot's incident records. They are leads, not evidence about now: check with the tools "
        "before you rely on one, and say when you do.\n" + "\n".join(lines)
    )
    return loop_note(text)
