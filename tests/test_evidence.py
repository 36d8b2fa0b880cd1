"""Every claim shows its evidence (issue 29): the scenario that started it, through every front end.

A scripted model reads the payments config (`db.primary.pool_size: 5`) and answers "the payments
db pool size is 10". The answer is marked contradicted, quoting the config, in `opsbot ask`'s
output, in `--json`, and in Slack; a cited quote that holds is a footnote pointing at its step.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from opsbot.bot.agent import UNBACKED
from opsbot.config.settings import SAMPLE_CONFIG
from tests.fakes import slack_payloads as payloads
from tests.fakes.model_server import Call, Reply, script, tool_results
from tests.test_cli import opsbot
from tests.test_cli import with_model as with_model  # noqa: F401 - a fixture
from tests.test_slack import answered, context_texts
from tests.test_slack import make_stack as make_stack  # noqa: F401 - a fixture

POOL = Call("read_config", {"name": "payments", "key": "db.primary.pool_size"})
WRONG = "The payments db pool size is 10, so the pool is not what runs out."
CITED = 'Its listen port is 8443 [1: "listen.port: 8443"].'


def pool_then(answer: str) -> Any:
    """Read the pool size, then answer `answer` (the model saw the result, numbered)."""

    def policy(body: dict[str, Any]) -> Reply:
        results = tool_results(body)
        if not results:
            return Reply(calls=[POOL, Call("read_config", {"name": "payments", "key": "listen.port"})])
        assert [r["step"] for r in results] == [1, 1], "each result carries its step first"
        return Reply(content=answer)

    return policy


def test_ask_marks_the_contradicted_pool_size_and_quotes_the_config(tmp_path: Path, with_model: Any) -> None:
    done = opsbot(
        "--config",
        str(SAMPLE_CONFIG),
        "ask",
        "why do payments time out?",
        cwd=tmp_path,
        **with_model(pool_then(f"{WRONG}\n{CITED}")),
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout == f"{WRONG}\n{CITED}\n", "stdout stays the answer alone"
    lines = done.stderr.splitlines()
    [flag] = [line for line in lines if "Contradicted" in line]
    assert flag.startswith("⚠ Contradicted by step 1: `db.primary.pool_size: 5`") and '"10"' in flag
    assert '[1] step 1 · read_config: "listen.port: 8443"' in lines, "the footnote points at step 1's line"
    assert any(line.strip().startswith("✓ step 1: read_config") for line in lines)
    assert UNBACKED not in done.stderr, "the port is backed"


def test_ask_json_carries_the_evidence_with_its_steps(tmp_path: Path, with_model: Any) -> None:
    done = opsbot(
        "--config",
        str(SAMPLE_CONFIG),
        "ask",
        "--json",
        "why do payments time out?",
        cwd=tmp_path,
        **with_model(pool_then(f"{WRONG}\n{CITED}")),
    )

    assert done.returncode == 0, done.stderr
    reply = json.loads(done.stdout)
    evidence = reply["evidence"]
    [contradicted] = evidence["contradicted"]
    assert contradicted["claim"] == "10" and contradicted["step"] == 1
    assert contradicted["evidence"] == "db.primary.pool_size: 5"
    assert reply["text"][contradicted["start"] : contradicted["end"]] == "10"
    assert {"step": 1, "tool": "read_config", "quote": "listen.port: 8443"} in evidence["citations"]
    assert evidence["unsupported"] == []
    assert {"fact": "8443", "step": 1, "evidence": "listen.port: 8443"} in evidence["findings"]


def test_an_answer_the_results_do_not_back_says_so(tmp_path: Path, with_model: Any) -> None:
    invented = "Payments runs out of connections at 14:02; the fix shipped in v2.4.1."
    done = opsbot(
        "--config",
        str(SAMPLE_CONFIG),
        "ask",
        "why do payments time out?",
        cwd=tmp_path,
        **with_model(pool_then(invented)),
    )

    lines = done.stderr.splitlines()
    flags = [line for line in lines if line.startswith("⚠ Not backed by the tool results")]
    assert [flag.split('"')[1] for flag in flags] == ["14:02", "v2.4.1"]
    assert lines[-1] == UNBACKED, "nothing it states was found: said last, above nothing else"


def test_slack_says_the_contradicted_statement_below_the_answer(make_stack: Any) -> None:
    stack = make_stack(pool_then(f"{WRONG}\n{CITED}"))
    mention = payloads.app_mention("<@UBOT> why do payments time out?")
    assert stack.event(mention).status == 200

    [answer] = answered(stack, "C1", mention["ts"])
    flags, notes, usage = context_texts(answer)
    # The statement, not the claim lifted out of it: out of a link, a claim would stand bare.
    assert flags == f'⚠ Contradicted by step 1: `db.primary.pool_size: 5`: "{WRONG}"'
    assert notes == '[1] step 1 · read_config: "listen.port: 8443"'
    assert "step(s)" in usage
    assert "✓ 1. `read_config`" in answer["text"], "the step line the footnote points at, streamed above the answer"


def test_a_denied_call_and_a_service_never_asked_about_are_not_looked_at(make_stack: Any) -> None:
    stack = make_stack(
        script(Reply(calls=[Call("query_logs", {"service": "nosuch"})]), Reply(content="Nothing found in checkout."))
    )
    mention = payloads.app_mention("<@UBOT> is checkout or payments failing?")
    assert stack.event(mention).status == 200

    [answer] = answered(stack, "C1", mention["ts"])
    said = context_texts(answer)
    [gaps] = [text for text in said if text.startswith("⚠") or "Not looked at" in text]
    assert "Not looked at: " in gaps
    assert 'query_logs(service="nosuch"): not_found' in gaps
    assert "checkout: no tool was asked about it" in gaps and "payments: no tool was asked about it" in gaps
