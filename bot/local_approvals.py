"""Approvals in the terminal, through the one approvals service (bot/approvals): the local user
decides a write command right where it was asked, when the policy lets them.

Who the terminal user is: the OS account (`cli` platform). The policy decides as it does in
Slack: the command's `approvers` must allow that user, and since in a terminal the asker is the
approver, the command must also say `self_approval: true`. Otherwise the request is shown with
who may approve it, and nothing runs. Requests live in this process only: a terminal's requests
end with it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import IO

import click

from bot.approvals import Approvals, Decision, HandBack, InProcessApprovalStore, Pending, Verdict
from bot.approvals.rules import deciders_of
from bot.audit import Audit
from bot.commands import render_result
from bot.prompts import approval_outcome
from config.policy import Policy, Principal
from tools.commands import ApprovalRequest


class TerminalApprovals:
    """`offer` a request; the model is told the outcome through `go_on` (the agent's next run)."""

    def __init__(
        self,
        policy: Policy,
        user: Principal,
        thread: str,
        go_on: Callable[[str], object],
        stream: IO[str],
        audit: Audit | None = None,
    ) -> None:
        self.user = user
        self.thread = thread
        self.go_on = go_on
        self.stream = stream
        self.approvals = Approvals(policy, InProcessApprovalStore(), audit=audit)
        self.approvals.hand_back(HandBack.agent, self)

    def offer(self, request: ApprovalRequest, why: str, continues_agent: bool) -> Decision | None:
        """Show the request and, if this user may approve it, ask y/N; None when nothing was asked."""
        hand_back = HandBack.agent if continues_agent else HandBack.nobody
        pending = self.approvals.ask_command(request, {"thread": self.thread}, hand_back, why)
        deciders = deciders_of(self.approvals.policy, pending)
        who = deciders.describe() if deciders is not None else "nobody (the command is gone)"
        self._say(f"⏸ approval needed: {pending.what}", "yellow")
        self._say(f"  may approve: {who}", "bright_black")
        refusal = self.approvals.why_not(pending, self.user, approve=True)
        if refusal is not None:
            self._say(f"  you cannot approve it here: {refusal}. Nothing was run; ask an approver.", "yellow")
            return None
        try:
            yes = click.confirm("  approve and run it?", default=False, err=True)
        except click.Abort:
            self._say("  nothing was decided; nothing was run.", "yellow")
            return None
        return self.approvals.decide(pending.id, yes, self.user, self)

    # View: what the decision did, where it was asked.

    def running(self, pending: Pending, by: Principal) -> None:
        self._say(f"  … running {pending.what}", "bright_black")

    def decided(self, decision: Decision) -> None:
        if decision.result is not None:
            click.echo(render_result(decision.result), file=self.stream)
        elif decision.verdict is Verdict.denied:
            self._say("  denied: nothing was run.", "yellow")
        else:
            self._say(f"  {decision.message}", "yellow")

    # Waiting: the conversation that asked goes on from the outcome.

    def waits(self, pending: Pending) -> str | None:
        return None

    def starting(self, pending: Pending, by: Principal) -> str | None:
        return None

    def resume(self, pending: Pending, decision: Decision) -> None:
        if pending.command is None or decision.verdict not in (Verdict.approved, Verdict.denied):
            return
        shown = render_result(decision.result) if decision.result is not None else ""
        approved = decision.verdict is Verdict.approved
        self.go_on(approval_outcome(pending.command.command, decision.by or self.user.user, approved, shown))

    def _say(self, text: str, color: str) -> None:
        click.secho(text, fg=color, file=self.stream)
