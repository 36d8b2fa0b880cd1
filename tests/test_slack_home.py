"""opsbot's App Home through Bolt's own request path: `app_home_opened` for the Messages tab (the
suggested prompts) and the Home tab (`views.publish`), and Approve/Deny clicked on the Home tab,
against the fake Slack over HTTP, a real Redis and the scripted model server. Every view is
checked with slack_sdk's Block Kit models, and assertions are what each person sees."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from slack_sdk.models.blocks import Block, BlockElement
from slack_sdk.models.views import View

from opsbot.config.policy import Access, Command, Policy, Service
from tests.fakes import slack_payloads as payloads
from tests.fakes.slack_api import SlackApi
from tests.fakes.slack_stack import SECRET, Stack, stack_settings
from tests.fakes.waiting import until
from tests.test_slack import answer_text, answered, approvers_policy, echo, request_id, restart_asked, results, settle
from tests.test_slack import make_stack as make_stack  # noqa: F401 - a fixture

# An AWS example key from AWS's own documentation: the redactor must hide it.
KEY = "AKIAIOSFODNN7EXAMPLE"


# What Slack sends.


def home_opened(user: str, tab: str, channel: str = "D1") -> dict[str, Any]:
    """docs.slack.dev/reference/events/app_home_opened: `user`, `channel` (the person's DM with
    the app), `tab` (`home` or `messages`), `event_ts`; a Home tab published before comes with its
    `view`, which opsbot does not read."""
    return {"type": "app_home_opened", "user": user, "channel": channel, "tab": tab, "event_ts": payloads.next_ts()}


def home_click(action_id: str, value: str, user: str, team: str = "T1", view_id: str = "V1") -> dict[str, Any]:
    """A `block_actions` payload from a button on the Home tab (docs.slack.dev/reference/
    interaction-payloads/block_actions-payload): its `container` is the view (`type: view`,
    `view_id`) and `view` the Home view; there is no `channel` and no `message`."""
    return {
        "type": "block_actions",
        "user": {"id": user, "username": "engineer", "name": "engineer", "team_id": team},
        "api_app_id": "A1",
        "token": "legacy-verification-token",
        "container": {"type": "view", "view_id": view_id},
        "trigger_id": f"{time.time():.6f}.trigger",
        "team": {"id": team, "domain": "test"},
        "enterprise": None,
        "is_enterprise_install": False,
        "view": {"id": view_id, "team_id": team, "type": "home", "blocks": [], "hash": "1.1", "app_id": "A1"},
        "actions": [
            {
                "action_id": action_id,
                "block_id": f"opsbot_home_request_{value}",
                "text": {"type": "plain_text", "text": "Approve", "emoji": True},
                "value": value,
                "type": "button",
                "action_ts": f"{time.time():.6f}",
            }
        ],
    }


def click_at_home(stack: Stack, action_id: str, value: str, user: str) -> None:
    body = payloads.interactive_body(home_click(action_id, value, user))
    assert stack.dispatch(body, payloads.signed_headers(SECRET, body)).status == 200


def open_home(stack: Stack, user: str) -> dict[str, Any]:
    """`user` opens their Home tab: the view published for them."""
    before = len(stack.slack.home_views(user))
    assert stack.event(home_opened(user, "home")).status == 200
    assert stack.slack.wait_for(lambda: len(stack.slack.home_views(user)) > before, 10)
    return latest(stack, user)


def latest(stack: Stack, user: str) -> dict[str, Any]:
    view = stack.slack.home_views(user)[-1]
    valid(view)
    return view


def says(stack: Stack, user: str, text: str) -> bool:
    """Whether `user`'s Home tab, as last published, shows `text`."""
    views = stack.slack.home_views(user)
    return bool(views) and text in shown(views[-1])


def valid(view: dict[str, Any]) -> None:
    """The view as slack_sdk's Block Kit models take it: the view, each block, each button."""
    View(type=view["type"], blocks=view["blocks"]).validate_json()
    for raw in view["blocks"]:
        block = Block.parse(raw)
        assert block is not None, raw
        block.validate_json()
        for element in raw.get("elements", []) if raw["type"] == "actions" else []:
            parsed = BlockElement.parse(element)
            assert parsed is not None, element
            parsed.validate_json()


