"""Feedback on answers: Slack's native feedback buttons (a `feedback_buttons` element in a
`context_actions` block) end every answer of a run, wherever it is given: one message, streamed,
several messages, a `/ops` reply only its asker sees. Each button's value names the answer's run.
A click, signed as Slack signs it, is recorded in the audit trail with that run, counted in
/metrics and, while it stands negative, listed by `opsbot audit --feedback` with its thread; a
click repeated counts once, a change of mind replaces the earlier verdict. A value opsbot never
wrote, or one naming a run it does not know or another thread's, is refused to the clicker alone
and nothing is recorded.

Through Bolt's request path (signed `block_actions` payloads, tests/fakes/slack_payloads.py), the
real slack-sdk against the fake Slack over HTTP, the scripted model server and a real
redis-server; /metrics scraped over HTTP, `opsbot audit` run as the CLI's other tests run it.
Every answer's blocks are read back with slack_sdk's Block Kit models."""

from __future__ import annotations

import re
from typing import Any

import pytest
import redis
from slack_sdk.models.blocks import Block, ContextActionsBlock, FeedbackButtonsElement

from opsbot.bot.telemetry.audit import AuditRecord, RedisAudit
from tests.fakes import slack_payloads as payloads
from tests.fakes.model_server import Call, Reply, script
from tests.fakes.redis_server import RedisServer
from tests.fakes.slack_stack import SECRET, Stack
from tests.test_audit import audit_cli
from tests.test_metrics import Scrapes
from tests.test_metrics import web as web  # noqa: F401 - a fixture
from tests.test_slack import answered, settle
from tests.test_slack import make_stack as make_stack  # noqa: F401 - a fixture

RUN = re.compile(r"[0-9a-f]{12}")
SAID_NEGATIVE = "Thanks: your 👎 on this answer is recorded. Saying in the thread what was wrong helps most."
NOT_OURS = "These feedback buttons are not on the answer they name, so nothing was recorded."


def looked_then_answered(answer: str = "checkout's database is down") -> Any:
    """A model that reads checkout's logs (a tool call: the audit trail names its run), then answers."""
    return script(Reply(calls=[Call("query_logs", {"service": "checkout", "level": "ERROR"})]), Reply(content=answer))


def block_kit(blocks: list[dict[str, Any]]) -> list[Block]:
    """`blocks` as slack_sdk's Block Kit models read them: each of a kind the SDK knows, within
    Slack's limits (`validate_json`), and read back to the very JSON sent (nothing unknown in it)."""
    models = []
    for raw in blocks:
        block = Block.parse(raw)
        assert block is not None and type(block) is not Block, f"not a Block Kit block: {raw}"
        block.validate_json()
        assert block.to_dict() == raw, raw
        models.append(block)
    return models


def feedback_buttons(message: dict[str, Any]) -> FeedbackButtonsElement:
    """The message's feedback buttons: its last block, a context_actions block holding them alone."""
    *_, last = block_kit(message["blocks"])
    assert isinstance(last, ContextActionsBlock), "the feedback buttons end the answer"
    [buttons] = last.elements
    assert isinstance(buttons, FeedbackButtonsElement) and buttons.action_id == "opsbot_feedback"
    return buttons


def run_of(message: dict[str, Any]) -> str:
    """The run the answer's buttons name: one run, the positive button's value and the negative's."""
    buttons = feedback_buttons(message).to_dict()
    positive, negative = buttons["positive_button"]["value"], buttons["negative_button"]["value"]
    verdict, run = positive.split(":")
    assert (verdict, negative) == ("positive", f"negative:{run}") and RUN.fullmatch(run), (positive, negative)
    return run


def tool_call_runs(redis_server: RedisServer, thread: str) -> set[str | None]:
    return {r.run for r in RedisAudit(redis_server.client(), 3600).read(thread=thread) if r.kind == "tool_call"}


