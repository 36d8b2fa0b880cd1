"""Slack's agent sessions and Stop (issue 31, points 1, 2 and 5), through Bolt's own request path
against the fake Slack over real HTTP, a real Redis and the scripted model server.

A run sets its thread's session (docs.slack.dev/reference/methods/agents.sessions.setStatus):
processing (titled from the question), active, suspended while a write waits, closed on reset.
A stop (docs.slack.dev/reference/events/agent_session_stopped, opsbot's own Stop button where
the workspace has no sessions, `stop` written in the thread, `/ops stop`) gives the run up as
Ctrl-C does in a terminal: the command's process killed, nothing more run; the thread's pending
approval requests are cancelled; the thread is told once. What people see is asserted."""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from slack_sdk.models.blocks import Block

from opsbot.bot.slack.blocks import STOP
from opsbot.bot.slack.jobs import ThreadRef
from opsbot.bot.slack.sessions import RunBoard, Stop
from opsbot.bot.slack.sessions.runs import LEASE_S, SEEN_TTL_S
from opsbot.bot.slack.sessions.status import TITLE_CHARS
from opsbot.bot.telemetry.audit import RedisAudit
from opsbot.config.policy import Command, Policy
from tests.fakes import slack_payloads as payloads
from tests.fakes.model_server import Call, Reply, tool_results
from tests.fakes.redis_server import RedisServer
from tests.fakes.slack_api import SlackApi
from tests.fakes.slack_stack import Stack, Stacks, stack_settings
from tests.fakes.waiting import until
from tests.test_cancel import sleepers
from tests.test_metrics import Scrapes
from tests.test_metrics import web as web  # noqa: F401 - a fixture

SET_STATUS = "agents.sessions.setStatus"
STOPPED = "opsbot_stopped"
Make = Callable[..., Stack]


_durations = itertools.count(1)


def team_policy(sample: Policy, sleep: str) -> Policy:
    """The sample, with a command that sleeps `sleep` seconds (a real process to kill) and a
    restart someone other than the asker approves (so a request stays pending)."""
    restart = sample.commands["restart"].model_dump()
    restart.update(approvers={"users": ["U2"]}, self_approval=False)
    slow = {"description": "sleeps", "argv": ["sleep", sleep], "timeout_s": 90}
    commands = {"restart": Command.model_validate(restart), "slow": Command.model_validate(slow)}
    return sample.model_copy(update={"commands": {**sample.commands, **commands}})


def model(asked: list[dict[str, Any]]) -> Callable[[dict[str, Any]], Reply]:
    """Runs `slow` when asked about slowness, asks to restart when asked to restart, otherwise (or
    once its tool answered) answers; keeps every request."""

    def policy(body: dict[str, Any]) -> Reply:
        asked.append(body)
        last = [m for m in body["messages"] if m["role"] == "user"][-1]["content"]
        if tool_results(body) or not body.get("tools") or "approved" in last or "denied" in last:
            return Reply(content="Checked: nothing else to do.")
        if "slow" in last:
            return Reply(content="Looking at what runs slowly.\n", calls=[Call("run_command", {"command": "slow"})])
        if "restart" in last:
            return Reply(calls=[Call("run_command", {"command": "restart", "params": {"service": "checkout"}})])
        return Reply(content=f"answer to {last}")

    return policy


@pytest.fixture
def make_stack(redis_server: RedisServer, model_server: Any, sample: Any) -> Iterator[Make]:
    """`make(slack=...)` puts another process on the same workspace (one fake Slack) and Redis."""
    stacks = Stacks()
    redis_server.flush()
    policy = team_policy(sample.policy, SLEEP)

    def make(asked: list[dict[str, Any]] | None = None, slack: SlackApi | None = None, server: Any = None) -> Stack:
        server = server or model_server(model([] if asked is None else asked))
        slack = slack or SlackApi()
        return stacks.start(slack, stack_settings(slack, redis_server.url, policy, server), server)

    yield make
    stacks.close()


