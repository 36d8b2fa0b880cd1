"""Runbook runs end to end: the sample runbooks on the sample environment with the real tools,
recorded in both stores, with approvals, failures, restarts and two processes on one Redis."""

from __future__ import annotations

import contextlib
import json
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

import opsbot.bot.approvals.service as approvals_module
from opsbot.bot.approvals import (
    Approvals,
    ApprovalStore,
    Decision,
    HandBack,
    InProcessApprovalStore,
    Pending,
    RedisApprovalStore,
)
from opsbot.bot.runbooks import (
    InProcessRunStore,
    RedisRunStore,
    RunbookEngine,
    RunRecord,
    RunRefused,
    RunStore,
    RunStoreUnavailable,
    StepRecord,
    TemplateError,
    condition_holds,
    fill,
    fill_text,
)
from opsbot.bot.telemetry.audit import AuditRecord
from opsbot.config.policy import Access, Condition, Policy, Principal, Runbook
from opsbot.config.settings import Settings
from opsbot.tools.base import Registry, Tool, from_function
from opsbot.tools.catalog import ops_tools
from opsbot.tools.commands import run_approved
from opsbot.tools.executor import Executor, RetryPolicy
from tests.fakes.redis_server import RedisServer, free_port
from tests.fakes.runs import run_record

ALICE = Principal(platform="slack", user="UALICE", groups=frozenset({"S0ONCALL"}))
BOB = Principal(platform="slack", user="UBOB", groups=frozenset({"S0ONCALL"}))
CAROL = Principal(platform="slack", user="UCAROL")
# The sample logs are older than the runbook's default 30m: look back far enough to see them.
SEEN = {"since": "999h"}


# ---------------------------------------------------------------- fixtures and helpers


@pytest.fixture(params=["inprocess", "redis"])
def new_store(request: pytest.FixtureRequest) -> Callable[[], RunStore]:
    """A store per "process": Redis stores share one server, the in-process one is shared."""
    if request.param == "inprocess":
        shared = InProcessRunStore()
        return lambda: shared
    server: RedisServer = request.getfixturevalue("redis_server")
    server.flush()
    return lambda: RedisRunStore(server.url)


@pytest.fixture
def store(new_store: Callable[[], RunStore]) -> RunStore:
    return new_store()


class Recorder:
    """A front end that writes down what it is told, and checks each record was stored first."""

    def __init__(self, store: RunStore | None = None) -> None:
        self.store = store
        self.events: list[tuple[str, ...]] = []
        self.requests: list[Pending] = []
        self.unsaved: list[str] = []

    def _check(self, run: RunRecord, what: str) -> None:
        stored = self.store.load(run.id) if self.store is not None else run
        if stored is None or stored.version < run.version:
            self.unsaved.append(what)

    def step_started(self, run: RunRecord, step: StepRecord) -> None:
        self._check(run, f"started {step.id}")
        self.events.append(("started", step.id))

    def step_finished(self, run: RunRecord, step: StepRecord) -> None:
        self._check(run, f"finished {step.id}")
        self.events.append(("finished", step.id, step.status))

    def approval_needed(self, run: RunRecord, step: StepRecord, pending: Pending) -> None:
        self._check(run, f"approval {step.id}")
        self.events.append(("approval", step.id, "gate" if pending.gate else "command"))
        self.requests.append(pending)

    def run_finished(self, run: RunRecord) -> None:
        self._check(run, "run")
        self.events.append(("run", run.status))


class Probe:
    """A stand-in tool under the name list_services, so runbooks can name it: it answers, fails,
    sleeps past a timeout, or blocks until released, and counts its calls by tag."""

    def __init__(self) -> None:
        self.calls: dict[str, int] = {}
        self.entered = threading.Event()
        self.release = threading.Event()
        self.lock = threading.Lock()

    def tool(self) -> Tool:
        def list_services(mode: str = "ok", tag: str = "", seconds: float = 0.0) -> dict[str, Any]:
            """A probe."""
            with self.lock:
                self.calls[tag] = count = self.calls.get(tag, 0) + 1
            if mode == "fail":
                raise RuntimeError("the probe was told to fail")
            if mode == "sleep":
                time.sleep(seconds)
            if mode == "block" and count == 1:
                self.entered.set()
                self.release.wait(10)
            return {"tag": tag, "count": count, "name": "payments"}

        return from_function(list_services)


@pytest.fixture
def probe() -> Iterator[Probe]:
    found = Probe()
    yield found
    found.release.set()  # no thread is left waiting after a test


def tools_for(policy: Policy, probe: Probe) -> Registry:
    return Registry([*(t for t in ops_tools(policy) if t.name != "list_services"), probe.tool()])


# The approval requests beside each run store, as a process has them: one Redis, or one process.
_REQUESTS: weakref.WeakKeyDictionary[RunStore, ApprovalStore] = weakref.WeakKeyDictionary()


def requests_beside(store: RunStore) -> ApprovalStore:
    if store not in _REQUESTS:
        redis = getattr(store, "_redis", None)
        _REQUESTS[store] = RedisApprovalStore(redis) if redis is not None else InProcessApprovalStore()
    return _REQUESTS[store]


def make_engine(policy: Policy, store: RunStore, probe: Probe, reporter: Any = None, **options: Any) -> RunbookEngine:
    """One process's engine, with its approvals service handing runbook decisions back to it."""
    executor = Executor(tools_for(policy, probe), RetryPolicy(backoff_s=0.01))
    shared = {name: options[name] for name in ("clock", "audit") if name in options}
    approvals = Approvals(policy, requests_beside(store), **shared)
    engine = RunbookEngine(
        policy,
        executor,
        store=store,
        reporter=reporter if reporter is not None else Recorder(store),
        approvals=approvals,
        **options,
    )
    approvals.hand_back(HandBack.runbook, engine)
    return engine


