"""The tool contract (tools/base.py), the executor (tools/executor.py) and the ops tools on the sample."""

from __future__ import annotations

import dataclasses
import json
import os
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Literal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from opsbot.config.policy import ConfigFile, Policy
from opsbot.config.settings import SAMPLE_CONFIG, Settings
from opsbot.tools.base import ErrorType, Registry, Tool, ToolResult, from_function
from opsbot.tools.catalog import ops_tools
from opsbot.tools.executor import Executor, Outcome, RetryPolicy, ToolCall

SAMPLE_DIR = SAMPLE_CONFIG.parent
FAST = RetryPolicy(timeout_s=10, retries=0, backoff_s=0.01)


def call(executor: Executor, name: str, arguments: str | dict[str, object] = "{}") -> Outcome:
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return executor.run_one(ToolCall(id=f"call-{uuid.uuid4().hex[:6]}", name=name, arguments=raw))


def executor_for(*tools: object, retry: RetryPolicy = FAST, max_parallel: int = 4) -> Executor:
    return Executor(Registry(tools), retry, max_parallel)  # type: ignore[arg-type]


# ================================================================ tools/base.py: from_function, Registry


def disk_free(mount: str, top: int = 5, unit: Literal["G", "M"] = "G", human: bool = True) -> str:
    """Free space on one mount point of the app hosts.

    Shows the biggest directories too.
    """
    return f"{mount} {top} {unit} {human}"


def test_from_function_builds_schema_from_hints_docstring_and_defaults() -> None:
    schema = from_function(disk_free).schema()

    function = schema["function"]
    assert schema["type"] == "function"
    assert function["name"] == "disk_free"
    assert (
        function["description"]
        == "Free space on one mount point of the app hosts.\n\nShows the biggest directories too."
    )
    params = function["parameters"]
    assert params["type"] == "object"
    assert set(params["properties"]) == {"mount", "top", "unit", "human"}
    assert params["required"] == ["mount"]
    assert params["properties"]["mount"]["type"] == "string"
    assert params["properties"]["top"] == {"default": 5, "title": "Top", "type": "integer"}
    assert params["properties"]["unit"]["enum"] == ["G", "M"]
    assert params["properties"]["unit"]["default"] == "G"
    assert params["properties"]["human"]["default"] is True
    assert params.get("additionalProperties") is False  # the model cannot invent arguments


def test_from_function_tool_runs_with_defaults_filled_in() -> None:
    outcome = call(executor_for(disk_free), "disk_free", {"mount": "/var"})
    assert outcome.result.ok
    assert outcome.result.data == "/var 5 G True"


def test_from_function_accepts_a_custom_name() -> None:
    assert from_function(disk_free, name="df").schema()["function"]["name"] == "df"


def test_function_without_type_hints_is_refused_clearly() -> None:
    def grep_logs(service, pattern: str) -> str:  # type: ignore[no-untyped-def]
        return ""

    with pytest.raises(TypeError, match=r"grep_logs.*'service'.*type hint"):
        from_function(grep_logs)
    with pytest.raises(TypeError, match="type hint"):
        Registry([grep_logs])


def test_function_with_star_args_is_refused() -> None:
    def anything(*args: str) -> str:
        return ""

    with pytest.raises(TypeError, match=r"\*args"):
        from_function(anything)


def test_duplicate_tool_names_are_refused() -> None:
    def uptime() -> str:
        """Uptime."""
        return "up"

    registry = Registry([uptime])
    with pytest.raises(ValueError, match="uptime"):
        registry.add(from_function(disk_free, name="uptime"))
    with pytest.raises(ValueError, match="uptime"):
        Registry([uptime, uptime])
    assert registry.names == ["uptime"]


def test_registry_lists_names_and_schemas_sorted() -> None:
    def zeta() -> str:
        """Z."""
        return ""

    registry = Registry([zeta, disk_free])
    assert registry.names == ["disk_free", "zeta"]
    assert [s["function"]["name"] for s in registry.schemas()] == ["disk_free", "zeta"]
    assert len(registry) == 2


