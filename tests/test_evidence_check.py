"""The check of an answer against tool results, as rules and as properties.

The rules: what counts as found (numbers by value, units normalised, rounding as written), what
contradicts (a key's other value), and what is no claim (steps, ordinals, the question's own words,
advice, fenced code). The properties: a fact copied from a result verifies; a quote that is not in
the results never does; a secret never reaches the evidence, through the real loop."""

from __future__ import annotations

import json
import string
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from opsbot.bot.agent.evidence import Evidence, Source, check_answer, result_source
from tests.fakes.model_server import Call, Reply, tool_results


def results(*data: Any, step: int = 1) -> list[Source]:
    return [result_source(step, "tool", json.dumps({"step": step, "ok": True, "data": d})) for d in data]


def claims(evidence: Evidence) -> dict[str, list[str]]:
    return {
        "verified": [f.fact for f in evidence.findings],
        "unsupported": [s.claim for s in evidence.unsupported],
        "contradicted": [s.claim for s in evidence.contradicted],
    }


@pytest.mark.parametrize(
    "said, result",
    [
        ("the pool holds 10 connections", "pool: 10.0"),
        ("the disk has 5GB left", "free 5 GB"),
        ("p99 is 200ms", "p99=0.2s"),
        ("errors are 12% of requests", "error_ratio: 0.12"),
        ("the slowest took 870ms", "took 869.7ms"),
        ("it listens on pg-primary.internal:5432", "host: pg-primary.internal\nport: 5432"),
        ("version 2026.11.29-1 is deployed", "deployed 2026-11-29, version 2026.11.29-1"),
        ("see /var/log/payments.log", "file: /var/log/payments.log"),
        ("it failed with ECONNREFUSED at 09:14:03", "2026-12-06T09:14:03Z connect ECONNREFUSED"),
        ("`pool_timeout_ms: 2000`", "    pool_timeout_ms: 2000"),
    ],
)
def test_a_fact_found_as_the_result_writes_it_is_verified(said: str, result: str) -> None:
    evidence = check_answer(f"{said}.", "why?", results({"lines": result + "\n"}))
    assert evidence.unsupported == [] and evidence.contradicted == []
    assert evidence.findings, said


def test_a_keys_other_value_contradicts_quoting_the_result() -> None:
    config = "db:\n  primary:\n    pool_size: 5        # was 20\n"
    evidence = check_answer("The db pool size is 10.", "why?", results({"content": config}))
    [span] = evidence.contradicted
    assert (span.claim, span.step, span.evidence) == ("10", 1, "pool_size: 5")


def test_the_same_value_under_another_key_of_that_name_verifies() -> None:
    both = [{"key": "db.primary.pool_size", "value": 5}, {"key": "db.replica.pool_size", "value": 10}]
    assert claims(check_answer("pool_size is 10.", "?", results(*both)))["verified"] == ["10"]


def test_one_generic_word_is_no_key_to_contradict() -> None:
    evidence = check_answer("The count is 42 [1].", "?", results({"count": 3, "matched": 42}))
    assert evidence.contradicted == [] and claims(evidence)["verified"] == ["42"]


def test_what_is_not_a_claim_is_not_flagged() -> None:
    answer = (
        "Steps 1 and 2 show it [1].\n"
        "1. Since 14:00 checkout failed 3 times.\n"
        "2) You should raise pool_size to 40.\n"
        "```\nkubectl scale deploy/payments --replicas=7\n```\n"
    )
    evidence = check_answer(answer, "why did checkout fail 3 times since 14:00?", results({"lines": "x\n"}, step=1))
    assert evidence.unsupported == [] and evidence.contradicted == [], claims(evidence)


def test_an_invented_fact_is_unsupported_with_its_sentence() -> None:
    evidence = check_answer("All fine. The fix shipped in v2.4.1 on db-7.internal.", "?", results({"lines": "ok\n"}))
    assert claims(evidence)["unsupported"] == ["v2.4.1", "db-7.internal"]
    assert evidence.unsupported[0].statement == "The fix shipped in v2.4.1 on db-7.internal."


