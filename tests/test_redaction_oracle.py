"""No sequence of queries learns what redaction hides: filters and counts judge redacted text.

The attack (issue 9): a log line holds `token=ghp_...`; query_logs shows it redacted, but a run of
one-character regexes (`token=ghp_.{3}c`) counted raw lines, so the counts spelled the token out.
Here two logs differ in one hidden character only, and every query of a broad battery (levels,
substrings, regexes, times, their mixes, the marker-straddling tricks) must give both the same
result; then the oracle is played in full and recovers nothing. Private keys are filtered line by
line, across block boundaries too, and runbook conditions on query results see what the model sees.

Tokens are assembled at run time so this file holds no complete token. Every value is made up.
"""

from __future__ import annotations

import json
import string
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import opsbot.tools.logs.files as log_files
from opsbot.bot.approvals import Approvals, InProcessApprovalStore
from opsbot.bot.runbooks import InProcessRunStore, RunbookEngine
from opsbot.config.policy import Command, Policy, Runbook, Service
from opsbot.tools.base import Registry, ToolResult
from opsbot.tools.catalog import ops_tools
from opsbot.tools.executor import Executor, RetryPolicy, ToolCall
from opsbot.tools.logs import query_logs_tool
from opsbot.tools.redact import in_body_run, redact_body_runs, redact_lines, redact_spanning, redact_text
from tests.corpus.secrets import leaks

FAST = RetryPolicy(timeout_s=20, retries=0, backoff_s=0.01)
BASE = datetime(2026, 11, 29, 3, 0, 0, tzinfo=UTC)


def tok(prefix: str, body: str) -> str:
    return prefix + body


TOKEN = tok("ghp_", "KRidQZhUsBZc3QaMhf5b27qL37t0kqgC3SVT")
PASSWORD = "Wint3r-is-c0ming"
DB_PASSWORD = "Tr0ub4dor-3x"
JWT = tok("eyJhbGciOiJIUzI1NiJ9.", "eyJzdWIiOiJ1LTcwMjM5In0.c2lnbmF0dXJlLW9mLXRoZS1qd3QtMTIzNDU2")
AWS_ID, AWS_SECRET = tok("AKIA", "72UYXMWO7NAP66IE"), "5MP2rdfqr6R7wIH3qS3205ZxauEKa4Ca9+3r4cXe"
KEY_BODY = [
    "MIIEowIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM9Oi6D8WnOcQ1Lq1N5xQpHnY2zT7b",
    "Xk4yPq9wR2sV8mN1cL6fJ3hG0dA5eB7tU9iO4pK2jM8nQ1rS6vW3xY0zC5bF7gH1",
    "Zq8Lm3Nw7Rt2Yv5Bx9Kc4Hf1Jd6Gs0Ap3Ue8Ti2Oy7Wr5Qm1Ln9Xk4Zb6Vc2Mh7",
    "Qk2rT9sV4wX7yZ1aB3cD5eF8gH0iJ2kL4mN6oP8qR0sT2uV4wX6yZ8aB0cD2e==",
]


def log_lines(hidden: dict[str, str]) -> list[str]:
    """A log whose secrets are `hidden`'s values; everything else is the same for any values."""
    at = [BASE + timedelta(seconds=n) for n in range(40)]
    lines = [
        f"{at[n]:%Y-%m-%dT%H:%M:%SZ} INFO  shop GET /v1/cart/{n:04d} 200 request_id=req-{n:04x}" for n in range(40)
    ]
    lines[5] = f"{at[5]:%Y-%m-%dT%H:%M:%SZ} ERROR shop github push failed token={hidden['token']} retry=1"
    lines[9] = f"{at[9]:%Y-%m-%dT%H:%M:%SZ} WARN  shop login password={hidden['password']} rejected"
    lines[14] = f"{at[14]:%Y-%m-%dT%H:%M:%SZ} ERROR shop db postgres://ledger:{hidden['db']}@pg.internal/ledger down"
    lines[20] = f"{at[20]:%Y-%m-%dT%H:%M:%SZ} INFO  shop session Authorization: Bearer {hidden['jwt']}"
    lines[26] = f"{at[26]:%Y-%m-%dT%H:%M:%SZ} ERROR shop s3 denied for {AWS_ID} {hidden['aws']} bucket=receipts"
    key = ["-----BEGIN RSA PRIVATE KEY-----", *hidden["key"].split("\n"), "-----END RSA PRIVATE KEY-----"]
    return lines[:31] + [f"{at[31]:%Y-%m-%dT%H:%M:%SZ} ERROR shop loaded a bad key:", *key] + lines[31:]


