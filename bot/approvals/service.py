"""The approvals service: the one way a person's decision turns into something run.

`ask` stores a request; the front end shows it and says where (`shown`). `decide` takes a
click (or a keypress), in this order, each step a place where it may stop with nothing used up
or run:

1. the request is found, and the click comes from the message that shows it;
2. an expired request is settled as expired (nothing runs, the waiting party is told);
3. the one rule (rules.py) says whether this person may decide, and the waiting party whether
   it still waits (a cancelled run does not);
4. the decision is claimed, once, in the store: a double click or a second approver is told who
   decided first;
5. an approved command: the waiting party marks it started, then exactly the approved argv runs
   (checked again against the policy as it is now) and its result is redacted;
6. the front end shows the outcome, then the waiting party gets it back: the agent's
   conversation goes on from it, or the run does.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from ...config.policy import Gate, Policy, Principal
from ...tools.base import ErrorType, ToolResult
from ...tools.commands import ApprovalRequest
from ...tools.executor import redact_result
from ...tools.writes import run_approved
from ..telemetry import metrics
from ..telemetry.audit import Audit, AuditRecord, Kind, LoggedAudit, who
from . import rules
from .requests import Claim, Decision, HandBack, Pending, Verdict
from .store import ApprovalStore

log = logging.getLogger("opsbot.approvals")

# A decided or expired request stays readable a while, so late clicks get a clear answer.
KEEP_AFTER_EXPIRY_S = 3600


class Waiting(Protocol):
    """Whoever waits for a kind of request's outcome (`HandBack`): a front end's conversations,
    or the runbook engine."""

    def waits(self, pending: Pending) -> str | None:
        """None while it still waits for `pending`, else why not (nothing is decided then)."""

    def starting(self, pending: Pending, by: Principal) -> str | None:
        """The approved command is about to run: note it (a restart must not run it again).
        A reason returned instead stops it: nothing runs."""

    def resume(self, pending: Pending, decision: Decision) -> None:
        """Go on from a settled decision."""


class View(Protocol):
    """How a front end shows what a click did, where the request is."""

    def running(self, pending: Pending, by: Principal) -> None: ...

    def decided(self, decision: Decision) -> None: ...


def _now() -> datetime:
    return datetime.now(UTC)


class Approvals:
    def __init__(
        self,
        policy: Policy,
        store: ApprovalStore,
        *,
        teams: frozenset[str] | None = None,
        clock: Callable[[], datetime] = _now,
        audit: Audit | None = None,
    ) -> None:
        """`teams`: whose people may decide (None: anyone the policy allows, as in a terminal)."""
        self.policy = policy
        self.store = store
        self.teams = teams
        self.clock = clock
        self.audit = audit or LoggedAudit()
        self._waiting: dict[HandBack, Waiting] = {}

    def hand_back(self, kind: HandBack, to: Waiting) -> None:
        """Who gets the outcomes of `kind` requests (set once, when the app is put together)."""
        self._waiting[kind] = to

    # ---------------------------------------------------------------- asking

    def ask_command(
        self,
        request: ApprovalRequest,
        place: Mapping[str, str],
        hand_back: HandBack,
        why: str = "",
        run: str | None = None,
    ) -> Pending:
        """Store a write command's request (its id is the request's, which the model was told)."""
        pending = Pending(
            id=request.id,
            command=request,
            requested_by=request.requested_by,
            why=why,
            place=dict(place),
            hand_back=hand_back,
            run=run,
            created_at=request.created_at,
            expires_at=request.expires_at,
        )
        self._save(pending)
        metrics.approval_asked("command")
        self._audit("approval_requested", pending, pending.requested_by, tool=request.command, **_subject(request))
        return pending

    def ask_gate(
        self, gate: Gate, requested_by: Principal | None, place: Mapping[str, str], run: str, why: str = ""
    ) -> Pending:
        """Store a runbook approval step's request."""
        now = self.clock()
        pending = Pending(
            id=uuid.uuid4().hex,
            gate=gate,
            requested_by=requested_by,
            why=why,
            place=dict(place),
            hand_back=HandBack.runbook,
            run=run,
            created_at=now,
            expires_at=now + timedelta(seconds=gate.timeout_s),
        )
        self._save(pending)
        metrics.approval_asked("gate")
        self._audit("approval_requested", pending, requested_by, tool="approval step", args=gate.text)
        return pending

    def shown(self, pending: Pending, at: str) -> Pending:
        """Bind the request to the message showing it: clicks must come from there."""
        shown = pending.model_copy(update={"shown_at": at})
        self._save(shown)
        return shown

    def get(self, request_id: str) -> Pending | None:
        return self.store.load(request_id)

    def decision(self, request_id: str) -> Claim | None:
        """How request `request_id` was decided, or None while it waits."""
        return self.store.decision(request_id)

    def open_to(self, by: Callable[[Pending], Principal]) -> list[Pending]:
        """The requests still waiting that the person `by` makes (for each request: the person as
        they would click where it is shown) may approve now, oldest first: what a front end shows
        as waiting for them. The rule is `why_not`'s, the same a click meets."""
        now = self.clock()
        waiting = [p for p in self.store.undecided() if now < p.expires_at]
        return [p for p in waiting if self.why_not(p, by(p), approve=True, now=now) is None]

    # ---------------------------------------------------------------- deciding

    def why_not(self, pending: Pending, by: Principal, approve: bool, now: datetime | None = None) -> str | None:
        """Why `by` may not decide `pending` now (the rule, or nothing waits any more), or None:
        a front end may ask before it offers a choice."""
        why_not = rules.refusal(self.policy, pending, by, approve, now or self.clock(), self.teams)
        waiting = self._waiting.get(pending.hand_back)
        return why_not if why_not is not None or waiting is None else waiting.waits(pending)

    def decide(self, request_id: str, approve: bool, by: Principal, view: View, at: str | None = None) -> Decision:
        """`by` approves or denies request `request_id`, clicked at `at` (the message it was shown
        in, when the front end has one). Whatever comes of it is shown through `view`."""
        decision = self._decide(request_id, approve, by, view, at)
        metrics.approval_decided(decision.verdict.value)
        if not decision.settled:
            # Clicks turned away too: who tried to decide what is a reviewer's first question.
            self._audit("approval_decided", decision.pending, by, status=decision.verdict.value, request=request_id)
        view.decided(decision)
        if decision.settled and decision.pending is not None:
            self._resume(decision.pending, decision)
        return decision

    def _decide(self, request_id: str, approve: bool, by: Principal, view: View, at: str | None) -> Decision:
        pending = self.store.load(request_id)
        if pending is None:
            return Decision(
                verdict=Verdict.unknown,
                message="This approval request is unknown or long expired; ask for it again.",
            )
        # A request shown nowhere yet (its process stopped between posting and noting where) is
        # decided wherever it is clicked: its id is random, and the rule below still applies.
        if at is not None and pending.shown_at is not None and at != pending.shown_at:
            return _refused(pending, "that button does not belong to this approval request")
        now = self.clock()
        if now >= pending.expires_at:
            return self._settle(pending, Claim(verdict=Verdict.expired), _expired(pending))
        why_not = self.why_not(pending, by, approve, now)
        if why_not is not None:
            return _refused(pending, why_not)
        waiting = self._waiting.get(pending.hand_back)
        verdict = Verdict.approved if approve else Verdict.denied
        lost = self._claim(pending, Claim(verdict=verdict, by=by.user), by)
        if lost is not None:
            return lost
        if not approve:
            return Decision(verdict=verdict, message="Denied: nothing was run.", pending=pending, by=by.user)
        if pending.command is None:
            return Decision(verdict=verdict, message="Approved.", pending=pending, by=by.user)
        stopped = waiting.starting(pending, by) if waiting is not None else None
        if stopped is not None:
            # Approved and claimed, yet nothing ran (the run was cancelled meanwhile): the trail says so.
            command = pending.command
            self._audit("write_run", pending, by, tool=command.command, status="not_run", **_subject(command))
            return _refused(pending, stopped)
        view.running(pending, by)
        result = self._run(pending, by, now)
        said = "Approved: it ran." if result.ok else f"Approved, but it did not complete ({result.status})."
        return Decision(verdict=verdict, message=said, pending=pending, by=by.user, result=result)

    def cancel(self, request_id: str, by: Principal) -> Pending | None:
        """Withdraw a request nobody has decided: the run that asked for it was stopped by `by`.
        Claimed like a decision, so a later click is told it was cancelled and nothing runs. The
        request, or None when it is gone or was decided first (its decision stands)."""
        pending = self.store.load(request_id)
        if pending is None or self._claim(pending, Claim(verdict=Verdict.cancelled, by=by.user), by) is not None:
            return None
        metrics.approval_decided(Verdict.cancelled.value)
        return pending

    def _settle(self, pending: Pending, claim: Claim, message: str) -> Decision:
        lost = self._claim(pending, claim, None)
        return lost or Decision(verdict=claim.verdict, message=message, pending=pending, by=claim.by)

    def _claim(self, pending: Pending, claim: Claim, person: Principal | None) -> Decision | None:
        """Store the decision; None when this one won (and it is recorded), else who won first."""
        first = self.store.claim(pending.id, claim, _ttl(pending, self.clock()))
        if first is None:
            # Recorded as it is claimed: before the approved command runs.
            self._audit("approval_decided", pending, person, status=claim.verdict.value)
            return None
        by = f" by {first.by}" if first.by else ""
        return Decision(
            verdict=Verdict.taken,
            message=f"This request was already decided ({first.verdict.value}{by}).",
            pending=pending,
            by=first.by,
        )

    def _run(self, pending: Pending, by: Principal, now: datetime) -> ToolResult:
        request = pending.command
        assert request is not None
        try:
            result = run_approved(self.policy, request, by, now)
        except Exception as exc:  # noqa: BLE001 - the claim is stored: the outcome must be told, not lost
            log.exception("approved command %s (request %s) raised", request.command, request.id)
            result = ToolResult.failure(ErrorType.failed, f"{request.command} failed: {type(exc).__name__}: {exc}")
        shown = redact_result(result)
        self._audit("write_run", pending, by, tool=request.command, status=shown.status, **_subject(request))
        return shown

    def _audit(self, kind: Kind, pending: Pending | None, person: Principal | None, **fields: Any) -> None:
        """One audit record about `pending` (where it was asked, its run) and what `person` did."""
        fields.setdefault("request", pending.id if pending is not None else None)
        thread = pending.place.get("thread") if pending is not None else None
        run = pending.run if pending is not None else None
        self.audit.record(AuditRecord.made(kind, who=who(person), thread=thread, run=run, **fields))

    def _resume(self, pending: Pending, decision: Decision) -> None:
        waiting = self._waiting.get(pending.hand_back)
        if waiting is None:
            return
        try:
            waiting.resume(pending, decision)
        except Exception:  # noqa: BLE001 - the decision is stored and shown; log what could not go on
            log.exception("the outcome of approval request %s could not be handed back", pending.id)

    def _save(self, pending: Pending) -> None:
        self.store.save(pending, _ttl(pending, self.clock()))


def _subject(request: ApprovalRequest) -> dict[str, Any]:
    """What an audit record says was asked for: the argv, or the silence or MCP call."""
    return {"argv": list(request.argv)} if request.argv else {"args": request.action}


def _ttl(pending: Pending, now: datetime) -> float:
    return max((pending.expires_at - now).total_seconds(), 1.0) + KEEP_AFTER_EXPIRY_S


def _refused(pending: Pending, why: str) -> Decision:
    return Decision(verdict=Verdict.refused, message=f"Nothing was decided: {why}.", pending=pending)


def _expired(pending: Pending) -> str:
    return f"This request expired at {pending.expires_at:%H:%M} UTC; nothing was run. Ask for it again."