class Unseen:
    """A front end's view that shows nothing: these tests look at the run and the decision."""

    def running(self, pending: Pending, by: Principal) -> None: ...

    def decided(self, decision: Decision) -> None: ...


class NotDecided(Exception):
    """The click was turned away (refused, decided already, nothing waiting)."""


def click(engine: RunbookEngine, run_id: str, approve: bool, by: Principal, request: str | None = None) -> RunRecord:
    """A click on what run `run_id` waits for (or on `request`), as a front end forwards it to
    the approvals service; the run as it is afterwards."""
    if request is None:
        run = engine.store.load(run_id)
        step = run.current_step if run is not None else None
        if run is None or run.status != "waiting" or step is None or step.approval is None:
            raise NotDecided(f"run {run_id} is not waiting for a decision")
        request = step.approval
    decision = engine.approvals.decide(request, approve, by, Unseen())
    if not decision.settled:
        raise NotDecided(decision.message)
    stored = engine.store.load(run_id)
    assert stored is not None
    return stored


def with_runbooks(policy: Policy, *books: dict[str, Any]) -> Policy:
    runbooks = dict(policy.runbooks)
    for book in books:
        runbook = Runbook.model_validate(book)
        runbooks[runbook.id] = runbook
    return policy.model_copy(update={"runbooks": runbooks})


def probe_book(book_id: str, *steps: dict[str, Any], params: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"id": book_id, "description": "a test runbook", "params": params or {}, "steps": list(steps)}


def statuses(run: RunRecord) -> dict[str, str]:
    return {step.id: step.status for step in run.steps}


def variant(policy: Policy, book_id: str, new_id: str, step_id: str, **changes: Any) -> dict[str, Any]:
    """A copy of a sample runbook under `new_id`, with one step's fields changed."""
    book = policy.runbooks[book_id].model_dump(mode="json", exclude_defaults=True)
    book["id"] = new_id
    for step in book["steps"]:
        if step["id"] == step_id:
            step.update(changes)
    return book


# ---------------------------------------------------------------- the sample runbooks end to end


def test_service_erroring_waits_at_the_gate_then_at_the_command_then_runs_it_once(
    store: RunStore, sample: Settings, probe: Probe
) -> None:
    questions: list[tuple[str, RunRecord]] = []

    def explainer(question: str, run: RunRecord) -> str:
        questions.append((question, run))
        return "checkout fails because payments times out"

    recorder = Recorder(store)
    engine = make_engine(sample.policy, store, probe, recorder, explainer=explainer)
    run = engine.start("service-erroring", SEEN, {"alert": "HighErrorRate"}, requested_by=ALICE)

    assert run.status == "waiting"
    assert statuses(run) == {
        "errors": "ok",
        "any-errors": "ok",
        "upstream-errors": "ok",
        "approve-restart": "waiting",
        "restart": "pending",
        "explain": "pending",
    }
    assert run.params == {"service": "checkout", "upstream": "payments", "since": "999h"}
    assert run.steps[0].output["data"]["matches"] > 0
    assert run.steps[1].output == {"case": None, "goto": "upstream-errors"}
    gate = recorder.requests[-1].gate
    assert gate is not None and gate.text == "Errors keep coming. Restart the service?"
    assert store.load(run.id) == run

    run = click(engine, run.id, True, BOB)
    assert run.status == "waiting"
    assert run.steps[3].status == "approved" and run.steps[3].decided_by == "UBOB"
    assert run.steps[4].status == "waiting"
    pending = recorder.requests[-1]
    assert run.steps[4].approval == pending.id and pending.run == run.id
    request = pending.command
    assert request is not None and request.command == "restart" and request.params == {"service": "checkout"}
    assert request.requested_by == pending.requested_by == ALICE

    run = click(engine, run.id, True, BOB)
    assert run.status == "succeeded", run.note
    restart = run.steps[4]
    assert restart.status == "ok" and restart.decided_by == "UBOB" and restart.attempts == 1
    assert "would restart checkout" in restart.output["data"]["output"]
    assert run.steps[5].status == "ok" and run.steps[5].output == "checkout fails because payments times out"
    [(question, seen)] = questions
    assert question.startswith("Summarise what the steps found")
    assert seen.steps[4].status == "ok"  # the model sees the restart's result
    assert store.load(run.id) == run and store.unfinished() == []
    assert recorder.unsaved == []
    assert recorder.events == [
        ("started", "errors"),
        ("finished", "errors", "ok"),
        ("finished", "any-errors", "ok"),
        ("started", "upstream-errors"),
        ("finished", "upstream-errors", "ok"),
        ("approval", "approve-restart", "gate"),
        ("finished", "approve-restart", "approved"),
        ("started", "restart"),
        ("approval", "restart", "command"),
        ("started", "restart"),
        ("finished", "restart", "ok"),
        ("started", "explain"),
        ("finished", "explain", "ok"),
        ("run", "succeeded"),
    ]
    with pytest.raises(NotDecided, match="not waiting|already decided"):
        click(engine, run.id, True, BOB)


class Kept:
    """An audit sink that keeps what it is given."""

    def __init__(self) -> None:
        self.records: list[AuditRecord] = []

    def record(self, entry: AuditRecord) -> None:
        self.records.append(entry)


