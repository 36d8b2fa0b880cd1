"""What the Home tab reads, below Slack: the approval requests still undecided (both stores, one
rule for who sees them waiting), and the audit trail read newest first, a page at a time, with a
record for each run of the loop as it ended."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import timedelta

from opsbot.bot.agent import Agent
from opsbot.bot.approvals import ApprovalStore, Pending, RedisApprovalStore
from opsbot.bot.memory import InProcessMemory
from opsbot.bot.redis.client import connect
from opsbot.bot.telemetry.audit import AuditRecord, InProcessAudit, RedisAudit, run_finished
from opsbot.config.policy import Principal
from opsbot.config.settings import Settings
from tests.fakes.redis_server import ClusterSetup, RedisServer
from tests.fakes.waiting import until
from tests.test_approvals import APPROVER, ASKER, OUTSIDER, Clock, Shown, ask, policy_with, prepared, service
from tests.test_approvals import new_store as new_store  # noqa: F401 - a fixture

KEY = "AKIAIOSFODNN7EXAMPLE"  # AWS's documented example key: it must be hidden


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


def test_the_trail_is_read_newest_first_a_page_at_a_time(redis_server: RedisServer) -> None:
    redis_server.flush()
    audit = RedisAudit(redis_server.client(), ttl_s=3600)
    for n in range(7):
        audit.record(AuditRecord.made("tool_call", who="slack:U1", thread=f"t{n}", tool="uptime", status="ok"))
    assert [r.thread for r in audit.newest(since=0, page=3)] == [f"t{n}" for n in reversed(range(7))]
    assert list(audit.newest(since=time.time() + 60)) == []
    kept = InProcessAudit()
    for n in range(3):
        kept.record(AuditRecord.made("tool_call", thread=f"t{n}"))
    assert [r.thread for r in kept.newest(since=0)] == ["t2", "t1", "t0"]


def test_each_run_leaves_one_record_of_who_asked_what_and_why_it_stopped() -> None:
    audit = InProcessAudit()
    agent = Agent(None, InProcessMemory(), tools=[], audit=audit)
    asker = Principal(platform="slack", user="U7", team="T1", channel="C1")
    reply = agent.run(f"why is checkout slow? key {KEY}", thread="slack:T1:C1:1.1", principal=asker)
    [record] = [r for r in audit.kept if r.kind == "run_finished"]
    assert (record.who, record.thread, record.run, record.status) == (
        "slack:U7",
        "slack:T1:C1:1.1",
        reply.run_id,
        "no_model",
    )
    assert record.args == {"question": "why is checkout slow? key [REDACTED:aws]"}


def test_a_long_question_is_cut_after_it_is_redacted() -> None:
    # Cut first, the key's head would be left, no longer the shape redaction knows.
    record = run_finished(None, "cli:default", "r1", "x" * 290 + f" {KEY} and more words", "answered")
    asked = record.args["question"]
    assert len(asked) == 300 and asked.endswith("…") and "AKIA" not in asked and "[REDACTE" in asked


def test_undecided_requests_are_listed_on_a_redis_cluster(redis_cluster: ClusterSetup, sample: Settings) -> None:
    redis_cluster.flush()
    store = RedisApprovalStore(connect(redis_cluster.url))
    approvals, _ = service(policy_with(sample.policy), store, [])
    asked = [
        ask(approvals, prepared(approvals.policy, service=s).approval_request(ASKER)) for s in ("auth", "checkout")
    ]
    assert sorted(ids(store.undecided())) == sorted(ids(asked)), "requests in their own slots, the index in another"
    approvals.decide(asked[0].id, False, ASKER, Shown([]), at="C1/2.2")  # withdrawn
    assert ids(store.undecided()) == [asked[1].id]


def test_requests_dropped_undecided_leave_the_index_without_anyone_reading_it(
    redis_server: RedisServer, sample: Settings
) -> None:
    redis_server.flush()
    store = RedisApprovalStore(redis_server.url)
    approvals, _ = service(policy_with(sample.policy), store, [])
    gone = ask(approvals, prepared(approvals.policy).approval_request(ASKER))
    store.save(gone, ttl_s=0.05)  # kept no longer than this
    assert until(lambda: store.load(gone.id) is None), "Redis let it expire"
    kept = ask(approvals, prepared(approvals.policy, service="auth").approval_request(ASKER))
    assert redis_server.client().zrange(f"{store.prefix}:undecided", 0, -1) == [kept.id]
