"""Issue 9's corpus tests: every kind of secret (tests/corpus/secrets.py) in every context a secret
leaves opsbot through, with no leak; and realistic text without secrets (tests/corpus/benign.py)
that comes out of redaction byte for byte.

The contexts: a log line read with query_logs (unfiltered, by level, by a word of the line, by a
regex, and for a multi-line secret by a regex matching one body line); a config file of each
format read with read_config, whole and by its key; a command's output read with run_command; the
user's question, in everything sent to the model and in the Reply; a Slack post of the model's
answer, in every call the fake Slack Web API recorded; and the step log. A leak is any 8
consecutive characters of a secret's line in the output, also inside JSON strings once decoded.

Everything runs for real: the executor and its tools on files in a temporary directory, the agent
loop through the real `openai` client against the scripted model server, the Slack app through
Bolt against the fake Web API with a throwaway Redis.
"""

from __future__ import annotations

import json
import logging
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from opsbot.bot.agent import Agent
from opsbot.bot.llm import ModelClient
from opsbot.bot.memory import InProcessMemory
from opsbot.config.policy import Command, ConfigRoot, Policy, Service
from opsbot.config.settings import LoopLimits
from opsbot.tools.base import Registry, ToolResult
from opsbot.tools.commands import run_command_tool
from opsbot.tools.configs import read_config_tool
from opsbot.tools.executor import Executor, RetryPolicy, ToolCall
from opsbot.tools.logs import query_logs_tool
from opsbot.tools.redact import redact_text
from tests.corpus.benign import BENIGN
from tests.corpus.formats import config_file
from tests.corpus.secrets import BY_ID, FORMATS, KINDS, WINDOW, SecretKind, leaks, windows
from tests.fakes import slack_payloads as payloads
from tests.fakes.model_server import Call, ModelServer, Reply, is_summary_request, tool_results
from tests.fakes.redis_server import RedisServer
from tests.fakes.slack_api import SlackApi
from tests.fakes.slack_stack import Stack, stack_settings

SAMPLE_LOGS = sorted((Path(__file__).resolve().parent.parent / "config" / "sample" / "logs").glob("*.log"))
FAST = RetryPolicy(timeout_s=20, retries=0, backoff_s=0.01)
IDS = [kind.id for kind in KINDS]
LINES_AROUND = [
    "2026-11-29T03:07:{:02d}Z INFO  app GET /healthz 200 1ms",
    "2026-11-29T03:07:{:02d}Z INFO  app POST /v1/checkout 200 118ms request_id=req-52e6b438",
    "2026-11-29T03:07:{:02d}Z DEBUG app pool checkout took 3ms (5/20 in use)",
    "2026-11-29T03:07:{:02d}Z WARN  app upstream payments slow: 1204ms",
    "2026-11-29T03:07:{:02d}Z INFO  app POST /v1/checkout 502 30012ms request_id=req-1818e811",
]


def no_leak(kind: SecretKind, outputs: dict[str, str]) -> None:
    """No output shows WINDOW consecutive characters of the kind's secret; the message names
    the outputs that do."""
    shown = {name: found for name, text in outputs.items() if (found := leaks(kind.secret, text))}
    assert not shown, f"{kind.id} shows in: " + "; ".join(f"{name} ({found[:2]}...)" for name, found in shown.items())


def run(executor: Executor, tool: str, args: dict[str, Any]) -> ToolResult:
    call = ToolCall(id=f"call-{uuid.uuid4().hex[:8]}", name=tool, arguments=json.dumps(args))
    return executor.run_one(call).result


def context_word(kind: SecretKind) -> str:
    """A word of the kind's line that is no part of its secret (what someone would search for)."""
    words: list[str] = re.findall(r"[A-Za-z][A-Za-z_]{3,}", kind.line)
    return next(w for w in words if w not in kind.secret)


def probe(kind: SecretKind) -> str:
    """Twelve characters from the middle of the secret's longest line."""
    longest = max(kind.secret.split("\n"), key=len)
    middle = len(longest) // 2
    return longest[middle - 6 : middle + 6]


def contexts(kind: SecretKind) -> list[str]:
    return ["log-line", *(f"config-{fmt}" for fmt in kind.formats), "command-output", "question", "slack", "step-log"]


# ================================================================================ the corpora