def test_tools_given_later_are_made_only_when_the_whole_set_or_a_name_the_others_lack_is_asked_for() -> None:
    """An MCP server's tools come later: a direct command by a known name must not start it, and
    one by a later tool's name asks for that name (one server's tools), the rest when all are needed."""

    def zeta() -> str:
        """Z."""
        return ""

    def omega() -> str:
        """O."""
        return ""

    asked: list[str | None] = []

    def later(name: str | None) -> list[Tool[Any]]:
        given = [tool for tool in (zeta, omega) if tool.__name__ not in made and name in (None, tool.__name__)]
        asked.append(name)
        made.update(tool.__name__ for tool in given)
        return [from_function(tool) for tool in given]

    made: set[str] = set()
    registry = Registry([disk_free], later=later)
    assert registry.get("disk_free") is not None and asked == []
    assert registry.get("zeta") is not None and asked == ["zeta"] and made == {"zeta"}
    assert registry.names == ["disk_free", "omega", "zeta"] and len(registry) == 3 and asked == ["zeta", None]
    assert registry.get("nosuch") is None and asked == ["zeta", None], "the whole set is known: nothing more to ask"
    made.clear()
    assert Registry([disk_free], later=later).names == ["disk_free", "omega", "zeta"] and asked[-1] is None


# ================================================================ tools/base.py: ToolResult.capped


def numbered_lines(count: int) -> str:
    return "\n".join(f"line {n:05d} of the log" for n in range(1, count + 1))


def test_capped_leaves_a_small_result_alone() -> None:
    result = ToolResult.success("short")
    assert result.capped(1000) is result or result.capped(1000) == result


def test_capped_keeps_head_and_tail_and_states_the_cut() -> None:
    text = numbered_lines(2000)
    capped = ToolResult.success(text).capped(2000)

    rendered = capped.render()
    assert len(rendered) <= 2000
    parsed = json.loads(rendered)
    assert parsed["ok"] is True
    assert "line 00001 of the log" in parsed["data"]  # head kept
    assert "line 02000 of the log" in parsed["data"]  # tail (the newest lines) kept
    assert "line 01000 of the log" not in parsed["data"]  # the middle is gone
    assert "cut" in parsed["data"]  # said where it happened
    assert capped.truncated and "cut" in capped.truncated and f"{len(text):,}" in capped.truncated


def test_capped_error_result_keeps_its_error() -> None:
    result = ToolResult.failure(ErrorType.failed, "boom", hint="try x", data="y" * 10_000).capped(1000)
    assert result.error is not None and result.error.message == "boom"
    assert len(result.render()) <= 1000


def test_capped_real_query_logs_result_fits_its_budget() -> None:
    # A dict result (query_logs: service, summary, lines) is the common case; its lines are full
    # of quotes and newlines, which JSON escapes again once the dict is turned into a string.
    executor = executor_for(*ops_tools(Settings.load(SAMPLE_CONFIG).policy))
    result = call(executor, "query_logs", {"service": "checkout", "limit": 500}).result
    assert result.ok
    for budget in (1000, 2000, 4000):  # 4000 = the default max_result_tokens 1000 x 4 chars
        rendered = result.capped(budget).render()
        data = json.loads(rendered)["data"]
        assert len(rendered) <= budget + 16, f"budget {budget}, rendered {len(rendered)}"
        assert data["service"] == "checkout" and "matching line" in data["summary"], "other fields keep their shape"
        assert data["lines"].endswith(result.data["lines"][-40:]), "the newest lines survive the cut"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    piece=st.text(min_size=1, max_size=300),
    repeat=st.integers(min_value=1, max_value=200),
    budget=st.integers(min_value=300, max_value=6_000),
)
def test_capped_property_renders_within_budget_as_valid_json(piece: str, repeat: int, budget: int) -> None:
    """For any text and budget (>= what max_result_tokens allows), the result fits and stays JSON."""
    text = piece * repeat  # hypothesis alone rarely draws texts longer than the budget
    rendered = ToolResult.success(text).capped(budget).render()
    assert len(rendered) <= budget + 16, f"budget {budget}, rendered {len(rendered)}"
    parsed = json.loads(rendered)
    assert parsed["ok"] is True


