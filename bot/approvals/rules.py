"""Who may decide on a request: the one rule, for commands and runbook gates alike.

- Approving: the command's `approvers` (else its `access`) or the gate's `approvers` must allow
  the person, who may not be the asker unless `self_approval` says so; for a command, everything
  that decides how it runs must still be what was approved (tools/commands.py `check_approval`:
  argv, sandbox digest, expiry); for a silence, its Alertmanager's `silences.approvers` and the
  silence's digest (tools/writes.py `check_approval` takes either).
- An agent's request (`opsbot mcp-serve`): never approved by the user its token names, whatever
  `self_approval` says: the caller is a program, and a person other than it decides.
- Denying: anyone who could approve, and the asker, who may always withdraw their own request.
- Only people of the teams the front end serves decide (Slack: opsbot's workspace and
  `slack.allowed_teams`); a front end without teams (the terminal) has one person.
"""

from __future__ import annotations

from datetime import datetime

from ...config.policy import Access, Policy, Principal
from ...tools.base import ToolResult
from ...tools.writes import check_approval, deciders
from .requests import Pending

OTHER_TEAM = "only members of opsbot's own workspace may decide on its requests"
AGENT_ASKED = (
    "an agent asked for this through opsbot mcp-serve with your token: someone else among the approvers decides it"
)


def refusal(
    policy: Policy, pending: Pending, by: Principal, approve: bool, now: datetime, teams: frozenset[str] | None
) -> str | None:
    """Why `by` may not approve (or deny) `pending` now, or None when they may."""
    if teams is not None and by.team not in teams:
        return OTHER_TEAM
    if not approve:
        return _deny_refusal(policy, pending, by)
    if pending.asked_by_agent and pending.requested_by is not None and by.user == pending.requested_by.user:
        return AGENT_ASKED
    if pending.command is not None:
        checked = check_approval(policy, pending.command, by, now)
        if isinstance(checked, ToolResult):
            return checked.error.message if checked.error else "it cannot run now"
        return None
    assert pending.gate is not None
    if not pending.gate.approvers.allows(by):
        return _may_not("approve this step", pending.gate.approvers, by)
    if not pending.gate.self_approval and by.same_person(pending.requested_by):
        return "a request cannot be approved by the person who asked for it"
    return None


def _deny_refusal(policy: Policy, pending: Pending, by: Principal) -> str | None:
    if by.same_person(pending.requested_by):
        return None  # askers may withdraw
    deciders = deciders_of(policy, pending)
    # A command gone from the policy cannot run any more: denying it only says so.
    return None if deciders is None or deciders.allows(by) else _may_not("deny it", deciders, by)


def deciders_of(policy: Policy, pending: Pending) -> Access | None:
    """Who may decide `pending` (None: its command, or the silence's Alertmanager, is gone from the policy)."""
    if pending.gate is not None:
        return pending.gate.approvers
    assert pending.command is not None
    return deciders(policy, pending.command)


def _may_not(action: str, access: Access, by: Principal) -> str:
    return f"you may not {action}: {'; '.join(access.missing(by))}"