def test_the_secret_corpus_is_wide_and_well_formed() -> None:
    assert len(KINDS) >= 55
    assert len(set(IDS)) == len(IDS)
    for kind in KINDS:
        assert kind.source and kind.formats and set(kind.formats) <= set(FORMATS), kind.id
        assert windows(kind.secret), kind.id
        for part in kind.secret.split("\n"):
            assert part in kind.line and part in json.dumps(kind.config()).replace("\\n", "\n"), kind.id
        assert kind.key and context_word(kind), kind.id
        assert len(probe(kind)) == 12, kind.id


def test_every_kind_reaches_at_least_six_contexts() -> None:
    assert {kind.id: len(contexts(kind)) for kind in KINDS if len(contexts(kind)) < 6} == {}


def test_the_benign_corpus_is_wide_and_sourced() -> None:
    assert len(BENIGN) >= 220
    assert all(text and source for text, source in BENIGN)
    assert len({text for text, _ in BENIGN}) == len(BENIGN)


def test_leaks_finds_windows_in_text_and_in_decoded_json() -> None:
    secret = "ab/cd+ef/gh12\nIJKLMNOPQR"
    assert leaks(secret, "x ab/cd+ef y") == ["ab/cd+ef"]
    assert leaks(secret, '{"a": [{"b": "ab\\/cd+ef\\/gh"}]}') == [
        "/cd+ef/g",
        "ab/cd+ef",
        "b/cd+ef/",
        "cd+ef/gh",
    ]
    nested = json.dumps({"results": [json.dumps({"lines": "..IJKLMNOP.."})]})
    assert leaks(secret, nested) == ["IJKLMNOP"]
    assert leaks(secret, "gh12\nIJKL") == [], "windows never span a line end"
    assert leaks(secret, "[REDACTED:pem]") == []
    assert WINDOW == 8


# ================================================================================ a log line


def write_log(path: Path, kind: SecretKind) -> Path:
    """About twenty lines of an app's log with the kind's line as an ERROR line at 03:07:32
    (a multi-line one: its lines right after the ERROR line, as a logged dump shows them)."""
    before = [LINES_AROUND[i % len(LINES_AROUND)].format(i) for i in range(0, 30, 3)]
    after = [LINES_AROUND[i % len(LINES_AROUND)].format(i) for i in range(33, 60, 3)]
    if kind.multiline:
        error = ["2026-11-29T03:07:32Z ERROR app startup failed; the file read was:", *kind.line.split("\n")]
    else:
        error = [f"2026-11-29T03:07:32Z ERROR app {kind.line}"]
    path.write_text("\n".join([*before, *error, *after]) + "\n")
    return path


def log_queries(kind: SecretKind) -> list[tuple[str, dict[str, Any]]]:
    word = context_word(kind)
    queries: list[tuple[str, dict[str, Any]]] = [
        ("all", {"limit": 500}),
        ("level", {"level": "ERROR"}),
        ("contains", {"contains": word}),
        ("regex", {"regex": f"{re.escape(word)}.*$"}),
    ]
    if kind.multiline:
        queries.append(("body-regex", {"regex": "[A-Za-z0-9+/]{40,}"}))
    return queries


LOG_CASES = [pytest.param(kind, args, id=f"{kind.id}-{name}") for kind in KINDS for name, args in log_queries(kind)]


def logs_of(path: Path) -> Executor:
    return Executor(Registry([query_logs_tool(Policy(services={"app": Service(logs=[path], timezone="UTC")}))]), FAST)


@pytest.fixture(scope="module")
def app_logs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Executor]:
    """Per kind, query_logs over a log of its own."""
    folder = tmp_path_factory.mktemp("logs")
    return {kind.id: logs_of(write_log(folder / f"{kind.id}.log", kind)) for kind in KINDS}


@pytest.mark.parametrize("kind, args", LOG_CASES)
def test_log_line(app_logs: dict[str, Executor], kind: SecretKind, args: dict[str, Any]) -> None:
    result = run(app_logs[kind.id], "query_logs", {"service": "app", **args})
    assert result.ok, result.status
    no_leak(kind, {"query_logs": result.render()})


@pytest.mark.parametrize("kind", KINDS, ids=IDS)
def test_a_log_filter_cannot_find_what_redaction_hides(app_logs: dict[str, Executor], kind: SecretKind) -> None:
    """Filters run on redacted text: otherwise a match count answers "does the secret contain X?"."""
    result = run(app_logs[kind.id], "query_logs", {"service": "app", "contains": probe(kind)})
    assert result.ok, result.status
    no_leak(kind, {"query_logs": result.render()})
    assert result.data["matches"] == 0


# ================================================================================ config files

