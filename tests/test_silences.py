"""Silences asked for by the model (create_silence) are writes: refused when the policy does not
allow them, else `needs_approval`, and created in a real Alertmanager (Debian's
prometheus-alertmanager; skipped without it) exactly once, only after a person approves, through
the one approvals service: in `opsbot chat` (y/N) and in the service as Slack drives it."""

from __future__ import annotations

import getpass
import json
import threading
import uuid
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

from opsbot.bot.approvals import Approvals, Decision, HandBack, InProcessApprovalStore, Pending, Verdict
from opsbot.bot.cli import main
from opsbot.bot.commands import render_approved
from opsbot.bot.slack.blocks import approval_blocks
from opsbot.bot.telemetry.audit import AuditRecord
from opsbot.config.policy import AlertmanagerSource, Policy, Principal
from opsbot.tools.base import ErrorType, Registry, ToolResult
from opsbot.tools.catalog import ops_tools
from opsbot.tools.commands import ApprovalRequest
from opsbot.tools.executor import Executor, RetryPolicy, ToolCall
from tests.fakes import slack_payloads as payloads
from tests.fakes.alertmanager_server import alertmanager, installed, send_to_alertmanager
from tests.fakes.model_server import Call, ModelServer, Reply, tool_results
from tests.fakes.slack_stack import Stack
from tests.test_slack import answer_text, answered, approval_message, request_id, results
from tests.test_slack import make_stack as make_stack  # noqa: F401 - a fixture

pytestmark = pytest.mark.skipif(
    installed() is None,
    reason="Debian's prometheus-alertmanager is not on PATH: apt-get install prometheus-alertmanager",
)
ME = getpass.getuser()
FAST = RetryPolicy(timeout_s=30, retries=0, backoff_s=0.01)
ASKER = Principal(platform="slack", user="U1", team="T1", groups=frozenset({"oncall"}))
APPROVER = Principal(platform="slack", user="U2", team="T1", groups=frozenset({"sre"}))
OUTSIDER = Principal(platform="slack", user="U3", team="T1")
PLACE = {"team": "T1", "channel": "C1", "thread_ts": "1.1", "thread": "slack:T1:C1:1.1"}