def test_every_step_request_decision_and_write_of_a_run_is_audited(
    store: RunStore, sample: Settings, probe: Probe
) -> None:
    kept = Kept()
    engine = make_engine(sample.policy, store, probe, audit=kept)
    origin = {"thread": "slack:T1:C1:1.1"}
    run = engine.start("service-erroring", SEEN, origin, requested_by=ALICE)
    click(engine, run.id, True, BOB)
    click(engine, run.id, True, BOB)
    story = [(r.kind, r.who, r.tool, r.status) for r in kept.records]
    assert story == [
        ("tool_call", "slack:UALICE", "query_logs", "ok"),
        ("tool_call", "slack:UALICE", "query_logs", "ok"),
        ("approval_requested", "slack:UALICE", "approval step", None),
        ("approval_decided", "slack:UBOB", None, "approved"),
        ("tool_call", "slack:UALICE", "run_command", "needs_approval"),
        ("approval_requested", "slack:UALICE", "restart", None),
        ("approval_decided", "slack:UBOB", None, "approved"),
        ("write_run", "slack:UBOB", "restart", "ok"),
    ], story
    assert {(r.run, r.thread) for r in kept.records} == {(run.id, "slack:T1:C1:1.1")}


def test_service_erroring_denied_at_the_gate(store: RunStore, sample: Settings, probe: Probe) -> None:
    recorder = Recorder(store)
    engine = make_engine(sample.policy, store, probe, recorder)
    run = engine.start("service-erroring", SEEN, {}, requested_by=ALICE)
    run = click(engine, run.id, False, BOB)
    assert run.status == "failed" and "denied by UBOB" in run.note
    assert statuses(run)["approve-restart"] == "denied"
    assert run.steps[3].decided_by == "UBOB"
    assert statuses(run)["restart"] == statuses(run)["explain"] == "skipped"
    assert recorder.events[-2:] == [("finished", "approve-restart", "denied"), ("run", "failed")]
    assert store.unfinished() == []


def test_service_erroring_denied_at_the_command_runs_nothing(
    store: RunStore, sample: Settings, probe: Probe, monkeypatch: pytest.MonkeyPatch
) -> None:
    ran: list[str] = []
    monkeypatch.setattr(approvals_module, "run_approved", lambda *a, **k: ran.append("ran"))
    engine = make_engine(sample.policy, store, probe)
    run = engine.start("service-erroring", SEEN, {}, requested_by=ALICE)
    run = click(engine, run.id, True, BOB)
    run = click(engine, run.id, False, CAROL)  # anyone may approve the sample's restart, so may deny it
    assert run.status == "failed" and statuses(run)["restart"] == "denied"
    assert run.steps[4].output["error"]["type"] == "needs_approval"
    assert ran == []


def test_service_erroring_without_errors_goes_straight_to_explain(
    store: RunStore, sample: Settings, probe: Probe
) -> None:
    run = make_engine(sample.policy, store, probe).start(
        "service-erroring", {"service": "auth", **SEEN}, {}, requested_by=ALICE
    )
    assert run.status == "succeeded"
    assert run.steps[1].output == {"case": 0, "goto": "explain"}
    assert statuses(run) == {
        "errors": "ok",
        "any-errors": "ok",
        "upstream-errors": "skipped",
        "approve-restart": "skipped",
        "restart": "skipped",
        "explain": "skipped",  # no model configured
    }
    assert "no model" in run.steps[5].note


def test_config_drift_small_pool_goes_to_timeouts(store: RunStore, sample: Settings, probe: Probe) -> None:
    run = make_engine(sample.policy, store, probe, explainer=lambda q, r: "the deploy shrank the pool").start(
        "config-drift", {}, {"alert": "PaymentsPoolExhausted"}
    )
    assert run.status == "succeeded"
    assert run.steps[0].output["data"]["value"] == 5
    assert run.steps[1].output == {"case": 0, "goto": "timeouts"}
    assert statuses(run)["timeouts"] in ("ok", "error")  # on_failure: continue either way
    assert run.steps[3].output == "the deploy shrank the pool"


def test_config_drift_variant_whose_branch_goes_to_end(store: RunStore, sample: Settings, probe: Probe) -> None:
    book = variant(
        sample.policy,
        "config-drift",
        "config-drift-strict",
        "drifted",
        branch=[{"when": [{"step": "pool", "path": "data.value", "op": "lt", "value": 3}], "goto": "timeouts"}],
    )
    policy = with_runbooks(sample.policy, book)
    run = make_engine(policy, store, probe, explainer=lambda q, r: "never asked").start("config-drift-strict", {}, {})
    assert run.status == "succeeded"
    assert run.steps[1].output == {"case": None, "goto": "end"}
    assert statuses(run) == {"pool": "ok", "drifted": "ok", "timeouts": "skipped", "explain": "skipped"}


def test_disk_filling_runs_its_commands_and_explains_when_a_model_is_there(
    store: RunStore, sample: Settings, probe: Probe
) -> None:
    run = make_engine(sample.policy, store, probe, explainer=lambda q, r: f"{len(r.steps)} steps seen").start(
        "disk-filling", {}, {}
    )
    assert run.status == "succeeded"
    assert statuses(run) == {"mount": "ok", "all-disks": "ok", "memory": "ok", "explain": "ok"}
    assert run.steps[0].output["data"]["argv"][-1] == "/"
    assert run.steps[3].output == "4 steps seen"