CONFIG_CASES = [pytest.param(kind, fmt, id=f"{kind.id}-{fmt}") for kind in KINDS for fmt in kind.formats]


@pytest.fixture(scope="module")
def configs(tmp_path_factory: pytest.TempPathFactory) -> Executor:
    """Every kind in every format it exists in, in one directory root (.env files allowed)."""
    root = tmp_path_factory.mktemp("configs")
    for kind in KINDS:
        for fmt in kind.formats:
            written = config_file(kind, fmt)
            (root / written.name).write_text(written.text)
    policy = Policy(config_files={"corpus": ConfigRoot(path=root, allow=("*.env",))})
    return Executor(Registry([read_config_tool(policy)]), FAST)


@pytest.mark.parametrize("kind, fmt", CONFIG_CASES)
def test_config_file(configs: Executor, kind: SecretKind, fmt: str) -> None:
    written = config_file(kind, fmt)
    whole = run(configs, "read_config", {"name": "corpus", "path": written.name})
    by_key = run(configs, "read_config", {"name": "corpus", "path": written.name, "key": written.key})
    assert whole.ok and by_key.ok, (whole.status, by_key.status)  # the key is found: the file parses as written
    no_leak(kind, {"the whole file": whole.render(), f"key {written.key}": by_key.render()})


# ================================================================================ command output


@pytest.fixture(scope="module")
def commands(tmp_path_factory: pytest.TempPathFactory) -> Executor:
    """One command per kind, `cat` of a deploy script's saved output that holds the kind's line."""
    folder = tmp_path_factory.mktemp("outputs")
    declared = {}
    for kind in KINDS:
        output = folder / f"{kind.id}.txt"
        output.write_text(f"$ ./deploy.sh checkout 2026.11.29-1\n{kind.line}\ndeploy failed: exit status 1\n")
        declared[kind.id] = Command.model_validate(
            {"description": f"last deploy output ({kind.id})", "argv": ["cat", str(output)]}
        )
    return Executor(Registry([run_command_tool(Policy(commands=declared))]), FAST)


@pytest.mark.parametrize("kind", KINDS, ids=IDS)
def test_command_output(commands: Executor, kind: SecretKind) -> None:
    result = run(commands, "run_command", {"command": kind.id})
    assert result.ok and result.data["exit_code"] == 0, result.status
    no_leak(kind, {"run_command": result.render()})


# ================================================================================ the model's side


def corpus_excerpt(kind: str) -> str:
    """What a tool shows of a corpus kind: its line, as a log excerpt or a command's output would."""
    return BY_ID[kind].line


def scripted(body: dict[str, Any]) -> Reply:
    """The model. To "why does this fail: ..." it answers "ok"; asked to "show corpus kind X" it
    reads X's excerpt with the tool above, then answers with X's line; asked to "explain corpus
    kind X" (a Slack mention) it answers with X's line at once."""
    question = [m["content"] for m in body["messages"] if m["role"] == "user"][-1] or ""
    asked = re.search(r"(show|explain) corpus kind (\S+)", question)
    if is_summary_request(body) or asked is None:
        return Reply(content="ok")
    line = BY_ID[asked.group(2)].line
    if asked.group(1) == "show" and not tool_results(body):
        return Reply(calls=[Call("corpus_excerpt", {"kind": asked.group(2)})])
    return Reply(content=f"found it: {line}")


@pytest.fixture(scope="module")
def model() -> Iterator[ModelServer]:
    with ModelServer(scripted) as server:
        yield server


def agent_on(server: ModelServer, tools: list[Any]) -> Agent:
    client = ModelClient(model="scripted", base_url=server.base_url, max_retries=0, timeout_s=10)
    return Agent(client, InProcessMemory(), tools=tools, limits=LoopLimits(tool_retry_backoff_s=0.01))


# ================================================================================ the question


@pytest.fixture(scope="module")
def asked(model: ModelServer) -> Agent:
    return agent_on(model, [])


@pytest.mark.parametrize("kind", KINDS, ids=IDS)
def test_question(model: ModelServer, asked: Agent, kind: SecretKind) -> None:
    seen = len(model.requests)
    reply = asked.run(f"why does this fail: {kind.line}", thread=f"cli:question:{kind.id}")
    sent = model.requests[seen:]
    assert sent, "the model was asked"
    steps = json.dumps([step.model_dump(mode="json") for step in reply.steps])
    requests = {f"model request {i + 1}": json.dumps(body) for i, body in enumerate(sent)}
    no_leak(kind, {**requests, "the reply's text": reply.text, "the reply's steps": steps})