def test_citations_name_steps_that_ran_and_quotes_that_are_there() -> None:
    sources = [*results({"lines": "ERROR pool   exhausted\n"}, step=1), *results({"lines": "ok\n"}, step=2)]
    answer = 'Pool exhausted [1: "ERROR pool exhausted"], also [2: "ERROR pool"] and [3].'
    evidence = check_answer(answer, "?", sources)
    assert [(c.step, c.quote) for c in evidence.citations] == [(1, "ERROR pool exhausted"), (2, "ERROR pool")]
    assert [s.claim for s in evidence.unsupported] == ["[3]"], "a quote may come from another of the thread's results"


# ---------------------------------------------------------------- properties

_WORD = st.text(string.ascii_lowercase, min_size=3, max_size=8)
_FACT = st.one_of(
    st.integers(0, 10**9).map(str),
    st.tuples(st.integers(0, 9999), st.integers(0, 999)).map(lambda p: f"{p[0]}.{p[1]}"),
    st.tuples(st.integers(1, 9999), st.sampled_from(["ms", "s", "GB", "MB", "%"])).map(lambda p: f"{p[0]}{p[1]}"),
    st.tuples(_WORD, _WORD).map(lambda p: f"{p[0]}-1.{p[1]}.internal"),
    st.tuples(st.integers(0, 99), st.integers(0, 99), st.integers(0, 99)).map(lambda p: f"v{p[0]}.{p[1]}.{p[2]}"),
    st.lists(_WORD, min_size=2, max_size=4).map(lambda p: "/" + "/".join(p) + ".log"),
    st.text("0123456789abcdef", min_size=12, max_size=12).map(lambda h: f"req-{h}"),
)


@given(
    key=st.lists(_WORD, min_size=2, max_size=3).map("_".join), fact=_FACT, shape=st.sampled_from(["pair", "is", "line"])
)
@settings(max_examples=300, deadline=None)
def test_a_fact_copied_from_a_result_verifies(key: str, fact: str, shape: str) -> None:
    sources = results({key: fact, "lines": f"12:00:01 INFO {key.replace('_', ' ')} now {fact} here\n"})
    said = {"pair": f"`{key}: {fact}`", "is": f"The {key} is {fact}.", "line": f"It says {fact} here."}[shape]
    evidence = check_answer(said, "what changed?", sources)
    assert evidence.unsupported == [] and evidence.contradicted == [], claims(evidence)


@given(
    quote=st.text(string.ascii_letters + string.digits + " :=._-", min_size=4, max_size=40),
    lines=st.lists(st.text(string.ascii_letters + string.digits + " :=._-", max_size=60), max_size=5),
)
@settings(max_examples=300, deadline=None)
def test_a_quote_not_in_the_results_never_verifies(quote: str, lines: list[str]) -> None:
    squeezed = " ".join(quote.split())
    sources = results({"lines": "\n".join(lines) + "\n"})
    # Not in the result as the model was given it (its lines, and `ok: true` beside them).
    if not squeezed or '"' in quote or squeezed in " ".join(sources[0].text.split()):
        return
    evidence = check_answer(f'It says so [1: "{quote}"].', "?", sources)
    assert all(c.quote is None for c in evidence.citations)
    assert [s.claim for s in evidence.unsupported][:1] == [quote]


@given(token=st.text(string.ascii_letters + string.digits, min_size=36, max_size=36))
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_a_secret_never_reaches_the_evidence(token: str, model_server: Any, make_agent: Any) -> None:
    secret = f"ghp_{token}"

    def leaky() -> str:
        """Print the deploy settings."""
        return f"GITHUB_TOKEN={secret}\nreplica_count: 3\n"

    def model(body: dict[str, Any]) -> Reply:
        if not tool_results(body):
            return Reply(calls=[Call("leaky", {})])
        return Reply(content=f'The token is {secret} [1: "GITHUB_TOKEN={secret}"] and replica_count: 4 [1].')

    reply = make_agent(model_server(model), tools=[leaky]).run(f"is {secret} still valid?", thread="t")
    assert reply.evidence is not None
    shown = reply.evidence.model_dump_json()
    assert secret not in shown and token not in shown
    assert reply.evidence.contradicted[0].evidence == "replica_count: 3"
