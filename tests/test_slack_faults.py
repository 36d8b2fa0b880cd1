"""What Slack shows when opsbot's model or Redis fails: plain words a whole channel may read (no
internal address, no variable name, no server message), whether asking again helps, and the
details in the operator's log, and privately to an asker the policy names an approver. What the
terminal says instead is in tests/test_model_health.py."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any

import pytest

from opsbot.bot.llm import ModelClient
from opsbot.bot.memory.redis import RedisMemory
from opsbot.bot.runbooks import model_explainer
from opsbot.bot.runbooks.records import RunRecord
from tests.fakes import slack_payloads as payloads
from tests.fakes.model_server import Reply
from tests.fakes.redis_server import free_port
from tests.fakes.slack_api import SlackApi
from tests.fakes.slack_stack import Stack, stack_settings
from tests.fakes.waiting import until
from tests.test_slack import ack_text, answer_text, answered, approvers_policy, echo
from tests.test_slack import make_stack as make_stack  # noqa: F401 - a fixture

# What a channel must never read: where the model or Redis is, and opsbot's variables.
INTERNAL = ("http://", "127.0.0.1", "OPENAI_", "OPSBOT_", "REDIS_URL")
NOT_AN_APPROVER = "U9"  # approvers_policy names U1 and U2


def everything_shown(message: dict[str, Any]) -> str:
    return str(message.get("text", "")) + json.dumps(message.get("blocks") or [])


def assert_plain(text: str) -> None:
    leaked = [word for word in INTERNAL if word in text]
    assert not leaked, f"{leaked} shown in the channel: {text}"


def ask(stack: Stack, user: str) -> dict[str, Any]:
    mention = payloads.app_mention("<@UBOT> why is checkout failing?", user=user)
    stack.event(mention)
    [answer] = answered(stack, "C1", mention["ts"])
    return answer


def not_found(body: dict[str, Any]) -> Reply:
    return Reply(
        status=404,
        error={"error": {"message": "The model `scripted` does not exist", "code": "model_not_found"}},
    )


@pytest.fixture
def closed_model(make_stack: Any, sample: Any) -> Stack:
    """A stack whose model server has gone: nothing listens at its port any more."""
    stack: Stack = make_stack(echo(), policy=approvers_policy(sample.policy))
    assert stack.model is not None
    stack.model.__exit__()
    return stack


def test_a_closed_model_port_is_plain_in_the_channel_and_in_full_in_the_log(
    closed_model: Stack, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="opsbot.slack")
    answer = ask(closed_model, NOT_AN_APPROVER)

    shown = everything_shown(answer)
    assert_plain(shown)
    assert "opsbot cannot use its model" in answer_text(answer) and "its operators can see what in its log" in shown
    assert "ask again in a minute" not in shown, "a wrong address is not worded as passing"
    assert closed_model.model is not None
    logged = [r.getMessage() for r in caplog.records if "connection refused" in r.getMessage()]
    assert len(logged) == 1 and closed_model.model.base_url in logged[0] and "OPENAI_BASE_URL" in logged[0]
    assert closed_model.slack.ephemerals() == [], "not an approver: nothing private either"


def test_an_approver_who_asks_gets_the_details_privately_in_the_thread(closed_model: Stack) -> None:
    mention = payloads.app_mention("<@UBOT> why is checkout failing?", user="U1")
    closed_model.event(mention)
    [answer] = answered(closed_model, "C1", mention["ts"])

    assert_plain(everything_shown(answer))
    [private] = closed_model.slack.ephemerals("C1")
    assert private["user"] == "U1" and private["thread_ts"] == mention["ts"]
    assert closed_model.model is not None
    port = closed_model.model.base_url.rsplit(":", 1)[1]  # the host is defanged, as every unlisted link is
    assert f":{port}" in private["text"]
    assert "connection refused" in private["text"] and "OPENAI_BASE_URL" in private["text"]


@pytest.mark.parametrize(
    ("policy", "passing"),
    [(not_found, False), (lambda body: Reply(status=503), True), (lambda body: Reply(status=429), True)],
    ids=["unknown model", "server error", "rate limit"],
)
def test_whether_asking_again_helps_is_said_plainly(make_stack: Any, policy: Any, passing: bool) -> None:
    stack = make_stack(policy)
    shown = everything_shown(ask(stack, NOT_AN_APPROVER))

    assert_plain(shown)
    assert ("ask again in a minute" in shown) is passing
    assert ("its operators can see what in its log" in shown) is not passing
    assert "Direct commands work without the model" in shown


def test_without_a_model_a_question_is_answered_plainly(make_stack: Any, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="opsbot.slack")
    stack = make_stack(model=None)
    shown = everything_shown(ask(stack, NOT_AN_APPROVER))

    assert_plain(shown)
    assert "opsbot cannot use its model" in shown and "Direct commands work without the model" in shown
    assert any("OPENAI_API_KEY" in r.getMessage() for r in caplog.records), "the log says what to set"


def test_a_reset_redis_refuses_is_plain(make_stack: Any, caplog: pytest.LogCaptureFixture) -> None:
    stack = make_stack(echo())
    dead = f"redis://127.0.0.1:{free_port()}/0"
    stack.built.conversation.agent.memory = RedisMemory(dead)  # the thread memory alone is gone
    caplog.set_level(logging.WARNING, logger="opsbot.slack")
    mention = payloads.app_mention("<@UBOT> reset", user=NOT_AN_APPROVER)
    stack.event(mention)
    [answer] = answered(stack, "C1", mention["ts"])

    shown = everything_shown(answer)
    assert_plain(shown)
    assert "opsbot cannot use its Redis" in shown
    assert any(dead.removeprefix("redis://").removesuffix("/0") in r.getMessage() for r in caplog.records)


@pytest.mark.usefixtures("quick_redis_retries")
def test_an_ops_command_while_redis_is_down_names_no_host(own_redis: Any, model_server: Any, sample: Any) -> None:
    with SlackApi() as slack:
        server = model_server(echo())
        stack = Stack(slack, stack_settings(slack, own_redis.url, sample.policy, server), server)
        try:
            own_redis.stop()
            said = ack_text(stack.command("logs checkout", key="logs"))
        finally:
            own_redis.start()
            stack.close()

    assert "cannot reach its Redis right now" in said and "ask again in a minute" in said
    assert_plain(said)
    assert str(own_redis.port) not in said


def test_a_runbook_explanation_the_model_cannot_give_names_no_address() -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    explain = model_explainer(ModelClient(model="scripted", base_url=url, max_retries=0))
    now = datetime.now(UTC)
    run = RunRecord(id="r1", runbook="rb", params={}, steps=[], created_at=now, updated_at=now)

    with pytest.raises(RuntimeError) as raised:
        explain("what happened?", run)

    assert str(raised.value) == "its setup needs fixing (opsbot's log says what)"


def test_healthz_says_the_models_state_without_its_address(make_stack: Any) -> None:
    stack = make_stack(echo())  # the fake lists no models
    model = stack.built.health()["model"]
    assert model == {"state": "unverified", "fix": "nothing to set; the first question will tell"}

    without = make_stack(model=None).built.health()["model"]
    assert without["state"] == "not_configured" and "OPENAI_API_KEY" in without["fix"]
    assert stack.built.health()["ok"] is True, "the model's state never makes /healthz fail"


def test_healthz_asks_the_server_again_once_its_answer_is_stale(make_stack: Any) -> None:
    stack = make_stack(echo())
    assert stack.model is not None
    now = [0.0]
    stack.built.model.clock = lambda: now[0]
    stack.built.model.check()
    stack.model.models = ["scripted"]  # the server now lists the model

    assert stack.built.health()["model"]["state"] == "unverified", "within its TTL, the last answer"
    now[0] += 60
    assert until(lambda: stack.built.health()["model"]["state"] == "ok"), "asked again, in the background"
