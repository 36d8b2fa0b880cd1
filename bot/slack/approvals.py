"""Write commands waiting for a person: the request message, and what a click on it does.

A click is checked before anything is used up (a refused click leaves the request for someone
allowed), then the one decision is claimed in Redis (a double click, or two approvers at once,
decide once), then exactly the approved argv runs. The decision replaces the buttons, the result
goes to the thread, and when the model asked for the command it is told the outcome and goes on.
"""

from __future__ import annotations

import logging
import shlex
from collections.abc import Callable
from datetime import UTC, datetime

from slack_sdk import WebClient

from bot.commands import render_result
from bot.prompts import approval_outcome
from bot.slack.blocks import approval_blocks, decision_blocks, escape, mention, output_blocks
from bot.slack.jobs import Job, PendingApproval, ThreadRef
from bot.slack.posting import PostFailed, post_once, replace, tell
from bot.slack.state import SlackState
from config.policy import Policy, Principal
from tools.base import ToolResult
from tools.commands import ApprovalRequest, check_approval, run_approved

log = logging.getLogger("opsbot.slack")

# A decided or expired request stays readable a while, so late clicks get a clear answer.
_KEEP_AFTER_EXPIRY_S = 3600


class Approvals:
    def __init__(
        self,
        client: WebClient,
        state: SlackState,
        policy: Policy,
        continue_with: Callable[[Job], None],
        max_output_chars: int,
        teams: frozenset[str],
    ) -> None:
        self.client = client
        self.state = state
        self.policy = policy
        self.continue_with = continue_with
        self.max_output_chars = max_output_chars
        self.teams = teams  # whose people may decide: opsbot's workspace and `slack.allowed_teams`

    def ask(self, thread: ThreadRef, request: ApprovalRequest, why: str, continues_agent: bool) -> None:
        """Post the request with Approve/Deny buttons in `thread`. Stored before it is posted, so a
        click always finds it, and again with the message's ts, which a click must come from."""
        pending = PendingApproval(request=request, thread=thread, why=why, continues_agent=continues_agent)
        self.state.save_approval(pending, _ttl(request))
        ts = post_once(
            self.client,
            thread.channel,
            thread.thread_ts,
            request.id,
            text=escape(f"Approval needed: {request.command} ({shlex.join(request.argv)})"),
            blocks=approval_blocks(pending),
            kind="opsbot_approval",
        )
        self.state.save_approval(pending.model_copy(update={"message_ts": ts}), _ttl(request))

    def decide(self, request_id: str, approve: bool, clicker: Principal, channel: str, message_ts: str) -> None:
        pending = self.state.approval(request_id)
        if pending is None:
            self._tell(clicker, channel, "This approval request is unknown or long expired; ask for the command again.")
            self._replace(channel, message_ts, None, "Expired: nothing was run.")
            return
        if (channel, message_ts) != (pending.thread.channel, pending.message_ts or message_ts):
            self._tell(clicker, channel, "That button does not belong to this approval request; nothing was decided.")
            return
        if clicker.team not in self.teams:
            self._tell(clicker, channel, "Only members of opsbot's own workspace may decide on its requests.")
            return
        request = pending.request
        checked = check_approval(self.policy, request, clicker)
        refused = checked if isinstance(checked, ToolResult) else None
        withdrawn = not approve and _same_person(clicker, request.requested_by)  # askers may withdraw
        if refused is not None and not withdrawn:
            assert refused.error is not None
            self._tell(clicker, channel, f"You cannot decide on this request: {escape(refused.error.message)}.")
            if datetime.now(UTC) >= request.expires_at:
                self._replace(channel, message_ts, pending, "Expired: nothing was run. Ask for the command again.")
            return
        winner = self.state.claim_decision(request_id, clicker.user, _ttl(request))
        if winner is not None:
            self._tell(clicker, channel, f"This request was already decided by {mention(winner)}.")
            return
        if approve:
            self._approved(pending, clicker, channel, message_ts)
        else:
            self._denied(pending, clicker, channel, message_ts)

    def _approved(self, pending: PendingApproval, approver: Principal, channel: str, message_ts: str) -> None:
        request = pending.request
        self._replace(channel, message_ts, pending, f"✅ Approved by {mention(approver.user)}; running…")
        result = run_approved(self.policy, request, approver)
        shown = render_result(result, approver)
        outcome = "ran" if result.ok else f"did not complete ({result.status})"
        self._replace(channel, message_ts, pending, f"✅ Approved by {mention(approver.user)}; {outcome}.")
        title = f"{request.command} (approved by {approver.user})"
        try:
            post_once(
                self.client,
                pending.thread.channel,
                pending.thread.thread_ts,
                f"{request.id}:result",
                text=escape(f"{request.command}: {outcome}"),
                blocks=output_blocks(title, shown, result.ok, self.max_output_chars),
                kind="opsbot_result",
            )
        except PostFailed as exc:
            log.error("result of approved request %s not posted: %s", request.id, exc.error)
        if pending.continues_agent:
            self._continue(pending, approval_outcome(request.command, approver.user, True, shown))

    def _denied(self, pending: PendingApproval, decider: Principal, channel: str, message_ts: str) -> None:
        request = pending.request
        self._replace(channel, message_ts, pending, f"✋ Denied by {mention(decider.user)}; nothing was run.")
        if pending.continues_agent:
            self._continue(pending, approval_outcome(request.command, decider.user, False, ""))

    def _continue(self, pending: PendingApproval, text: str) -> None:
        requester = pending.request.requested_by
        assert requester is not None, "the model's requests always name who asked"
        self.continue_with(
            Job(
                id=f"{pending.request.id}:continued",
                kind="continuation",
                thread=pending.thread,
                user=requester.user,
                text=text,
                principal=requester,
            )
        )

    def _replace(self, channel: str, message_ts: str, pending: PendingApproval | None, decision: str) -> None:
        replace(self.client, channel, message_ts, decision, decision_blocks(pending, decision) if pending else [])

    def _tell(self, who: Principal, channel: str, text: str) -> None:
        tell(self.client, channel, who.user, text)


def _ttl(request: ApprovalRequest) -> int:
    return max(int((request.expires_at - datetime.now(UTC)).total_seconds()), 1) + _KEEP_AFTER_EXPIRY_S


def _same_person(one: Principal, other: Principal | None) -> bool:
    # User ids are unique across Slack; a team id differs by where the payload was built.
    return other is not None and (one.platform, one.user) == (other.platform, other.user)