def feedback_records(redis_server: RedisServer) -> list[AuditRecord]:
    return [r for r in RedisAudit(redis_server.client(), 3600).read() if r.kind == "feedback"]


def click(stack: Stack, value: str, **fields: Any) -> None:
    """A click on feedback buttons, signed as Slack signs it; acked as Bolt acks it."""
    body = payloads.interactive_body(payloads.feedback_action(value, **fields))
    assert stack.dispatch(body, payloads.signed_headers(SECRET, body)).status == 200


def told(stack: Stack, user: str, count: int) -> list[dict[str, Any]]:
    """What `user` alone was told, once `count` messages were. A click is taken before its ack
    (`click` returns after it): only telling happens later."""

    def mine() -> list[dict[str, Any]]:
        return [e for e in stack.slack.ephemerals() if e["user"] == user]

    assert stack.slack.wait_for(lambda: len(mine()) >= count, 15), mine()
    return mine()


def asked(stack: Stack) -> tuple[dict[str, Any], dict[str, Any], str]:
    """A question in a thread, answered: the mention, the answer, the run its buttons name."""
    mention = payloads.app_mention("<@UBOT> why is checkout throwing 502s?")
    stack.event(mention)
    [answer] = answered(stack, "C1", mention["ts"])
    return mention, answer, run_of(answer)


def nothing_recorded(redis_server: RedisServer, scrapes: Scrapes) -> None:
    """No feedback in the audit trail, none counted since `scrapes` began."""
    assert feedback_records(redis_server) == []
    s = scrapes.again()
    assert s.moved("opsbot_feedback_total", value="negative") == s.moved("opsbot_feedback_total", value="positive") == 0


def nothing_negative_listed(redis_server: RedisServer) -> None:
    """`opsbot audit --feedback` finds no answer someone found unhelpful."""
    code, out = audit_cli("--feedback", redis_url=redis_server.url, stream="all")
    assert code == 0 and out.splitlines()[-1] == "No negative feedback since 24h."


# ---------------------------------------------------------------- the buttons, wherever an answer is given


@pytest.mark.parametrize("streams", [True, False], ids=["streamed", "posted"])
def test_an_answer_ends_with_slacks_feedback_buttons_naming_its_run(make_stack, redis_server, streams) -> None:
    stack = make_stack(looked_then_answered())
    stack.slack.streams_supported = streams
    mention = payloads.app_mention("<@UBOT> why is checkout throwing 502s?")
    stack.event(mention)
    [answer] = answered(stack, "C1", mention["ts"])
    # Streamed, the buttons come with chat.stopStream's blocks, below the streamed text.
    stops = stack.slack.calls("chat.stopStream")
    assert [c.args["blocks"][-1]["type"] for c in stops] == (["context_actions"] if streams else [])
    buttons = feedback_buttons(answer)
    shown = [buttons.to_dict()[side]["text"]["text"] for side in ("positive_button", "negative_button")]
    assert shown == ["Helpful", "Not helpful"]
    # The run the buttons name is the run that answered: the one its tool call is recorded under.
    assert tool_call_runs(redis_server, f"slack:T1:C1:{mention['ts']}") == {run_of(answer)}
    assert "actions" not in [b["type"] for b in answer["blocks"]], "no custom buttons beside them"


def test_an_answer_in_several_messages_has_the_buttons_on_its_last_only(make_stack) -> None:
    long = "\n".join(f"{n:05d} ERROR checkout-api POST /v1/checkout 502 upstream=payments:8443" for n in range(400))
    stack = make_stack(looked_then_answered(long))
    mention = payloads.app_mention("<@UBOT> every error since noon?")
    stack.event(mention)
    [last] = answered(stack, "C1", mention["ts"])
    parts = [
        m
        for m in stack.slack.replies("C1", mention["ts"])
        if (m.get("metadata") or {}).get("event_type") == "opsbot_answer_part"
    ]
    assert len(parts) >= 2, "the answer came in several messages"
    for part in parts:
        assert "context_actions" not in [b.type for b in block_kit(part["blocks"])]
    assert RUN.fullmatch(run_of(last))


