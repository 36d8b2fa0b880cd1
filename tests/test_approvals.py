"""The approvals service on its own, in both stores (one process, and real Redis shared by two
"processes"): who may decide, a decision claimed once however many click at once, expiry on an
injected clock, exactly the approved argv run and its output redacted, and the outcome shown
before it is handed back."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import opsbot.bot.approvals.service as service_module
from opsbot.bot.approvals import (
    Approvals,
    ApprovalStore,
    ApprovalsUnavailable,
    Decision,
    HandBack,
    InProcessApprovalStore,
    Pending,
    RedisApprovalStore,
    Verdict,
)
from opsbot.bot.telemetry.audit import AuditRecord
from opsbot.config.policy import Command, Gate, Policy, Principal
from opsbot.config.settings import Settings
from opsbot.tools.commands import ApprovalRequest, CommandBook, Prepared
from tests.fakes.redis_server import RedisServer

ASKER = Principal(platform="slack", user="U1", team="T1")
APPROVER = Principal(platform="slack", user="U2", team="T1", groups=frozenset({"S1"}))
OUTSIDER = Principal(platform="slack", user="U3", team="T1")
ELSEWHERE = Principal(platform="slack", user="U2", team="TX", groups=frozenset({"S1"}))
PLACE = {"team": "T1", "channel": "C1", "thread_ts": "1.1"}
# An AWS example key from AWS's own documentation: the redactor must hide it.
SECRET = "AKIAIOSFODNN7EXAMPLE"


def policy_with(sample: Policy, **restart: Any) -> Policy:
    spec = sample.commands["restart"].model_dump()
    # A team's policy: someone other than the asker approves (the sample lets its one user do both).
    spec.update({"approvers": {"users": ["U1", "U2"]}, "self_approval": False, **restart})
    leak = {
        "description": "prints a credential, as a misbehaving script would",
        "argv": ["printf", "%s\\n", f"aws_access_key_id={SECRET}"],
        "risk": "write",
        "approvers": {"users": ["U2"]},
    }
    commands = {**sample.commands, "restart": Command.model_validate(spec), "leak": Command.model_validate(leak)}
    return sample.model_copy(update={"commands": commands})


@pytest.fixture(params=["inprocess", "redis"])
def new_store(request: pytest.FixtureRequest) -> Callable[[], ApprovalStore]:
    """A store per "process": Redis stores share one server, the in-process one is shared."""
    if request.param == "inprocess":
        shared = InProcessApprovalStore()
        return lambda: shared
    server: RedisServer = request.getfixturevalue("redis_server")
    server.flush()
    return lambda: RedisApprovalStore(server.url)


class Shown:
    """A front end's view: what it was told, in order, beside what the waiting party heard."""

    def __init__(self, log: list[str]) -> None:
        self.log = log

    def running(self, pending: Pending, by: Principal) -> None:
        self.log.append(f"running by {by.user}")

    def decided(self, decision: Decision) -> None:
        self.log.append(f"shown {decision.verdict.value}")


class Waiter:
    """Whoever waits: records what it is handed back; may stop waiting, or stop the command."""

    def __init__(self, log: list[str]) -> None:
        self.log = log
        self.gone: str | None = None
        self.stop: str | None = None
        self.decisions: list[Decision] = []

    def waits(self, pending: Pending) -> str | None:
        return self.gone

    def starting(self, pending: Pending, by: Principal) -> str | None:
        self.log.append("starting")
        return self.stop

    def resume(self, pending: Pending, decision: Decision) -> None:
        self.log.append(f"resumed {decision.verdict.value}")
        self.decisions.append(decision)


class KeptAudit:
    def __init__(self, kept: list[AuditRecord]) -> None:
        self.kept = kept

    def record(self, entry: AuditRecord) -> None:
        self.kept.append(entry)


class Clock:
    def __init__(self) -> None:
        self.now = datetime.now(UTC)

    def __call__(self) -> datetime:
        return self.now


def prepared(policy: Policy, name: str = "restart", **params: Any) -> Prepared:
    made = CommandBook(policy).prepare(name, params or {"service": "checkout"}, ASKER)
    assert isinstance(made, Prepared), made
    return made