def shown(view: dict[str, Any]) -> str:
    """Every text the view shows, joined."""
    return json.dumps(view["blocks"], ensure_ascii=False)


def waiting(view: dict[str, Any]) -> str:
    """What the view shows as waiting for the viewer: its blocks before the first divider."""
    blocks = view["blocks"]
    end = next(n for n, b in enumerate(blocks) if b["type"] == "divider")
    return json.dumps(blocks[:end], ensure_ascii=False)


def requests_posted(stack: Stack, channel: str = "C1") -> list[dict[str, Any]]:
    """The approval requests posted in `channel`'s threads, buttons and all."""
    return [
        m
        for m in stack.slack.messages(channel)
        if any(b.get("block_id") == "opsbot_approval" for b in m.get("blocks", []))
    ]


def buttons(view: dict[str, Any]) -> list[tuple[str, str]]:
    """(action_id, value) of every button on the view."""
    return [
        (element["action_id"], element["value"])
        for block in view["blocks"]
        if block["type"] == "actions"
        for element in block["elements"]
    ]


# Policies.


def team_policy(sample: Policy) -> Policy:
    """The sample, for a team: `auth` read by U2 only, `payments` only in #C9, `restart` approved by
    U1 or U2 (not the asker), and `rotate-keys`, a write only U3 (another team) approves."""
    services = dict(sample.services)
    services["auth"] = sample.services["auth"].model_copy(update={"access": Access(users=frozenset({"U2"}))})
    services["payments"] = sample.services["payments"].model_copy(update={"access": Access(channels=frozenset({"C9"}))})
    rotate = Command.model_validate(
        {
            "description": "rotate the signing keys (a stand-in)",
            "argv": ["printf", "rotated\\n"],
            "risk": "write",
            "approvers": {"users": ["U3"]},
        }
    )
    policy = approvers_policy(sample.model_copy(update={"services": services}))
    return policy.model_copy(update={"commands": {**policy.commands, "rotate-keys": rotate}})


# The Messages tab.


def test_the_messages_tab_suggests_prompts_made_from_the_configuration_each_person_may_use(make_stack, sample) -> None:
    stack = make_stack(echo(), policy=team_policy(sample.policy), common_questions=["What changed in the last hour?"])
    for user, dm in (("U1", "D1"), ("U2", "D2")):
        assert stack.event(home_opened(user, "messages", channel=dm)).status == 200
    assert stack.slack.wait_for(lambda: stack.slack.suggested_prompts("D1") and stack.slack.suggested_prompts("D2"), 10)

    [call] = stack.slack.calls("assistant.threads.setSuggestedPrompts")[:1]
    assert "thread_ts" not in call.args, "an agent app's call with thread_ts silently fails"
    [first] = stack.slack.suggested_prompts("D1")
    [second] = stack.slack.suggested_prompts("D2")
    assert first["title"] == "Ask opsbot"
    u1 = [(p["title"], p["message"]) for p in first["prompts"]]
    u2 = [(p["title"], p["message"]) for p in second["prompts"]]
    assert u1 == [
        ("What changed in the last hour?", "What changed in the last hour?"),
        ("What is wrong with checkout?", "What is wrong with checkout right now? Check its recent errors."),
        ("Runbook config-drift", "runbook show config-drift"),
        ("Runbook disk-filling", "runbook show disk-filling"),
    ], "auth is U2's alone, and payments is asked about in #C9 only, not in a DM"
    assert u2[1] == ("What is wrong with auth?", "What is wrong with auth right now? Check its recent errors.")
    assert u2[3] == u1[1] and not any("payments" in message for _, message in u2)


