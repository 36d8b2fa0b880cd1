"""Incident memory as the loop and the front ends use it (bot/incidents/ keeps and matches the
records): recall before a run, a record after one, `history` and `handoff` for people.

The loop asks `recall` as a run starts and gives the model the strong matches as a note
(recalled.py says them, to the model and to people); front ends call `remember` when a run or a runbook run has
finished, with the thread's link, which only they know. Nothing here knows Slack. A store that
fails never fails the work: recall then finds nothing and the record is logged as not kept.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from ...config.policy import Policy, Principal
from ...config.settings import IncidentMemory
from ..incidents import (
    Asked,
    CommandRun,
    IncidentRecord,
    IncidentStore,
    IncidentsUnavailable,
    LexicalRecall,
    Recall,
    Recalled,
    first_sentence,
    record_id,
    render,
    summary,
    terms_of,
    timeline,
)
from ..llm import Model
from ..telemetry.audit import AuditReader, AuditRecord, who
from .evidence import Evidence
from .recalled import seen_line
from .reply import Reply, StopReason

if TYPE_CHECKING:  # runbooks are loaded where runs are (a handoff with Redis), not for every question
    from ..runbooks import RunRecord

log = logging.getLogger("opsbot.incidents")

# Runs that found nothing to remember: no answer came of them.
_NOTHING_LEARNT = frozenset(
    {
        StopReason.no_model,
        StopReason.busy,
        StopReason.memory_unavailable,
        StopReason.llm_unavailable,
        StopReason.cancelled,
    }
)
_WRITE_KINDS = ("approval_requested", "approval_decided", "write_run")


def channel_of(principal: Principal | None) -> str:
    """The channel a principal asks in, as `memory.incidents.channels` names it (`cli`: the terminal)."""
    if principal is None:
        return "-"
    return principal.channel or principal.platform


@dataclass(frozen=True)
class Learnt:
    """What one finished run adds to its thread's record."""

    services: set[str] = field(default_factory=set)
    alerts: list[str] = field(default_factory=list)
    labels: dict[str, str] = field(default_factory=dict)
    questions: list[Asked] = field(default_factory=list)
    findings: list[str] = field(default_factory=list)
    cause: str = ""
    reads: list[CommandRun] = field(default_factory=list)
    outcome: str = ""