ORIGINAL = {
    "token": TOKEN,
    "password": PASSWORD,
    "db": DB_PASSWORD,
    "jwt": JWT,
    "aws": AWS_SECRET,
    "key": "\n".join(KEY_BODY),
}


def flip(text: str, at: int) -> str:
    """`text` with the character at `at` changed to another of its class."""
    char = text[at]
    pool = string.digits if char.isdigit() else string.ascii_lowercase if char.islower() else string.ascii_uppercase
    if char not in pool:
        pool = string.ascii_letters
    return text[:at] + pool[(pool.index(char) + 7) % len(pool)] + text[at + 1 :]


def executor_for(path: Path) -> Executor:
    policy = Policy(services={"shop": Service(logs=[path], timezone="UTC")})
    return Executor(Registry([query_logs_tool(policy)]), FAST)


def write_log(directory: Path, hidden: dict[str, str]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "shop.log"
    path.write_text("\n".join(log_lines(hidden)) + "\n")
    return path


def ask(executor: Executor, **args: Any) -> ToolResult:
    call = ToolCall(f"call-{uuid.uuid4().hex[:6]}", "query_logs", json.dumps({"service": "shop", **args}))
    return executor.run_one(call).result


def seen(result: ToolResult) -> str:
    """What the model is given, without the file's path (the two logs live in two directories)."""
    rendered = json.loads(result.render())
    if isinstance(rendered.get("data"), dict):
        rendered["data"].pop("files", None)
    return json.dumps(rendered, sort_keys=True)


def battery(secret: str, prefix: str) -> list[dict[str, Any]]:
    """Queries an attacker (or a model that read an injected log line) would try: the secret's own
    characters and pieces, with and without a level, a time range or a substring beside them,
    and the tricks that would let a marker's text decide a filter on a raw line."""
    queries: list[dict[str, Any]] = [{}, {"level": "ERROR"}, {"level": "WARN"}, {"level": "INFO"}]
    for size in (1, 2, 3, 8):
        for start in range(0, len(secret) - size, max(1, len(secret) // 5)):
            piece = secret[start : start + size]
            queries += [{"contains": piece}, {"contains": piece, "level": "ERROR"}]
    for at in range(0, min(len(secret), 16), 3):
        char = secret[at]
        probe = f"{prefix}.{{{at}}}{char}" if at else f"{prefix}{char}"
        queries += [
            {"regex": probe},
            {"regex": probe, "level": "ERROR"},
            {"regex": probe, "contains": "shop"},
            {"regex": probe, "since": "2026-11-29T03:00:00Z", "until": "2026-11-29T03:00:45Z"},
            {"regex": f"REDACTED|{probe}"},
            {"regex": f"{probe}|\\[REDACTED"},
            {"regex": f"(?i){probe}"},
            {"regex": probe, "contains": "a"},
            {"regex": probe, "contains": "redacted"},
        ]
    queries += [{"contains": c} for c in "ab[]:-"] + [{"contains": "hub"}, {"contains": "[redacted:github]"}]
    return queries


@pytest.mark.parametrize(
    "name, prefix, position",
    [
        ("token", "token=ghp_", 4),  # positions in the token: its first four are the vendor's prefix
        ("token", "token=ghp_", 11),
        ("token", "token=ghp_", 39),
        ("password", "password=", 2),
        ("db", "ledger:", 5),
        ("jwt", "Bearer eyJ", 30),
        ("aws", " ", 11),
    ],
)
def test_two_logs_differing_in_one_hidden_character_answer_every_query_alike(
    tmp_path: Path, name: str, prefix: str, position: int
) -> None:
    other = {**ORIGINAL, name: flip(ORIGINAL[name], position)}
    first = executor_for(write_log(tmp_path / "a", ORIGINAL))
    second = executor_for(write_log(tmp_path / "b", other))
    secret = ORIGINAL[name]
    probes = battery(secret if name != "token" else secret[4:], prefix)
    differing = [q for q in probes if seen(ask(first, **q)) != seen(ask(second, **q))]
    assert differing == []


@pytest.mark.parametrize("needle", ["u", "hub", "b", "git", ":gi"])
def test_a_substring_a_marker_holds_cannot_tell_whether_the_secret_held_it(tmp_path: Path, needle: str) -> None:
    """Found in the raw line only inside the secret, and in the redacted line only inside the
    marker (`[REDACTED:github]`): judged on raw text first, the count would say whether the
    token held it."""
    holding = tok("ghp_", "Kub1dQZhUsBZc3QaMhf5b27qL37t0kqgC3SVT")
    lacking = "ghp_" + holding[4:].translate(str.maketrans("uUbBgGiIhH", "xXyYzZwWvV"))
    answers = []
    for directory, token in (("holding", holding), ("lacking", lacking)):
        path = tmp_path / directory / "x.log"
        path.parent.mkdir()
        path.write_text(f"2026-11-29T03:00:05Z ERROR x token={token}\n")
        answers.append(seen(ask(executor_for(path), contains=needle)))
    assert answers[0] == answers[1]


def test_a_log_commands_output_is_judged_redacted_too(tmp_path: Path) -> None:
    """The same twins, read through a service's log_command (`cat`, through the runner): its
    output goes through the matcher files go through."""
    answers = []
    for directory, token in (("a", TOKEN), ("b", flip(TOKEN, 9))):
        path = write_log(tmp_path / directory, {**ORIGINAL, "token": token})
        command = Command.model_validate({"description": "the log", "argv": ["cat", str(path)]})
        policy = Policy(services={"shop": Service(log_command="log", timezone="UTC")}, commands={"log": command})
        executor = Executor(Registry([query_logs_tool(policy)]), FAST)
        answers.append([seen(ask(executor, **query)) for query in battery(TOKEN[4:], "token=ghp_")[::4]])
    assert answers[0] == answers[1]


def test_the_one_character_oracle_recovers_nothing(tmp_path: Path) -> None:
    """The attack of issue 9 in full: for each of the token's first 16 hidden characters, every
    candidate; the attacker keeps the candidates whose count is non-zero."""
    executor = executor_for(write_log(tmp_path, ORIGINAL))
    body = TOKEN[4:]
    recovered = 0
    for at in range(16):
        counts = {}
        for candidate in string.ascii_letters + string.digits:
            data = ask(executor, regex=f"token=ghp_.{{{at}}}{candidate}", level="ERROR").data
            counts[candidate] = data["matches"]
        hits = [c for c, n in counts.items() if n]
        recovered += hits == [body[at]]
        assert len(set(counts.values())) == 1  # every candidate answered alike: nothing told apart
    assert recovered == 0


def test_a_filtered_query_shows_no_line_of_a_private_key(tmp_path: Path) -> None:
    executor = executor_for(write_log(tmp_path, ORIGINAL))
    for query in (
        {"regex": r"^[A-Za-z0-9+/=]{20,}$"},
        {"regex": r"^[A-Za-z0-9+/]{64}$"},
        {"contains": KEY_BODY[1][10:30]},
        {"regex": KEY_BODY[2][:12]},
        {"regex": r"^\S+$", "level": "ERROR"},
        {"until": "2026-11-29T03:00:35Z"},
    ):
        shown = seen(ask(executor, **query))
        for line in KEY_BODY:
            assert leaks(line, shown) == [], query


@settings(max_examples=40, deadline=None)
@given(before=st.integers(min_value=0, max_value=60), block=st.sampled_from([256, 512, 1024]))
def test_a_key_across_a_block_boundary_is_hidden_in_every_filtered_view(
    tmp_path_factory: pytest.TempPathFactory, before: int, block: int
) -> None:
    """Blocks are read backwards in BLOCK_BYTES; here they are small, and the key lands at every
    offset against their edges."""
    original = log_files.BLOCK_BYTES
    log_files.BLOCK_BYTES = block
    try:
        directory = tmp_path_factory.mktemp("boundary")
        lines = [f"2026-11-29T03:00:{n % 60:02d}Z INFO  shop filler line {n:03d}" for n in range(before)]
        key = ["-----BEGIN OPENSSH PRIVATE KEY-----", *KEY_BODY, "-----END OPENSSH PRIVATE KEY-----"]
        after = [f"2026-11-29T03:01:{n:02d}Z INFO  shop after {n:02d}" for n in range(12)]
        path = directory / "shop.log"
        path.write_text("\n".join([*lines, *key, *after]) + "\n")
        executor = executor_for(path)
        for query in ({"regex": r"^[A-Za-z0-9+/=]{20,}$"}, {"limit": 500}, {"contains": KEY_BODY[3][5:15]}):
            shown = seen(ask(executor, **query))
            for body_line in KEY_BODY:
                assert leaks(body_line, shown) == [], (before, block, query)
    finally:
        log_files.BLOCK_BYTES = original


def test_a_runbook_condition_on_query_results_sees_what_the_model_sees(tmp_path: Path) -> None:
    """A branch on `matches` of a query that would find the raw token takes the same way for
    two logs whose tokens differ there: conditions judge the redacted result."""
    book = Runbook.model_validate(
        {
            "id": "probe",
            "description": "branches on a count",
            "steps": [
                {"id": "find", "tool": "query_logs", "args": {"service": "shop", "regex": "token=ghp_K"}},
                {
                    "id": "decide",
                    "branch": [
                        {"when": [{"step": "find", "path": "data.matches", "op": "gt", "value": 0}], "goto": "found"}
                    ],
                    "otherwise": "end",
                },
                {"id": "found", "tool": "query_logs", "args": {"service": "shop", "level": "ERROR"}},
            ],
        }
    )
    decided = []
    for directory, hidden in (("a", ORIGINAL), ("b", {**ORIGINAL, "token": flip(TOKEN, 4)})):
        policy = Policy(services={"shop": Service(logs=[write_log(tmp_path / directory, hidden)], timezone="UTC")})
        policy = policy.model_copy(update={"runbooks": {"probe": book}})
        approvals = Approvals(policy, InProcessApprovalStore())
        engine = RunbookEngine(
            policy,
            Executor(Registry(ops_tools(policy)), FAST),
            store=InProcessRunStore(),
            reporter=_Quiet(),
            approvals=approvals,
        )
        run = engine.start("probe", {}, {"alert": "test"})
        decided.append((run.status, run.steps[1].output, run.steps[0].output["data"]["matches"]))
    assert decided[0] == decided[1] == ("succeeded", {"case": None, "goto": "end"}, 0)


class _Quiet:
    """A front end that is told nothing worth keeping."""

    def step_started(self, *args: Any) -> None: ...

    def step_finished(self, *args: Any) -> None: ...

    def approval_needed(self, *args: Any) -> None: ...

    def run_finished(self, *args: Any) -> None: ...


# ---------------------------------------------------------------- the invariants query_logs rests on

PIECES = [
    "2026-11-29T03:00:00Z ERROR shop",
    f"token={TOKEN}",
    f"password={PASSWORD}",
    "Authorization: Bearer 8f1c2b7e9d4a6f3e0b5c7a9d2e4f6a8b",
    f"postgres://ledger:{DB_PASSWORD}@pg/ledger",
    "-----BEGIN RSA PRIVATE KEY-----",
    *KEY_BODY,
    "-----END RSA PRIVATE KEY-----",
    "- name: DB_PASSWORD",
    "  value: hunter2-env",
    "kind: Secret",
    "data:",
    "  password: aHVudGVyMg==",
    "request_id=req-af8c3e74 user=u-04211",
    "",
]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(PIECES), min_size=1, max_size=12), st.sampled_from([" ", "\n", ""]))
def test_line_rules_give_each_line_what_they_give_the_whole_text(pieces: list[str], glue: str) -> None:
    text = redact_spanning(glue.join(pieces))
    assert redact_lines(text) == "\n".join(redact_lines(line) for line in text.split("\n"))
    assert redact_text(glue.join(pieces)) == redact_lines(redact_body_runs(text))


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from([*KEY_BODY, KEY_BODY[0].lower(), "AB12cd==", "x", "", "-----BEGIN CERTIFICATE-----"]),
        min_size=1,
    )
)
def test_asking_about_each_line_hides_what_the_block_rule_hides(lines: list[str]) -> None:
    """A scan asks `in_body_run` about the lines it keeps instead of running `redact_body_runs`
    over the whole block: line by line, the same lines are hidden."""
    text = "\n".join(lines)
    starts = [sum(len(line) + 1 for line in lines[:n]) for n in range(len(lines))]
    asked = [
        "[REDACTED:pem]" if in_body_run(text, at, at + len(line)) else line
        for at, line in zip(starts, lines, strict=True)
    ]
    assert _collapsed(asked) == _collapsed(redact_body_runs(text).split("\n"))


def _collapsed(lines: list[str]) -> list[str]:
    """Consecutive markers as one: the block rule writes one for a run, the scan one a line."""
    return [line for n, line in enumerate(lines) if not (line == "[REDACTED:pem]" and n and lines[n - 1] == line)]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(PIECES), min_size=1, max_size=6).map(" ".join))
def test_redaction_never_touches_the_timestamp_a_line_starts_with(rest: str) -> None:
    for stamp in ("2026-11-29T03:07:32Z", "2026-11-29 03:07:32.123", "Nov 29 03:07:32", '{"ts":"2026-11-29T03:07:32Z"'):
        assert redact_text(f"{stamp} {rest}").startswith(stamp)
