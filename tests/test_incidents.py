"""Incident memory as people meet it: a finished thread leaves a redacted record in a real Redis;
a later question recalls it (with its link and who approved the fix) or abstains and says so;
`history` and `handoff` answer in the terminal and in Slack's /ops."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from opsbot.bot.agent import Evidence, Finding, Recollection, Reply, Span, StopReason
from opsbot.bot.incidents import IncidentStore, InProcessIncidents, record_id
from opsbot.bot.incidents.redis import RedisIncidents
from opsbot.bot.redis.client import connect
from opsbot.bot.runbooks import InProcessRunStore, RunRecord, StepRecord
from opsbot.bot.telemetry.audit import AuditRecord, RedisAudit
from opsbot.config.policy import Access, Policy, Principal
from opsbot.config.settings import SAMPLE_CONFIG, IncidentMemory, MemorySettings
from tests.corpus.secrets import KINDS, leaks
from tests.fakes import slack_payloads as payloads
from tests.fakes.model_server import Call, ModelServer
from tests.fakes.model_server import Reply as ModelReply
from tests.fakes.redis_server import RedisServer
from tests.fakes.slack_api import SlackApi
from tests.fakes.slack_stack import Stack, Stacks, stack_settings
from tests.fakes.terminal import chats
from tests.test_cli import clean_env

ON = IncidentMemory(enabled=True)
ASKER = Principal(platform="slack", user="U1", team="T1", channel="C1")
POOL = "Connection pool exhausted on payments-db: every request waits for a connection."


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 12, 1, 9, 0, tzinfo=UTC).timestamp()

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture(params=["inprocess", "redis"])
def store(request: pytest.FixtureRequest, clock: Clock) -> IncidentStore:
    """Each test using this runs once per store: the two must behave alike."""
    if request.param == "inprocess":
        return InProcessIncidents(clock=clock)
    server: RedisServer = request.getfixturevalue("redis_server")
    server.flush()
    return RedisIncidents(connect(server.url), clock=clock)


def recollection(
    store: IncidentStore, policy: Policy, audit: RedisAudit | None = None, **settings: Any
) -> Recollection:
    return Recollection(IncidentMemory(enabled=True, **settings), policy=policy, store=store, audit=audit)


def answered(text: str, thread: str, *calls: dict[str, Any]) -> Reply:
    """A reply as the loop gives it: the answer, and the calls it made."""
    steps = [
        {"n": 1, "decision": "tool_calls", "calls": [{"id": f"c{i}", "status": "ok", **c} for i, c in enumerate(calls)]}
    ]
    return Reply.model_validate(
        {"thread": thread, "text": text, "stop_reason": StopReason.answered, "steps": steps if calls else []}
    )


def logs_of(service: str) -> dict[str, Any]:
    return {"tool": "query_logs", "args": {"service": service, "level": "ERROR"}}


# ---------------------------------------------------------------- records and recall


def test_a_checked_answer_leaves_what_the_check_verified_not_what_it_could_not(store, sample) -> None:
    """Issue 29 landed: an answer's record keeps the facts found in the tool results, with the words
    they were found in, and not the statements nothing backs (the answer's other claims)."""
    memory = recollection(store, sample.policy)
    reply = answered(
        "The payments pool_size is 5, and the DBA said last week it would be 50.",
        "slack:T1:C1:3.3",
        {"tool": "read_config", "args": {"name": "payments", "key": "db.primary.pool_size"}},
    ).model_copy(
        update={
            "evidence": Evidence(
                findings=[Finding(fact="pool_size is 5", step=1, evidence="db.primary.pool_size: 5")],
                unsupported=[
                    Span(start=43, end=45, claim="50", statement="the DBA said ... 50", why="not in any tool result")
                ],
            )
        }
    )
    record = memory.remember("what is the payments pool size?", reply, ASKER)
    assert record is not None
    assert record.findings == ["pool_size is 5 (step 1: db.primary.pool_size: 5)"]
    unchecked_reply = answered("No tool ran; it is probably fine.", "slack:T1:C1:4.4")
    unchecked = memory.remember("and the queue?", unchecked_reply, ASKER)
    assert unchecked is not None and unchecked.findings == ["No tool ran; it is probably fine."]


def test_a_recorded_thread_is_recalled_for_a_like_question_with_its_link(store, sample) -> None:
    memory = recollection(store, sample.policy)
    memory.remember(
        "why are payments timing out?",
        answered(POOL, "slack:T1:C1:1.1", logs_of("payments")),
        ASKER,
        link="https://slack.com/archives/C1/p11",
    )
    recalled = memory.recall("payments timing out again, connection pool?", ASKER, "slack:T1:C1:2.2")
    assert recalled is not None and recalled.abstained is None
    [match] = recalled.strong
    assert match.record.services == ["payments"] and match.record.link == "https://slack.com/archives/C1/p11"
    assert match.record.cause == "Connection pool exhausted on payments-db: every request waits for a connection."
    # The thread asking is not its own precedent.
    assert memory.recall("payments timing out again?", ASKER, "slack:T1:C1:1.1") == type(recalled)()


def test_recall_abstains_when_the_best_match_is_weak(store, sample) -> None:
    memory = recollection(store, sample.policy)
    memory.remember("why are payments timing out?", answered(POOL, "slack:T1:C1:1.1", logs_of("payments")), ASKER)
    recalled = memory.recall("checkout to payments: TLS handshake failures after the certificate rotation", ASKER)
    assert recalled is not None and recalled.strong == []
    assert recalled.abstained and "matches only" in recalled.abstained


def test_recall_abstains_when_strong_matches_disagree_on_the_cause(store, sample) -> None:
    memory = recollection(store, sample.policy)
    memory.remember(
        "payments returns 502 errors",
        answered("The ledger disk is full; writes fail.", "slack:T1:C1:1.1", logs_of("payments")),
        ASKER,
    )
    memory.remember(
        "payments returns 502 errors",
        answered("An expired TLS certificate on the card gateway.", "slack:T1:C1:2.2", logs_of("payments")),
        ASKER,
    )
    recalled = memory.recall("payments returns 502 errors", ASKER)
    assert recalled is not None and recalled.strong == []
    assert recalled.abstained and "disagree on the cause" in recalled.abstained
    assert "ledger disk is full" in recalled.abstained and "expired TLS certificate" in recalled.abstained


def test_matches_that_agree_are_all_recalled(store, sample) -> None:
    memory = recollection(store, sample.policy)
    for ts in ("1.1", "2.2"):
        memory.remember("payments timing out", answered(POOL, f"slack:T1:C1:{ts}", logs_of("payments")), ASKER)
    recalled = memory.recall("payments timing out", ASKER)
    assert recalled is not None and recalled.abstained is None and len(recalled.strong) == 2


def test_a_record_is_seen_only_by_who_may_read_its_services(store, sample) -> None:
    services = dict(sample.policy.services)
    services["payments"] = services["payments"].model_copy(update={"access": Access(groups=frozenset({"S-PAY"}))})
    policy = sample.policy.model_copy(update={"services": services})
    memory = recollection(store, policy)
    payer = ASKER.model_copy(update={"groups": frozenset({"S-PAY"})})
    memory.remember("why are payments timing out?", answered(POOL, "slack:T1:C1:1.1", logs_of("payments")), payer)
    outsider = ASKER.model_copy(update={"user": "U9"})
    assert "No past incident" in memory.history("payments pool exhausted", outsider)
    assert memory.recall("payments pool exhausted", outsider) == type(memory.recall("x", payer))()
    assert "Connection pool exhausted" in memory.history("payments pool exhausted", payer)


def test_records_expire_after_ttl_days_by_the_stores_clock(store, clock, sample) -> None:
    memory = recollection(store, sample.policy, ttl_days=3)
    memory.remember("why are payments timing out?", answered(POOL, "slack:T1:C1:1.1", logs_of("payments")), ASKER)
    clock.now += 3 * 86400 - 60
    assert "Connection pool exhausted" in memory.history("payments pool", ASKER)
    clock.now += 120
    assert memory.history("payments pool", ASKER) == "No past incident matches 'payments pool'."
    assert store.candidates(["payments"], 10).total == 0


def test_channels_not_listed_and_direct_messages_are_not_recorded(store, sample) -> None:
    memory = recollection(store, sample.policy, channels=frozenset({"*"}))
    dm = ASKER.model_copy(update={"channel": "D42"})
    assert memory.remember("payments pool?", answered(POOL, "slack:T1:D42:1.1"), dm) is None
    listed = recollection(store, sample.policy, channels=frozenset({"C7", "D42"}))
    assert listed.remember("payments pool?", answered(POOL, "slack:T1:C1:1.1"), ASKER) is None
    kept = listed.remember("payments pool?", answered(POOL, "slack:T1:D42:1.1"), dm)
    assert kept is not None and kept.services == ["payments"], "the service the question names, without a tool call"
    off = Recollection(IncidentMemory(), policy=sample.policy, store=store)
    assert off.remember("payments pool?", answered(POOL, "slack:T1:C1:1.1"), ASKER) is None
    assert off.history("payments", ASKER).startswith("Incident memory is off")


@pytest.mark.parametrize("kind", KINDS, ids=lambda kind: kind.id)
def test_no_secret_of_the_corpus_is_kept_in_a_record(kind, redis_server, sample) -> None:
    """A secret in the question or the finding never reaches Redis: not in the record, not as an index term."""
    redis_server.flush()
    client = connect(redis_server.url)
    memory = recollection(RedisIncidents(client), sample.policy)
    finding = f"Found in the payments log: {kind.line}"
    memory.remember(f"what is this? {kind.line}", answered(finding, "slack:T1:C1:1.1"), ASKER)
    kept = [client.get(key) or "" for key in client.keys("opsbot:incidents:*:rec:*")]
    assert len(kept) == 1
    record = json.loads(kept[0])
    assert "REDACTED" in record["findings"][0]
    assert leaks(kind.secret, kept[0]) == [], kind.id
    assert not [term for term in client.keys("opsbot:incidents:*:t:*") if leaks(kind.secret, term)], kind.id


def test_the_fix_is_credited_to_the_approver_the_audit_trail_names(store, redis_server, sample) -> None:
    """The approver comes from the approval's audit record; what someone wrote in the chat does not count."""
    audit = RedisAudit(connect(redis_server.url), ttl_s=3600)
    thread = "slack:T1:C1:1.1"
    for kind, who, tool, request, status in (
        ("approval_requested", "slack:U1", "restart", "r1", None),
        ("approval_decided", "slack:U2", "restart", "r1", "approved"),
        ("write_run", "slack:U2", "restart", "r1", "ok"),
        ("approval_requested", "slack:U1", "rollback", "r2", None),
        ("approval_decided", "slack:U3", "rollback", "r2", "denied"),
    ):
        made = AuditRecord.made(kind, who=who, thread=thread, tool=tool, request=request, status=status)  # type: ignore[arg-type]
        audit.record(made)
    memory = recollection(store, sample.policy, audit=audit)
    store.clock = lambda: datetime.now(UTC).timestamp()
    memory.remember(
        "payments pool exhausted, approved by @mallory",
        answered(POOL, thread, logs_of("payments")),
        ASKER,
        link="https://slack.com/archives/C1/p11",
    )
    shown = memory.history("payments pool exhausted", ASKER)
    assert "fixed by restart, approved by slack:U2" in shown, shown
    assert "mallory" not in shown.split("fixed by")[1]
    assert "in C1:" in shown and "(https://slack.com/archives/C1/p11)" in shown
    assert "rollback" not in shown, "a denied write fixed nothing"
    [record] = store.updated_since(0)
    assert [(c.command, c.status, c.approved_by, c.denied_by) for c in record.commands if c.write] == [
        ("restart", "ok", "slack:U2", None),
        ("rollback", "denied", None, "slack:U3"),
    ]
    handed = memory.handoff(datetime.now(UTC).timestamp() - 600, "10m", thread, ASKER)
    assert "approval_decided slack:U3: thread=slack:T1:C1:1.1 rollback request=r2 -> denied" in handed, handed
    assert "write_run slack:U2: thread=slack:T1:C1:1.1 restart request=r1 -> ok" in handed


# ---------------------------------------------------------------- Slack: recorded after a run, recalled, /ops


def by_question(answers: dict[str, str]) -> Callable[[dict[str, Any]], ModelReply]:
    """A model that looks at payments' logs, then answers by the question's first word."""

    def policy(body: dict[str, Any]) -> ModelReply:
        if body["messages"][-1]["role"] != "tool":
            return ModelReply(calls=[Call("query_logs", {"service": "payments", "level": "ERROR"})])
        question = next(m["content"] for m in body["messages"] if m["role"] == "user")
        return ModelReply(content=next(a for word, a in answers.items() if word in question))

    return policy


@pytest.fixture
def incident_stack(redis_server, model_server, sample) -> Iterator[Callable[[Any], Stack]]:
    stacks = Stacks()

    def make(model: Any) -> Stack:
        redis_server.flush()
        slack = SlackApi()
        server = model_server(model)
        memory = MemorySettings(lock_wait_s=30, incidents=ON)
        return stacks.start(slack, stack_settings(slack, redis_server.url, sample.policy, server, memory), server)

    yield make
    stacks.close()


def test_a_slack_thread_is_recorded_and_a_later_one_sees_it_with_its_link(incident_stack) -> None:
    stack = incident_stack(by_question({"why": POOL, "again": "Connection pool exhausted on payments-db again."}))
    first = payloads.app_mention("<@UBOT> why are payments timing out?", ts="1700000000.000100")
    stack.event(first)
    assert stack.slack.wait_for(lambda: stack.answers("C1", first["ts"]), 15)
    assert stack.idle()
    second = payloads.app_mention("<@UBOT> payments timing out again, is the pool exhausted?", ts="1700000900.000100")
    stack.event(second)
    assert stack.slack.wait_for(lambda: len(stack.slack.messages("C1", second["ts"])) >= 3, 15)
    assert stack.idle()
    link = "https://slack.com/archives/C1/p1700000000000100"
    told = [m["text"] for m in stack.slack.messages("C1", second["ts"]) if "Seen before" in m["text"]]
    assert len(told) == 1 and f"<{link}|thread>" in told[0], told
    assert "in <#C1>: Connection pool exhausted on payments-db" in told[0]
    assert stack.model is not None
    notes = [m["content"] for m in stack.model.requests[-1]["messages"] if "Seen before" in (m["content"] or "")]
    assert len(notes) == 1 and link in notes[0] and "not evidence" in notes[0]
    # /ops history finds both threads; nothing was said of the first thread when it was asked.
    stack.command("history payments pool", key="history")
    assert stack.slack.wait_for(lambda: stack.slack.responses("history"), 10)
    shown = stack.slack.responses("history")[0]["text"]
    # A direct command's output is outside text: the link is shown, linked where slack.link_domains lists slack.com.
    assert "archives/C1/p1700000000000100" in shown and "Connection pool exhausted" in shown
    assert not [m for m in stack.slack.messages("C1", first["ts"]) if "Seen before" in m["text"]]


def test_ops_handoff_lists_the_calls_and_questions_as_recorded(incident_stack) -> None:
    stack = incident_stack(by_question({"why": POOL}))
    first = payloads.app_mention("<@UBOT> why are payments timing out?")
    stack.event(first)
    assert stack.slack.wait_for(lambda: stack.answers("C1", first["ts"]), 15)
    assert stack.idle()
    stack.command("handoff --since 1h", key="handoff")
    assert stack.slack.wait_for(lambda: stack.slack.responses("handoff"), 10)
    shown = stack.slack.responses("handoff")[0]["text"]
    assert "question slack:U1: why are payments timing out?" in shown
    assert (
        "tool_call slack:U1: thread=slack:T1:C1:" in shown
        and 'query_logs({"level": "ERROR", "service": "payments"})' in shown
    )
    assert "finding: Connection pool exhausted" in shown
    assert shown.index("question") < shown.index("tool_call") < shown.index("finding")
    stack.command("handoff --since soon", key="bad")
    assert stack.slack.wait_for(lambda: stack.slack.responses("bad"), 10)
    assert "not a time" in stack.slack.responses("bad")[0]["text"] or "15m" in stack.slack.responses("bad")[0]["text"]


# ---------------------------------------------------------------- the terminal: opsbot ask, history, handoff


def opsbot(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "opsbot.bot", "--config", str(SAMPLE_CONFIG), *args],
        capture_output=True,
        text=True,
        env=clean_env(OPSBOT_MEMORY__INCIDENTS__ENABLED="true", **env),
        cwd=cwd,
        timeout=60,
    )