@pytest.fixture(scope="module")
def am(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real Alertmanager with two firing DiskFull alerts."""
    with alertmanager(None, tmp_path_factory.mktemp("alertmanager")) as url:
        assert url is not None
        send_to_alertmanager(url, [{"alertname": "DiskFull", "instance": f"db-{n}"} for n in (1, 2)])
        yield url


def silences(url: str, comment: str) -> list[dict[str, Any]]:
    """The live silences of Alertmanager at `url` with `comment` (each test's own, unique)."""
    found = httpx.get(f"{url}/api/v2/silences", timeout=5).json()
    return [s for s in found if s["comment"] == comment and s["status"]["state"] != "expired"]


def policy(url: str, **silences: Any) -> Policy:
    rules = {"approvers": {"groups": ["sre"]}, **silences}
    source = AlertmanagerSource.model_validate({"url": url, "access": {"groups": ["oncall"]}, "silences": rules})
    return Policy(alertmanagers={"main": source})


def ask(pol: Policy, principal: Principal | None = ASKER, **args: Any) -> ToolResult:
    given = {"source": "main", "matchers": ["alertname=DiskFull", "instance=db-1"], "duration": "2h", **args}
    call = ToolCall(id=f"call-{uuid.uuid4().hex[:6]}", name="create_silence", arguments=json.dumps(given))
    return Executor(Registry(ops_tools(pol)), FAST).run_one(call, principal).result


def requested(pol: Policy, comment: str, **args: Any) -> ApprovalRequest:
    result = ask(pol, comment=comment, **args)
    assert result.error is not None and result.error.type is ErrorType.needs_approval, result
    return ApprovalRequest.model_validate(result.data)


class Seen:
    """A front end's view and the waiting conversation, as one list of what happened."""

    def __init__(self) -> None:
        self.log: list[str] = []
        self.decisions: list[Decision] = []

    def running(self, pending: Pending, by: Principal) -> None:
        self.log.append(f"running {pending.what}")

    def decided(self, decision: Decision) -> None:
        self.log.append(f"shown {decision.verdict.value}")

    def waits(self, pending: Pending) -> str | None:
        return None

    def starting(self, pending: Pending, by: Principal) -> str | None:
        return None

    def resume(self, pending: Pending, decision: Decision) -> None:
        self.decisions.append(decision)


def service(pol: Policy, audit: list[AuditRecord] | None = None) -> tuple[Approvals, Seen]:
    kept = audit if audit is not None else []

    class Kept:
        def record(self, entry: AuditRecord) -> None:
            kept.append(entry)

    approvals = Approvals(pol, InProcessApprovalStore(), teams=frozenset({"T1"}), audit=Kept())
    seen = Seen()
    approvals.hand_back(HandBack.agent, seen)
    return approvals, seen


# ---------------------------------------------------------------- asking


def test_a_silence_asked_for_needs_approval_and_nothing_is_created_yet(am: str) -> None:
    comment = f"disk swap {uuid.uuid4().hex[:6]}"
    result = ask(policy(am), comment=comment)
    assert result.error is not None and result.error.type is ErrorType.needs_approval
    assert "silence {alertname=DiskFull, instance=db-1} for 2h on Alertmanager main" in result.error.message
    request = ApprovalRequest.model_validate(result.data)
    assert request.silence is not None and request.command == "create_silence" and request.requested_by == ASKER
    assert silences(am, comment) == []


@pytest.mark.parametrize(
    ("args", "kind", "said"),
    [
        ({"matchers": ["alertname=~.+"]}, ErrorType.invalid_args, "could match every alert"),
        ({"matchers": ['instance=""', "alertname!=x"]}, ErrorType.invalid_args, "could match every alert"),
        ({"duration": "25h"}, ErrorType.invalid_args, "lasts at most 1d; 1d1h was asked"),
        ({"duration": "soon"}, ErrorType.invalid_args, "is not a length of time"),
        ({"matchers": ["alertname"]}, ErrorType.invalid_args, "needs an operator"),
        ({"source": "other"}, ErrorType.not_found, "unknown Alertmanager 'other'"),
    ],
)
def test_what_the_policy_does_not_allow_is_refused_before_anyone_is_asked(
    am: str, args: dict[str, Any], kind: ErrorType, said: str
) -> None:
    result = ask(policy(am), comment="refused", **args)
    assert result.error is not None and result.error.type is kind and said in result.error.message, result


def test_someone_who_may_not_use_the_alertmanager_cannot_ask(am: str) -> None:
    result = ask(policy(am), OUTSIDER, comment="refused")
    assert result.error is not None and result.error.type is ErrorType.denied
    assert "may not use Alertmanager main" in result.error.message


def test_a_shorter_max_duration_in_the_policy_refuses_longer_silences(am: str) -> None:
    result = ask(policy(am, max_duration_s=3600), comment="refused")
    assert result.error is not None and "lasts at most 1h; 2h was asked" in result.error.message


# ---------------------------------------------------------------- deciding (the approvals service)


def test_an_approved_silence_is_created_once_however_many_click(am: str) -> None:
    comment = f"disk swap {uuid.uuid4().hex[:6]}"
    pol = policy(am)
    audit: list[AuditRecord] = []
    approvals, seen = service(pol, audit)
    pending = approvals.ask_command(requested(pol, comment), PLACE, HandBack.agent, why="db-1 is being swapped")
    assert "Will create:* `silence {alertname=DiskFull, instance=db-1} for 2h" in json.dumps(approval_blocks(pending))
    verdicts: list[Verdict] = []
    clicks = [
        threading.Thread(target=lambda: verdicts.append(approvals.decide(pending.id, True, APPROVER, seen).verdict))
        for _ in range(4)
    ]
    for click in clicks:
        click.start()
    for click in clicks:
        click.join()
    assert sorted(verdicts).count(Verdict.approved) == 1 and verdicts.count(Verdict.taken) == 3
    [made] = silences(am, comment)
    assert made["createdBy"] == "U1 via opsbot, approved by U2"
    assert {(m["name"], m["value"], m["isEqual"], m["isRegex"]) for m in made["matchers"]} == {
        ("alertname", "DiskFull", True, False),
        ("instance", "db-1", True, False),
    }
    ends = datetime.fromisoformat(made["endsAt"]) - datetime.fromisoformat(made["startsAt"])
    assert timedelta(hours=2) - timedelta(seconds=1) <= ends <= timedelta(hours=2)
    # The id goes back to the conversation that asked, and into the audit trail.
    [decision] = seen.decisions
    assert decision.result is not None and decision.result.data["silence_id"] == made["id"]
    assert f"silence {made['id']} created on Alertmanager main" in render_approved(decision.result)
    [run] = [r for r in audit if r.kind == "write_run"]
    assert run.tool == "create_silence" and run.status == "ok" and "instance=db-1" in str(run.args)


def test_a_denied_silence_is_never_created(am: str) -> None:
    comment = f"denied {uuid.uuid4().hex[:6]}"
    pol = policy(am)
    approvals, seen = service(pol)
    pending = approvals.ask_command(requested(pol, comment), PLACE, HandBack.agent)
    assert approvals.decide(pending.id, False, APPROVER, seen).verdict is Verdict.denied
    assert approvals.decide(pending.id, True, APPROVER, seen).verdict is Verdict.taken
    assert silences(am, comment) == []


@pytest.mark.parametrize(
    ("by", "rules", "said"),
    [
        (OUTSIDER, {}, "you may not approve 'create_silence': it needs membership of a group among sre"),
        (ASKER, {"approvers": {"groups": ["oncall"]}}, "cannot be approved by the person who asked for it"),
    ],
)
def test_only_the_silences_approvers_decide_and_not_the_asker(
    am: str, by: Principal, rules: dict[str, Any], said: str
) -> None:
    comment = f"refused {uuid.uuid4().hex[:6]}"
    pol = policy(am, **rules)
    approvals, seen = service(pol)
    pending = approvals.ask_command(requested(pol, comment), PLACE, HandBack.agent)
    decision = approvals.decide(pending.id, True, by, seen)
    assert decision.verdict is Verdict.refused and said in decision.message
    assert silences(am, comment) == []


def test_a_policy_change_before_the_approval_creates_nothing(am: str) -> None:
    comment = f"moved {uuid.uuid4().hex[:6]}"
    asked = policy(am)
    request = requested(asked, comment)
    for now in (policy(am, max_duration_s=3600), policy(am.replace("127.0.0.1", "localhost"))):
        approvals, seen = service(now)
        pending = approvals.ask_command(request, PLACE, HandBack.agent)
        decision = approvals.decide(pending.id, True, APPROVER, seen)
        assert decision.verdict is Verdict.refused, decision
    assert request.silence is not None
    longer = request.silence.model_copy(update={"duration_s": 6 * 3600.0})
    tampered = request.model_copy(update={"silence": longer})
    approvals, seen = service(asked)
    pending = approvals.ask_command(tampered, PLACE, HandBack.agent)
    assert "differs from the one asked for" in approvals.decide(pending.id, True, APPROVER, seen).message
    assert silences(am, comment) == []


# ---------------------------------------------------------------- the whole walk, in the terminal


def chat_config(tmp_path: Path, url: str) -> Path:
    config = tmp_path / "opsbot.yaml"
    config.write_text(
        "model: test-model\n"
        "policy:\n"
        "  alertmanagers:\n"
        "    main:\n"
        f"      url: {url}\n"
        f"      silences: {{approvers: {{users: [{ME}]}}, self_approval: true}}\n"
    )
    return config


def silencing_model(comment: str, told: list[str]) -> Callable[[dict[str, Any]], Reply]:
    def model(body: dict[str, Any]) -> Reply:
        last = body["messages"][-1]
        if last["role"] == "user" and last["content"] == "silence DiskFull on db-2 for an hour":
            args = {"source": "main", "matchers": ["alertname=DiskFull", "instance=db-2"], "duration": "1h"}
            return Reply(calls=[Call("create_silence", {**args, "comment": comment})])
        if tool_results(body):
            return Reply(content="The silence waits for your approval.")
        told.append(str(last["content"]))
        return Reply(content="Done.")

    return model


def chat(config: Path, typed: str, server: ModelServer) -> str:
    env = {"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": server.base_url, "REDIS_URL": None}
    done = CliRunner().invoke(main, ["--config", str(config), "chat"], input=typed, env=env)
    assert done.exit_code == 0, done.output
    assert "Traceback" not in done.output
    return done.output


@pytest.mark.parametrize("approve", [True, False])
def test_in_opsbot_chat_the_model_asks_the_person_decides_and_the_model_is_told(
    am: str, tmp_path: Path, model_server: Callable[[Any], ModelServer], approve: bool
) -> None:
    comment = f"db-2 disk swap {uuid.uuid4().hex[:6]}"
    told: list[str] = []
    server = model_server(silencing_model(comment, told))
    out = chat(
        chat_config(tmp_path, am), f"silence DiskFull on db-2 for an hour\n{'y' if approve else 'n'}\nexit\n", server
    )
    assert (
        f"⏸ approval needed: silence {{alertname=DiskFull, instance=db-2}} for 1h on Alertmanager main: {comment}"
        in out
    )
    assert f"may approve: users {ME}" in out
    made = silences(am, comment)
    if not approve:
        assert made == [] and "denied: nothing was run" in out
        [outcome] = told
        assert f"{ME} denied `create_silence`" in outcome
        return
    [silence] = made
    assert f"silence {silence['id']} created on Alertmanager main" in out
    [outcome] = told
    assert f"{ME} approved `create_silence`" in outcome and silence["id"] in outcome


# ---------------------------------------------------------------- the whole walk, in Slack


def test_in_slack_an_approver_clicks_and_the_silence_id_is_told_in_the_thread(
    am: str, make_stack: Callable[..., Stack], sample: Any
) -> None:
    comment = f"db-1 disk swap {uuid.uuid4().hex[:6]}"
    source = AlertmanagerSource.model_validate({"url": am, "silences": {"approvers": {"users": ["U2"]}}})
    pol = sample.policy.model_copy(update={"alertmanagers": {"main": source}})
    told: list[str] = []

    def model(body: dict[str, Any]) -> Reply:
        last = body["messages"][-1]
        if last["role"] == "user" and "silence db-1" in str(last["content"]):
            args = {"source": "main", "matchers": ["alertname=DiskFull", "instance=db-1"], "duration": "30m"}
            return Reply(calls=[Call("create_silence", {**args, "comment": comment})])
        if not str(last["content"]).startswith("[from opsbot"):
            return Reply(content="The silence waits for an approver.")
        told.append(str(last["content"]))
        return Reply(content="Silenced.")

    stack = make_stack(model, policy=pol)
    mention = payloads.app_mention("<@UBOT> silence db-1 for half an hour")
    stack.event(mention)
    message = approval_message(stack, "C1", mention["ts"])
    assert f"Will create:* `silence {{alertname=DiskFull, instance=db-1}} for 30m on Alertmanager main: {comment}`" in (
        json.dumps(message["blocks"])
    )
    answered(stack, "C1", mention["ts"])
    assert silences(am, comment) == [], "nothing is created before the approval"

    stack.click("opsbot_approve", request_id(message), user="U1", message_ts=message["ts"])  # the asker
    stack.click("opsbot_approve", request_id(message), user="U2", message_ts=message["ts"])
    stack.click("opsbot_approve", request_id(message), user="U2", message_ts=message["ts"])  # a double click
    answers = answered(stack, "C1", mention["ts"], count=2)
    [made] = silences(am, comment)
    assert made["createdBy"] == "U1 via opsbot, approved by U2"
    [result] = results(stack, "C1", mention["ts"])
    assert f"silence {made['id']} created on Alertmanager main" in json.dumps(result["blocks"])
    assert answer_text(answers[1]) == "Silenced."
    [outcome] = told
    assert "U2 approved `create_silence`" in outcome and made["id"] in outcome
