"""Direct commands: exact forms are commands, everything else is a question."""

from __future__ import annotations

import json

import pytest

from opsbot.bot.commands import NotACommand, Question, decide, parse_command, run_command
from opsbot.config.settings import Settings
from opsbot.tools.executor import ToolCall
from tests.fakes.model_server import Reply


@pytest.mark.parametrize(
    "text, tool, args",
    [
        ("services", "list_services", {}),
        ("logs checkout", "query_logs", {"service": "checkout"}),
        ("logs checkout error", "query_logs", {"service": "checkout", "level": "ERROR"}),
        (
            "LOGS payments WARN pool exhausted",
            "query_logs",
            {"service": "payments", "level": "WARN", "contains": "pool exhausted"},
        ),
        ("logs auth 'bad password'", "query_logs", {"service": "auth", "contains": "bad password"}),
        ("run uptime", "run_command", {"command": "uptime"}),
        ("config payments", "read_config", {"name": "payments"}),
        ("config payments db.primary.pool_size", "read_config", {"name": "payments", "key": "db.primary.pool_size"}),
        # After a directory root, a file in it (then a key); a single-file root's own name may come first.
        ("config checkout checkout.yaml", "read_config", {"name": "checkout", "path": "checkout.yaml"}),
        ("config checkout/checkout.yaml", "read_config", {"name": "checkout", "path": "checkout.yaml"}),
        (
            "config checkout checkout.yaml http.port",
            "read_config",
            {"name": "checkout", "path": "checkout.yaml", "key": "http.port"},
        ),
        ("config payments payments.yaml", "read_config", {"name": "payments", "path": "payments.yaml"}),
        ("runbook list", "list_runbooks", {}),
        ("runbook show disk-filling", "read_runbook", {"name": "disk-filling"}),
    ],
)
def test_exact_forms_are_tool_calls(sample: Settings, text, tool, args):
    parsed = parse_command(sample.policy, text)
    assert isinstance(parsed, ToolCall) and parsed.name == tool and json.loads(parsed.arguments) == args


@pytest.mark.parametrize(
    "text",
    [
        "why is checkout throwing 502s?",
        "what changed in payments yesterday",
        "",
        "   ",
        "loggers are noisy",
    ],
)
def test_questions_are_not_commands(sample: Settings, text):
    assert parse_command(sample.policy, text) is None


@pytest.mark.parametrize(
    "text",
    [
        "reset of payments at 3am broke checkout?",
        "help me find why checkout 502s",
        "services are down, what now",
        "logs show 502s for checkout",
        "logs",
        "run rm -rf /",
        "run uptime now",
        "config isn't loading",
        "config nginx",
        "config payments db extra",
        "config checkout checkout.yaml http.port extra",
    ],
)
def test_text_that_only_starts_like_a_command_is_not_one(sample: Settings, text):
    assert isinstance(parse_command(sample.policy, text), NotACommand)


def test_reset_and_help_alone_are_commands(sample: Settings):
    assert parse_command(sample.policy, "reset") == "reset"
    assert parse_command(sample.policy, " HELP ") == "help"


def test_a_question_starting_with_reset_goes_to_the_model_and_keeps_the_thread(
    model_server, make_agent, memory, sample
):
    server = model_server(lambda body: Reply(content="answered"))
    agent = make_agent(server)
    agent.run("first question", thread="t")
    text = "reset of payments at 3am broke checkout?"
    assert isinstance(decide(sample.policy, text, can_ask=agent.model is not None), Question), (
        "with a model, it is a question"
    )
    agent.run(text, thread="t")
    users = [m.content for b in memory.load("t", new_turn=False).blocks for m in b.messages if m.role == "user"]
    assert users == ["first question", text]


def test_reset_forgets_the_thread(model_server, make_agent, memory):
    server = model_server(lambda body: Reply(content="answered"))
    agent = make_agent(server)
    agent.run("first question", thread="t")
    output = run_command(agent, "reset", "t")
    assert output.ok and memory.load("t", new_turn=False).blocks == []