def test_a_private_ops_answer_has_the_buttons_and_a_click_on_it_is_recorded_against_its_channel(
    make_stack, redis_server
) -> None:
    stack = make_stack(looked_then_answered())
    stack.slack.not_in_channel.add("C9")
    stack.command("why is checkout throwing 502s?", key="ops", channel="C9")
    assert stack.slack.wait_for(lambda: len(stack.slack.responses("ops")) >= 2, 15), stack.slack.responses("ops")
    settle(stack)
    [cannot_post, answer] = stack.slack.responses("ops")
    assert "only you will see my answer" in cannot_post["text"] and answer["response_type"] == "ephemeral"
    run = run_of(answer)

    on_reply = {"channel": "C9", "message_ts": payloads.next_ts(), "ephemeral": True}
    click(stack, f"negative:{run}", user="U5", response_url=stack.slack.response_url("click"), **on_reply)

    # opsbot is not in the channel (that is why it answered privately): the click's response_url answers.
    assert stack.slack.wait_for(lambda: stack.slack.responses("click"), 5)
    [said] = stack.slack.responses("click")
    assert (said["text"], said["response_type"], said["replace_original"]) == (SAID_NEGATIVE, "ephemeral", False)
    [record] = feedback_records(redis_server)
    assert (record.who, record.run, record.status) == ("slack:U5", run, "negative")
    assert record.link == "https://slack.com/archives/C9", "a reply only its asker saw has no thread: its channel"


# ---------------------------------------------------------------- a click: audit trail, /metrics, opsbot audit


def test_a_click_is_recorded_with_its_run_counted_once_and_listed_while_negative(make_stack, redis_server, web) -> None:
    stack = make_stack(looked_then_answered())
    mention, answer, run = asked(stack)
    thread = f"slack:T1:C1:{mention['ts']}"
    link = f"https://slack.com/archives/C1/p{mention['ts'].replace('.', '')}"
    scrapes = Scrapes(web + "/metrics")
    where = {"user": "U5", "message_ts": answer["ts"], "thread_ts": mention["ts"]}

    click(stack, f"negative:{run}", **where)
    click(stack, f"negative:{run}", **where)  # a double click, or Slack sending it again

    [said] = told(stack, "U5", 1)
    assert said["text"] == SAID_NEGATIVE and said["thread_ts"] == mention["ts"], "said in the answer's thread"
    assert not stack.slack.wait_for(lambda: len(stack.slack.ephemerals()) > 1, 0.5), "and said once"
    [record] = feedback_records(redis_server)
    assert (record.who, record.thread, record.run, record.status, record.link) == (
        "slack:U5",
        thread,
        run,
        "negative",
        link,
    )
    assert record.run in tool_call_runs(redis_server, thread), "the run whose tool calls the trail holds"
    s = scrapes.again()
    assert (
        s.moved("opsbot_feedback_total", value="negative") == 1
        and s.moved("opsbot_feedback_total", value="positive") == 0
    )
    assert run not in s.text and "U5" not in s.text, "labelled by value only"
    code, out = audit_cli("--feedback", redis_url=redis_server.url)
    assert code == 0 and out.splitlines() == [record.line()], out
    assert out.rstrip().endswith(f"thread={thread} run={run} -> negative {link}")

    # A change of mind replaces the earlier verdict: recorded and counted as given, no longer listed.
    click(stack, f"positive:{run}", text="Helpful", **where)

    assert told(stack, "U5", 2)[-1]["text"] == "Your feedback on this answer is now 👍 (it was 👎)."
    assert [r.status for r in feedback_records(redis_server)] == ["negative", "positive"]
    assert scrapes.again().moved("opsbot_feedback_total", value="positive") == 1
    nothing_negative_listed(redis_server)


