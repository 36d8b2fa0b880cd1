"""What a finished thread leaves behind: one `IncidentRecord`, redacted as it is made.

A record holds what was asked and found, and what was run and who approved it. It is written
again, whole, each time its thread finishes a run (a question answered, a command approved and
its outcome heard), so it always says the thread's latest state. Approvers are named as the
approval store and the audit trail recorded them (`slack:U123`), never as a chat message says.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic_core import to_jsonable_python

from ...tools.redact import redact
from .terms import terms_of

MAX_CAUSE = 200
MAX_TEXT = 600  # characters kept of one question or finding: a record is a reminder, not a transcript
# What names the record rather than tells of the incident: kept as given (ids, times).
_IDENTITY = frozenset({"id", "thread", "channel", "at", "updated", "expires_at"})
MAX_ITEMS = 12  # questions, findings and commands kept of one thread (the latest)


class Asked(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    at: datetime
    who: str | None = Field(default=None, description="platform:user")
    text: str


class CommandRun(BaseModel):
    """A command (or a runbook's write step) run in the thread, and what people decided of it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    command: str
    status: str = Field(description="ok, failed, denied, expired, not_run ...")
    write: bool = False
    approved_by: str | None = Field(default=None, description="platform:user, from the approval's audit record")
    denied_by: str | None = None


class IncidentRecord(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    thread: str = Field(description="the thread key")
    channel: str = Field(description="the channel id, or `cli` for the terminal")
    link: str | None = Field(default=None, description="where people find the thread (Slack's permalink)")
    at: datetime = Field(description="when the thread was first recorded")
    updated: datetime
    services: list[str] = Field(default_factory=list)
    alerts: list[str] = Field(default_factory=list, description="alert names")
    labels: dict[str, str] = Field(default_factory=dict, description="the alerts' labels")
    questions: list[Asked] = Field(default_factory=list)
    findings: list[str] = Field(default_factory=list, description="what the answers and runs found")
    cause: str = Field(default="", description="the latest finding's first sentence: what recall compares")
    commands: list[CommandRun] = Field(default_factory=list)
    outcome: str = Field(default="", description="the last run's stop reason, or the runbook run's status")
    terms: dict[str, int] = Field(default_factory=dict, description="term -> count: what recall matches")
    expires_at: float = Field(description="epoch seconds: recall and history ignore it after this")

    @classmethod
    def made(cls, **fields: Any) -> IncidentRecord:
        """A record with every text in it redacted, and its terms counted from what is kept."""
        plain = to_jsonable_python(fields)
        told = redact({k: v for k, v in plain.items() if k not in _IDENTITY})
        kept = {**told, **{k: plain[k] for k in _IDENTITY & set(plain)}}
        kept["questions"] = [_cut_asked(asked) for asked in kept.get("questions", [])][-MAX_ITEMS:]
        kept["findings"] = [_cut(text) for text in kept.get("findings", [])][-MAX_ITEMS:]
        kept["cause"] = _cut(kept.get("cause", ""), MAX_CAUSE)
        kept["commands"] = kept.get("commands", [])[-MAX_ITEMS:]
        record = cls.model_validate({**kept, "terms": {}})
        return record.model_copy(update={"terms": dict(terms_of(record.texts()))})

    def texts(self) -> list[str]:
        """Everything recall matches on: services and alerts count twice, being what an incident is of."""
        commands = [run.command for run in self.commands]
        labels = [f"{key} {value}" for key, value in self.labels.items()]
        asked = [asked.text for asked in self.questions]
        return [*self.services, *self.services, *self.alerts, *self.alerts, *labels, *asked, *self.findings, *commands]

    @property
    def fixes(self) -> list[CommandRun]:
        """The writes that ran."""
        return [run for run in self.commands if run.write and run.status == "ok"]


def record_id(thread: str) -> str:
    """A thread's record id: one record per thread, written over as the thread goes on."""
    return hashlib.sha256(thread.encode()).hexdigest()[:20]


def first_sentence(text: str) -> str:
    """The cause as an answer states it first: its first sentence or line, without markup."""
    line = next((part.strip(" #*-_>`") for part in text.strip().splitlines() if part.strip(" #*-_>`")), "")
    end = min((i for i in (line.find(". "), line.find("; ")) if i > 0), default=len(line))
    return line[: end + 1 if end < len(line) else end].rstrip(";")


def _cut(text: str, size: int = MAX_TEXT) -> str:
    # Cut after redaction, never before: a secret cut in half is no longer found by its shape.
    return text if len(text) <= size else text[: size - 1] + "…"


def _cut_asked(asked: Any) -> Any:
    if isinstance(asked, dict):
        return {**asked, "text": _cut(str(asked.get("text", "")))}
    return asked