def service(
    policy: Policy, store: ApprovalStore, log: list[str], clock: Clock | None = None
) -> tuple[Approvals, Waiter]:
    approvals = Approvals(policy, store, teams=frozenset({"T1"}), clock=clock or Clock())
    waiter = Waiter(log)
    approvals.hand_back(HandBack.agent, waiter)
    return approvals, waiter


def ask(approvals: Approvals, request: ApprovalRequest, at: str | None = "C1/2.2") -> Pending:
    pending = approvals.ask_command(request, PLACE, HandBack.agent, why="restart checkout please")
    return approvals.shown(pending, at) if at else pending


# ---------------------------------------------------------------- who may decide


@pytest.mark.parametrize(
    "by, approve, verdict, says",
    [
        (OUTSIDER, True, Verdict.refused, "user U3 is not one of U1, U2"),
        (OUTSIDER, False, Verdict.refused, "may not deny it: user U3 is not one of U1, U2"),
        (ASKER, True, Verdict.refused, "cannot be approved by the person who asked for it"),
        (ASKER, False, Verdict.denied, "Denied"),  # an asker may always withdraw
        (ELSEWHERE, True, Verdict.refused, "only members of opsbot's own workspace"),
        (APPROVER, False, Verdict.denied, "Denied"),
        (APPROVER, True, Verdict.approved, "it ran"),
    ],
)
def test_one_rule_for_who_may_decide_a_command(
    new_store: Callable[[], ApprovalStore], sample: Settings, by: Principal, approve: bool, verdict: Verdict, says: str
) -> None:
    approvals, waiter = service(policy_with(sample.policy), new_store(), [])
    pending = ask(approvals, prepared(approvals.policy).approval_request(ASKER))
    decision = approvals.decide(pending.id, approve, by, Shown([]), at="C1/2.2")
    assert decision.verdict is verdict and says in decision.message
    assert [d.verdict for d in waiter.decisions] == ([verdict] if decision.settled else [])


@pytest.mark.parametrize(
    "by, approve, verdict, says",
    [
        (OUTSIDER, True, Verdict.refused, "may not approve this step: it needs membership of a group among S1"),
        (OUTSIDER, False, Verdict.refused, "may not deny it: it needs membership of a group among S1"),
        (ASKER, False, Verdict.denied, "Denied"),
        (APPROVER, True, Verdict.approved, "Approved"),
    ],
)
def test_the_same_rule_for_a_runbook_gate(
    new_store: Callable[[], ApprovalStore], sample: Settings, by: Principal, approve: bool, verdict: Verdict, says: str
) -> None:
    approvals = Approvals(sample.policy, new_store(), teams=frozenset({"T1"}))
    waiter = Waiter([])
    approvals.hand_back(HandBack.runbook, waiter)
    gate = Gate(approvers={"groups": ["S1"]}, text="Restart checkout?")  # type: ignore[arg-type]
    pending = approvals.ask_gate(gate, ASKER, PLACE, run="r1", why="runbook x, step y")
    decision = approvals.decide(pending.id, approve, by, Shown([]))
    assert decision.verdict is verdict and says in decision.message
    assert decision.result is None and "starting" not in waiter.log  # a gate runs nothing of its own
    assert waiter.log == ([f"resumed {verdict.value}"] if decision.settled else [])


def test_the_asker_is_the_same_person_under_another_team_id(
    new_store: Callable[[], ApprovalStore], sample: Settings
) -> None:
    approvals, _ = service(policy_with(sample.policy), new_store(), [])
    approvals.teams = frozenset({"T1", "T9"})
    pending = ask(approvals, prepared(approvals.policy).approval_request(ASKER))
    same = ASKER.model_copy(update={"team": "T9"})  # Enterprise Grid or Slack Connect
    decision = approvals.decide(pending.id, True, same, Shown([]), at="C1/2.2")
    assert decision.verdict is Verdict.refused and "person who asked" in decision.message


# ---------------------------------------------------------------- claimed once, nothing used up by a refusal


