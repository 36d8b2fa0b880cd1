"""What the check of an answer found, carried on `Reply.evidence` to every front end and `--json`."""

from __future__ import annotations

from pydantic import BaseModel, Field


class Citation(BaseModel):
    """A reference the answer made that holds: `[2]`, or `[2: "quote"]` whose quote is in the results."""

    step: int = Field(description="the step of this run the answer cites")
    tool: str = Field(default="", description="what ran at that step")
    quote: str | None = Field(default=None, description="the words quoted, found in the step's result or the thread's")


class Finding(BaseModel):
    """A specific fact of the answer (a number, a host, a version, a `key: value`) found in a tool result."""

    fact: str
    step: int | None = Field(description="the step of this run whose result holds it; None: an earlier turn's")
    evidence: str = Field(description="the result's words it was found in")


class Span(BaseModel):
    """A statement of the answer the tool results do not back (unsupported) or say otherwise (contradicted)."""

    start: int = Field(description="where the claim starts in the reply's text")
    end: int
    claim: str = Field(description="the claim as written: a fact, or a quote")
    statement: str = Field(description="the sentence it stands in")
    why: str = Field(description="what the check found, in words")
    step: int | None = Field(default=None, description="contradicted: the step whose result says otherwise")
    evidence: str | None = Field(default=None, description="contradicted: what that result says")


class Evidence(BaseModel):
    """The answer checked in code against every tool result of the thread (bot/agent/evidence/check.py)."""

    citations: list[Citation] = Field(default_factory=list)
    findings: list[Finding] = Field(default_factory=list)
    unsupported: list[Span] = Field(default_factory=list)
    contradicted: list[Span] = Field(default_factory=list)
    not_looked_at: list[str] = Field(
        default_factory=list, description="calls denied or failed, and what the question named that no tool was asked"
    )
    check_ms: float = 0.0

    @property
    def backed(self) -> bool:
        """Whether anything the answer says was found in a tool result."""
        return bool(self.citations or self.findings)

    @property
    def flagged(self) -> list[Span]:
        """Unsupported and contradicted statements, in the order they stand in the answer."""
        return sorted([*self.unsupported, *self.contradicted], key=lambda span: span.start)
