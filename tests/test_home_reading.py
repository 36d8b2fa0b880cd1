"""What the Home tab reads, below Slack: the approval requests still undecided (both stores, one
rule for who sees them waiting)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

from opsbot.bot.approvals import ApprovalStore, Pending
from opsbot.config.settings import Settings
from tests.test_approvals import APPROVER, ASKER, OUTSIDER, Clock, Shown, ask, policy_with, prepared, service
from tests.test_approvals import new_store as new_store  # noqa: F401 - a fixture


def ids(requests: list[Pending]) -> list[str]:
    return [p.id for p in requests]


def test_undecided_requests_are_listed_until_decided_or_expired(
    new_store: Callable[[], ApprovalStore], sample: Settings
) -> None:
    clock = Clock()
    approvals, _ = service(policy_with(sample.policy), new_store(), [], clock)
    first = ask(approvals, prepared(approvals.policy).approval_request(ASKER))
    clock.now += timedelta(seconds=1)
    second = ask(approvals, prepared(approvals.policy, service="payments").approval_request(ASKER))
    other = new_store()  # another process reads the same requests
    assert ids(other.undecided()) == [first.id, second.id], "oldest first, shown_at and all"
    assert other.undecided()[0].shown_at == "C1/2.2"

    assert ids(approvals.open_to(lambda p: APPROVER)) == [first.id, second.id]
    assert approvals.open_to(lambda p: ASKER) == [], "the asker may not approve their own"
    assert approvals.open_to(lambda p: OUTSIDER) == [], "nor may someone the policy does not name"

    approvals.decide(first.id, True, APPROVER, Shown([]), at="C1/2.2")
    assert ids(other.undecided()) == [second.id]
    clock.now = second.expires_at
    assert approvals.open_to(lambda p: APPROVER) == [], "expired: nothing to decide"
