"""What an approval is made of: the request a person is asked, and the decision they make.

A request is one of two things: a write exactly as it would happen (tools/commands.py
`ApprovalRequest`: a command bound to its argv and sandbox digest, or an Alertmanager silence bound
to its digest), or a runbook's approval step (a `Gate`,
its text filled in). Either way it names who asked, where it was asked (the front end's own
address for it), until when it may be decided, and who gets the outcome back.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ...config.policy import Gate, Principal
from ...tools.base import ToolResult
from ...tools.commands import ApprovalRequest
from ...tools.redact import redact_text

# A request's place says `via: mcp-serve` when an agent asked through `opsbot mcp-serve`: the one its
# token names is not a person at a keyboard there, so never its approver (rules.py).
VIA = "via"
VIA_AGENT = "mcp-serve"


class HandBack(StrEnum):
    """Who is told the outcome once a request is decided."""

    agent = "agent"  # the conversation that asked goes on from the outcome
    runbook = "runbook"  # the run waiting at a step goes on, or ends
    nobody = "nobody"  # a direct command: the outcome is shown, nothing waits for it


class Pending(BaseModel):
    """A request waiting for a person, stored until it is decided or expires."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    command: ApprovalRequest | None = Field(default=None, description="a write command, exactly as it would run")
    gate: Gate | None = Field(default=None, description="a runbook's approval step, its text filled in")
    requested_by: Principal | None
    why: str = Field(default="", description="what led to it, as shown to approvers")
    place: dict[str, str] = Field(description="where it was asked, in the front end's own terms (a Slack thread)")
    hand_back: HandBack
    run: str | None = Field(default=None, description="the runbook run waiting for it (hand_back runbook)")
    created_at: datetime
    expires_at: datetime
    shown_at: str | None = Field(default=None, description="the message showing it; a decision must come from there")

    @model_validator(mode="after")
    def _one_subject(self) -> Pending:
        if (self.command is None) == (self.gate is None):
            raise ValueError("a request is either a command or a runbook gate")
        if (self.hand_back is HandBack.runbook) != (self.run is not None):
            raise ValueError("a runbook's request names its run, and only a runbook's does")
        return self

    @property
    def asked_by_agent(self) -> bool:
        """Whether an agent asked for it through `opsbot mcp-serve`."""
        return self.place.get(VIA) == VIA_AGENT

    @property
    def argv_shown(self) -> str:
        """The command line that runs (or the silence that is created), as people see it: a secret
        in it (a policy's literal, a value someone typed) is redacted like everything else opsbot shows."""
        return redact_text(self.command.action) if self.command is not None else ""

    @property
    def what(self) -> str:
        """The request in one line, for people: the exact argv, or the gate's question."""
        if self.command is not None:
            return f"{self.argv_shown} ({self.command.command}, changes things)"
        assert self.gate is not None
        return self.gate.text


class Verdict(StrEnum):
    approved = "approved"
    denied = "denied"
    expired = "expired"  # nobody decided in time: nothing ran
    refused = "refused"  # this person may not decide (now); the request still waits
    taken = "taken"  # decided already, by `Decision.by`
    unknown = "unknown"  # no such request (never made, or long gone)
    cancelled = "cancelled"  # the run that asked was stopped before anyone decided: nothing ran


SETTLED = frozenset({Verdict.approved, Verdict.denied, Verdict.expired})


class Decision(BaseModel):
    """What came of one click (or keypress): told to the decider, shown where the request is."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    verdict: Verdict
    message: str = Field(description="one sentence for the decider")
    pending: Pending | None = None
    by: str | None = Field(default=None, description="who decided: the decider, or for `taken` who did first")
    result: ToolResult | None = Field(default=None, description="the approved command's result, redacted")

    @property
    def settled(self) -> bool:
        """Whether this click decided the request (rather than being turned away)."""
        return self.verdict in SETTLED


class Claim(BaseModel):
    """The one decision on a request, stored before anything runs: the first claim wins."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    verdict: Verdict
    by: str | None = None
