"""Approval requests in Slack: posted with buttons, and clicks forwarded to the approvals
service (bot/approvals), which decides everything. This only shows: the request, what a click
did (the buttons replaced, the clicker told), a command's result, and for the model's requests
the conversation going on from the outcome, through the same queue as any message.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from slack_sdk import WebClient

from ...config.policy import Principal
from ..agent.prompts import approval_outcome
from ..approvals import Approvals, Decision, HandBack, Pending, Verdict
from ..commands import render_approved
from .blocks import approval_blocks, decision_blocks, escape, mention, output_blocks
from .jobs import Job, ThreadRef
from .posting import PostFailed, post_once, replace, tell

log = logging.getLogger("opsbot.slack")


class SlackRequests:
    def __init__(self, client: WebClient, approvals: Approvals, max_output_chars: int) -> None:
        self.client = client
        self.approvals = approvals
        self.max_output_chars = max_output_chars

    def post(self, thread: ThreadRef, pending: Pending, check_first: bool = False) -> None:
        """Post `pending` with its buttons in `thread` (once, however often this is called with
        `check_first`), and bind it to that message. Raises `PostFailed`."""
        ts = post_once(
            self.client,
            thread.channel,
            thread.thread_ts,
            pending.id,
            text=escape(f"Approval needed: {pending.what}"),
            blocks=approval_blocks(pending),
            kind="opsbot_approval",
            check_first=check_first,
        )
        self.approvals.shown(pending, _at(thread.channel, ts))

    def cancel(self, request_id: str, by: Principal, said: str) -> bool:
        """Cancel a request nobody decided (a stop of the run that asked for it): through the
        approvals service, its buttons replaced by `said` where it is shown. Whether it was."""
        pending = self.approvals.cancel(request_id, by)
        if pending is None:
            return False
        if pending.shown_at:
            channel, _, ts = pending.shown_at.partition("/")
            replace(self.client, channel, ts, escape(f"Cancelled: {pending.what}"), decision_blocks(pending, said))
        return True

    def click(self, request_id: str, approve: bool, clicker: Principal, channel: str, message_ts: str) -> Decision:
        view = ClickView(self, channel, message_ts, clicker)
        return self.approvals.decide(request_id, approve, clicker, view, at=_at(channel, message_ts))


class ClickView:
    """What one click did, shown where it was clicked."""

    def __init__(self, requests: SlackRequests, channel: str, message_ts: str, clicker: Principal) -> None:
        self.requests = requests
        self.client = requests.client
        self.channel = channel
        self.message_ts = message_ts
        self.clicker = clicker

    def running(self, pending: Pending, by: Principal) -> None:
        self._replace(pending, f"✅ Approved by {mention(by.user)}; running…")

    def decided(self, decision: Decision) -> None:
        pending, by = decision.pending, mention(decision.by or "someone")
        if decision.verdict is Verdict.taken:
            self._tell(f"This request was already decided by {by}.")
        elif decision.verdict in (Verdict.refused, Verdict.unknown, Verdict.expired):
            self._tell(escape(decision.message))
            if decision.verdict is not Verdict.refused:
                self._replace(pending, "Expired: nothing was run. Ask for it again.")
        elif decision.verdict is Verdict.denied:
            self._replace(pending, f"✋ Denied by {by}; nothing was run.")
        elif decision.result is None:
            self._replace(pending, f"✅ Approved by {by}; the run goes on.")
        else:
            self._approved(decision, by)

    def _approved(self, decision: Decision, by: str) -> None:
        pending, result = decision.pending, decision.result
        assert pending is not None and pending.command is not None and result is not None
        outcome = "ran" if result.ok else f"did not complete ({result.status})"
        self._replace(pending, f"✅ Approved by {by}; {outcome}.")
        if pending.hand_back is HandBack.runbook:
            return  # the run shows its step's result itself
        thread = ThreadRef.of(pending.place)
        command = pending.command.command
        try:
            post_once(
                self.client,
                thread.channel,
                thread.thread_ts,
                f"{pending.id}:result",
                text=escape(f"{command}: {outcome}"),
                blocks=output_blocks(
                    f"{command} (approved by {decision.by})",
                    render_approved(result),
                    result.ok,
                    self.requests.max_output_chars,
                ),
                kind="opsbot_result",
            )
        except PostFailed as exc:
            log.error("result of approved request %s not posted: %s", pending.id, exc.error)

    def _replace(self, pending: Pending | None, decision: str) -> None:
        replace(self.client, self.channel, self.message_ts, decision, decision_blocks(pending, decision))

    def _tell(self, text: str) -> None:
        tell(self.client, self.channel, self.clicker.user, text)


class ThreadContinuations:
    """Waits for the model's requests: the outcome goes on in the thread as a continuation job."""

    def __init__(self, continue_with: Callable[[Job], object]) -> None:
        self.continue_with = continue_with

    def waits(self, pending: Pending) -> str | None:
        return None  # a conversation always takes the outcome

    def starting(self, pending: Pending, by: Principal) -> str | None:
        return None

    def resume(self, pending: Pending, decision: Decision) -> None:
        requester, command = pending.requested_by, pending.command
        assert requester is not None and command is not None, "the model's requests name a command and who asked"
        if decision.verdict not in (Verdict.approved, Verdict.denied):
            return  # an expired request: nothing ran and nobody decided, so there is nothing to go on from
        approved = decision.verdict is Verdict.approved
        shown = render_approved(decision.result) if decision.result is not None else ""
        self.continue_with(
            Job(
                id=f"{pending.id}:continued",
                kind="continuation",
                thread=ThreadRef.of(pending.place),
                user=requester.user,
                text=approval_outcome(command.command, decision.by or "someone", approved, shown),
                principal=requester,
            )
        )


def _at(channel: str, ts: str) -> str:
    return f"{channel}/{ts}"