def test_a_terminal_answer_is_recorded_and_found_by_history_and_handoff(tmp_path, redis_server, sample) -> None:
    redis_server.flush()
    with ModelServer(by_question({"why": POOL})) as model:
        env = {"OPENAI_BASE_URL": model.base_url, "OPENAI_API_KEY": "sk-test", "OPSBOT_MODEL": "scripted"}
        asked = opsbot("ask", "why are payments timing out?", cwd=tmp_path, REDIS_URL=redis_server.url, **env)
    assert asked.returncode == 0, asked.stderr
    found = opsbot("history", "payments", "pool", cwd=tmp_path, REDIS_URL=redis_server.url)
    assert found.returncode == 0, found.stderr
    assert "in cli: Connection pool exhausted on payments-db" in found.stdout and "(thread cli:default)" in found.stdout
    handed = opsbot("handoff", "--since", "1h", cwd=tmp_path, REDIS_URL=redis_server.url)
    assert handed.returncode == 0, handed.stderr
    lines = handed.stdout.splitlines()
    assert lines[0].startswith("Handoff: 4 entries since 1h, in 1 thread(s)")
    assert "question cli:" in lines[1] and "why are payments timing out?" in lines[1]
    assert "tool_call cli:" in lines[2] and "query_logs" in lines[2]
    assert "run_finished cli:" in lines[3] and lines[3].endswith("-> answered"), "the run ended, and why"
    bad = opsbot("handoff", "--since", "soon", cwd=tmp_path, REDIS_URL=redis_server.url)
    assert bad.returncode == 1 and "Traceback" not in bad.stderr + bad.stdout
    # A summary is the model's, above the entries, which it is given as data and which stay as recorded.
    with ModelServer(lambda body: ModelReply(content="Payments' pool is exhausted; nothing was restarted.")) as model:
        env = {"OPENAI_BASE_URL": model.base_url, "OPENAI_API_KEY": "sk-test", "OPSBOT_MODEL": "scripted"}
        summed = opsbot("handoff", "--since", "1h", "--summary", cwd=tmp_path, REDIS_URL=redis_server.url, **env)
        [asked] = model.requests
    assert summed.returncode == 0, summed.stderr
    assert summed.stdout.startswith("Summary (the model's, of the entries below):\nPayments' pool is exhausted")
    assert summed.stdout.rstrip().endswith(handed.stdout.rstrip())
    assert "<<<\n" + "\n".join(line.strip() for line in lines[1:]) + "\n>>>" in asked["messages"][1]["content"]
    assert asked.get("tools") is None


