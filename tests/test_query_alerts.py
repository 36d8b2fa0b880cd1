"""query_alerts (tools/alertmanager/) against a real Alertmanager (Debian's prometheus-alertmanager;
skipped without it) holding alerts posted to its API v2, through the executor, as the model sees
the results (redacted, rendered), and as people see them (`show`)."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from opsbot.config.policy import Access, AlertmanagerSource, Policy, Principal
from opsbot.tools.base import ErrorType, Registry, ToolResult
from opsbot.tools.catalog import ops_tools
from opsbot.tools.executor import Executor, RetryPolicy, ToolCall
from tests.fakes.alertmanager_server import alertmanager, installed, send_to_alertmanager
from tests.fakes.redis_server import free_port

pytestmark = pytest.mark.skipif(
    installed() is None,
    reason="Debian's prometheus-alertmanager is not on PATH: apt-get install prometheus-alertmanager",
)
FAST = RetryPolicy(timeout_s=30, retries=0, backoff_s=0.01)
# A GitHub token's shape, built here so no scanner takes this file for a leak.
TOKEN = "ghp_" + "A1b2C3d4" * 4 + "E5f6"
ONCALL = Principal(platform="cli", user="alice", groups=frozenset({"oncall"}))
STRANGER = Principal(platform="cli", user="mallory")
CHECKOUT = [{"alertname": "HighErrorRate", "service": "checkout", "instance": f"checkout-{n}:8080"} for n in range(5)]
OTHERS = [
    {"alertname": "DiskFull", "service": "db", "instance": "db-1", "severity": "critical"},
    {"alertname": "DiskFull", "service": "db", "instance": "db-2", "severity": "warning", "api_token": TOKEN},
]


def silence(url: str, matchers: list[dict[str, Any]], comment: str, hours: float = 1) -> str:
    now = datetime.now(UTC)
    body = {
        "matchers": matchers,
        "startsAt": now.isoformat(),
        "endsAt": (now + timedelta(hours=hours)).isoformat(),
        "createdBy": "bob",
        "comment": comment,
    }
    answer = httpx.post(f"{url}/api/v2/silences", json=body, timeout=5)
    answer.raise_for_status()
    return str(answer.json()["silenceID"])


@pytest.fixture(scope="module")
def am(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real Alertmanager with seven firing alerts, one of them silenced (db-1)."""
    with alertmanager(None, tmp_path_factory.mktemp("alertmanager")) as url:
        assert url is not None
        send_to_alertmanager(url, CHECKOUT + OTHERS)
        silence(url, [{"name": "instance", "value": "db-1", "isRegex": False, "isEqual": True}], "disk swap planned")
        yield url


def executor(url: str, **source: Any) -> Executor:
    policy = Policy(alertmanagers={"main": AlertmanagerSource(url=url, **source)})
    return Executor(Registry(ops_tools(policy)), FAST)


def call(ex: Executor, principal: Principal | None = None, **args: Any) -> ToolResult:
    arguments = json.dumps({"source": "main", **args})
    return ex.run_one(
        ToolCall(id=f"call-{uuid.uuid4().hex[:6]}", name="query_alerts", arguments=arguments), principal
    ).result


def test_firing_alerts_are_filtered_by_matchers_with_their_state_and_summary(am: str) -> None:
    result = call(executor(am), matchers=["alertname=DiskFull"])
    assert result.ok, result
    alerts = {a["labels"]["instance"]: a for a in result.data["alerts"]}
    assert set(alerts) == {"db-1", "db-2"}
    assert alerts["db-1"]["state"] == "suppressed" and alerts["db-1"]["silenced_by"]
    assert alerts["db-2"]["state"] == "active" and alerts["db-2"]["summary"] == "DiskFull on db-2"
    assert result.data["summary"].startswith("2 firing alert(s) matching alertname=DiskFull (1 active, 1 suppressed)")


@pytest.mark.parametrize("matcher", ["instance=db-1", "alertname=DiskFull"])
def test_silences_are_listed_with_id_matchers_end_author_and_comment(am: str, matcher: str) -> None:
    """Named by the matchers, or muting an alert shown (the filter matches only a silence's own labels)."""
    result = call(executor(am), matchers=[matcher])
    [listed] = result.data["silences"]
    assert listed["matchers"] == ["instance=db-1"] and listed["state"] == "active"
    assert listed["created_by"] == "bob" and listed["comment"] == "disk swap planned"
    assert listed["id"] and listed["ends_at"]


def test_silenced_alerts_can_be_left_out(am: str) -> None:
    result = call(executor(am), matchers=["alertname=DiskFull"], silenced=False, list_silences=False)
    assert [a["labels"]["instance"] for a in result.data["alerts"]] == ["db-2"]
    assert "silences" not in result.data


def test_regex_and_negative_matchers_reach_alertmanager(am: str) -> None:
    result = call(executor(am), matchers=['service=~"check.*"', "instance!=checkout-0:8080"])
    assert result.ok, result
    assert sorted(a["labels"]["instance"] for a in result.data["alerts"]) == [f"checkout-{n}:8080" for n in range(1, 5)]


def test_more_alerts_than_max_alerts_are_cut_with_counts(am: str) -> None:
    result = call(executor(am, max_alerts=3))
    data = result.data
    assert len(data["alerts"]) == 3 and data["alerts_total"] == 7
    assert data["alerts_cut"]["by_alertname"] == {"HighErrorRate": 5, "DiskFull": 2}
    assert data["alerts_cut"]["by_state"] == {"active": 6, "suppressed": 1}
    assert "showing the newest 3" in data["summary"]


