"""Direct commands: deterministic, no model. The same words work in the terminal and in Slack's /ops.

`logs checkout ERROR timeout` calls query_logs(service=checkout, level=ERROR, contains=timeout)
through the same executor as the loop, so validation, timeouts and redaction are the same.

The word after the service is a level when it is meant as one (`_meant_as_level`): a spelling
opsbot knows, in any case (ERROR, error, WARNING, warn, eror, E, panic), or a word of four or
more letters one edit away from a level word of four or more with the same first letter
(WARNNG, errror, debgu, errors). A known spelling becomes its level; a misspelling goes to the
tool as written, which refuses it with the levels and "did you mean WARN?", so it never turns
into a text search that quietly finds nothing. Every other word is text: `timeout`, `OOM`,
`502`, `status=502`. A level word meant as text is searched with `regex=(?i)panic`.

Only an exact command form is a command: `reset` alone resets, but "reset of payments broke
checkout?" is a question, and so is "logs show 502s" when there is no service called `show`.
`decide` is the one place that tells a command from a question; every front end asks it.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import textwrap
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC
from enum import StrEnum
from typing import Any, NamedTuple

import yaml
from pydantic import BaseModel, ConfigDict

from ..config.policy import HttpSource, McpServer, Policy, Principal, offered_name, server_of
from ..tools.base import ErrorType, ToolResult
from ..tools.commands import ApprovalRequest
from ..tools.executor import ToolCall
from ..tools.logs import TIME_HINT, Level, misspelling_of, parse_level, time_arg
from ..tools.mcp import servers_listing, shared_hub, show_listing
from ..tools.writes import show_done
from .agent import Agent
from .agent.prompts import busy_text, memory_unavailable_text
from .faults import Fault
from .memory import MemoryUnavailable, ThreadBusy

USAGE = """Direct commands (no model needed):
  services                         what can be looked at: services, commands, config roots
  logs <service> [level] [text]    newest log lines; level: DEBUG, INFO, WARN, ERROR (or WARNING,
                                   ERR, FATAL, E ...), the minimum shown; a near miss is refused;
                                   options: since=15m until=2h limit=20 regex=RE (ISO-8601 times too)
  run <command> [name=value ...]   run an allowlisted diagnostic command with its parameters
  config <root> [file] [key.path] a config root's files, one file, or one value of it
  runbook list | runbook show <id> the reviewed runbooks, and one runbook's parameters and steps
  runbook run <id> [name=value ...] run one (in Slack, where its approvals can be given)
  metrics                          the metrics sources
  metrics <source> <promql>        a PromQL query over the last hour, summed up per series and drawn;
                                   options: since=1h until=... step=1m (ISO-8601 times too)
  metrics <source> find <words>    metric names holding the words, with their labels
  alerts                           the Alertmanagers
  alerts <source> [matcher ...]    firing alerts and their silences: service=checkout alertname=~High.*
  mcp                              the MCP servers and the tools opsbot may call (starts none of them)
  mcp <server>                     one server's tools described, with their arguments (starts it)
  mcp <server> <tool> [key=value ...]  call one tool; values typed as its schema says (JSON for lists
                                   and objects); a write tool waits for a person's approval
  history <words>                  past incidents like the words: where, the cause, the fix, who approved it
  handoff [--since 12h] [--thread <key>] [--summary]  what happened, as recorded: questions,
                                   findings, commands, approvals, alerts, runbook runs (--summary:
                                   the model's summary above the entries, which stay as recorded)
  reset                            forget this thread's conversation
  stop                             give up the run working in this thread (Slack; Ctrl-C in a terminal)
  help                             this list
Anything else is a question for the model."""

NAMES = (
    "services",
    "logs",
    "run",
    "config",
    "runbook",
    "metrics",
    "alerts",
    "mcp",
    "history",
    "handoff",
    "reset",
    "stop",
    "help",
)
HELP_POINTER = "(`help` lists the direct commands.)"
# What `stop` says where nothing runs beside it (a terminal: a run there is stopped with Ctrl-C).
STOP_HERE = "Nothing is running here to stop; while a question runs, Ctrl-C stops it."
LOG_OPTIONS = ("since", "until", "limit", "regex")
# A query's options come last, and a value is a time or a duration: PromQL never ends in such a word.
_METRICS_OPTION = re.compile(r"^(since|until|step)=([\w:.+-]+)$")
METRICS_SINCE = "1h"
HANDOFF_SINCE = "12h"


@dataclass(frozen=True)
class CommandOutput:
    """A direct command's answer: `text` for people; the tool's whole result, when a tool gave it."""

    text: str
    ok: bool
    tool: str | None = None
    result: ToolResult | None = None
    fault: Fault | None = None  # Redis failed: `text` says it in full, a Slack channel is told plainly

    @property
    def approval(self) -> ApprovalRequest | None:
        """A write command waiting for a person."""
        error = self.result.error if self.result else None
        if self.result is None or error is None or error.type is not ErrorType.needs_approval:
            return None
        return ApprovalRequest.model_validate(self.result.data)

    def as_json(self) -> dict[str, object]:
        """For `--json`: the text, and the tool's result with all its fields for a program to read."""
        shown: dict[str, object] = {"text": self.text, "ok": self.ok}
        if self.result is not None:
            shown |= {"tool": self.tool, "result": self.result.model_dump(mode="json", exclude_none=True)}
        return shown


class Builtin(StrEnum):
    """The direct commands no tool answers."""

    help = "help"
    reset = "reset"
    stop = "stop"  # Slack stops a thread's run with it before it is queued; a terminal has Ctrl-C


# Decisions travel in a Slack job through Redis: each kind is told apart by its fields alone
# (a ToolCall has id, name and arguments; the others forbid anything they do not declare).
_STORED = ConfigDict(frozen=True, extra="forbid")


class NotACommand(BaseModel):
    """Starts like the command `name` but is not one; `why` is shown when there is no model to ask instead."""

    model_config = _STORED

    name: str
    why: str


class RunbookRequest(BaseModel):
    """`runbook run <id> k=v`: a front end with approvals runs it (the Slack app)."""

    model_config = _STORED

    runbook: str
    params: dict[str, str]


class Listing(BaseModel):
    """What a command lists straight from the policy (`metrics`: the sources), read when it was decided."""

    model_config = _STORED

    heading: str
    entries: dict[str, str]

    def text(self) -> str:
        lines = [f"  {name}: {about}" if about else f"  {name}" for name, about in self.entries.items()]
        return "\n".join([self.heading, *lines]) if lines else f"{self.heading}\n  (none)"


class McpListing(BaseModel):
    """`mcp` (every server, none started) or `mcp <server>` (that one, started): the servers as the
    policy defines them when it was decided, so the listing reaches the process's running servers."""

    model_config = _STORED

    servers: dict[str, McpServer]
    server: str | None = None


class History(BaseModel):
    """`history <words>`: past incidents like the words (bot/agent/recollection.py)."""

    model_config = _STORED

    words: str


class Handoff(BaseModel):
    """`handoff [--since 12h] [--thread key]`: the record of a time span, as recorded."""

    model_config = _STORED

    since: str = HANDOFF_SINCE
    thread: str | None = None
    summary: bool = False


class Question(BaseModel):
    """Text for the model. `almost`: the command it only starts like, when it does."""

    model_config = _STORED

    almost: NotACommand | None = None


# a tool call, a built-in, a listing, the MCP servers, a runbook run, incident memory, or not one
DirectCommand = ToolCall | Builtin | Listing | McpListing | NotACommand | RunbookRequest | History | Handoff
Decision = DirectCommand | Question


def decide(policy: Policy, text: str, can_ask: bool) -> Decision:
    """What `text` is: a direct command, or a question for the model. Text that only starts like a
    command is a question when there is a model to ask (`can_ask`); without one, the person is
    shown why it is not a command."""
    parsed = parse_command(policy, text)
    if parsed is None:
        return Question()
    if isinstance(parsed, NotACommand) and can_ask:
        return Question(almost=parsed)
    return parsed


def parse_command(policy: Policy, text: str) -> DirectCommand | None:
    """The command `text` is, `NotACommand` if it only starts like one, None if it is a question."""
    words = text.strip().split()
    if not words or words[0].lower() not in NAMES:
        return None
    name = words[0].lower()
    if name == "metrics":
        return _metrics_call(policy, text.strip()[len(words[0]) :])
    if name == "mcp":
        return _mcp_call(policy, text.strip()[len(words[0]) :])
    if name == "history":
        rest = text.strip()[len(words[0]) :].strip()
        return History(words=rest) if rest else NotACommand(name=name, why="Usage: history <words>.")
    if name == "handoff":
        return _handoff(words[1:])
    if name == "alerts" and len(words) == 1:
        return _listing("Alertmanagers", "policy.alertmanagers", policy.alertmanagers)
    if name in ("help", "reset", "services", "stop"):
        if len(words) > 1:
            return NotACommand(name=name, why=f"`{name}` takes no arguments.")
        return ToolCall("direct", "list_services", "{}") if name == "services" else Builtin(name)
    try:
        args = shlex.split(text)[1:]
    except ValueError as exc:
        return NotACommand(name=name, why=f"Could not read that command ({exc}).")
    return _tool_call(policy, name, args)


def run_command(agent: Agent, parsed: DirectCommand, thread: str, principal: Principal | None = None) -> CommandOutput:
    if isinstance(parsed, RunbookRequest):
        return CommandOutput(
            f"Runbook {parsed.runbook} runs in Slack, where its approvals can be given: "
            f"/ops runbook run {parsed.runbook} ...; `runbook show {parsed.runbook}` shows its steps.",
            ok=False,
        )
    if isinstance(parsed, NotACommand):
        return CommandOutput(f"{parsed.why}\n{HELP_POINTER}", ok=False)
    if isinstance(parsed, Listing):
        return CommandOutput(parsed.text(), ok=True)
    if isinstance(parsed, McpListing):
        result = servers_listing(shared_hub(parsed.servers), parsed.server, principal)
        return CommandOutput(render_result(result, principal, show_listing), ok=result.ok, tool="mcp", result=result)
    if parsed == Builtin.help:
        return CommandOutput(USAGE, ok=True)
    if isinstance(parsed, History | Handoff):
        return _remembered(agent, parsed, principal)
    if parsed == Builtin.reset:
        return _reset(agent, thread)
    if parsed == Builtin.stop:
        return CommandOutput(STOP_HERE, ok=True)
    assert isinstance(parsed, ToolCall)
    tool = agent.executor.registry.get(parsed.name)
    if tool is None:
        # Only an MCP server's tool can be missing (its server lacks it, or its schema was refused):
        # said here, as the executor's hint (every tool's name) would start every other server.
        return CommandOutput(
            f"✗ {parsed.name} is not offered; `mcp {server_of(parsed.name)}` says why.", ok=False, tool=parsed.name
        )
    result = agent.executor.run_one(parsed, principal).result
    return CommandOutput(render_result(result, principal, tool.show), ok=result.ok, tool=parsed.name, result=result)


def _remembered(agent: Agent, parsed: History | Handoff, principal: Principal | None) -> CommandOutput:
    recollection = agent.recollection
    if recollection is None:
        return CommandOutput("Incident memory is not set up in this process.", ok=False)
    if isinstance(parsed, History):
        return CommandOutput(recollection.history(parsed.words, principal), ok=True)
    start = time_arg("--since", parsed.since, UTC, recollection.store.clock())
    if not isinstance(start, float):
        return CommandOutput(f"handoff --since {parsed.since!r}: {TIME_HINT}", ok=False)
    if parsed.summary and agent.model is None:
        return CommandOutput("handoff --summary needs a model: the timeline alone is `handoff`.", ok=False)
    model = agent.model if parsed.summary else None
    return CommandOutput(recollection.handoff(start, parsed.since, parsed.thread, principal, model), ok=True)


def _handoff(args: list[str]) -> Handoff | NotACommand:
    """`handoff`, `--since 12h` (or `since=12h`), `--thread <key>`, `--summary`: each once, in any order."""
    options: dict[str, str] = {}
    words, summary = list(args), False
    while words:
        word = words.pop(0)
        name, _, value = word.lstrip("-").partition("=")
        if name == "summary" and not value and not summary:
            summary = True
            continue
        if name not in ("since", "thread") or name in options or not (value or words):
            why = "Usage: handoff [--since 12h] [--thread <thread key>] [--summary]."
            return NotACommand(name="handoff", why=why)
        options[name] = value or words.pop(0)
    return Handoff(**options, summary=summary)


def _reset(agent: Agent, thread: str) -> CommandOutput:
    try:
        agent.reset(thread)
    except ThreadBusy:
        return CommandOutput(busy_text(agent.memory_settings.lock_ttl_s), ok=False)
    except MemoryUnavailable as exc:
        return CommandOutput(memory_unavailable_text(exc), ok=False, fault=exc.fault)
    return CommandOutput("This thread's conversation is forgotten.", ok=True)


def _tool_call(policy: Policy, name: str, args: list[str]) -> ToolCall | NotACommand | RunbookRequest:
    if name == "logs":
        if not args or args[0] not in policy.services:
            return NotACommand(
                name=name, why=_unknown("logs <service> [level] [text]", "service", args, policy.services)
            )
        query: dict[str, object] = {"service": args[0]}
        rest = args[1:]
        if rest and _meant_as_level(rest[0]):
            word = rest.pop(0)
            level = parse_level(word)
            # A misspelling goes as written: the tool's refusal names the levels and the nearest one.
            query["level"] = level.value if isinstance(level, Level) else word
        # Only these names are options; any other word, "status=502" too, is text to search for.
        # Values go to the tool unchecked, so a bad one gets the tool's own error and hint.
        text: list[str] = []
        for word in rest:
            key, _, value = word.partition("=")
            if key in LOG_OPTIONS and value:
                query[key] = value
            else:
                text.append(word)
        if text:
            query["contains"] = " ".join(text)
        return ToolCall("direct", "query_logs", json.dumps(query))
    if name == "run":
        usage = "run <command> [name=value ...]"
        if not args or args[0] not in policy.commands:
            return NotACommand(name=name, why=_unknown(usage, "command", args, policy.commands))
        # Only name=value words, each name once: "run uptime now" stays a question.
        pairs = [arg.partition("=") for arg in args[1:]]
        if any(not key or not sep for key, sep, _ in pairs) or len({key for key, _, _ in pairs}) != len(pairs):
            return NotACommand(name=name, why=f"Usage: {usage}; {args[0]}: {policy.commands[args[0]].summary()}.")
        call: dict[str, object] = {"command": args[0]}
        if pairs:
            call["params"] = {key: value for key, _, value in pairs}
        return ToolCall("direct", "run_command", json.dumps(call))
    if name == "runbook":
        return _runbook_call(policy, args)
    if name == "alerts":
        return _alerts_call(policy, args)
    return _config_call(policy, args)


def _mcp_call(policy: Policy, rest: str) -> ToolCall | Listing | McpListing | NotACommand:
    """`mcp`, `mcp <server>`, or `mcp <server> <tool> key=value ...`: a call of the tool as the
    model's would be (offered_name), its values given as text: the tool's schema types them. The
    values are read as typed (`_key_values`), so JSON keeps its quotes."""
    usage = "mcp | mcp <server> | mcp <server> <tool> [key=value ...]"
    words = rest.split(maxsplit=2)
    args, values = words[:2], words[2] if len(words) > 2 else ""
    if not policy.mcp:
        heading = "No MCP servers are configured (policy.mcp)."
        return Listing(heading=heading, entries={}) if not args else NotACommand(name="mcp", why=heading)
    if not args:
        return McpListing(servers=dict(policy.mcp))
    if args[0] not in policy.mcp:
        return NotACommand(name="mcp", why=_unknown(usage, "MCP server", args, policy.mcp))
    server, spec = args[0], policy.mcp[args[0]]
    if len(args) == 1:
        return McpListing(servers=dict(policy.mcp), server=server)
    if args[1] not in spec.tools:
        return NotACommand(
            name="mcp",
            why=f"opsbot may not call a tool {args[1]!r} of MCP server {server}. Usage: {usage}; "
            f"its tools: {', '.join(sorted(spec.tools))}.",
        )
    pairs = _key_values(values)
    if pairs is None:
        return NotACommand(
            name="mcp",
            why=f"Usage: {usage}; arguments are key=value, each key once, a value with spaces quoted, JSON "
            f"for a list or an object (`mcp {server}` lists them).",
        )
    return ToolCall("direct", offered_name(server, args[1]), json.dumps(pairs))


_KEY = re.compile(r"\s*([A-Za-z_][\w.-]*)=")


def _key_values(text: str) -> dict[str, str] | None:
    """`key=value ...` as typed: a value runs to the next space, or is quoted ('a b', "a b"), or
    is JSON (`[1, 2]`, `{"a": 1}`, kept as its text for the schema to read). None when the text
    is not that, or names a key twice."""
    found: dict[str, str] = {}
    at = 0
    while text[at:].strip():
        key = _KEY.match(text, at)
        if key is None or key[1] in found:
            return None
        value = _value_at(text, key.end())
        if value is None:
            return None
        found[key[1]], at = value
    return found


class Value(NamedTuple):
    text: str
    end: int


def _value_at(text: str, start: int) -> Value | None:
    """The value starting at `start` and where it ends; None for an unclosed quote or bracket."""
    first = text[start : start + 1]
    if first in ("{", "[", '"'):
        try:
            value, end = json.JSONDecoder().raw_decode(text, start)
        except json.JSONDecodeError:
            return None
        return Value(value if first == '"' else text[start:end], end)
    if first == "'":
        end = text.find("'", start + 1)
        return Value(text[start + 1 : end], end + 1) if end >= 0 else None
    end = len(text) if (space := re.search(r"\s", text[start:])) is None else start + space.start()
    return Value(text[start:end], end)


def _config_call(policy: Policy, args: list[str]) -> ToolCall | NotACommand:
    """`config <root>`, `config <root> <file> [key]` (or `<root>/<file>`), `config <root> <key>` for
    a root that is a single file. A root name cannot contain "/", so `checkout/app.yaml` is
    unambiguously a root and a path in it."""
    usage = "config <root> [file] [key.path]"
    name, _, path = args[0].partition("/") if args else ("", "", "")
    root = policy.config_files.get(name)
    if root is None:
        return NotACommand(name="config", why=_unknown(usage, "config root", args, policy.config_files))
    # After a directory root comes a file in it, then a key; after a single-file root, a key of
    # that file (its own name may come first). Only the root's own path is looked at, never inside it.
    words, directory = args[1:], os.path.isdir(root.path)  # False, not an error, when it cannot be looked at
    file = path or (words.pop(0) if words and (directory or words[0] == root.path.name) else None)
    if len(words) > 1:
        takes = "a file in it, then one key path" if directory else f"one key path of {root.path.name}"
        return NotACommand(name="config", why=f"Usage: {usage}; config root {name} takes {takes}.")
    key = words[0] if words else None
    read = {"name": name, **({"path": file} if file else {}), **({"key": key} if key else {})}
    return ToolCall("direct", "read_config", json.dumps(read))


def _listing(what: str, key: str, sources: Mapping[str, HttpSource]) -> Listing:
    entries = {name: source.description for name, source in sources.items()}
    return Listing(heading=f"{what}:" if entries else f"No {what} are configured ({key}).", entries=entries)


def _alerts_call(policy: Policy, args: list[str]) -> ToolCall | NotACommand:
    """`alerts <source> [matcher ...]`: each word a label matcher, checked by the tool."""
    if args[0] not in policy.alertmanagers:
        usage = "alerts | alerts <source> [matcher ...]"
        return NotACommand(name="alerts", why=_unknown(usage, "Alertmanager", args, policy.alertmanagers))
    return ToolCall("direct", "query_alerts", json.dumps({"source": args[0], "matchers": args[1:]}))


def _metrics_call(policy: Policy, rest: str) -> ToolCall | Listing | NotACommand:
    """`metrics` (the sources), `metrics <source> find <words>`, or `metrics <source> <promql> [options]`.
    The query is kept as typed, quotes and all: PromQL's `{code="502"}` is not shell words."""
    usage = "metrics <source> <promql> [since=1h] [until=...] [step=...] | metrics <source> find <words>"
    if not rest.strip():
        return _listing("metrics sources", "policy.metrics", policy.metrics)
    source, _, query = rest.strip().partition(" ")
    if source not in policy.metrics:
        return NotACommand(name="metrics", why=_unknown(usage, "metrics source", [source], policy.metrics))
    query = query.strip()
    verb, _, words = query.partition(" ")
    if verb == "find" and words.strip():
        return ToolCall("direct", "find_metrics", json.dumps({"source": source, "words": words.strip()}))
    options: dict[str, str] = {}
    while query:
        head, _, last = query.rpartition(" ")
        option = _METRICS_OPTION.match(last)
        if option is None or option[1] in options:
            break
        options[option[1]] = option[2]
        query = head.strip()
    if not query:
        return NotACommand(name="metrics", why=f"Usage: {usage}.")
    call = {"source": source, "query": query, "since": METRICS_SINCE, **options}
    return ToolCall("direct", "query_metrics", json.dumps(call))


def _meant_as_level(word: str) -> bool:
    """Whether the word after `logs <service>` is meant as a level (the module's docstring says
    the rule). Letters only: a number there is text (`logs checkout 502`), since HTTP statuses are
    searched far more often than numeric levels are typed. Capitals are no sign (OOM, NPE, EOF
    and FAIL are searched for), and two edits reach real words (errno, fail, tracks)."""
    if not word.isalpha():
        return False
    if isinstance(parse_level(word), Level):
        return True
    if len(word) < 4:
        return False  # `db`, `tls`: too many short words are one edit from inf, dbg, err
    return misspelling_of(word, 1) is not None


def _runbook_call(policy: Policy, args: list[str]) -> ToolCall | NotACommand | RunbookRequest:
    usage = "runbook list | runbook show <id> | runbook run <id> [name=value ...]"
    if len(args) >= 2 and args[0] == "run":
        if args[1] not in policy.runbooks:
            return NotACommand(name="runbook", why=_unknown(usage, "runbook", args[1:], policy.runbooks))
        pairs = [arg.partition("=") for arg in args[2:]]
        if any(not key or not sep for key, sep, _ in pairs) or len({key for key, _, _ in pairs}) != len(pairs):
            return NotACommand(name="runbook", why=f"Usage: {usage}; parameters are name=value, each name once.")
        return RunbookRequest(runbook=args[1], params={key: value for key, _, value in pairs})
    if args == ["list"]:
        return ToolCall("direct", "list_runbooks", "{}")
    if len(args) == 2 and args[0] == "show":
        if args[1] not in policy.runbooks:
            return NotACommand(name="runbook", why=_unknown(usage, "runbook", args[1:], policy.runbooks))
        return ToolCall("direct", "read_runbook", json.dumps({"name": args[1]}))
    return NotACommand(
        name="runbook", why=f"Usage: {usage}; runbooks: {', '.join(sorted(policy.runbooks)) or 'none configured'}."
    )


def _unknown(usage: str, kind: str, args: list[str], known: Iterable[str]) -> str:
    given = f"There is no {kind} {args[0]!r}. " if args else ""
    return f"{given}Usage: {usage}; known {kind}s: {', '.join(sorted(known)) or 'none'}."


def render_result(
    result: ToolResult, principal: Principal | None = None, show: Callable[[Any], str] | None = None
) -> str:
    """A tool result for people: the data as its tool shows it (`show`, else as plain text),
    or the error with what a person can do next. Tools' hints are written for the model ("tell
    the user ..."); a person reading a direct command's answer gets `_next_step` instead."""
    if result.error is not None:
        step = _next_step(result, principal)
        hint = f"\n  {step}" if step else ""
        return f"✗ {result.error.type.value.replace('_', ' ')}: {result.error.message}{hint}"
    text = show(result.data) if show is not None else _as_text(result.data)
    return f"{text}\n({result.truncated})" if result.truncated else text


def render_approved(result: ToolResult) -> str:
    """An approved write's result, for people: a command's output as `run` shows it, or the silence."""
    return render_result(result, show=show_done)


def _next_step(result: ToolResult, principal: Principal | None) -> str:
    error = result.error
    assert error is not None
    if error.type is ErrorType.needs_approval:
        data = result.data if isinstance(result.data, dict) else {}
        command = data.get("command", "this command")
        if principal is not None and principal.platform == "slack":
            request = f" (request {data['id']})" if "id" in data else ""
            return f"`{command}` changes things, so it waits for a person's approval{request}; ask an approver."
        return (
            f"`{command}` changes things, so it needs a person's approval: in Slack, or in `opsbot chat` "
            "for an approver the policy names."
        )
    # What is left of a model-facing hint once the parts addressed to the model are gone, in the
    # words a person types.
    parts = [part.strip() for part in (error.hint or "").split(";")]
    kept = "; ".join(part for part in parts if part and not part.lower().startswith(_MODEL_FACING))
    for call, command in _AS_TYPED.items():
        kept = kept.replace(call, command)
    if error.type is ErrorType.denied and not kept:  # a refusal by the policy, whose hint was all for the model
        return (
            "The reason above says who may; ask one of them to do it, or whoever maintains opsbot's policy "
            "to give you access."
        )
    return kept


_MODEL_FACING = ("tell the user", "do not ", "don't ")
# Tools' hints name the call that would help; a person types the direct command instead.
_AS_TYPED = {"read_config without path": "`config <root>`"}


def _as_text(data: object) -> str:
    if isinstance(data, str):
        return data
    if isinstance(data, dict):
        parts = []
        for key, value in data.items():
            if isinstance(value, str) and "\n" in value:
                parts.append(f"{key}:\n{value.rstrip()}")
            elif isinstance(value, dict):
                inner = "\n".join(f"  {k}: {v}" for k, v in value.items()) or "  (none)"
                parts.append(f"{key}:\n{inner}")
            elif isinstance(value, list) and value and all(_is_entry(v) for v in value):
                parts.append(f"{key}:\n" + "\n".join(f"  {v['name']}: {v['about']}" for v in value))
            elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
                listed = yaml.safe_dump(value, sort_keys=False, allow_unicode=True, width=100).rstrip()
                parts.append(f"{key}:\n" + textwrap.indent(listed, "  "))
            else:
                parts.append(f"{key}: {json.dumps(value) if not isinstance(value, str) else value}")
        return "\n".join(parts)
    return json.dumps(data, indent=2, ensure_ascii=False)


def _is_entry(value: object) -> bool:
    """A named entry of a listing, as list_services gives them."""
    return isinstance(value, dict) and set(value) == {"name", "about"}