def test_an_explainer_that_fails_leaves_the_results(store: RunStore, sample: Settings, probe: Probe) -> None:
    def broken(question: str, run: RunRecord) -> str:
        raise RuntimeError("model unavailable")

    run = make_engine(sample.policy, store, probe, explainer=broken).start("disk-filling", {}, {})
    assert run.status == "succeeded"
    assert run.steps[3].status == "error" and "model unavailable" in run.steps[3].note
    assert run.steps[0].status == "ok"


# ---------------------------------------------------------------- failures and branching


@pytest.mark.parametrize(
    ("on_failure", "status", "expected"),
    [
        ("abort", "failed", {"a": "error", "b": "skipped", "c": "skipped"}),
        ("continue", "succeeded", {"a": "error", "b": "ok", "c": "ok"}),
        ("c", "succeeded", {"a": "error", "b": "skipped", "c": "ok"}),
        ("end", "succeeded", {"a": "error", "b": "skipped", "c": "skipped"}),
    ],
)
def test_on_failure(
    store: RunStore, sample: Settings, probe: Probe, on_failure: str, status: str, expected: dict[str, str]
) -> None:
    book = probe_book(
        "failing",
        {"id": "a", "tool": "list_services", "args": {"mode": "fail", "tag": "a"}, "on_failure": on_failure},
        {"id": "b", "tool": "list_services", "args": {"tag": "b"}},
        {"id": "c", "tool": "list_services", "args": {"tag": "c"}},
    )
    run = make_engine(with_runbooks(sample.policy, book), store, probe).start("failing", {}, {})
    assert run.status == status
    assert statuses(run) == expected
    assert run.steps[0].output["error"]["type"] == "failed"
    if on_failure == "abort":
        assert "step a failed" in run.note and "the probe was told to fail" in run.note


def test_a_timeout_is_retried_recorded_as_timeout_then_on_failure_applies(
    store: RunStore, sample: Settings, probe: Probe
) -> None:
    book = probe_book(
        "slowpoke",
        {
            "id": "slow",
            "tool": "list_services",
            "args": {"mode": "sleep", "seconds": 2, "tag": "slow"},
            "timeout_s": 0.2,
            "retries": 1,
            "on_failure": "continue",
        },
        {"id": "after", "tool": "list_services", "args": {"tag": "after"}},
    )
    started = time.monotonic()
    run = make_engine(with_runbooks(sample.policy, book), store, probe).start("slowpoke", {}, {})
    assert time.monotonic() - started < 1.5
    slow = run.steps[0]
    assert slow.status == "error" and slow.output["error"]["type"] == "timeout" and slow.attempts == 2
    assert slow.note.startswith("timeout:")
    assert run.status == "succeeded" and run.steps[1].status == "ok"


def test_templates_fill_from_earlier_steps_and_a_missing_value_is_invalid_args(
    store: RunStore, sample: Settings, probe: Probe
) -> None:
    book = probe_book(
        "chained",
        {"id": "a", "tool": "list_services", "args": {"tag": "a"}},
        {"id": "cfg", "tool": "read_config", "args": {"name": "{steps.a.data.name}", "key": "db.primary.pool_size"}},
        {"id": "broken", "tool": "list_services", "args": {"tag": "{steps.a.data.nothing}"}, "on_failure": "continue"},
    )
    run = make_engine(with_runbooks(sample.policy, book), store, probe).start("chained", {}, {})
    assert run.status == "succeeded"
    assert run.steps[1].status == "ok" and run.steps[1].output["data"]["value"] == 5
    broken = run.steps[2]
    assert broken.status == "error" and broken.output["error"]["type"] == "invalid_args"
    assert "nothing" in broken.output["error"]["message"] and probe.calls == {"a": 1}


def test_a_looping_branch_stops_at_the_step_cap(store: RunStore, sample: Settings, probe: Probe) -> None:
    book = probe_book(
        "loop",
        {"id": "a", "tool": "list_services", "args": {"tag": "a"}},
        {
            "id": "again",
            "branch": [{"when": [{"step": "a", "path": "status", "op": "eq", "value": "ok"}], "goto": "a"}],
        },
    )
    recorder = Recorder(store)
    run = make_engine(with_runbooks(sample.policy, book), store, probe, recorder, max_steps=10).start("loop", {}, {})
    assert run.status == "failed" and "stopped after 10 steps" in run.note
    assert run.executed == 10 and probe.calls == {"a": 5}
    assert recorder.events[-1] == ("run", "failed")


# ---------------------------------------------------------------- refusals


@pytest.mark.parametrize(
    ("book", "params", "says"),
    [
        ("service-erroring", {"service": "nginx"}, "parameter 'service'"),
        ("service-erroring", {"colour": "red"}, "unknown parameter 'colour'"),
        ("needs-host", {}, "missing parameter 'host'"),
        ("no-such-book", {}, "there is no runbook"),
    ],
)
def test_refused_params_store_nothing(
    store: RunStore, sample: Settings, probe: Probe, book: str, params: dict[str, str], says: str
) -> None:
    needs_host = probe_book("needs-host", {"id": "a", "tool": "list_services"}, params={"host": {"pattern": "[a-z]+"}})
    recorder = Recorder(store)
    engine = make_engine(with_runbooks(sample.policy, needs_host), store, probe, recorder)
    with pytest.raises(RunRefused, match=says):
        engine.start(book, params, {}, run_id="refused")
    assert store.load("refused") is None and store.unfinished() == [] and recorder.events == []