@pytest.mark.parametrize(
    ("matcher", "said"),
    [
        ("alertname", "needs an operator"),
        ("9lives=x", "is not a label name"),
        ("=x", "names no label"),
        ("service=~(unclosed", "regular expression is not valid"),
        ('service="open', "not closed"),
    ],
)
def test_a_bad_matcher_is_invalid_args_saying_what_is_wrong(am: str, matcher: str, said: str) -> None:
    result = call(executor(am), matchers=["alertname=DiskFull", matcher])
    assert result.error is not None and result.error.type is ErrorType.invalid_args
    assert said in result.error.message and matcher in result.error.message
    assert "name=~regex" in result.error.hint


def test_a_label_holding_a_secret_is_redacted(am: str) -> None:
    result = call(executor(am), matchers=["instance=db-2"])
    rendered = result.render()
    assert result.ok and "db-2" in rendered and TOKEN not in rendered


def test_people_see_a_line_per_alert_and_per_silence(am: str) -> None:
    ex = executor(am)
    tool = next(
        t for t in ops_tools(Policy(alertmanagers={"main": AlertmanagerSource(url=am)})) if t.name == "query_alerts"
    )
    assert tool.show is not None
    shown = tool.show(call(ex, matchers=["instance=db-1"]).data)
    assert "[suppressed] {alertname=DiskFull, instance=db-1, service=db, severity=critical} since 20" in shown
    assert "— DiskFull on db-1" in shown
    assert (
        "silences:\n  " in shown
        and "[active] {instance=db-1} until 20" in shown
        and "by bob: disk swap planned" in shown
    )


def test_access_is_per_source(am: str) -> None:
    ex = executor(am, access=Access(groups=frozenset({"oncall"})))
    assert call(ex, ONCALL).ok
    refused = call(ex, STRANGER)
    assert refused.error is not None and refused.error.type is ErrorType.denied
    assert "membership of a group among oncall" in refused.error.message


def test_an_unknown_source_is_not_found_with_the_known_ones(am: str) -> None:
    result = call(executor(am), source="staging")
    assert result.error is not None and result.error.type is ErrorType.not_found and "main" in result.error.hint


def test_an_unreachable_alertmanager_is_unavailable_and_retryable() -> None:
    result = call(executor(f"http://127.0.0.1:{free_port()}"))
    assert result.error is not None and result.error.type is ErrorType.unavailable and result.error.retryable
    assert "cannot reach Alertmanager main" in result.error.message


def test_a_header_comes_from_its_environment_variable(am: str, monkeypatch: pytest.MonkeyPatch) -> None:
    ex = executor(am, headers={"Authorization": "AM_AUTH"})
    monkeypatch.delenv("AM_AUTH", raising=False)
    unset = call(ex)
    assert unset.error is not None and "needs the environment variable AM_AUTH" in unset.error.message
    monkeypatch.setenv("AM_AUTH", "Bearer x")
    assert call(ex).ok


def test_the_tool_is_offered_only_with_an_alertmanager() -> None:
    assert "query_alerts" not in {t.name for t in ops_tools(Policy())}
    policy = Policy(alertmanagers={"main": AlertmanagerSource(url="http://am:9093")})
    assert "query_alerts" in {t.name for t in ops_tools(policy)}


def test_check_config_counts_alertmanagers_and_warns_of_an_unset_header_variable(tmp_path: Path) -> None:
    config = tmp_path / "opsbot.yaml"
    config.write_text(
        "policy:\n  alertmanagers:\n    main:\n      url: http://am:9093\n      headers: {Authorization: AM_AUTH}\n"
    )
    argv = [sys.executable, "-m", "opsbot.bot", "check-config", str(config)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, cwd=tmp_path, env={"PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    assert "1 Alertmanager(s)" in done.stdout
    assert f"{config}:5" in done.stderr and "environment variable AM_AUTH is not set here" in done.stderr


# The direct command `alerts` (bot/commands.py): no model, the tool's result as people read it.


def test_opsbot_ask_alerts_lists_alertmanagers_and_firing_alerts_without_a_model(am: str, tmp_path: Path) -> None:
    config = tmp_path / "opsbot.yaml"
    config.write_text(f"policy:\n  alertmanagers:\n    main:\n      url: {am}\n      description: the test one\n")
    argv = [sys.executable, "-m", "opsbot.bot", "--config", str(config), "ask"]

    def ask(text: str) -> subprocess.CompletedProcess[str]:
        env = {"PATH": "/usr/bin:/bin"}
        return subprocess.run([*argv, text], capture_output=True, text=True, timeout=60, cwd=tmp_path, env=env)

    listed = ask("alerts")
    assert listed.returncode == 0 and listed.stdout.strip() == "Alertmanagers:\n  main: the test one"
    disks = ask('alerts main alertname=DiskFull severity=~"crit.*"')
    assert disks.returncode == 0, disks.stderr
    assert "db-1" in disks.stdout and "db-2" not in disks.stdout and "disk swap planned" in disks.stdout
    bad = ask("alerts main service~checkout")
    assert bad.returncode != 0 and "service~checkout" in bad.stdout + bad.stderr and "Traceback" not in bad.stderr
    unknown = ask("alerts nope")
    assert unknown.returncode != 0 and "There is no Alertmanager 'nope'" in unknown.stdout + unknown.stderr