# ================================================================================ the step log


@pytest.fixture(scope="module")
def excerpting(model: ModelServer) -> Agent:
    return agent_on(model, [corpus_excerpt])


@pytest.mark.parametrize("kind", KINDS, ids=IDS)
def test_step_log(excerpting: Agent, caplog: pytest.LogCaptureFixture, kind: SecretKind) -> None:
    caplog.set_level(logging.INFO, logger="opsbot.steps")
    reply = excerpting.run(f"show corpus kind {kind.id}", thread=f"cli:steps:{kind.id}")
    messages = [record.getMessage() for record in caplog.records]
    assert any('"corpus_excerpt"' in m for m in messages if m.startswith('{"event": "step"')), messages
    no_leak(kind, {**{f"log record {i + 1}": m for i, m in enumerate(messages)}, "the reply's text": reply.text})


# ================================================================================ a Slack post


def channel_of(kind: SecretKind) -> str:
    return f"CK{IDS.index(kind.id):04d}"


@pytest.fixture(scope="module")
def slack_posts(redis_server: RedisServer, model: ModelServer) -> Iterator[dict[str, dict[str, str]]]:
    """One mention per kind, each in a channel of its own, all answered by one stack; then, per
    kind, every Web API call made in its channel and every message left there, as JSON."""
    redis_server.flush()
    with SlackApi() as slack:
        stack = Stack(slack, stack_settings(slack, redis_server.url, Policy(), model), model)
        try:
            mentions = [
                payloads.app_mention(f"<@UBOT> explain corpus kind {kind.id}", channel=channel_of(kind))
                for kind in KINDS
            ]
            for mention in mentions:
                assert stack.event(mention).status == 200
            answered = slack.wait_for(lambda: all(stack.answers(m["channel"], m["ts"]) for m in mentions), 60)
            assert answered and stack.idle(timeout=60), "every mention was answered"
            posts = {}
            for kind in KINDS:
                channel = channel_of(kind)
                calls = [c for c in slack.calls() if channel in (c.args.get("channel"), c.args.get("channel_id"))]
                shown = {f"{c.method} #{i + 1}": json.dumps(c.args) for i, c in enumerate(calls)}
                posts[kind.id] = {**shown, "the channel's messages": json.dumps(slack.messages(channel))}
            yield posts
        finally:
            stack.close()


@pytest.mark.parametrize("kind", KINDS, ids=IDS)
def test_slack_post(slack_posts: dict[str, dict[str, str]], kind: SecretKind) -> None:
    assert len(slack_posts[kind.id]) > 1, "opsbot posted in the channel"
    no_leak(kind, slack_posts[kind.id])


# ================================================================================ benign text


@pytest.mark.parametrize("text", [text for text, _ in BENIGN], ids=[f"{i:03d}" for i in range(len(BENIGN))])
def test_benign_text_is_untouched(text: str) -> None:
    assert redact_text(text) == text


def test_benign_text_comes_back_from_query_logs_unchanged(tmp_path: Path) -> None:
    """The corpus as a container log with `kubectl logs --timestamps` stamps, one second a line,
    read back in windows that stay under query_logs' output cap."""
    lines = [line for text, _ in BENIGN for line in text.split("\n")]
    stamped = [
        f"2026-11-29T{3 + i // 3600:02d}:{i // 60 % 60:02d}:{i % 60:02d}.000000000Z {line}"
        for i, line in enumerate(lines)
    ]
    log = tmp_path / "benign.log"
    log.write_text("\n".join(stamped) + "\n")
    executor = logs_of(log)
    start = 0
    while start < len(stamped):
        end, size = start, 0
        while end < len(stamped) and size + len(stamped[end]) < 10_000:
            size += len(stamped[end]) + 1
            end += 1
        since, until = stamped[start].split(" ", 1)[0], stamped[end - 1].split(" ", 1)[0]
        result = run(executor, "query_logs", {"service": "app", "since": since, "until": until, "limit": 500})
        assert result.ok, result.status
        assert result.data["lines"].split("\n") == stamped[start:end]
        start = end


@pytest.mark.parametrize("log", SAMPLE_LOGS, ids=[p.name for p in SAMPLE_LOGS])
def test_every_sample_log_line_is_untouched(log: Path) -> None:
    lines = log.read_text().splitlines()
    assert [line for line in lines if redact_text(line) != line] == []