# ================================================================ tools/executor.py


class Counter:
    """A tool with only optional arguments: running it with {} would 'work', which must not happen."""

    def __init__(self) -> None:
        self.calls: list[dict[str, object]] = []

    def tool(self) -> Tool:
        def lookup(service: str = "checkout", limit: int = 10) -> str:
            """Look something up."""
            self.calls.append({"service": service, "limit": limit})
            return "looked up"

        return from_function(lookup)


def test_unknown_tool_lists_the_real_tools() -> None:
    outcome = call(executor_for(disk_free, Counter().tool()), "disk_usage", {"mount": "/"})
    result = outcome.result
    assert result.status == "unknown_tool"
    assert "disk_usage" in result.error.message
    assert "disk_free" in result.error.hint and "lookup" in result.error.hint
    assert outcome.attempts == 0


@pytest.mark.parametrize("raw", ['{"service": "check', '{"service": "checkout", "limit": 5', "service=checkout"])
def test_invalid_json_is_reported_with_its_position_and_never_run(raw: str) -> None:
    counter = Counter()
    outcome = call(executor_for(counter.tool()), "lookup", raw)

    assert outcome.result.status == "invalid_args"
    try:
        json.loads(raw)
    except json.JSONDecodeError as exc:
        position = exc.pos
    assert f"character {position}" in outcome.result.error.message
    assert "lookup" in outcome.result.error.hint
    assert counter.calls == []  # never silently run with {}


def test_arguments_that_are_not_an_object_are_refused() -> None:
    counter = Counter()
    outcome = call(executor_for(counter.tool()), "lookup", '["checkout"]')
    assert outcome.result.status == "invalid_args"
    assert counter.calls == []


def test_schema_failure_names_every_bad_field() -> None:
    outcome = call(executor_for(disk_free), "disk_free", {"top": "many", "unit": "T", "colour": "red"})
    result = outcome.result
    assert result.status == "invalid_args"
    message = result.error.message
    assert "mount: Field required" in message
    assert "top:" in message and "integer" in message
    assert "unit:" in message and "'G' or 'M'" in message
    assert "colour:" in message
    assert "required: mount" in result.error.hint


def test_a_raising_tool_becomes_failed_with_a_hint() -> None:
    def broken(service: str) -> str:
        """Breaks."""
        raise KeyError(f"no shard for {service}")

    outcome = call(executor_for(broken), "broken", {"service": "checkout"})
    result = outcome.result
    assert result.status == "failed"
    assert "KeyError" in result.error.message and "no shard for checkout" in result.error.message
    assert result.error.hint
    assert not result.error.retryable
    assert outcome.attempts == 1  # a fault in the tool is not retried


def test_connection_errors_are_retried_until_success() -> None:
    attempts: list[float] = []

    def flaky(service: str) -> str:
        """Flaky backend."""
        attempts.append(time.monotonic())
        if len(attempts) < 3:
            raise ConnectionError("connection reset by peer")
        return f"{service}: fine"

    outcome = call(
        executor_for(flaky, retry=RetryPolicy(timeout_s=5, retries=2, backoff_s=0.01)), "flaky", {"service": "x"}
    )
    assert outcome.result.ok and outcome.result.data == "x: fine"
    assert outcome.attempts == 3


def test_connection_errors_give_up_as_unavailable() -> None:
    def down() -> str:
        """Down."""
        raise ConnectionError("connection refused")

    outcome = call(executor_for(down, retry=RetryPolicy(timeout_s=5, retries=2, backoff_s=0.01)), "down")
    assert outcome.result.status == "unavailable"
    assert outcome.result.error.retryable
    assert outcome.attempts == 3