def test_without_a_model_the_prompts_are_direct_commands(make_stack, sample) -> None:
    stack = make_stack(model=None, common_questions=["What changed in the last hour?"])
    stack.event(home_opened("U1", "messages"))
    assert stack.slack.wait_for(lambda: stack.slack.suggested_prompts("D1"), 10)
    messages = [p["message"] for p in stack.slack.suggested_prompts("D1")[0]["prompts"]]
    assert messages == [
        "logs auth ERROR",
        "runbook show config-drift",
        "logs checkout ERROR",
        "runbook show disk-filling",
    ]


def test_a_workspace_that_refuses_suggested_prompts_is_not_asked_again(make_stack, caplog) -> None:
    stack = make_stack(echo())
    stack.slack.fail("assistant.threads.setSuggestedPrompts", status=200, error="unknown_method")
    stack.event(home_opened("U1", "messages"))
    assert until(lambda: "Slack refused suggested prompts (unknown_method)" in caplog.text, 10)
    stack.event(home_opened("U2", "messages", channel="D2"))
    stack.built.notices.shutdown(wait=True)  # the second event's work done
    assert len(stack.slack.calls("assistant.threads.setSuggestedPrompts")) == 1
    assert stack.slack.suggested_prompts("D1") == stack.slack.suggested_prompts("D2") == []


# The Home tab.


def test_two_people_see_what_each_may_see_and_decide(make_stack, sample) -> None:
    stack = make_stack(echo(), policy=team_policy(sample.policy), groups={})
    stack.command("run restart service=checkout", key="restart")  # U1 asks; U2 approves
    stack.command("run rotate-keys", key="rotate", user="U2")  # U3 approves
    assert stack.slack.wait_for(lambda: len(requests_posted(stack)) == 2, 10)
    question = payloads.app_mention(f"<@UBOT> why is <!channel> checkout slow? key {KEY}")
    stack.event(question)
    answered(stack, "C1", question["ts"])

    mine, theirs = open_home(stack, "U1"), open_home(stack, "U2")

    assert "Nothing waits for you" in shown(mine), "the asker of restart may not approve it"
    assert buttons(mine) == []
    [(approve, restart_id), (deny, same)] = buttons(theirs)
    assert (approve, deny) == ("opsbot_approve", "opsbot_deny") and same == restart_id
    assert "would restart %s" in waiting(theirs) and "rotate" not in waiting(theirs), "rotate-keys is U3's to approve"
    assert "open the thread" in waiting(theirs) and "Asked by* <@U1>" in waiting(theirs)

    # U1's own run: its question redacted and escaped, why it stopped, and a link to its thread.
    runs = next(b["text"]["text"] for b in mine["blocks"] if "Your recent runs" in b.get("text", {}).get("text", ""))
    assert "why is &amp;lt;!channel&amp;gt; checkout slow?" not in runs
    assert "&lt;!channel&gt;" in runs and KEY not in runs and "AKIA" not in shown(mine)
    assert "`answered`" in runs and f"p{question['ts'].replace('.', '')}|thread>" in runs
    assert "why is" not in shown(theirs), "U2 sees their own runs only"

    def listed(view: dict[str, Any], title: str) -> str:
        return next(b["text"]["text"] for b in view["blocks"] if title in b.get("text", {}).get("text", ""))

    assert "`auth`" not in listed(mine, "Services") and "`auth`" in listed(theirs, "Services")
    assert "`payments` payments, charges cards; owns the ledger database (in <#C9> only)" in listed(mine, "Services")
    assert "`config-drift`" in listed(mine, "Runbooks") and "`service-erroring`" in listed(mine, "Runbooks")
    assert "`rotate-keys`" in listed(mine, "Commands") and "asks for approval" in listed(mine, "Commands")
    assert "✅ Redis: answers" in shown(mine)


