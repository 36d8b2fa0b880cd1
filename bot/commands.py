"""Direct commands: deterministic, no model. The same words work in the terminal and in Slack's /ops.

`logs checkout ERROR timeout` calls query_logs(service=checkout, level=ERROR, contains=timeout)
through the same executor as the loop, so validation, timeouts and redaction are the same.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass

from bot.loop import Agent
from tools.base import ToolResult
from tools.executor import ToolCall
from tools.logs import LEVELS

USAGE = """Direct commands (no model needed):
  services                         what can be looked at: services, commands, config files
  logs <service> [level] [text]    newest log lines; level is one of DEBUG, INFO, WARN, ERROR
  run <command>                    run an allowlisted diagnostic command
  config <name> [key.path]         read a config file, or one value of it
  reset                            forget this thread's conversation
  help                             this list
Anything else is a question for the model."""

NAMES = ("services", "logs", "run", "config", "reset", "help")


@dataclass(frozen=True)
class CommandOutput:
    text: str
    ok: bool


def is_direct_command(text: str) -> bool:
    words = text.strip().split(maxsplit=1)
    return bool(words) and words[0].lower() in NAMES


def run_direct_command(agent: Agent, text: str, thread: str) -> CommandOutput:
    try:
        words = shlex.split(text)
    except ValueError as exc:
        return CommandOutput(f"Could not read that command ({exc}).\n\n{USAGE}", ok=False)
    name, args = words[0].lower(), words[1:]
    if name == "help":
        return CommandOutput(USAGE, ok=True)
    if name == "reset":
        agent.reset(thread)
        return CommandOutput("This thread's conversation is forgotten.", ok=True)
    call = _tool_call(name, args)
    if isinstance(call, str):
        return CommandOutput(f"{call}\n\n{USAGE}", ok=False)
    result = agent.executor.run_one(call).result
    return CommandOutput(render_result(result), ok=result.ok)


def _tool_call(name: str, args: list[str]) -> ToolCall | str:
    if name == "services":
        return ToolCall("direct", "list_services", "{}")
    if name == "logs":
        if not args:
            return "Usage: logs <service> [level] [text]"
        query: dict[str, object] = {"service": args[0]}
        rest = args[1:]
        if rest and rest[0].upper() in LEVELS:
            query["level"] = rest.pop(0).upper()
        if rest:
            query["contains"] = " ".join(rest)
        return ToolCall("direct", "query_logs", json.dumps(query))
    if name == "run":
        if len(args) != 1:
            return "Usage: run <command>"
        return ToolCall("direct", "run_command", json.dumps({"command": args[0]}))
    if len(args) not in (1, 2):
        return "Usage: config <name> [key.path]"
    return ToolCall(
        "direct", "read_config", json.dumps({"name": args[0], **({"key": args[1]} if len(args) == 2 else {})})
    )


def render_result(result: ToolResult) -> str:
    """A tool result for people: the data as text, or the error with what to do."""
    if result.error is not None:
        hint = f"\n  {result.error.hint}" if result.error.hint else ""
        return f"✗ {result.error.type.value}: {result.error.message}{hint}"
    text = _as_text(result.data)
    return f"{text}\n({result.truncated})" if result.truncated else text


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
            else:
                parts.append(f"{key}: {json.dumps(value) if not isinstance(value, str) else value}")
        return "\n".join(parts)
    return json.dumps(data, indent=2, ensure_ascii=False)