class Recollection:
    def __init__(
        self,
        settings: IncidentMemory,
        *,
        policy: Policy,
        store: IncidentStore,
        audit: AuditReader | None = None,
        runs: Callable[[str], RunRecord | None] | None = None,
        recall: Recall | None = None,
    ) -> None:
        self.settings = settings
        self.policy = policy
        self.store = store
        self.audit = audit
        self.runs = runs
        self.matcher = recall or LexicalRecall(store, settings.min_score, settings.max_shown)

    # ------------------------------------------------------------------ recall

    def covers(self, principal: Principal | None) -> bool:
        return self.settings.covers(channel_of(principal))

    def visible(self, principal: Principal | None) -> Callable[[IncidentRecord], bool]:
        """A record is seen by who may read every service it is about (a service gone from the policy: nobody)."""

        def allowed(record: IncidentRecord) -> bool:
            services = self.policy.services
            return all(s in services and services[s].access.allows(principal) for s in record.services)

        return allowed

    def recall(self, text: str, principal: Principal | None, thread: str | None = None) -> Recalled | None:
        """Past incidents like `text`, None where incident memory is off for the asker's channel."""
        if not self.covers(principal):
            return None
        try:
            return self.matcher.recall(text, self.visible(principal), exclude=record_id(thread) if thread else None)
        except IncidentsUnavailable as exc:
            log.warning("incident recall skipped: %s", exc)
            return None

    # ------------------------------------------------------------------ recording

    def remember(
        self, question: str, reply: Reply, principal: Principal | None, link: str | None = None
    ) -> IncidentRecord | None:
        """The thread's record, with this run's question and answer, written over the last one."""
        if not self.covers(principal) or reply.stop_reason in _NOTHING_LEARNT:
            return None
        calls = [call for step in reply.steps for call in step.calls]
        services = {str(c.args["service"]) for c in calls if isinstance(c.args, dict) and "service" in c.args}
        named = terms_of([question])  # "payments?" names payments too
        services |= {name for name in self.policy.services if name.lower() in named}
        reads = [
            CommandRun(command=str(c.args["command"]), status=c.status.value)
            for c in calls
            if c.tool == "run_command" and isinstance(c.args, dict) and "command" in c.args
        ]
        # Asked when the run started: the handoff puts the question before what the run did.
        asked_at = datetime.fromtimestamp(self.store.clock() - reply.duration_s, UTC)
        asked = Asked(at=asked_at, who=who(principal), text=question)
        findings = _findings(reply)
        return self._write(
            reply.thread,
            channel_of(principal),
            link,
            Learnt(
                services=services,
                questions=[asked],
                findings=findings,
                cause=first_sentence(reply.text) if findings else "",
                reads=reads,
                outcome=reply.stop_reason.value,
            ),
        )

    def remember_run(self, run: RunRecord, channel: str, link: str | None = None) -> IncidentRecord | None:
        """A finished runbook run's record, in the thread it ran in."""
        thread = run.origin.get("thread")
        if thread is None or not self.settings.covers(channel):
            return None
        explained = [str(s.output) for s in run.steps if s.kind == "explain" and isinstance(s.output, str)]
        ended = f"runbook {run.runbook} {run.status}"
        return self._write(
            thread,
            channel,
            link,
            Learnt(
                services={v for v in run.params.values() if v in self.policy.services},
                labels=dict(run.params),
                alerts=[run.origin["alert_name"]] if "alert_name" in run.origin else [],
                findings=explained or [f"{ended}{f': {run.note}' if run.note else ''}"],
                cause=first_sentence(explained[-1]) if explained else "",
                outcome=ended,
            ),
        )

    def _write(self, thread: str, channel: str, link: str | None, new: Learnt) -> IncidentRecord | None:
        try:
            before = self.store.get(record_id(thread))
            record = self._merged(before, thread, channel, link, new)
            self.store.put(record)
        except IncidentsUnavailable as exc:
            log.warning("incident record of %s not kept: %s", thread, exc)
            return None
        return record

    def _merged(
        self, before: IncidentRecord | None, thread: str, channel: str, link: str | None, new: Learnt
    ) -> IncidentRecord:
        now = self.store.clock()
        stamp = datetime.fromtimestamp(now, UTC)
        # A thread's first record starts from an empty one, so old and new merge the same way.
        old = before or IncidentRecord(
            id=record_id(thread), thread=thread, channel=channel, at=stamp, updated=stamp, expires_at=now
        )
        return IncidentRecord.made(
            id=record_id(thread),
            thread=thread,
            channel=channel,
            link=link or old.link,
            at=old.at,
            updated=stamp,
            services=sorted({*old.services, *new.services}),
            alerts=sorted({*old.alerts, *new.alerts}),
            labels={**old.labels, **new.labels},
            questions=[*old.questions, *new.questions],
            findings=[*old.findings, *new.findings],
            cause=new.cause or old.cause,
            commands=[*(run for run in old.commands if not run.write), *new.reads, *self._writes(thread, old.at)],
            outcome=new.outcome or old.outcome,
            expires_at=now + self.settings.ttl_days * 86400,
        )

    def _writes(self, thread: str, since: datetime) -> list[CommandRun]:
        """The thread's write requests and what became of them, as the audit trail recorded them:
        who approved or denied is the approval store's account, never a chat message's."""
        if self.audit is None:
            return []
        by_request: dict[str, dict[str, AuditRecord]] = {}
        start = (since - timedelta(hours=1)).timestamp()
        for entry in self.audit.read(start, thread):
            if entry.kind in _WRITE_KINDS and entry.request:
                by_request.setdefault(entry.request, {})[entry.kind] = entry
        return [_write_of(kinds) for kinds in by_request.values() if "approval_requested" in kinds]

    # ------------------------------------------------------------------ for people

    def history(self, words: str, principal: Principal | None) -> str:
        """`history <words>`: the past incidents most like `words` that the asker may see."""
        if not self.settings.enabled:
            return "Incident memory is off (memory.incidents.enabled in the config file)."
        try:
            recalled = self.matcher.recall(words, self.visible(principal))
        except IncidentsUnavailable as exc:
            return f"Past incidents cannot be read now ({exc}); try again in a minute."
        if not recalled.matches:
            return f"No past incident matches {words!r}."
        lines = [seen_line(m, self.store.clock()) for m in recalled.matches]
        head = f"Past incidents like {words!r}:" if not recalled.abstained else f"No clear match: {recalled.abstained}."
        return "\n".join([head, *(f"  {line}" for line in lines)])

    def handoff(
        self, since_s: float, since: str, thread: str | None, principal: Principal | None, model: Model | None = None
    ) -> str:
        """`handoff`: what happened since `since_s` (epoch seconds), as recorded; with `model`, its
        summary of the entries above them."""
        start = datetime.fromtimestamp(since_s, UTC)
        try:
            audit = list(self.audit.read(since_s, thread)) if self.audit is not None else []
            incidents = [r for r in self.store.updated_since(since_s) if thread in (None, r.thread)]
        except IncidentsUnavailable as exc:
            return f"The record cannot be read now ({exc}); try again in a minute."
        seen = self.visible(principal)
        incidents = [r for r in incidents if seen(r)]
        runs = self._runs({a.run for a in audit if a.run})
        entries = timeline(audit, runs, incidents, start, shown=self._shown(principal))
        if model is None or not entries:
            return render(entries, since)
        return f"Summary (the model's, of the entries below):\n{summary(model, entries)}\n\n{render(entries, since)}"

    def _runs(self, ids: Iterable[str]) -> list[RunRecord]:
        if self.runs is None:
            return []
        from ..runbooks import RunStoreUnavailable  # loaded with the store `runs` reads

        found = []
        for run_id in sorted(ids):
            try:
                run = self.runs(run_id)
            except RunStoreUnavailable as exc:
                log.warning("runbook run %s left out of the handoff: %s", run_id, exc)
                continue
            if run is not None:
                found.append(run)
        return found

    def _shown(self, principal: Principal | None) -> Callable[[AuditRecord], bool]:
        """An audit record is shown unless it names a service the reader may not read."""
        services = self.policy.services

        def shown(entry: AuditRecord) -> bool:
            name = entry.args.get("service") if isinstance(entry.args, dict) else None
            return name is None or (name in services and services[name].access.allows(principal))

        return shown


