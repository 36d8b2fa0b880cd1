"""The audit trail: one JSON record per tool call, approval and write command, on its own logger
and in Redis for `audit.ttl_s`, read back by `opsbot audit`; arguments redacted before they are
recorded; a Redis that is down loses no work."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from opsbot.bot.cli import main
from opsbot.bot.telemetry.audit import STREAM, AuditRecord, LoggedAudit, RedisAudit
from tests.fakes.redis_server import RedisServer
from tests.fakes.waiting import until

# AWS's documented example key, and a GitHub token shape from gitleaks' rules: both must be hidden.
AWS_KEY = "AKIAIOSFODNN7EXAMPLE"
GITHUB_TOKEN = "ghp_" + "K" * 36


def call(thread: str, tool: str = "query_logs", **args: object) -> AuditRecord:
    return AuditRecord.made("tool_call", who="slack:U1", thread=thread, tool=tool, args=args, status="ok")


@pytest.fixture
def audit(redis_server: RedisServer) -> RedisAudit:
    redis_server.flush()
    return RedisAudit(redis_server.client(), ttl_s=3600)


def test_records_are_read_back_oldest_first_by_thread_and_since(audit: RedisAudit) -> None:
    for n in range(3):
        audit.record(call("slack:T1:C1:1.1", service=f"s{n}"))
    audit.record(call("slack:T1:C2:2.2", service="other"))
    assert [r.args["service"] for r in audit.read()] == ["s0", "s1", "s2", "other"]
    assert [r.args["service"] for r in audit.read(thread="slack:T1:C2:2.2")] == ["other"]
    assert list(audit.read(since=time.time() + 60)) == []


def test_arguments_and_argv_are_redacted_before_they_are_recorded(
    audit: RedisAudit, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="opsbot.audit")
    audit.record(call("t", tool="query_logs", contains=f"aws_access_key_id={AWS_KEY}"))
    audit.record(AuditRecord.made("write_run", who="slack:U2", argv=["deploy", f"--token={GITHUB_TOKEN}"]))
    kept = json.dumps([r.model_dump(mode="json") for r in audit.read()])
    logged = " ".join(r.getMessage() for r in caplog.records)
    for text in (kept, logged):
        assert AWS_KEY not in text and GITHUB_TOKEN not in text
        assert "aws_access_key_id=" in text and "--token=" in text  # what was done stays readable


def test_each_record_is_one_json_line_on_its_own_logger(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="opsbot.audit")
    LoggedAudit().record(call("t", service="checkout"))
    [line] = [r for r in caplog.records if r.name == "opsbot.audit"]
    record = json.loads(line.getMessage())
    assert record["kind"] == "tool_call" and record["args"] == {"service": "checkout"} and record["status"] == "ok"


def test_records_older_than_the_ttl_are_trimmed_as_new_ones_come(redis_server: RedisServer) -> None:
    redis_server.flush()
    client = redis_server.client()
    RedisAudit(client, ttl_s=3600).record(call("t", service="old"))
    [(old_id, _)] = client.xrange(STREAM)
    old_ms = int(str(old_id).split("-")[0])

    def server_ms() -> int:
        seconds, micros = client.time()
        return int(seconds) * 1000 + int(micros) // 1000

    assert until(lambda: server_ms() > old_ms)  # the next record's id is of a later millisecond
    a_ttl_later = RedisAudit(redis_server.client(), ttl_s=3600, clock=lambda: time.time() + 3600)
    a_ttl_later.record(call("t", service="new"))
    assert [r.args["service"] for r in a_ttl_later.read()] == ["new"]
    assert 0 < redis_server.client().pttl(STREAM) <= 3600 * 1000


def test_a_redis_that_is_down_costs_the_record_in_redis_only(
    own_redis: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    audit = RedisAudit(own_redis.client(), ttl_s=3600)
    own_redis.stop()
    caplog.set_level(logging.INFO, logger="opsbot.audit")
    audit.record(call("t", service="checkout"))  # does not raise: the work it records goes on
    messages = [r.getMessage() for r in caplog.records]
    assert any('"service":"checkout"' in m for m in messages)
    assert any("audit record not kept in Redis (it is in this log)" in m for m in messages)


# ---------------------------------------------------------------- opsbot audit


def audit_cli(*args: str, redis_url: str | None, stream: str = "stdout") -> tuple[int, str]:
    """The exit code and what `opsbot audit` printed on `stream` (stdout, or everything)."""
    env = {"REDIS_URL": redis_url, "OPENAI_API_KEY": None, "OPENAI_BASE_URL": None}
    done = CliRunner().invoke(main, ["audit", *args], env=env)
    return done.exit_code, done.stdout if stream == "stdout" else done.output


def test_opsbot_audit_prints_a_line_per_record_or_json(audit: RedisAudit, redis_server: RedisServer) -> None:
    audit.record(call("slack:T1:C1:1.1", service="checkout"))
    audit.record(
        AuditRecord.made("approval_decided", who="slack:U2", thread="slack:T1:C1:1.1", request="r1", status="approved")
    )
    audit.record(call("slack:T1:C9:9.9", service="payments"))
    code, out = audit_cli("--since", "1h", "--thread", "slack:T1:C1:1.1", redis_url=redis_server.url)
    lines = [line for line in out.splitlines() if line.strip()]
    assert code == 0 and len(lines) == 2, out
    assert 'tool_call slack:U1 thread=slack:T1:C1:1.1 query_logs({"service": "checkout"}) -> ok' in lines[0]
    assert "approval_decided slack:U2" in lines[1] and "request=r1 -> approved" in lines[1]
    code, out = audit_cli("--json", redis_url=redis_server.url)
    assert code == 0 and [json.loads(line)["kind"] for line in out.splitlines()] == [
        "tool_call",
        "approval_decided",
        "tool_call",
    ]


def test_opsbot_audit_says_what_is_wrong(redis_server: RedisServer, tmp_path: Path) -> None:
    code, out = audit_cli(redis_url=None, stream="all")
    assert code == 2 and "set REDIS_URL" in out and "Traceback" not in out
    code, out = audit_cli("--since", "yesterday-ish", redis_url=redis_server.url, stream="all")
    assert code == 2 and "--since" in out and "15m, 2h, 1d" in out
    code, out = audit_cli(redis_url="redis://127.0.0.1:1/0", stream="all")
    assert code == 1 and "Cannot read the audit trail" in out and "Traceback" not in out
    redis_server.flush()
    code, out = audit_cli("--since", "1h", redis_url=redis_server.url, stream="all")
    assert code == 0 and "No audit records since 1h" in out


def test_a_line_says_what_was_asked_without_empty_parts() -> None:
    asked = AuditRecord.made(
        "approval_requested",
        who="cli:alice",
        thread="cli:default",
        tool="restart",
        argv=["printf", "x y"],
        request="r9",
    )
    assert asked.line().endswith("approval_requested cli:alice thread=cli:default restart printf 'x y' request=r9")


# ---------------------------------------------------------------- opsbot audit --feedback


def verdict(who: str, run: str, status: str, thread: str = "slack:T1:C1:1.1") -> AuditRecord:
    link = "https://slack.com/archives/C1/p11"
    return AuditRecord.made("feedback", who=who, thread=thread, run=run, status=status, link=link)


def test_opsbot_audit_feedback_lists_each_persons_standing_negative_verdict_newest_first(
    audit: RedisAudit, redis_server: RedisServer
) -> None:
    audit.record(verdict("slack:U5", "aaaaaaaaaaaa", "negative"))
    audit.record(verdict("slack:U6", "aaaaaaaaaaaa", "negative"))
    audit.record(verdict("slack:U7", "bbbbbbbbbbbb", "negative", thread="slack:T1:C2:2.2"))
    audit.record(verdict("slack:U6", "aaaaaaaaaaaa", "positive"))  # U6 changed their mind
    audit.record(verdict("slack:U8", "bbbbbbbbbbbb", "positive"))
    audit.record(call("slack:T1:C1:1.1", service="checkout"))
    code, out = audit_cli("--feedback", redis_url=redis_server.url)
    assert code == 0 and [line.split(" ", 1)[1] for line in out.splitlines()] == [
        "feedback slack:U7 thread=slack:T1:C2:2.2 run=bbbbbbbbbbbb -> negative https://slack.com/archives/C1/p11",
        "feedback slack:U5 thread=slack:T1:C1:1.1 run=aaaaaaaaaaaa -> negative https://slack.com/archives/C1/p11",
    ], out
    code, out = audit_cli("--feedback", "--json", "--thread", "slack:T1:C1:1.1", redis_url=redis_server.url)
    assert code == 0 and [json.loads(line)["who"] for line in out.splitlines()] == ["slack:U5"]
    # A mind changed back counts as it stands last: listed again, as the newest.
    audit.record(verdict("slack:U6", "aaaaaaaaaaaa", "negative"))
    code, out = audit_cli("--feedback", redis_url=redis_server.url)
    assert [line.split(" ")[2] for line in out.splitlines()] == ["slack:U6", "slack:U7", "slack:U5"]


def test_opsbot_audit_feedback_says_when_redis_is_unreachable_or_nothing_is_recorded(
    audit: RedisAudit, redis_server: RedisServer
) -> None:
    code, out = audit_cli("--feedback", redis_url="redis://127.0.0.1:1/0", stream="all")
    assert code == 1 and "Cannot read the audit trail from" in out and "Traceback" not in out
    audit.record(verdict("slack:U5", "aaaaaaaaaaaa", "positive"))
    code, out = audit_cli("--feedback", "--since", "2h", redis_url=redis_server.url, stream="all")
    assert code == 0 and out.splitlines()[-1] == "No negative feedback since 2h."