# ---------------------------------------------------------------- forged and stale values


def test_a_forged_or_stale_value_is_refused_to_the_clicker_alone_and_nothing_is_recorded(
    make_stack, redis_server, web
) -> None:
    stack = make_stack(looked_then_answered())
    mention, answer, run = asked(stack)
    here = {"message_ts": answer["ts"], "thread_ts": mention["ts"]}
    scrapes = Scrapes(web + "/metrics")
    forged = [
        ("bad:" + run, here),  # not a value opsbot writes
        (f"negative:{run}:{run}", here),
        ("negative:" + run.upper(), here),
        (f"negative:{run}", {"message_ts": answer["ts"], "thread_ts": payloads.next_ts()}),  # another thread's
        (f"negative:{run}", {"channel": "C2", **here}),  # another channel's
    ]
    for n, (value, where) in enumerate(forged):
        click(stack, value, user=f"UF{n}", **where)
    # A run opsbot never had, and the answer's own once its run is forgotten (kept as long as threads are).
    click(stack, "negative:0123456789ab", user="US1", **here)
    remembered = f"{stack.built.state.prefix}:answer:{{{run}}}"
    assert 7 * 86400 - 60 < redis_server.client().ttl(remembered) <= 7 * 86400
    redis_server.client().delete(remembered)
    click(stack, f"negative:{run}", user="US2", **here)

    for n, (value, _) in enumerate(forged):
        [said] = told(stack, f"UF{n}", 1)
        assert said["text"] == NOT_OURS, value
    for user in ("US1", "US2"):
        [said] = told(stack, user, 1)
        assert said["text"] == (
            "opsbot no longer knows this answer (answers take feedback for 7d), so your feedback was not recorded."
        )
    nothing_recorded(redis_server, scrapes)
    nothing_negative_listed(redis_server)


def test_a_click_while_redis_is_unreachable_is_refused_and_counted_as_a_redis_error(
    make_stack, redis_server, web
) -> None:
    stack = make_stack(looked_then_answered())
    mention, answer, run = asked(stack)
    scrapes = Scrapes(web + "/metrics")

    def unreachable(*args: Any, **kwargs: Any) -> Any:
        raise redis.ConnectionError("Redis is down (test)")

    stack.built.state.answered_in = unreachable  # type: ignore[method-assign]  # the click's first Redis call
    click(stack, f"negative:{run}", user="U5", message_ts=answer["ts"], thread_ts=mention["ts"])

    [said] = told(stack, "U5", 1)
    assert (
        said["text"]
        == "opsbot cannot reach its Redis just now, so your feedback was not recorded. Click again in a minute."
    )
    assert feedback_records(redis_server) == []
    s = scrapes.again()
    assert s.moved("opsbot_redis_errors_total", component="slack_feedback") == 1
    assert s.moved("opsbot_feedback_total", value="negative") == 0


def test_a_click_on_the_old_thumbs_of_an_earlier_answer_is_answered_and_records_nothing(
    make_stack, redis_server, web
) -> None:
    """Answers posted before Slack's own buttons keep their 👍/👎 (action ids opsbot_feedback_good
    and _bad): a click is told they record nothing now, rather than meeting an error."""
    stack = make_stack(looked_then_answered())
    mention, answer, _ = asked(stack)
    scrapes = Scrapes(web + "/metrics")
    for n, action_id in enumerate(("opsbot_feedback_good", "opsbot_feedback_bad")):
        body = payloads.interactive_body(
            payloads.block_action(action_id, "a1b2", user=f"UO{n}", message_ts=answer["ts"], thread_ts=mention["ts"])
        )
        assert stack.dispatch(body, payloads.signed_headers(SECRET, body)).status == 200
        [said] = told(stack, f"UO{n}", 1)
        assert said["text"] == (
            "These buttons are from an earlier opsbot and record nothing now; the feedback buttons of newer answers do."
        )
    nothing_recorded(redis_server, scrapes)