def test_approving_on_the_home_tab_decides_through_the_approvals_service(make_stack, sample) -> None:
    from tests.test_slack import restart_then_echo

    stack = make_stack(restart_then_echo(), policy=approvers_policy(sample.policy))
    mention, message = restart_asked(stack, "<@UBOT> restart checkout please")
    rid = request_id(message)
    assert buttons(open_home(stack, "U2")) == [("opsbot_approve", rid), ("opsbot_deny", rid)]

    click_at_home(stack, "opsbot_approve", rid, "U2")
    answers = answered(stack, "C1", mention["ts"], count=2)

    # The thread is told as when its own button is clicked: buttons replaced, the result, the model going on.
    updated = next(m for m in stack.slack.messages("C1", mention["ts"]) if m["ts"] == message["ts"])
    assert "Approved by <@U2>" in updated["text"]
    assert not any(b.get("block_id") == "opsbot_approval" for b in updated["blocks"])
    [result] = results(stack, "C1", mention["ts"])
    assert "would restart checkout" in json.dumps(result["blocks"])
    assert "approved `restart`; it ran" in answer_text(answers[1])
    # The Home tab again, saying what the click came to, nothing left to decide.
    assert stack.slack.wait_for(lambda: says(stack, "U2", "Approved: it ran."), 5)
    assert buttons(latest(stack, "U2")) == [] and "Nothing waits for you" in shown(latest(stack, "U2"))
    assert stack.slack.ephemerals("C1") == []

    click_at_home(stack, "opsbot_approve", rid, "U2")  # a click on a tab published before the decision
    assert stack.slack.wait_for(lambda: says(stack, "U2", "This request was already decided (approved by U2)."), 5)
    settle(stack)
    assert len(results(stack, "C1", mention["ts"])) == 1, "it ran once"


def test_a_click_the_rule_refuses_is_said_on_the_home_tab_and_decides_nothing(make_stack, sample) -> None:
    stack = make_stack(model=None, policy=approvers_policy(sample.policy))
    stack.command("run restart service=payments", key="run")
    assert stack.slack.wait_for(lambda: requests_posted(stack), 5)
    rid = buttons(open_home(stack, "U2"))[0][1]

    click_at_home(stack, "opsbot_approve", rid, "U3")  # a button value seen elsewhere, clicked by a non-approver
    assert stack.slack.wait_for(lambda: says(stack, "U3", "Nothing was decided: you may not"), 5)
    assert "user U3 is not one of U1, U2" in shown(latest(stack, "U3"))
    assert stack.slack.ephemerals("C1") == [], "said where the click was, not in the channel"
    assert buttons(open_home(stack, "U2")) == [("opsbot_approve", rid), ("opsbot_deny", rid)], "still waits"

    click_at_home(stack, "opsbot_deny", rid, "U2")
    assert stack.slack.wait_for(lambda: says(stack, "U2", "Denied: nothing was run."), 5)
    root = stack.slack.messages("C1")[0]
    assert any("Denied by <@U2>" in m["text"] for m in stack.slack.messages("C1", root["ts"]))
    assert results(stack, "C1", root["ts"]) == []


def test_the_health_section_says_when_the_model_is_down(make_stack) -> None:
    stack = make_stack(echo())
    assert "Model: reachable" in shown(open_home(stack, "U1"))
    assert stack.model is not None
    stack.model.__exit__()
    stack.built.model.ttl_s = 0  # what a tab opened after the next recheck finds
    stack.built.model.check()
    view = open_home(stack, "U1")
    assert "❌ Model: `unreachable`: questions are not answered now; direct commands still work." in shown(view)
    assert "✅ Redis: answers" in shown(view)


def test_a_crowded_home_tab_stays_within_slacks_limits_and_says_what_is_cut(make_stack, sample) -> None:
    base = approvers_policy(sample.policy)
    checkout = sample.policy.services["checkout"]
    services = {
        f"svc-{n:02d}": Service.model_validate({**checkout.model_dump(), "description": f"service {n} " + "x" * 150})
        for n in range(40)
    }
    stack = make_stack(model=None, policy=base.model_copy(update={"services": {**base.services, **services}}))
    for n in range(30):
        stack.command("run restart service=payments", key=f"run{n}")
    assert stack.slack.wait_for(lambda: len(requests_posted(stack)) == 30, 20)

    view = open_home(stack, "U2")  # valid(): at most 100 blocks, every text within its limit
    assert len(view["blocks"]) <= 100
    assert "(30, oldest first)" in shown(view)
    offered = len(buttons(view)) // 2
    assert 15 < offered < 30 and f"{30 - offered} more not shown here" in shown(view)
    services_text = next(b["text"]["text"] for b in view["blocks"] if "Services" in b.get("text", {}).get("text", ""))
    assert "more not shown (a section holds 2,900 characters)" in services_text