def test_a_refused_click_uses_nothing_up(new_store: Callable[[], ApprovalStore], sample: Settings) -> None:
    log: list[str] = []
    approvals, _ = service(policy_with(sample.policy), new_store(), log)
    pending = ask(approvals, prepared(approvals.policy).approval_request(ASKER))
    for by, at in ((OUTSIDER, "C1/2.2"), (ASKER, "C1/2.2"), (APPROVER, "C7/2.2"), (APPROVER, "C1/9.9")):
        assert approvals.decide(pending.id, True, by, Shown(log), at=at).verdict is Verdict.refused
    assert log == ["shown refused"] * 4
    done = approvals.decide(pending.id, True, APPROVER, Shown(log), at="C1/2.2")
    assert done.verdict is Verdict.approved and done.result is not None
    assert "would restart checkout" in done.result.render()


def test_many_clicks_at_once_decide_once_and_run_once(
    new_store: Callable[[], ApprovalStore], sample: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    ran: list[tuple[str, ...]] = []
    real = service_module.run_approved

    def counted(policy: Policy, request: ApprovalRequest, *args: Any) -> Any:
        ran.append(request.argv)
        return real(policy, request, *args)

    monkeypatch.setattr(service_module, "run_approved", counted)
    policy = policy_with(sample.policy)
    request = prepared(policy).approval_request(ASKER)
    processes = [service(policy, new_store(), [])[0] for _ in range(2)]  # two processes, one store
    ask(processes[0], request)
    barrier = threading.Barrier(8)
    decisions: list[Decision] = []

    def click(n: int) -> None:
        barrier.wait()
        by = APPROVER if n % 2 else ASKER  # approvers approve, the asker withdraws
        decisions.append(processes[n % 2].decide(request.id, bool(n % 2), by, Shown([]), at="C1/2.2"))

    threads = [threading.Thread(target=click, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    settled = [d for d in decisions if d.settled]
    assert len(decisions) == 8 and len(settled) == 1
    assert {d.verdict for d in decisions} - {settled[0].verdict} == {Verdict.taken}
    assert ran == ([request.argv] if settled[0].verdict is Verdict.approved else [])
    assert all(
        f"already decided ({settled[0].verdict.value} by {settled[0].by})" in d.message
        for d in decisions
        if not d.settled
    )


CLICKS = st.lists(
    st.tuples(
        st.sampled_from([ASKER, APPROVER, OUTSIDER, ELSEWHERE]), st.booleans(), st.sampled_from(["C1/2.2", "C1/3.3"])
    ),
    min_size=1,
    max_size=8,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(clicks=CLICKS)
def test_whatever_the_clicks_one_decision_the_first_allowed_one(sample: Settings, clicks: list[Any]) -> None:
    log: list[str] = []
    approvals, waiter = service(policy_with(sample.policy), InProcessApprovalStore(), log)
    pending = ask(approvals, prepared(approvals.policy).approval_request(ASKER))
    verdicts = [approvals.decide(pending.id, approve, by, Shown([]), at=at).verdict for by, approve, at in clicks]
    allowed = [
        approve
        for by, approve, at in clicks
        if at == "C1/2.2" and by.team == "T1" and (by == APPROVER or (by == ASKER and not approve))
    ]
    settled = [v for v in verdicts if v in (Verdict.approved, Verdict.denied)]
    if not allowed:
        assert settled == [] and waiter.decisions == []
        return
    first = Verdict.approved if allowed[0] else Verdict.denied
    assert settled == [first] and [d.verdict for d in waiter.decisions] == [first]
    assert log.count("starting") == (1 if first is Verdict.approved else 0)
    after = verdicts[verdicts.index(first) + 1 :]
    assert all(v in (Verdict.taken, Verdict.refused) for v in after)


# ---------------------------------------------------------------- expiry, and what runs


def test_an_expired_request_is_settled_once_as_expired_and_runs_nothing(
    new_store: Callable[[], ApprovalStore], sample: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(service_module, "run_approved", lambda *a: pytest.fail("an expired request ran"))
    clock = Clock()
    log: list[str] = []
    approvals, waiter = service(policy_with(sample.policy, approval_ttl_s=60), new_store(), log, clock)
    pending = ask(approvals, prepared(approvals.policy).approval_request(ASKER, now=clock.now))
    clock.now += timedelta(seconds=60)
    first = approvals.decide(pending.id, True, APPROVER, Shown(log), at="C1/2.2")
    again = approvals.decide(pending.id, True, APPROVER, Shown(log), at="C1/2.2")
    assert first.verdict is Verdict.expired and "expired at" in first.message and "nothing was run" in first.message
    assert again.verdict is Verdict.taken and "already decided (expired)" in again.message
    assert [d.verdict for d in waiter.decisions] == [Verdict.expired] and "starting" not in log


def test_a_request_long_gone_is_unknown(new_store: Callable[[], ApprovalStore], sample: Settings) -> None:
    approvals, _ = service(policy_with(sample.policy), new_store(), [])
    decision = approvals.decide("nope", True, APPROVER, Shown([]))
    assert decision.verdict is Verdict.unknown and "ask for it again" in decision.message


def test_a_policy_change_since_the_request_refuses_it_and_leaves_it(
    new_store: Callable[[], ApprovalStore], sample: Settings
) -> None:
    store = new_store()
    approvals, _ = service(policy_with(sample.policy), store, [])
    pending = ask(approvals, prepared(approvals.policy).approval_request(ASKER))
    changed, _ = service(policy_with(sample.policy, env={"MODE": "fast"}), store, [])  # another process, newer policy
    decision = changed.decide(pending.id, True, APPROVER, Shown([]), at="C1/2.2")
    assert decision.verdict is Verdict.refused and "changed in the policy" in decision.message
    assert approvals.decide(pending.id, True, APPROVER, Shown([]), at="C1/2.2").verdict is Verdict.approved


def test_exactly_the_approved_argv_runs_and_its_output_is_redacted(
    new_store: Callable[[], ApprovalStore], sample: Settings
) -> None:
    approvals, waiter = service(policy_with(sample.policy), new_store(), [])
    made = CommandBook(approvals.policy).prepare("leak", {}, ASKER)
    assert isinstance(made, Prepared)
    request = made.approval_request(ASKER)
    assert SECRET in request.argv[-1]  # what the approver saw is what runs
    pending = ask(approvals, request)
    decision = approvals.decide(pending.id, True, APPROVER, Shown([]), at="C1/2.2")
    assert decision.verdict is Verdict.approved and decision.result is not None
    shown = decision.result.model_dump_json()
    assert SECRET not in shown and "aws_access_key_id=" in shown  # it ran; what it printed is redacted
    assert SECRET not in pending.what and "aws_access_key_id=" in pending.what  # nor is it shown to approvers


def test_the_outcome_is_shown_before_it_is_handed_back(
    new_store: Callable[[], ApprovalStore], sample: Settings
) -> None:
    log: list[str] = []
    approvals, _ = service(policy_with(sample.policy), new_store(), log)
    pending = ask(approvals, prepared(approvals.policy).approval_request(ASKER))
    approvals.decide(pending.id, True, APPROVER, Shown(log), at="C1/2.2")
    assert log == ["starting", "running by U2", "shown approved", "resumed approved"]


def test_a_party_that_stopped_waiting_is_not_decided_for(
    new_store: Callable[[], ApprovalStore], sample: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(service_module, "run_approved", lambda *a: pytest.fail("ran for nobody"))
    log: list[str] = []
    approvals, waiter = service(policy_with(sample.policy), new_store(), log)
    pending = ask(approvals, prepared(approvals.policy).approval_request(ASKER))
    waiter.gone = "the run was cancelled"
    decision = approvals.decide(pending.id, True, APPROVER, Shown(log), at="C1/2.2")
    assert decision.verdict is Verdict.refused and "the run was cancelled" in decision.message
    waiter.gone, waiter.stop = None, "it changed just now"
    kept: list[AuditRecord] = []
    approvals.audit = KeptAudit(kept)
    stopped = approvals.decide(pending.id, True, APPROVER, Shown(log), at="C1/2.2")
    assert stopped.verdict is Verdict.refused and "changed just now" in stopped.message
    assert waiter.decisions == []
    assert [(r.kind, r.status) for r in kept] == [
        ("approval_decided", "approved"),
        ("write_run", "not_run"),
        ("approval_decided", "refused"),  # what the click came to: nothing was decided for anyone waiting
    ]


def test_a_redis_that_is_down_says_so(sample: Settings, own_redis: RedisServer) -> None:
    approvals, _ = service(policy_with(sample.policy), RedisApprovalStore(own_redis.url), [])
    request = prepared(approvals.policy).approval_request(ASKER)
    own_redis.stop()
    with pytest.raises(ApprovalsUnavailable, match="cannot reach the approval requests' Redis"):
        ask(approvals, request)
