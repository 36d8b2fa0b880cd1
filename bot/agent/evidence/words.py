"""The check's findings in words for people: one set of sentences for the terminal and Slack."""

from __future__ import annotations

from typing import NamedTuple

from .model import Citation, Evidence, Span

MARK = "⚠"
FLAGS_SHOWN = 8  # a long answer of invented lines is said in a few lines, not hundreds
UNBACKED = (
    "Not backed by your systems: nothing this answer states was found in what the tools returned; "
    "check it before acting on it."
)


def footnote(citation: Citation) -> str:
    """`[2] step 2 · read_config: "db.primary.pool_size: 5"`: a citation pointing at its step's line."""
    quote = f': "{citation.quote}"' if citation.quote else ""
    return f"[{citation.step}] step {citation.step} · {citation.tool}{quote}"


def flag(span: Span, claims: bool = True) -> str:
    """One line for an unsupported or contradicted statement, quoting it and what the results say.
    Without `claims` the claim is not repeated apart from its statement: lifted out of a link there
    (a host, a data: URL's payload, a query string's value), it would stand bare where the link
    guard no longer sees a link (Slack, bot/slack/outside.py)."""
    where = f"step {span.step}" if span.step is not None else "an earlier result"
    if not claims:
        said = (
            f"Contradicted by {where}: `{span.evidence}`"
            if span.evidence is not None
            else "Not backed by the tool results"
        )
        return f'{MARK} {said}: "{span.statement}"'
    if span.evidence is not None:
        says = f'the answer says "{span.claim}" in "{span.statement}"'
        return f"{MARK} Contradicted by {where}: `{span.evidence}`, where {says}"
    return f'{MARK} Not backed by the tool results: "{span.claim}" ({span.why}) in "{span.statement}"'


def gaps(evidence: Evidence) -> str | None:
    return f"Not looked at: {'; '.join(evidence.not_looked_at)}" if evidence.not_looked_at else None


class Said(NamedTuple):
    """A line about the answer's evidence; `warns`: it is something to be wary of."""

    line: str
    warns: bool


def evidence_lines(evidence: Evidence, claims: bool = True) -> list[Said]:
    """Flagged statements first, then the footnotes, then what was not looked at (`claims`: see flag)."""
    said, flagged = gaps(evidence), evidence.flagged
    more = len(flagged) - FLAGS_SHOWN
    return [
        *(Said(flag(span, claims), True) for span in flagged[:FLAGS_SHOWN]),
        *([Said(f"{MARK} and {more} more claims the tool results do not back", True)] if more > 0 else []),
        *(Said(footnote(citation), False) for citation in _distinct(evidence.citations)),
        *([Said(said, True)] if said else []),
    ]


def marked(text: str, evidence: Evidence | None) -> str:
    """`text` with a ⚠ at the end of each line holding an unsupported or contradicted claim, where
    it stands (at the line's end: what the line quotes, a log line's words perhaps, stays whole).
    Lines whose end is markdown's syntax (a table row, a link's definition, a fence) stay as written."""
    if evidence is None:
        return text
    out, at = [], 0
    for end in sorted({_line_end(text, span.end) for span in evidence.flagged}):
        line = text[text.rfind("\n", 0, end) + 1 : end].lstrip()
        if line.startswith(("|", "[", "```", "~~~")) or _fenced(text, end):
            continue
        out += [text[at:end], f" {MARK}"]
        at = end
    return "".join([*out, text[at:]])


def _line_end(text: str, offset: int) -> int:
    end = text.find("\n", offset)
    return len(text) if end < 0 else end


def _fenced(text: str, offset: int) -> bool:
    """Whether `offset` lies inside a fenced code block."""
    return text.count("```", 0, offset) % 2 == 1


def _distinct(citations: list[Citation]) -> list[Citation]:
    """One footnote per step and quote, by step."""
    seen: dict[tuple[int, str | None], Citation] = {}
    for citation in citations:
        seen.setdefault((citation.step, citation.quote), citation)
    quoted = {step for step, quote in seen if quote is not None}
    # A step cited bare and with a quote is one footnote: the quote says more.
    kept = [c for (step, quote), c in seen.items() if quote is not None or step not in quoted]
    return sorted(kept, key=lambda c: c.step)