def gated(policy: Policy) -> Policy:
    """The sample with its restart gate and its restart command for on-call members only, who may not
    approve their own requests."""
    book = variant(
        policy,
        "service-erroring",
        "service-erroring",
        "approve-restart",
        approval={"approvers": {"groups": ["S0ONCALL"]}, "text": "Restart {params.service}?"},
    )
    restart = policy.commands["restart"].model_copy(
        update={"approvers": Access(groups=frozenset({"S0ONCALL"})), "self_approval": False}
    )
    return with_runbooks(policy.model_copy(update={"commands": {**policy.commands, "restart": restart}}), book)


def test_a_gate_refuses_non_approvers_and_the_requester_without_using_it(
    store: RunStore, sample: Settings, probe: Probe
) -> None:
    recorder = Recorder(store)
    engine = make_engine(gated(sample.policy), store, probe, recorder)
    run = engine.start("service-erroring", SEEN, {}, requested_by=ALICE)
    gate = recorder.requests[-1].gate
    assert gate is not None and gate.text == "Restart checkout?"
    with pytest.raises(NotDecided, match="may not approve this step: it needs membership of a group among S0ONCALL"):
        click(engine, run.id, True, CAROL)
    with pytest.raises(NotDecided, match="may not deny it: it needs membership of a group among S0ONCALL"):
        click(engine, run.id, False, CAROL)
    with pytest.raises(NotDecided, match="cannot be approved by the person who asked"):
        click(engine, run.id, True, ALICE)
    assert store.load(run.id) == run  # untouched
    assert click(engine, run.id, True, BOB).steps[3].status == "approved"


def test_a_write_command_refuses_non_approvers_and_the_requester_without_using_it(
    store: RunStore, sample: Settings, probe: Probe
) -> None:
    engine = make_engine(gated(sample.policy), store, probe)
    run = engine.start("service-erroring", SEEN, {}, requested_by=ALICE)
    run = click(engine, run.id, True, BOB)
    assert run.steps[4].status == "waiting"
    with pytest.raises(NotDecided, match="you may not approve 'restart'"):
        click(engine, run.id, True, CAROL)
    with pytest.raises(NotDecided, match="person who asked for it"):
        click(engine, run.id, True, ALICE)
    assert store.load(run.id) == run
    done = click(engine, run.id, True, BOB)
    assert done.status == "succeeded" and "would restart checkout" in done.steps[4].output["data"]["output"]


def test_a_late_click_on_the_gate_cannot_approve_the_command_after_it(
    store: RunStore, sample: Settings, probe: Probe
) -> None:
    engine = make_engine(sample.policy, store, probe)
    run = engine.start("service-erroring", SEEN, {}, requested_by=ALICE)
    gate = run.steps[3].approval
    assert gate is not None
    run = click(engine, run.id, True, BOB, request=gate)
    assert run.status == "waiting" and run.steps[4].approval not in (None, gate)
    with pytest.raises(NotDecided, match="answered already; it now waits at step restart"):
        click(engine, run.id, True, BOB, request=gate)
    with pytest.raises(NotDecided, match="answered already"):
        click(engine, run.id, False, BOB, request=gate)
    assert store.load(run.id) == run
    assert click(engine, run.id, True, BOB).status == "succeeded"


def test_the_requester_may_deny_their_own_run(store: RunStore, sample: Settings, probe: Probe) -> None:
    engine = make_engine(gated(sample.policy), store, probe)
    run = engine.start("service-erroring", SEEN, {}, requested_by=CAROL)
    assert click(engine, run.id, False, CAROL).status == "failed"


def test_an_expired_wait_fails_the_run(store: RunStore, sample: Settings, probe: Probe) -> None:
    later = [datetime.now(UTC)]
    engine = make_engine(sample.policy, store, probe, clock=lambda: later[0])
    run = engine.start("service-erroring", SEEN, {}, requested_by=ALICE)
    started = run.steps[3].started_at
    assert started is not None and run.steps[3].expires_at == started + timedelta(seconds=900)
    run = click(engine, run.id, True, BOB)  # now at the restart command
    later[0] += timedelta(seconds=901)
    run = click(engine, run.id, True, BOB)
    assert run.status == "failed" and statuses(run)["restart"] == "expired" and "expired" in run.note


# ---------------------------------------------------------------- once, across threads and processes


