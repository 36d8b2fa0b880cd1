"""A caller's writes put to the person at the terminal running `opsbot mcp-serve --http`: the
request, who may approve it, and y/N, one request at a time, on a thread of its own (the server
goes on serving meanwhile). The local user decides as in `opsbot chat`: the policy's approvers
must allow them; being the user the caller's token names, they may not approve it at all.
Requests live in this process: they end with it."""

from __future__ import annotations

import queue
import sys
import threading
from collections.abc import Callable

from ...config.policy import Policy, Principal
from ...tools.commands import ApprovalRequest
from ..approvals import Approvals, Decision, InProcessApprovalStore, Pending, Verdict, deciders_of
from ..commands import render_approved
from ..telemetry.audit import Audit
from ..terminal import TERMINAL_USER, echo
from .desk import Desk

YES = ("y", "yes")


def read_yes(question: str) -> bool:
    """y/N from stdin: No unless yes is typed (end of input is No)."""
    sys.stdout.write(f"{question} [y/N] ")
    sys.stdout.flush()
    return sys.stdin.readline().strip().lower() in YES


class TerminalShowing:
    where = "at the terminal running opsbot mcp-serve"

    def __init__(
        self, approvals: Approvals, user: Principal = TERMINAL_USER, ask: Callable[[str], bool] = read_yes
    ) -> None:
        self.approvals = approvals
        self.user = user
        self.ask = ask
        self.waiting: queue.Queue[Pending] = queue.Queue()
        threading.Thread(target=self._decide_each, name="mcp-serve-approvals", daemon=True).start()

    def place(self, request: ApprovalRequest) -> dict[str, str]:
        return {}

    def show(self, pending: Pending) -> None:
        self.waiting.put(pending)

    def _decide_each(self) -> None:
        while True:
            self._decide(self.waiting.get())

    def _decide(self, pending: Pending) -> None:
        deciders = deciders_of(self.approvals.policy, pending)
        echo(f"⏸ approval needed: {pending.what}, {pending.why}", fg="yellow")
        echo(f"  may approve: {deciders.describe() if deciders is not None else 'nobody'}")
        refusal = self.approvals.why_not(pending, self.user, approve=True)
        if refusal is not None:
            echo(f"  you cannot approve it here: {refusal}. Nothing was run.", fg="yellow")
            return
        self.approvals.decide(pending.id, self.ask("  approve and run it?"), self.user, self)

    # View: what the decision did.

    def running(self, pending: Pending, by: Principal) -> None:
        echo(f"  … running {pending.what}")

    def decided(self, decision: Decision) -> None:
        if decision.result is not None:
            echo(render_approved(decision.result))
        elif decision.verdict is Verdict.denied:
            echo("  denied: nothing was run.", fg="yellow")
        else:
            echo(f"  {decision.message}", fg="yellow")


def terminal_desk(policy: Policy, audit: Audit) -> Desk:
    approvals = Approvals(policy, InProcessApprovalStore(), audit=audit)
    return Desk(approvals, TerminalShowing(approvals))
