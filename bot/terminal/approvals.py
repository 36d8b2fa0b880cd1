"""Approvals in the terminal, through the one approvals service (bot/approvals): the local user
decides a write command right where it was asked, when the policy lets them.

Who the terminal user is: the OS account (`cli` platform). The policy decides as it does in
Slack: the command's `approvers` must allow that user, and since in a terminal the asker is the
approver, the command must also say `self_approval: true`. Otherwise the request is shown with
who may approve it, and nothing runs. Requests live in this process only: a terminal's requests
end with it.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

from rich.console import Console

from ...config.policy import Policy, Principal
from ...tools.commands import ApprovalRequest
from ..agent.prompts import approval_outcome
from ..approvals import Approvals, Decision, HandBack, InProcessApprovalStore, Pending, Verdict, deciders_of
from ..commands import render_approved
from ..telemetry.audit import Audit
from .prompt import Prompter
from .screen import say


class TerminalApprovals:
    """`offer` a request; what the model is to be told of the outcome comes back from it."""

    def __init__(
        self,
        policy: Policy,
        user: Principal,
        *,
        thread: str,
        out: Console,
        prompter: Prompter,
        audit: Audit | None = None,
    ) -> None:
        self.user = user
        self.thread = thread
        self.out = out
        self.prompter = prompter
        self.approvals = Approvals(policy, InProcessApprovalStore(), audit=audit)
        self.approvals.hand_back(HandBack.agent, self)
        self.outcome: str | None = None  # set by `resume`, during `decide`

    def offer(self, request: ApprovalRequest, why: str, continues_agent: bool) -> str | None:
        """Show the request and, if this user may approve it, ask y/N. Returns what to tell the
        model (its next turn in the thread), or None when nothing is to be told."""
        hand_back = HandBack.agent if continues_agent else HandBack.nobody
        pending = self.approvals.ask_command(request, {"thread": self.thread}, hand_back, why)
        deciders = deciders_of(self.approvals.policy, pending)
        who = deciders.describe() if deciders is not None else "nobody (the command is gone)"
        say(self.out, f"⏸ approval needed: {pending.what}", "yellow")
        say(self.out, f"  may approve: {who}", "bright_black")
        refusal = self.approvals.why_not(pending, self.user, approve=True)
        if refusal is not None:
            say(self.out, f"  you cannot approve it here: {refusal}. Nothing was run; ask an approver.", "yellow")
            return None
        yes = self.prompter.confirm("  approve and run it?")
        self.outcome = None
        with _finished_first(self.out):
            self.approvals.decide(pending.id, yes, self.user, self)
        return self.outcome

    # View: what the decision did, where it was asked.

    def running(self, pending: Pending, by: Principal) -> None:
        say(self.out, f"  … running {pending.what}", "bright_black")

    def decided(self, decision: Decision) -> None:
        if decision.result is not None:
            say(self.out, render_approved(decision.result))
        elif decision.verdict is Verdict.denied:
            say(self.out, "  denied: nothing was run.", "yellow")
        else:
            say(self.out, f"  {decision.message}", "yellow")

    # Waiting: the conversation that asked goes on from the outcome.

    def waits(self, pending: Pending) -> str | None:
        return None

    def starting(self, pending: Pending, by: Principal) -> str | None:
        return None

    def resume(self, pending: Pending, decision: Decision) -> None:
        if pending.command is None or decision.verdict not in (Verdict.approved, Verdict.denied):
            return
        shown = render_approved(decision.result) if decision.result is not None else ""
        approved = decision.verdict is Verdict.approved
        self.outcome = approval_outcome(pending.command.command, decision.by or self.user.user, approved, shown)


@contextmanager
def _finished_first(out: Console) -> Iterator[None]:
    """Ctrl-C while an approved command runs: a write is not stopped half-way, nor its audit
    record lost; the person is told it finishes first."""

    def hold(signum: int, frame: FrameType | None) -> None:
        say(out, "  the approved command is running; it finishes first (nothing is stopped half-way).", "yellow")

    previous = signal.signal(signal.SIGINT, hold)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