def test_opsbot_chat_records_its_answers_and_history_and_handoff_read_them(tmp_path) -> None:
    """Without Redis, `opsbot chat` keeps records and its trail for as long as it runs."""
    with ModelServer(by_question({"why": POOL})) as model, chats(tmp_path, SAMPLE_CONFIG) as open_:
        term = open_(model=model, OPSBOT_MEMORY__INCIDENTS__ENABLED="true", OPENAI_API_KEY="sk-test")
        term.enter("why are payments timing out?")
        term.wait_for("Connection pool exhausted")
        term.wait_for("you>")
        term.enter("history payments pool")
        screen = term.wait_for("Past incidents like 'payments pool'")
        assert "in cli: Connection pool exhausted on payments-db" in screen
        term.enter("handoff --since 1h")
        screen = term.wait_for("finding:")
        assert "question" in screen and "why are payments timing out?" in screen and "query_logs" in screen


# ---------------------------------------------------------------- runbook runs and the handoff


def a_run(status: str, thread: str, **fields: Any) -> RunRecord:
    at = datetime.now(UTC)
    steps = [
        StepRecord(id="look", kind="tool", status="ok"),
        StepRecord(id="approve", kind="approval", status="approved", decided_by="U2"),
        StepRecord(id="explain", kind="explain", status="ok", output="Disk full on payments: the ledger volume."),
    ]
    origin = {"team": "T1", "channel": "C1", "thread_ts": "1.1", "thread": thread, "alert_name": "DiskFull"}
    return RunRecord(
        id="run-1", runbook="disk-full", params={"service": "payments"}, status=status, steps=steps,  # type: ignore[arg-type]
        origin=origin, created_at=at, updated_at=at, requested_by=Principal(platform="webhook", user="alertmanager"),
        **fields,
    )  # fmt: skip