def _write_of(kinds: dict[str, AuditRecord]) -> CommandRun:
    asked, decided, ran = kinds["approval_requested"], kinds.get("approval_decided"), kinds.get("write_run")
    verdict = decided.status if decided is not None else "waiting"
    return CommandRun(
        command=asked.tool or "?",
        status=ran.status if ran is not None and ran.status else (verdict or "waiting"),
        write=True,
        approved_by=decided.who if decided is not None and verdict == "approved" else None,
        denied_by=decided.who if decided is not None and verdict == "denied" else None,
    )


def _findings(reply: Reply) -> list[str]:
    """What an answer found, as a record keeps it: what the check verified in the tool results
    (each fact with the words it was found in, each quote), when the answer was checked and backed;
    else the answer as written (no tool was offered, or nothing it says could be checked)."""
    if reply.stop_reason is not StopReason.answered:
        return []
    evidence: Evidence | None = reply.evidence
    if evidence is None or not evidence.backed:
        return [reply.text]
    facts = [
        f"{f.fact} (step {f.step}: {f.evidence})" if f.step else f"{f.fact} ({f.evidence})" for f in evidence.findings
    ]
    quotes = [f'"{c.quote}" (step {c.step}, {c.tool})' for c in evidence.citations if c.quote]
    return [*facts, *quotes] or [reply.text]