# A duration no other test sleeps for, this one's slow command's: its process is told apart by it
# (tests/test_cancel.py `sleepers`), whatever runs beside it.
SLEEP = f"{60 + os.getpid() % 30}.{next(_durations):03d}"


def sleeping() -> bool:
    return until(lambda: sleepers(SLEEP), timeout=10, interval=0.05)


def none_left() -> bool:
    return until(lambda: not sleepers(SLEEP), timeout=2, interval=0.05)


def kit(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`blocks`, each one parsed and validated by slack_sdk's Block Kit models."""
    for raw in blocks:
        block = Block.parse(raw)
        assert block is not None, raw
        block.validate_json()
    return blocks


def answers(stack: Stack, thread_ts: str, count: int) -> list[dict[str, Any]]:
    assert stack.slack.wait_for(lambda: len(stack.answers("C1", thread_ts)) >= count, 15), stack.slack.messages(
        "C1", thread_ts
    )
    assert stack.idle()
    found = stack.answers("C1", thread_ts)
    for message in found:
        kit(message.get("blocks", []))
    return found


def shown(message: dict[str, Any]) -> str:
    return message["text"] + json.dumps(message.get("blocks", []), ensure_ascii=False)


def marked(stack: Stack, thread_ts: str, kind: str) -> list[dict[str, Any]]:
    return [m for m in stack.slack.messages("C1", thread_ts) if (m.get("metadata") or {}).get("event_type") == kind]


def statuses(stack: Stack, thread_ts: str) -> list[str]:
    session = stack.slack.session("C1", thread_ts)
    return session["statuses"] if session else []


def approval(stack: Stack, thread_ts: str) -> dict[str, Any]:
    assert stack.slack.wait_for(lambda: bool(marked(stack, thread_ts, "opsbot_approval")), 10)
    [message] = marked(stack, thread_ts, "opsbot_approval")
    return message


def request_of(message: dict[str, Any]) -> str:
    actions = next(b for b in message["blocks"] if b.get("block_id") == "opsbot_approval")
    return str(actions["elements"][0]["value"])


def stop_message(stack: Stack, thread_ts: str) -> dict[str, Any] | None:
    """The thread's message carrying opsbot's own Stop button, if one does now."""
    for message in stack.slack.messages("C1", thread_ts):
        if any(b.get("block_id") == STOP for b in message.get("blocks", [])):
            return message
    return None


# ---------------------------------------------------------------- sessions


def test_a_run_sets_its_session_processing_titled_from_the_question_then_active(make_stack: Make) -> None:
    stack = make_stack()
    question = "<@UBOT> why is checkout failing? the db password=hunter2 " + "and more " * 40
    mention = payloads.app_mention(question)
    stack.event(mention)
    answers(stack, mention["ts"], 1)

    assert statuses(stack, mention["ts"]) == ["processing", "active"]
    first, second = stack.slack.calls(SET_STATUS)
    assert first.args["channel_id"] == "C1" and first.args["thread_ts"] == mention["ts"]
    assert first.args["status"] == "processing" and "title" not in second.args, "a title only on creation"
    title = stack.slack.session("C1", mention["ts"])["title"]  # type: ignore[index]
    assert title.startswith("why is checkout failing?") and len(title) <= TITLE_CHARS
    assert "hunter2" not in title and "<@UBOT>" not in title
    assert stack.idle()
    domains = payloads.app_mention("<@UBOT> " + "is api.example.com down? " * 10)  # each dot made [.] on the way out
    stack.event(domains)
    answers(stack, domains["ts"], 1)
    assert len(stack.slack.session("C1", domains["ts"])["title"]) <= TITLE_CHARS  # type: ignore[index]
    assert statuses(stack, domains["ts"]) == ["processing", "active"]
    # The words of progress stay where Slack shows them: the thread's status line.
    assert "thinking…" in stack.slack.statuses("C1", mention["ts"])

    stack.event(payloads.app_mention("<@UBOT> and payments?", thread_ts=mention["ts"]))
    answers(stack, mention["ts"], 2)
    assert statuses(stack, mention["ts"]) == ["processing", "active", "processing", "active"]
    calls = [call for call in stack.slack.calls(SET_STATUS) if call.args["thread_ts"] == mention["ts"]]
    assert all("title" not in call.args for call in calls[1:])

    stack.event(payloads.app_mention("<@UBOT> reset", thread_ts=mention["ts"]))
    answers(stack, mention["ts"], 3)
    assert statuses(stack, mention["ts"])[-1] == "closed"


def test_ops_reset_closes_the_sessions_of_the_threads_it_forgets(make_stack: Make) -> None:
    """`/ops reset` forgets every conversation of the channel: their sessions close as a thread's
    own `reset` closes its; another channel's stays as it was."""
    stack = make_stack()
    here = [payloads.app_mention(f"<@UBOT> how is {name}?") for name in ("checkout", "payments")]
    there = payloads.app_mention("<@UBOT> how is auth?", channel="C2")
    for mention in [*here, there]:
        stack.event(mention)
    for mention in here:
        answers(stack, mention["ts"], 1)
    assert stack.slack.wait_for(lambda: bool(stack.answers("C2", there["ts"])), 15)

    said = stack.command("reset", user="U1")
    assert "Forgot 2 opsbot conversation(s)" in said.body
    for mention in here:
        assert stack.slack.wait_for(lambda m=mention: statuses(stack, m["ts"])[-1:] == ["closed"], 5)
    session = stack.slack.session("C2", there["ts"])
    assert session is not None and session["statuses"] == ["processing", "active"]


def restart_asked(stack: Stack) -> tuple[dict[str, Any], dict[str, Any]]:
    """Someone asks for checkout's restart: the mention, and the approval request it waits on."""
    mention = payloads.app_mention("<@UBOT> restart checkout")
    stack.event(mention)
    request = approval(stack, mention["ts"])
    answers(stack, mention["ts"], 1)
    return mention, request


def test_a_write_waiting_for_approval_suspends_the_session_until_it_is_decided(make_stack: Make) -> None:
    stack = make_stack()
    mention, message = restart_asked(stack)
    assert statuses(stack, mention["ts"]) == ["processing", "suspended"]

    stack.click("opsbot_approve", request_of(message), user="U2", message_ts=message["ts"])
    answers(stack, mention["ts"], 2)
    assert statuses(stack, mention["ts"]) == ["processing", "suspended", "processing", "active"]


@pytest.mark.parametrize("error", ["unknown_method", "not_allowed_token_type", "missing_scope"])
def test_without_sessions_the_method_is_tried_once_per_team_and_opsbot_shows_its_own_stop(
    make_stack: Make, error: str
) -> None:
    stack = make_stack()
    stack.slack.sessions_error = error  # an app not declared an agent, or an older workspace
    first = payloads.app_mention("<@UBOT> how is checkout?")
    stack.event(first)
    [answer] = answers(stack, first["ts"], 1)
    second = payloads.app_mention("<@UBOT> how is payments?")
    stack.event(second)
    answers(stack, second["ts"], 1)

    assert len(stack.slack.calls(SET_STATUS)) == 1, "the refusal is remembered: the second run asks nothing"
    assert "answer to how is checkout?" in shown(answer), "answered as before"
    with_stop = [
        call
        for call in stack.slack.calls("chat.postMessage")
        if any(b.get("block_id") == STOP for b in kit(call.args.get("blocks", [])))
    ]
    assert len(with_stop) == 2, "each run's progress message carried a Stop button"
    [button] = next(b for b in with_stop[1].args["blocks"] if b.get("block_id") == STOP)["elements"]
    assert button["text"]["text"] == "Stop" and button["value"] == second["ts"]
    assert stop_message(stack, first["ts"]) is None and stop_message(stack, second["ts"]) is None, (
        "the button goes once the run has answered"
    )


def test_a_passing_session_error_is_not_remembered(make_stack: Make) -> None:
    stack = make_stack()
    stack.slack.fail(SET_STATUS, status=200, error="internal_error")
    mention = payloads.app_mention("<@UBOT> how is checkout?")
    stack.event(mention)
    answers(stack, mention["ts"], 1)
    assert [c.args["status"] for c in stack.slack.calls(SET_STATUS)] == ["processing", "active"]
    assert statuses(stack, mention["ts"]) == ["active"]
    assert stop_message(stack, mention["ts"]) is None


# ---------------------------------------------------------------- stopping


def test_slacks_stop_kills_the_running_command_and_cancels_the_pending_request(make_stack: Make) -> None:
    asked: list[dict[str, Any]] = []
    stack = make_stack(asked)
    mention = payloads.app_mention("<@UBOT> restart checkout")
    stack.event(mention)
    request = approval(stack, mention["ts"])
    answers(stack, mention["ts"], 1)
    stack.event(payloads.app_mention("<@UBOT> is anything slow?", thread_ts=mention["ts"]))
    assert sleeping(), "the slow command runs"
    before = len(asked)

    # Slack stops the run's stream as it sends the event (the steps streamed so far stay shown).
    [streaming] = [m for m in stack.slack.messages("C1", mention["ts"]) if m.get("streaming")]
    stack.slack.end_stream("C1", streaming["ts"])
    stop = payloads.agent_session_stopped(thread_ts=mention["ts"], user="U3", streaming_message_ts=[streaming["ts"]])
    response = stack.event(stop)

    assert response.status == 200
    stopped = answers(stack, mention["ts"], 2)[1]
    assert none_left(), "the command's process group was killed"
    assert "Cancelled; nothing more was run." in shown(stopped)
    assert len(asked) == before, "the model was not asked again"
    [confirmed] = marked(stack, mention["ts"], STOPPED)
    assert "Stopped by <@U3>" in shown(confirmed) and "Nothing more was run" in shown(confirmed)
    kit(confirmed.get("blocks", []))
    cancelled = next(m for m in stack.slack.messages("C1", mention["ts"]) if m["ts"] == request["ts"])
    assert "Cancelled: <@U3> stopped the run" in shown(cancelled)
    assert not any(b.get("block_id") == "opsbot_approval" for b in kit(cancelled["blocks"])), "no buttons left"
    assert statuses(stack, mention["ts"])[-2:] == ["processing", "active"]

    stack.click("opsbot_approve", request_of(request), user="U2", message_ts=request["ts"])  # a late click
    assert stack.slack.wait_for(lambda: any("already decided" in e["text"] for e in stack.slack.ephemerals()), 5)
    assert stack.idle()
    assert not marked(stack, mention["ts"], "opsbot_result"), "the cancelled request ran nothing"


def test_a_stop_delivered_twice_and_to_another_process_stops_the_run_once(
    make_stack: Make, redis_server: RedisServer, web: str
) -> None:
    scrapes = Scrapes(web + "/metrics")
    running = make_stack()
    other = make_stack(slack=running.slack, server=running.model)
    mention = payloads.app_mention("<@UBOT> is anything slow?")
    running.event(mention)
    assert sleeping()
    stop = payloads.agent_session_stopped(thread_ts=mention["ts"], user="U3")

    assert other.event(stop, event_id="EvStop1").status == 200  # reaches a process not running the run
    assert running.event(stop, event_id="EvStop1", retry=1).status == 200  # Slack's retry of it

    answers(running, mention["ts"], 1)
    assert none_left()
    assert len(marked(running, mention["ts"], STOPPED)) == 1, "confirmed once"
    assert other.idle()
    assert running.slack.ephemerals() == [], "the retry said nothing"
    assert statuses(running, mention["ts"]) == ["processing", "active"]
    trail = list(RedisAudit(redis_server.client(), 3600).read(thread=f"slack:T1:C1:{mention['ts']}"))
    stopped = [r for r in trail if r.kind == "run_stopped"]
    assert [r.who for r in stopped] == ["slack:U3"], "who stopped the run, recorded once"
    assert [r.status for r in trail if r.kind == "run_finished"] == ["cancelled"]

    assert other.event(payloads.agent_session_stopped(thread_ts=mention["ts"]), event_id="EvStop2").status == 200
    assert running.slack.wait_for(lambda: bool(running.slack.ephemerals()), 5)
    [said] = running.slack.ephemerals()
    assert said["user"] == "U1" and "Nothing to stop here" in said["text"] and said["thread_ts"] == mention["ts"]
    assert statuses(running, mention["ts"]) == ["processing", "active", "active"]
    counted = scrapes.again()
    assert counted.moved("opsbot_stops_total", found="first") == counted.moved("opsbot_stops_total", found="ended") == 1
    assert counted.moved("opsbot_stops_total", found="again") == 0, "Slack's retry is not a second stop"


def test_a_stop_while_writes_wait_cancels_them_and_says_so_once(make_stack: Make) -> None:
    stack = make_stack()
    mention, request = restart_asked(stack)

    stack.event(payloads.message("stop", thread_ts=mention["ts"], user="U1"))

    assert stack.slack.wait_for(lambda: bool(marked(stack, mention["ts"], STOPPED)), 5)
    [confirmed] = marked(stack, mention["ts"], STOPPED)
    assert "Stopped by <@U1>" in shown(confirmed) and "1 approval request(s) cancelled" in shown(confirmed)
    cancelled = next(m for m in stack.slack.messages("C1", mention["ts"]) if m["ts"] == request["ts"])
    assert "Cancelled" in shown(cancelled) and not any(
        b.get("block_id") == "opsbot_approval" for b in cancelled["blocks"]
    )
    assert statuses(stack, mention["ts"]) == ["processing", "suspended", "active"]
    assert len(stack.answers("C1", mention["ts"])) == 1, "`stop` is no question for the model"


@pytest.mark.parametrize("how", ["button", "written", "command"])
def test_without_sessions_a_run_stops_from_its_button_a_written_stop_or_ops_stop(make_stack: Make, how: str) -> None:
    stack = make_stack()
    stack.slack.sessions_error = "not_allowed_token_type"
    mention = payloads.app_mention("<@UBOT> is anything slow?")
    stack.event(mention)
    assert sleeping()
    assert stack.slack.wait_for(lambda: stop_message(stack, mention["ts"]) is not None, 5)
    progress = stop_message(stack, mention["ts"])
    assert progress is not None
    kit(progress["blocks"])

    if how == "button":
        stack.click(STOP, mention["ts"], user="U3", message_ts=progress["ts"], thread_ts=mention["ts"], block_id=STOP)
    elif how == "written":
        stack.event(payloads.message("stop", thread_ts=mention["ts"], user="U3"))
    else:
        said = stack.command("stop", user="U1")
        assert "Stopping 1 run(s) you asked in this channel" in said.body

    [answer] = answers(stack, mention["ts"], 1)
    assert none_left()
    assert "Cancelled; nothing more was run." in shown(answer)
    stopper = "U1" if how == "command" else "U3"
    [confirmed] = marked(stack, mention["ts"], STOPPED)
    assert f"Stopped by <@{stopper}>" in shown(confirmed)
    assert stop_message(stack, mention["ts"]) is None, "the Stop button is gone"
    assert len(stack.slack.calls(SET_STATUS)) == 1


def test_ops_stop_with_nothing_of_yours_running_says_so(make_stack: Make) -> None:
    stack = make_stack()
    said = stack.command("stop", user="U7")
    assert "Nothing you asked is running in this channel" in said.body
    assert "`stop`" in stack.command("stop now", user="U7").body, "refused, not asked as a question"
    assert stack.idle() and stack.slack.calls("chat.postMessage") == []


# ---------------------------------------------------------------- the board itself


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def test_the_board_marks_a_run_once_and_forgets_a_dead_processs_run_by_its_lease(redis_server: RedisServer) -> None:
    redis_server.flush()
    clock = Clock()
    board = RunBoard(redis_server.client(), clock=clock)
    thread = ThreadRef(team="T1", channel="C1", thread_ts="1.1")
    board.begin(thread, "run-1", "U1")

    assert board.stop(thread, "U3", "a").outcome is Stop.first
    assert board.stop(thread, "U3", "a").outcome is Stop.seen
    assert board.stop(thread, "U4", "b") == (Stop.again, "run-1", "U1")
    [entry] = board.working("T1", "C1")
    assert board.renew([entry]) == ["U3"]
    keys = list(redis_server.client().scan_iter("opsbot:slack:*"))
    assert keys and all(0 < redis_server.client().ttl(key) <= max(LEASE_S + 1, SEEN_TTL_S) for key in keys)

    other = ThreadRef(team="T1", channel="C1", thread_ts="2.2")
    board.begin(other, "run-2", "U1")
    clock.now += LEASE_S + 1  # its process died: nobody renewed the lease
    assert board.working("T1", "C1") == []
    assert board.stop(other, "U3", "c").outcome is Stop.ended
    board.end(thread, "run-1")
    assert board.stop(thread, "U3", "d").outcome is Stop.ended


def test_the_fake_answers_set_status_as_slack_documents_it() -> None:
    """The fake's agents.sessions.setStatus, through the real WebClient: a title only on creation,
    an unknown status refused, the warning when agent_session_stopped is not subscribed."""
    from slack_sdk import WebClient
    from slack_sdk.errors import SlackApiError

    with SlackApi() as slack:
        client = WebClient(token=slack.token, base_url=slack.base_url)
        made = client.agents_sessions_setStatus(channel_id="C1", thread_ts="1.1", status="processing", title="First")
        assert made["ok"] and made["status"] == "processing" and made["title"] == "First"
        later = client.agents_sessions_setStatus(channel_id="C1", thread_ts="1.1", status="active", title="Other")
        assert later["title"] == "First", "a title is only used when the session is created"
        with pytest.raises(SlackApiError) as refused:
            client.agents_sessions_setStatus(channel_id="C1", thread_ts="1.1", status="busy")
        assert refused.value.response["error"] == "invalid_arguments"
        slack.stop_event_subscribed = False
        warned = client.agents_sessions_setStatus(channel_id="C1", thread_ts="1.1", status="closed")
        assert warned["warning"] == "missing_agent_session_stopped_event_subscription"
        assert slack.session("C1", "1.1") == {"title": "First", "statuses": ["processing", "active", "closed"]}
        slack.sessions_error = "not_allowed_token_type"
        with pytest.raises(SlackApiError) as unsupported:
            client.agents_sessions_setStatus(channel_id="C1", thread_ts="1.1", status="active")
        assert unsupported.value.response["error"] == "not_allowed_token_type"


def test_a_stop_written_unaddressed_where_nothing_runs_says_nothing(make_stack: Make) -> None:
    stack = make_stack()
    mention = payloads.app_mention("<@UBOT> how is checkout?")
    stack.event(mention)
    answers(stack, mention["ts"], 1)
    stack.event(payloads.message("stop", thread_ts=mention["ts"], user="U4"))
    stack.event(payloads.app_mention("<@UBOT> stop", thread_ts=mention["ts"], user="U5"))
    assert stack.slack.wait_for(lambda: bool(stack.slack.ephemerals()), 5)
    assert stack.idle()
    [said] = stack.slack.ephemerals()
    assert said["user"] == "U5" and "Nothing to stop here" in said["text"], "only the one who asked opsbot is told"
    assert len(stack.answers("C1", mention["ts"])) == 1


def test_ops_stop_gives_up_a_direct_command_that_runs(make_stack: Make) -> None:
    stack = make_stack()
    assert stack.command("run slow", key="run").status == 200
    assert sleeping()

    said = stack.command("stop", key="stop")

    assert "Stopping 1 run(s) you asked in this channel" in said.body
    assert stack.slack.wait_for(lambda: len(stack.slack.responses("run")) >= 2, 10), stack.slack.responses("run")
    assert none_left()
    assert stack.idle()
    output, confirmed = stack.slack.responses("run")
    assert "cancelled" in json.dumps(kit(output["blocks"])).lower()
    assert "Stopped by <@U1>" in confirmed["text"] and "The command was given up." in confirmed["text"]