def test_a_finished_runbook_run_leaves_a_record_and_the_handoff_tells_it(store, redis_server, sample) -> None:
    thread = "slack:T1:C1:1.1"
    audit = RedisAudit(connect(redis_server.url), ttl_s=3600)
    audit.record(
        AuditRecord.made("tool_call", who="webhook:alertmanager", thread=thread, run="run-1", tool="run_command")
    )
    runs = InProcessRunStore()
    run = a_run("succeeded", thread)
    runs.create(run)
    store.clock = lambda: datetime.now(UTC).timestamp()
    memory = Recollection(ON, policy=sample.policy, store=store, audit=audit, runs=runs.load)
    record = memory.remember_run(run, "C1", link="https://slack.com/archives/C1/p11")
    assert record is not None and record.services == ["payments"] and record.alerts == ["DiskFull"]
    assert (
        record.cause == "Disk full on payments: the ledger volume." and record.outcome == "runbook disk-full succeeded"
    )
    assert "Disk full on payments" in memory.history("payments disk full", ASKER)
    shown = memory.handoff(datetime.now(UTC).timestamp() - 3600, "1h", None, ASKER)
    assert "runbook webhook:alertmanager: disk-full started for alert DiskFull service=payments" in shown
    assert "disk-full succeeded: look ok, approve approved by U2, explain ok" in shown
    assert "finding: Disk full on payments: the ledger volume." in shown
    assert memory.handoff(datetime.now(UTC).timestamp() - 3600, "1h", "slack:T1:C9:9.9", ASKER).startswith("Nothing")