def test_a_hung_tool_times_out_after_its_retries() -> None:
    release = threading.Event()
    started: list[float] = []

    def hang() -> str:
        """Hangs."""
        started.append(time.monotonic())
        release.wait(10)
        return "too late"

    try:
        begun = time.monotonic()
        outcome = call(executor_for(hang, retry=RetryPolicy(timeout_s=0.2, retries=1, backoff_s=0.01)), "hang")
        elapsed = time.monotonic() - begun
    finally:
        release.set()
    assert outcome.result.status == "timeout"
    assert "0.2s" in outcome.result.error.message
    assert "time range" not in outcome.result.error.hint  # only query_logs has time ranges
    assert outcome.attempts == 2
    assert len(started) == 2
    assert elapsed < 1.0


def test_a_ceiling_cuts_a_tools_own_longer_timeout() -> None:
    release = threading.Event()

    def slow() -> str:
        """Slow."""
        release.wait(10)
        return "too late"

    tool = dataclasses.replace(from_function(slow), timeout_s=30.0)  # a tool with its own, longer deadline
    try:
        begun = time.monotonic()
        retry = RetryPolicy(timeout_s=30, retries=0, backoff_s=0.01, ceiling_s=0.2)
        outcome = Executor(Registry([tool]), retry).run_one(ToolCall("1", "slow", "{}"))
        elapsed = time.monotonic() - begun
    finally:
        release.set()
    assert outcome.result.status == "timeout" and elapsed < 1.0, "a runbook step's timeout_s wins"


def test_run_many_runs_concurrently_and_keeps_call_order() -> None:
    together = threading.Barrier(4, timeout=5)  # broken, and every call failed, unless all four run at once
    finished: list[str] = []
    done = [threading.Event() for _ in range(4)]

    def nap(n: int) -> str:
        """Waits for the others."""
        together.wait()
        if n + 1 < len(done):
            done[n + 1].wait(5)  # each call ends after the next one: the first call finishes last
        finished.append(f"t{n}")
        done[n].set()
        return f"t{n}"

    executor = executor_for(nap, max_parallel=4)
    # Order must follow the calls, not completion.
    calls = [ToolCall(f"c{i}", "nap", json.dumps({"n": i})) for i in range(4)]
    outcomes = executor.run_many(calls)

    assert finished == ["t3", "t2", "t1", "t0"], [o.result for o in outcomes]
    assert [o.call.id for o in outcomes] == ["c0", "c1", "c2", "c3"]
    assert [o.result.data for o in outcomes] == ["t0", "t1", "t2", "t3"]


SECRETS = {
    "password=hunter2": "hunter2",
    "DATABASE_URL=postgres://u:pa55!@h/db": "pa55!",
    "Authorization: Bearer abc.def": "abc.def",
    "slack token xoxb-123456789012-abcdefghijkl": "xoxb-123456789012-abcdefghijkl",
    "aws key AKIAIOSFODNN7EXAMPLE in env": "AKIAIOSFODNN7EXAMPLE",
    'api_key: "s3cr3t-value"': "s3cr3t-value",
}


@pytest.mark.parametrize("line", list(SECRETS))
def test_secrets_in_tool_output_are_redacted(line: str) -> None:
    def leaky() -> dict[str, object]:
        """Leaks."""
        return {"lines": f"2026-11-29 INFO boot {line}", "nested": [{"env": line}]}

    outcome = call(executor_for(leaky), "leaky")
    rendered = outcome.result.render()
    assert SECRETS[line] not in rendered
    assert "[REDACTED:" in rendered
    assert "2026-11-29 INFO boot" in rendered  # the rest of the line stays readable


