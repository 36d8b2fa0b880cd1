"""Requests every chat template accepts, and tool-call ids every server pairs.

Strict chat templates (Mistral, Gemma and others, through vLLM, llama.cpp or Ollama) raise on a
system message that is not the first and on two user (or two assistant) messages in a row:
"Conversation roles must alternate user/assistant/user/assistant/...". So one system message
comes first, every other system message (the summary, a note that turns were left out) folded
into it, and consecutive user messages (a question and a loop note) are joined. OpenAI's own rules
(each assistant message with tool calls followed by exactly its results) hold already: memory
never splits a call from its results (bot/messages.py).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable
from typing import Any, NamedTuple

from ..messages import ToolCallSpec


def template_safe(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    system = [m["content"] for m in messages if m["role"] == "system" and m.get("content")]
    out: list[dict[str, Any]] = [{"role": "system", "content": "\n\n".join(system)}] if system else []
    for message in messages:
        if message["role"] == "system":
            continue
        previous = out[-1] if out else None
        if previous is not None and _joinable(previous, message):
            previous["content"] = f"{previous.get('content') or ''}\n\n{message.get('content') or ''}".strip()
        else:
            out.append(dict(message))
    return out


def _joinable(previous: dict[str, Any], message: dict[str, Any]) -> bool:
    if previous["role"] != message["role"] or message["role"] not in ("user", "assistant"):
        return False
    return not previous.get("tool_calls") and not message.get("tool_calls")


def unique_ids(calls: list[ToolCallSpec], taken: Iterable[str]) -> list[ToolCallSpec]:
    """`calls` with every empty, missing or repeated id replaced: some servers number calls per
    message (`call_0` in every reply) or give none, and a request holding one id twice is refused
    or answered with the wrong result. The ids `taken` (those already in the conversation) count."""
    taken = set(taken)
    out = []
    for call in calls:
        if not call.id or call.id in taken:
            call = call.model_copy(update={"id": new_id()})
        taken.add(call.id)
        out.append(call)
    return out


def ids_in(messages: list[dict[str, Any]]) -> set[str]:
    """The tool-call ids chat-completions messages hold, on calls and on results."""
    taken = {c["id"] for m in messages for c in m.get("tool_calls") or []}
    return taken | {m["tool_call_id"] for m in messages if m.get("tool_call_id")}


def new_id() -> str:
    # Nine letters and digits: what Mistral's templates demand, and any server accepts.
    return uuid.uuid4().hex[:9]


_NAMESPACE = re.compile(r"^.*[.:/]")


class Named(NamedTuple):
    """Calls with their names as offered, and each renaming said (`functions.query_logs -> query_logs`)."""

    calls: list[ToolCallSpec]
    renamed: list[str]


def offered_names(calls: list[ToolCallSpec], tools: list[dict[str, Any]] | None) -> Named:
    """A call named with a namespace before an offered tool's name (`functions.query_logs`, as
    gpt-oss writes through some servers; `tools.`, `default_api:`) gets the offered name: what
    follows the last `.`, `:` or `/` names exactly one tool. Any other name is left for the
    executor to refuse as unknown. Harmony tokens a server let into a name (`query_logs<|channel|>
    commentary`, vllm-project/vllm#32587) are cut off first."""
    offered = {tool["function"]["name"] for tool in tools or [] if "function" in tool}
    out, renamed = [], []
    for call in calls:
        bare = _NAMESPACE.sub("", call.name.split("<|", 1)[0].strip())
        if call.name not in offered and bare in offered:
            renamed.append(f"{call.name} -> {bare}")
            call = call.model_copy(update={"name": bare})
        out.append(call)
    return Named(out, renamed)