def test_a_double_click_on_a_command_runs_it_once(
    new_store: Callable[[], RunStore], sample: Settings, probe: Probe, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = run_approved
    runs: list[str] = []
    turned_away = threading.Event()

    def counted(*args: Any, **kwargs: Any) -> Any:
        runs.append("ran")
        assert turned_away.wait(10), "the other click was decided while this one ran"
        return real(*args, **kwargs)

    monkeypatch.setattr(approvals_module, "run_approved", counted)
    engines = [make_engine(sample.policy, new_store(), probe) for _ in range(2)]
    run = engines[0].start("service-erroring", SEEN, {}, requested_by=ALICE)
    click(engines[0], run.id, True, BOB)
    barrier = threading.Barrier(2)
    results: list[RunRecord | NotDecided] = []

    def clicking(engine: RunbookEngine) -> None:
        barrier.wait()
        try:
            results.append(click(engine, run.id, True, BOB))
        except NotDecided as exc:
            results.append(exc)
            turned_away.set()

    # Two threads of one engine (one process), then of two engines (two processes).
    for pair in ([engines[0], engines[0]], engines):
        if pair is engines:
            runs.clear()
            results.clear()
            turned_away.clear()
            run = engines[0].start("service-erroring", SEEN, {}, requested_by=ALICE)
            click(engines[1], run.id, True, BOB)
        threads = [threading.Thread(target=clicking, args=(engine,)) for engine in pair]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(10)
        assert runs == ["ran"]
        [done] = [r for r in results if isinstance(r, RunRecord)]
        [refused] = [r for r in results if isinstance(r, NotDecided)]
        assert done.status == "succeeded" and done.steps[4].status == "ok"
        assert "already decided (approved by UBOB)" in str(refused) or "not waiting" in str(refused)


def test_two_processes_starting_the_same_run_id_run_it_once(
    new_store: Callable[[], RunStore], sample: Settings, probe: Probe
) -> None:
    book = probe_book("once", {"id": "a", "tool": "list_services", "args": {"mode": "sleep", "seconds": 0.2}})
    policy = with_runbooks(sample.policy, book)
    recorders = [Recorder(), Recorder()]
    engines = [make_engine(policy, new_store(), probe, recorder) for recorder in recorders]
    barrier = threading.Barrier(2)
    results: list[RunRecord] = []

    def start(engine: RunbookEngine) -> None:
        barrier.wait()
        results.append(engine.start("once", {}, {"alert": "a1"}, run_id="alert-a1"))

    threads = [threading.Thread(target=start, args=(engine,)) for engine in engines]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert probe.calls == {"": 1}
    assert {r.id for r in results} == {"alert-a1"}
    assert sorted(len(r.events) for r in recorders) == [0, 3]
    assert engines[0].store.load("alert-a1").status == "succeeded"  # type: ignore[union-attr]


def test_a_slow_step_of_a_live_process_keeps_its_run(
    new_store: Callable[[], RunStore], sample: Settings, probe: Probe
) -> None:
    book = probe_book(
        "long",
        {"id": "a", "tool": "list_services", "args": {"mode": "block", "tag": "a"}, "timeout_s": 30},
    )
    policy = with_runbooks(sample.policy, book)
    engine_a = make_engine(policy, new_store(), probe, Recorder(), lease_ttl_s=0.3)
    process_a = threading.Thread(target=lambda: engine_a.start("long", {}, {}, run_id="r1"))
    process_a.start()
    assert probe.entered.wait(5)
    time.sleep(1.0)  # three times the lease: renewed while the step runs
    assert make_engine(policy, new_store(), probe, Recorder()).recover() == []
    probe.release.set()
    process_a.join(10)
    assert probe.calls == {"a": 1}


def test_a_run_left_mid_step_by_a_dead_process_is_continued_from_that_step(
    new_store: Callable[[], RunStore], sample: Settings, probe: Probe, monkeypatch: pytest.MonkeyPatch
) -> None:
    book = probe_book(
        "long",
        {"id": "a", "tool": "list_services", "args": {"tag": "a"}},
        {"id": "b", "tool": "list_services", "args": {"mode": "block", "tag": "b"}, "timeout_s": 30},
        {"id": "c", "tool": "list_services", "args": {"tag": "c"}},
    )
    policy = with_runbooks(sample.policy, book)
    a_recorder = Recorder()
    engine_a = make_engine(policy, new_store(), probe, a_recorder, lease_ttl_s=0.3)
    # A dead (or frozen) process renews nothing: its lease runs out while "its" step hangs.
    monkeypatch.setattr(engine_a.leases, "kept", lambda *args: contextlib.nullcontext())
    left: list[RunRecord] = []
    process_a = threading.Thread(target=lambda: left.append(engine_a.start("long", {}, {}, run_id="r1")))
    process_a.start()
    assert probe.entered.wait(5)  # A hangs in step b, and its lease runs out
    time.sleep(0.4)

    b_recorder = Recorder()
    engine_b = make_engine(policy, new_store(), probe, b_recorder)
    [recovered] = engine_b.recover()
    assert recovered.status == "succeeded"
    assert statuses(recovered) == {"a": "ok", "b": "ok", "c": "ok"}
    assert "run again" in recovered.steps[1].note
    assert probe.calls == {"a": 1, "b": 2, "c": 1}
    assert b_recorder.events[0] == ("started", "b")

    probe.release.set()  # A wakes up: its save is refused, it stops, and writes nothing
    process_a.join(10)
    assert left[0] == recovered == engine_b.store.load("r1")
    assert probe.calls == {"a": 1, "b": 2, "c": 1}
    assert ("run", "succeeded") not in a_recorder.events
    assert engine_b.recover() == []


def test_an_approved_write_in_progress_when_its_process_died_is_interrupted_never_rerun(
    new_store: Callable[[], RunStore], sample: Settings, probe: Probe, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = run_approved
    runs: list[str] = []
    entered, release = threading.Event(), threading.Event()

    def hanging(*args: Any, **kwargs: Any) -> Any:
        runs.append("ran")
        entered.set()
        release.wait(10)
        return real(*args, **kwargs)

    monkeypatch.setattr(approvals_module, "run_approved", hanging)
    # The lease is held for the command's timeout on top of the ordinary lease: a short one here.
    quick = sample.policy.commands["restart"].model_copy(update={"timeout_s": 0.3})
    policy = sample.policy.model_copy(update={"commands": {**sample.policy.commands, "restart": quick}})
    engine_a = make_engine(policy, new_store(), probe, lease_ttl_s=0.3)
    run = engine_a.start("service-erroring", SEEN, {}, requested_by=ALICE)
    click(engine_a, run.id, True, BOB)
    process_a = threading.Thread(target=lambda: click(engine_a, run.id, True, BOB))
    process_a.start()
    recorder = Recorder()
    engine_b = make_engine(policy, new_store(), probe, recorder)
    try:
        assert entered.wait(5)
        assert engine_b.recover() == []  # A is still within the command's time: its run is left alone
        time.sleep(0.7)
        [interrupted] = engine_b.recover()
    finally:
        release.set()
        process_a.join(10)
    assert interrupted.status == "interrupted"
    restart = interrupted.steps[4]
    assert restart.status == "interrupted" and restart.decided_by == "UBOB"
    assert "not run again" in restart.note and "would restart" in restart.note
    assert statuses(interrupted)["explain"] == "skipped"
    assert runs == ["ran"]
    assert recorder.events == [("finished", "restart", "interrupted"), ("run", "interrupted")]
    stored = engine_a.store.load(run.id)
    assert stored == interrupted  # A's late result did not overwrite it


def test_recover_leaves_waiting_runs_waiting_and_fails_expired_ones(
    new_store: Callable[[], RunStore], sample: Settings, probe: Probe
) -> None:
    engine = make_engine(sample.policy, new_store(), probe)
    run = engine.start("service-erroring", SEEN, {}, run_id="w1", requested_by=ALICE)
    [waiting] = make_engine(sample.policy, new_store(), probe).recover()
    assert waiting == run and waiting.status == "waiting"
    hour_later = make_engine(sample.policy, new_store(), probe, clock=lambda: datetime.now(UTC) + timedelta(hours=1))
    [expired] = hour_later.recover()
    assert expired.status == "failed" and expired.steps[3].status == "expired"
    assert hour_later.recover() == []


def test_a_run_an_older_version_stored_is_left_alone_and_the_others_recover(
    redis_server: RedisServer, sample: Settings, probe: Probe, caplog: pytest.LogCaptureFixture
) -> None:
    redis_server.flush()
    store = RedisRunStore(redis_server.url)
    engine = make_engine(sample.policy, store, probe)
    old = engine.start("service-erroring", SEEN, {}, run_id="old", requested_by=ALICE)
    engine.start("service-erroring", SEEN, {}, run_id="new", requested_by=ALICE)
    # Before bot/approvals, a waiting command's request was kept on the run itself.
    written = old.model_dump(mode="json") | {"pending_approval": None}
    store._redis.hset(store._record_key("old"), "json", json.dumps(written))  # type: ignore[attr-defined]
    later = make_engine(sample.policy, RedisRunStore(redis_server.url), probe)
    assert [run.id for run in later.recover()] == ["new"]
    assert [run.id for run in later.recover()] == ["new"]
    told = [r.getMessage() for r in caplog.records if "run old cannot be read" in r.getMessage()]
    assert len(told) == 1 and "start it again" in told[0]


def test_cancel(store: RunStore, sample: Settings, probe: Probe) -> None:
    recorder = Recorder(store)
    engine = make_engine(sample.policy, store, probe, recorder)
    run = engine.start("service-erroring", SEEN, {}, requested_by=ALICE)
    run = click(engine, run.id, True, BOB)
    waiting_for = run.steps[4].approval
    assert waiting_for is not None
    cancelled = engine.cancel(run.id, "fixed by hand")
    assert cancelled is not None and cancelled.status == "cancelled"
    assert statuses(cancelled)["restart"] == "cancelled" and statuses(cancelled)["explain"] == "skipped"
    assert recorder.events[-1] == ("run", "cancelled") and store.unfinished() == []
    with pytest.raises(NotDecided, match="not waiting for a decision"):
        click(engine, run.id, True, BOB, request=waiting_for)  # the request is left; nothing waits for it
    assert engine.cancel(run.id, "again") == cancelled
    assert engine.cancel("no-such-run", "whatever") is None


def test_a_reporter_that_raises_does_not_break_the_run(store: RunStore, sample: Settings, probe: Probe) -> None:
    class Broken:
        def __getattr__(self, name: str) -> Callable[..., None]:
            def fail(*args: Any) -> None:
                raise RuntimeError("slack is down")

            return fail

    run = make_engine(sample.policy, store, probe, Broken()).start("disk-filling", {}, {})
    assert run.status == "succeeded" and store.load(run.id) == run


def test_a_changed_runbook_is_not_continued(store: RunStore, sample: Settings, probe: Probe) -> None:
    run = make_engine(sample.policy, store, probe).start("service-erroring", SEEN, {}, requested_by=ALICE)
    changed = with_runbooks(
        sample.policy,
        variant(sample.policy, "service-erroring", "service-erroring", "upstream-errors", on_failure="abort"),
    )
    done = click(make_engine(changed, store, probe), run.id, True, BOB)
    assert done.status == "failed" and "changed or removed" in done.note


# ---------------------------------------------------------------- the stores


def test_store_create_is_once_and_save_refuses_a_stale_copy(store: RunStore) -> None:
    first = run_record("s1")
    assert store.create(first) and not store.create(run_record("s1", "failed"))
    assert store.load("s1") == first and store.load("nope") is None
    newer = first.model_copy(update={"version": 1, "status": "waiting"})
    assert store.save(newer)
    assert not store.save(first.model_copy(update={"version": 1, "status": "failed"}))  # from the same old copy
    assert not store.save(run_record("never-created").model_copy(update={"version": 1}))
    assert store.load("s1") == newer


def test_store_leases_belong_to_their_holder(store: RunStore) -> None:
    assert store.lease("s1", "a", 5) and not store.lease("s1", "b", 5) and not store.lease("s1", "a", 5)
    assert not store.renew("s1", "b", 5) and store.renew("s1", "a", 5)
    store.release("s1", "b")
    assert not store.lease("s1", "b", 5)
    store.release("s1", "a")
    assert store.lease("s1", "b", 0.1)
    time.sleep(0.15)
    assert not store.renew("s1", "b", 5) and store.lease("s1", "c", 5)


def test_store_lists_unfinished_runs_oldest_first(store: RunStore) -> None:
    for n, status in enumerate(["running", "succeeded", "waiting", "failed", "cancelled"]):
        store.create(run_record(f"u{n}", status, ms_later=n))
    assert store.unfinished() == ["u0", "u2"]
    done = store.load("u0")
    assert done is not None
    store.save(done.model_copy(update={"version": 1, "status": "succeeded"}))
    assert store.unfinished() == ["u2"]


def test_records_expire(redis_server: RedisServer) -> None:
    now = [0.0]
    memory = InProcessRunStore(ttl_s=60, clock=lambda: now[0])
    memory.create(run_record("e1"))
    now[0] = 59.9
    assert memory.load("e1") is not None
    now[0] = 60.0
    assert memory.load("e1") is None and memory.unfinished() == [] and memory.create(run_record("e1"))

    redis_server.flush()
    redis_store = RedisRunStore(redis_server.url, prefix="t", ttl_s=3600)
    redis_store.create(run_record("e1"))
    client = redis_store._redis
    assert 3590 < client.ttl("{t}:run:e1") <= 3600 and 3590 < client.ttl("{t}:unfinished") <= 3600
    client.delete("{t}:run:e1")  # as when it expires
    assert redis_store.unfinished() == [] and client.zcard("{t}:unfinished") == 0


@pytest.mark.usefixtures("quick_redis_retries")
def test_redis_errors_are_run_store_unavailable() -> None:
    dead = RedisRunStore(f"redis://127.0.0.1:{free_port()}/0")
    with pytest.raises(RunStoreUnavailable, match="cannot use the runbook run store"):
        dead.load("x")
    with pytest.raises(RunStoreUnavailable):
        dead.create(run_record("x"))


# ---------------------------------------------------------------- templates and conditions


def test_fill_replaces_whole_value_templates_and_keeps_types() -> None:
    outputs = {"pool": {"ok": True, "data": {"value": 5, "hosts": ["a", "b"]}}}
    args = {"n": "{steps.pool.data.value}", "p": {"s": "{params.service}"}, "l": ["x", "{steps.pool.data.hosts.1}"]}
    assert fill(args, {"service": "checkout"}, outputs) == {"n": 5, "p": {"s": "checkout"}, "l": ["x", "b"]}
    assert fill({"literal": "a {b} c", "n": 3}, {}, {}) == {"literal": "a {b} c", "n": 3}
    for broken in ("{params.nope}", "{steps.pool.data.nope}", "{steps.gone.data.value}", "{steps.pool.data.hosts.9}"):
        with pytest.raises(TemplateError):
            fill({"x": broken}, {"service": "checkout"}, outputs)
    assert fill_text("Restart {params.service} ({params.unknown})?", {"service": "auth"}) == (
        "Restart auth ({params.unknown})?"
    )


def step_with(output: Any, status: str = "ok") -> StepRecord:
    return StepRecord.model_validate({"id": "s", "kind": "tool", "status": status, "output": output})


@pytest.mark.parametrize(
    ("path", "op", "value", "holds"),
    [
        ("status", "eq", "ok", True),
        ("status", "ne", "ok", False),
        ("error", "eq", "timeout", False),
        ("error", "empty", None, True),
        ("data.matches", "gt", 0, True),
        ("data.matches", "le", 3, True),
        ("data.matches", "lt", 3.5, True),
        ("data.matches", "eq", 3.0, True),
        ("data.matches", "eq", "3", False),
        ("data.flag", "eq", 1, False),
        ("data.flag", "eq", True, True),
        ("data.text", "gt", 1, False),
        ("data.text", "contains", "refused", True),
        ("data.items", "contains", "b", True),
        ("data.items", "not_empty", None, True),
        ("data.none", "empty", None, True),
        ("data.missing", "eq", None, False),
        ("data.missing", "ne", "x", True),
        ("data.missing", "empty", None, True),
        ("data.missing", "gt", 0, False),
        ("data.missing.deeper", "not_empty", None, False),
    ],
)
def test_conditions(path: str, op: str, value: Any, holds: bool) -> None:
    output = {
        "ok": True,
        "data": {"matches": 3, "flag": True, "text": "connection refused", "items": ["a", "b"], "none": None},
        "error": None,
    }
    condition = Condition.model_validate({"step": "s", "path": path, "op": op, "value": value})
    assert condition_holds(condition, {"s": step_with(output)}) is holds


def test_conditions_on_errors_and_on_steps_that_did_not_run() -> None:
    failed = {"ok": False, "data": None, "error": {"type": "timeout", "message": "slow"}}
    steps = {"s": step_with(failed, "error"), "e": StepRecord(id="e", kind="explain", status="ok", output="text")}
    assert condition_holds(Condition(step="s", path="error", op="eq", value="timeout"), steps)
    assert condition_holds(Condition(step="s", path="status", op="eq", value="error"), steps)
    assert not condition_holds(Condition(step="e", path="data.x", op="not_empty"), steps)
    assert not condition_holds(Condition(step="other", op="eq", value="ok"), steps)
    assert condition_holds(Condition(step="other", path="data.x", op="empty"), steps)