def test_a_policys_outside_text_is_escaped_and_redacted_on_the_home_tab(make_stack, sample) -> None:
    services = dict(sample.policy.services)
    services["checkout"] = services["checkout"].model_copy(
        update={"description": f"<!here> checkout <https://evil.example/x|docs> password={KEY}"}
    )
    stack = make_stack(model=None, policy=sample.policy.model_copy(update={"services": services}))
    view = open_home(stack, "U1")
    line = next(
        line
        for b in view["blocks"]
        for line in b.get("text", {}).get("text", "").splitlines()
        if line.startswith("• `checkout`")
    )
    assert "<!here>" not in line and "&lt;!here&gt;" in line
    assert KEY not in line and "<https://evil.example" not in line


@pytest.mark.usefixtures("quick_redis_retries")
def test_with_redis_down_the_home_tab_says_what_it_cannot_read_and_shows_the_rest(own_redis, sample) -> None:
    with SlackApi() as slack:
        stack = Stack(slack, stack_settings(slack, own_redis.url, sample.policy, None), None)
        try:
            own_redis.stop()
            view = open_home(stack, "U1")
            assert "The requests cannot be read now: opsbot's Redis does not answer" in shown(view)
            assert "They cannot be read now" in shown(view), "the runs"
            assert "❌ Redis: does not answer" in shown(view) and "`checkout`" in shown(view)
        finally:
            stack.close()


def test_approvers_limited_to_a_channel_see_the_requests_asked_there(make_stack, sample) -> None:
    restart = sample.policy.commands["restart"].model_dump()
    restart.update(approvers={"users": ["U2"], "channels": ["C1"]}, self_approval=False)
    commands = {**sample.policy.commands, "restart": Command.model_validate(restart)}
    stack = make_stack(model=None, policy=sample.policy.model_copy(update={"commands": commands}))
    stack.command("run restart service=payments", key="here")
    stack.command("run restart service=auth", key="there", channel="C2")
    assert stack.slack.wait_for(lambda: requests_posted(stack) and requests_posted(stack, "C2"), 10)

    view = open_home(stack, "U2")
    assert len(buttons(view)) == 2, "one request: the one asked in #C1, where U2 may decide"
    assert "payments" in waiting(view) and "auth" not in waiting(view)


def test_a_person_of_a_team_opsbot_does_not_serve_gets_no_prompts_and_a_home_tab_saying_so(make_stack, sample) -> None:
    """The App Home of an org-wide install opened from a workspace neither opsbot's own nor in
    `slack.allowed_teams`: nothing of the configuration is shown or suggested, and a click on an
    Approve there decides nothing; the person is told what the intake tells them."""
    stack = make_stack(echo(), policy=team_policy(sample.policy))
    outsider = (
        "opsbot only works for members of its own workspace; ask its maintainers to add your team "
        "to `slack.allowed_teams`."
    )
    assert stack.event(home_opened("U7", "messages", channel="D7"), team="T9").status == 200
    assert stack.event(home_opened("U7", "home"), team="T9").status == 200
    assert stack.slack.wait_for(lambda: len(stack.slack.home_views("U7")) == 1, 10)
    view = latest(stack, "U7")
    assert outsider in shown(view) and "checkout" not in shown(view) and buttons(view) == []
    body = payloads.interactive_body(home_click("opsbot_approve", "r-1", "U7", team="T9"))
    assert stack.dispatch(body, payloads.signed_headers(SECRET, body)).status == 200
    assert stack.slack.wait_for(lambda: len(stack.slack.home_views("U7")) == 2, 10)
    assert outsider in shown(latest(stack, "U7"))
    assert stack.slack.calls("assistant.threads.setSuggestedPrompts") == []