def test_secrets_in_error_messages_are_redacted() -> None:
    def leaky_failure() -> str:
        """Fails loudly."""
        raise RuntimeError("could not connect to postgres://admin:hunter2@db.internal/ledger")

    outcome = call(executor_for(leaky_failure), "leaky_failure")
    assert outcome.result.status == "failed"
    assert "hunter2" not in outcome.result.render()
    assert "db.internal/ledger" in outcome.result.error.message


# ================================================================ ops tools on the sample environment


@pytest.fixture(scope="module")
def ops() -> Executor:
    return Executor(Registry(ops_tools(Settings.load(SAMPLE_CONFIG).policy)), FAST)


def test_read_config_whole_file(ops: Executor) -> None:
    result = call(ops, "read_config", {"name": "payments"}).result
    assert result.ok
    assert result.data["content"] == (SAMPLE_DIR / "configs" / "payments.yaml").read_text()


def test_read_config_dotted_key(ops: Executor) -> None:
    result = call(ops, "read_config", {"name": "payments", "key": "db.primary.pool_size"}).result
    assert result.ok
    assert result.data["value"] == 5


def test_read_config_missing_key_lists_the_keys_at_that_level(ops: Executor) -> None:
    result = call(ops, "read_config", {"name": "payments", "key": "db.primary.max_connections"}).result
    assert result.status == "not_found"
    assert "max_connections" in result.error.message
    assert result.error.hint == "keys at that level: host, pool_size, pool_timeout_ms, port"


def test_read_config_unknown_file_lists_the_files(ops: Executor) -> None:
    result = call(ops, "read_config", {"name": "inventory"}).result
    assert result.status == "not_found"
    assert "checkout, payments" in result.error.hint


def _config_executor(path: Path) -> Executor:
    policy = Policy(config_files={"app": ConfigFile(path=path)})
    return Executor(Registry(ops_tools(policy)), RetryPolicy(timeout_s=3, retries=0))


def test_read_config_refuses_a_symlink_swapped_in(tmp_path: Path) -> None:
    target = tmp_path / "shadow.yaml"
    target.write_text("db:\n  host: shadow-host-not-for-you\n")
    declared = tmp_path / "app.yaml"
    declared.symlink_to(target)

    result = call(_config_executor(declared), "read_config", {"name": "app"}).result

    assert not result.ok
    assert result.status in ("denied", "unavailable")
    assert "shadow-host-not-for-you" not in result.render()
    assert "symbolic link" in result.error.message


def test_read_config_refuses_a_fifo_without_hanging(tmp_path: Path) -> None:
    declared = tmp_path / "app.yaml"
    os.mkfifo(declared)

    begun = time.monotonic()
    result = call(_config_executor(declared), "read_config", {"name": "app"}).result

    assert time.monotonic() - begun < 1
    assert result.status == "denied", result
    assert "not a regular file" in result.error.message


def test_services_whose_names_look_secret_keep_their_descriptions() -> None:
    from opsbot.config.policy import Policy, Service
    from opsbot.tools.base import Registry
    from opsbot.tools.executor import Executor, ToolCall
    from opsbot.tools.services import list_services_tool

    policy = Policy(
        services={
            name: Service(description=f"{name} service, issues session tokens", logs=[Path("/dev/null")])
            for name in ("auth", "secrets", "token-service", "password-reset")
        }
    )
    executor = Executor(Registry([list_services_tool(policy)]))
    listed = executor.run_one(ToolCall("1", "list_services", "{}")).result.data["services"]
    assert {e["name"]: e["about"] for e in listed} == {
        name: f"{name} service, issues session tokens"
        for name in ("auth", "secrets", "token-service", "password-reset")
    }


def test_every_error_type_is_a_call_status_of_the_same_word() -> None:
    from opsbot.tools.base import CallStatus

    assert [status.value for status in CallStatus] == ["ok", *(error.value for error in ErrorType)]
    assert ToolResult.failure(ErrorType.denied, "no").status is CallStatus.denied