def test_an_alerts_runbook_run_is_recorded_and_the_alert_is_in_the_handoff(incident_stack) -> None:
    from tests.test_slack_runbooks import alerts_of, deliver, run_ended

    stack = incident_stack(lambda body: ModelReply(content="The root filesystem is 91% full; old logs fill it."))
    [alert] = alerts_of("alertmanager_disk_filling")
    deliver(stack, alert)
    assert stack.slack.wait_for(lambda: stack.slack.messages("CALERTS"), 15)
    root = stack.slack.messages("CALERTS")[0]
    assert stack.slack.wait_for(lambda: run_ended(stack, "CALERTS", root["ts"]), 15)
    assert stack.idle()
    stack.command("history root filesystem full", key="history")
    assert stack.slack.wait_for(lambda: stack.slack.responses("history"), 10)
    shown = stack.slack.responses("history")[0]["text"]
    assert "in CALERTS: The root filesystem is 91% full;" in shown and "runbook disk-filling succeeded" in shown
    assert f"archives/CALERTS/p{root['ts'].replace('.', '')}" in shown
    stack.command("handoff", key="handoff")
    assert stack.slack.wait_for(lambda: stack.slack.responses("handoff"), 10)
    handed = stack.slack.responses("handoff")[0]["text"]
    fired = handed.index("alert_fired webhook:alertmanager:")
    assert "DiskFilling(" in handed[fired:] and "-&gt; firing" in handed[fired:]
    assert fired < handed.index("runbook webhook:alertmanager: disk-filling started for alert DiskFilling path=/")
    assert "disk-filling succeeded: mount ok, all-disks ok, memory ok, explain ok" in handed
    # The same alert firing again, in a new group: its thread is told of the first, with its link.
    again = alert.model_copy(update={"key": alert.key + "-again", "group": "again", "delivery": "d2"})
    deliver(stack, again)

    def roots() -> list[dict[str, Any]]:
        return [m for m in stack.slack.messages("CALERTS") if m.get("thread_ts") in (None, m["ts"])]

    assert stack.slack.wait_for(lambda: len(roots()) == 2, 15)
    second = roots()[-1]
    assert stack.slack.wait_for(lambda: run_ended(stack, "CALERTS", second["ts"]), 15)
    assert stack.idle()
    texts = [m["text"] for m in stack.slack.replies("CALERTS", second["ts"])]
    [told] = [t for t in texts if "Seen before" in t] or [texts]
    assert "in <#CALERTS>: The root filesystem is 91% full; runbook disk-filling succeeded" in told, told
    assert f"<https://slack.com/archives/CALERTS/p{root['ts'].replace('.', '')}|thread>" in told


def test_of_a_terms_records_the_newest_bring_candidates(redis_server, clock, sample, monkeypatch) -> None:
    """A cap on the ids a term brings keeps recall fast (docs/benchmarks.md); what it keeps is the newest."""
    from opsbot.bot.incidents import redis as incidents_redis

    monkeypatch.setattr(incidents_redis, "NEWEST", 1)
    redis_server.flush()
    store = RedisIncidents(connect(redis_server.url), clock=clock)
    memory = recollection(store, sample.policy)
    for n, answer in enumerate(("Old: the pool was exhausted.", "New: the pool was exhausted again.")):
        clock.now += 86400 * n
        memory.remember("payments pool exhausted", answered(answer, f"slack:T1:C1:{n}.1"), ASKER)
    assert store.candidates(["payments"], 10).ids == [record_id("slack:T1:C1:1.1")]
    assert store.candidates(["payments"], 10).holding == {"payments": 2}, "rarity still counts every record"