def test_reset_with_redis_down_says_so(own_redis, model_server, sample):
    from opsbot.bot.agent import Agent
    from opsbot.bot.llm import ModelClient
    from opsbot.bot.memory.redis import RedisMemory
    from opsbot.config.settings import MemorySettings

    server = model_server(lambda body: Reply(content="answered"))
    agent = Agent(
        model=ModelClient(model="m", base_url=server.base_url, max_retries=0),
        memory=RedisMemory(own_redis.url),
        tools=[],
        memory_settings=MemorySettings(lock_wait_s=0.2),
    )
    assert run_command(agent, "reset", "t").ok  # Redis answered once: its going away is a restart
    own_redis.stop()
    output = run_command(agent, "reset", "t")
    assert not output.ok and "memory failed" in output.text and "Redis" in output.text
    assert "ask again in a moment" in output.text


def test_a_write_command_in_the_terminal_says_where_approvals_happen(model_server, make_agent, sample):
    from opsbot.config.policy import Principal

    agent = make_agent(model_server(lambda body: Reply(content="unused")))
    parsed = parse_command(sample.policy, "run restart service=checkout")
    output = run_command(agent, parsed, "t", Principal(platform="cli", user="ops"))
    assert not output.ok
    assert "`restart` changes things, so it needs a person's approval" in output.text
    assert "in Slack, or in `opsbot chat`" in output.text
    assert "do not call it again" not in output.text and "tell the user" not in output.text


def test_a_denied_direct_command_says_who_may_and_no_model_hints(sample):
    from opsbot.bot.commands import render_result
    from opsbot.config.policy import Command, Policy, Principal
    from opsbot.tools.commands import RunCommandArgs, run_command_tool

    policy = Policy(commands={"uptime": Command(description="u", argv=["uptime"], access={"groups": ["oncall"]})})
    tool = run_command_tool(policy)
    result = tool.run(RunCommandArgs(command="uptime"), Principal(platform="cli", user="ops"))
    text = render_result(result, Principal(platform="cli", user="ops"))
    assert "a group among oncall" in text and "ask one of them" in text
    assert "tell the user" not in text and "do not try" not in text


def test_model_facing_parts_of_other_hints_are_left_out():
    from opsbot.bot.commands import render_result
    from opsbot.tools.base import ErrorType, ToolResult

    result = ToolResult.failure(ErrorType.unavailable, "x is not installed", hint="tell the user; try df instead")
    assert render_result(result).splitlines() == ["✗ unavailable: x is not installed", "  try df instead"]


def test_runbook_commands_show_runbooks_to_people(sample: Settings, model_server, make_agent) -> None:
    agent = make_agent(model_server(lambda body: Reply(content="unused")))
    listed = run_command(agent, parse_command(sample.policy, "runbook list"), "t")
    assert listed.ok and "disk-filling: a filesystem is filling up" in listed.text
    shown = run_command(agent, parse_command(sample.policy, "runbook show config-drift"), "t")
    assert shown.ok and "tool: read_config" in shown.text and "key: db.primary.pool_size" in shown.text
    for text in ("runbook show nope", "runbook", "runbook delete disk-filling"):
        parsed = parse_command(sample.policy, text)
        assert isinstance(parsed, NotACommand) and "runbook list | runbook show <id>" in parsed.why


@pytest.mark.parametrize(
    "text, can_ask",
    [
        ("logs checkout ERROR", True),
        ("help", True),
        ("reset", False),
        ("help me find it", True),
        ("logs show 502s", False),
        ("runbook run disk-filling path=/var", True),
        ("why is checkout slow?", True),
    ],
)
def test_a_decision_comes_back_as_it_was_from_the_slack_job_it_travels_in(sample: Settings, text, can_ask):
    from opsbot.bot.slack.jobs import Job, ThreadRef

    decision = decide(sample.policy, text, can_ask)
    job = Job(
        id="j", thread=ThreadRef(team="T1", channel="C1", thread_ts="1.0"), user="U1", text=text, decision=decision
    )
    stored = Job.model_validate_json(job.model_dump_json()).decision
    assert type(stored) is type(decision) and stored == decision
