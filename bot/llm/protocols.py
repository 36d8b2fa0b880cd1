"""How opsbot and a model exchange tool calls: natively (`tools=`), or as text for servers
without function calling.

- `native`: chat completions' own `tools` and `tool_calls` (calls written as text are still
  recognised, tools/llm/textcalls.py).
- `react`: the classic ReAct text format (`Thought:`, `Action:`, `Action Input:`, `Observation:`,
  `Final Answer:`), read tolerantly: any case, extra spaces, full-width colons, fenced inputs,
  and the Chinese keywords Qwen's ReAct prompts use (思考, 行动, 行动输入, 观察, 最终答案).
- `json`: exactly one JSON object a message, `{"tool": name, "arguments": {...}}` or
  `{"answer": "..."}`.

Memory keeps every conversation in the native form; a text protocol is a way of rendering it for
one request (`render`) and of reading the reply (`read`), so a thread can move between endpoints.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from .textcalls import TextCall, calls_in_text


class Protocol(StrEnum):
    native = "native"
    react = "react"
    json = "json"
    auto = "auto"


@dataclass(frozen=True)
class TextReply:
    """What a text-protocol reply says: calls or an answer."""

    calls: list[TextCall]
    answer: str


# ---------------------------------------------------------------- rendering a conversation


def render(
    protocol: Protocol, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None
) -> list[dict[str, Any]]:
    """`messages` (native form) as a text protocol speaks them: the tools described in the system
    message, calls as the assistant's text, results as the user's observations."""
    out: list[dict[str, Any]] = []
    for message in messages:
        role = message["role"]
        if role == "system" and not out and tools:
            out.append(
                {"role": "system", "content": f"{message.get('content') or ''}\n\n{_instructions(protocol, tools)}"}
            )
        elif role == "assistant" and message.get("tool_calls"):
            out.append({"role": "assistant", "content": _calls_text(protocol, message)})
        elif role == "tool":
            observation = f"{_OBSERVATION[protocol]}{message.get('content') or ''}"
            if out and out[-1]["role"] == "user" and out[-1].get("observations"):
                out[-1]["content"] += "\n" + observation
            else:
                out.append({"role": "user", "content": observation, "observations": True})
        else:
            out.append({key: value for key, value in message.items() if key in ("role", "content")})
    for message in out:
        message.pop("observations", None)
    return out


_OBSERVATION = {Protocol.react: "Observation: ", Protocol.json: "Tool result: "}


def _calls_text(protocol: Protocol, message: dict[str, Any]) -> str:
    calls = [(c["function"]["name"], c["function"]["arguments"] or "{}") for c in message["tool_calls"]]
    thought = (message.get("content") or "").strip()
    if protocol is Protocol.json:
        return "\n".join(json.dumps({"tool": name, "arguments": _loads(arguments)}) for name, arguments in calls)
    lines = [f"Thought: {thought}"] if thought else []
    for name, arguments in calls:
        lines += [f"Action: {name}", f"Action Input: {arguments}"]
    return "\n".join(lines)


def _loads(arguments: str) -> Any:
    try:
        return json.loads(arguments)
    except ValueError:
        return arguments


def _instructions(protocol: Protocol, tools: list[dict[str, Any]]) -> str:
    catalog = "\n".join(
        f"- {t['function']['name']}: {t['function'].get('description', '')}\n"
        f"  parameters (JSON schema): {json.dumps(t['function'].get('parameters', {}), separators=(',', ':'))}"
        for t in tools
    )
    if protocol is Protocol.json:
        return (
            f"You can use these tools:\n{catalog}\n\n"
            "Reply with exactly one JSON object and nothing else: either "
            '{"tool": "<tool name>", "arguments": {<parameters>}} to use a tool (its result comes back '
            'as the next message), or {"answer": "<your answer to the engineer>"} when you are done.'
        )
    names = ", ".join(t["function"]["name"] for t in tools)
    return (
        f"You can use these tools:\n{catalog}\n\n"
        "Use this format:\n"
        "Thought: what you need to find out next\n"
        f"Action: the tool to use, one of [{names}]\n"
        "Action Input: the tool's parameters as one JSON object\n"
        "Then stop: the result comes back as the next message, starting with Observation:. Repeat as needed.\n"
        "When you can answer:\n"
        "Thought: I can answer now\n"
        "Final Answer: your answer to the engineer"
    )


# ---------------------------------------------------------------- reading a reply

_COLON = r"[ \t]*[:：][ \t]*"
_KEYWORDS = {
    "thought": r"(?:thought|思考)",
    "action": r"(?:action|行动)",
    "input": r"(?:action[ \t_]*input|行动输入)",
    "observation": r"(?:observation|观察)",
    "final": r"(?:final[ \t_]*answer|最终答案)",
}
_LINE_START = r"(?im)^[ \t>*#-]*"
_FINAL = re.compile(rf"{_LINE_START}{_KEYWORDS['final']}{_COLON}")
_ACTION = re.compile(rf"{_LINE_START}{_KEYWORDS['action']}{_COLON}(?P<name>[^\r\n]*)")
_INPUT = re.compile(rf"{_LINE_START}{_KEYWORDS['input']}{_COLON}")
_OBSERVED = re.compile(rf"{_LINE_START}{_KEYWORDS['observation']}{_COLON}")
_THOUGHT = re.compile(rf"{_LINE_START}{_KEYWORDS['thought']}{_COLON}")
_NAME_NOISE = re.compile(r"^[`*\"'\[ ]+|[`*\"'\] .。]+$")


def read(protocol: Protocol, content: str) -> TextReply:
    """The calls or the answer a text-protocol reply holds."""
    if protocol is Protocol.json:
        return _read_json(content)
    return read_react(content)


def read_react(content: str) -> TextReply:
    """ReAct text: the first Action (with its input) or Final Answer, whichever comes first;
    whatever the model invented after an Observation: line is not its to write."""
    observed = _OBSERVED.search(content)
    text = content[: observed.start()] if observed else content
    final, action = _FINAL.search(text), _ACTION.search(text)
    if action is not None and (final is None or action.start() < final.start()):
        return TextReply(_react_calls(text, action.start()), "")
    if final is not None:
        return TextReply([], text[final.end() :].strip())
    # Neither: a reply that ignored the format is taken as its answer, its Thought: label dropped.
    return TextReply([], _THOUGHT.sub("", content, count=1).strip())


def speaks_react(content: str) -> bool:
    """Whether a native reply is in fact ReAct text (an endpoint without function calling)."""
    return _ACTION.search(content) is not None and _INPUT.search(content) is not None


def _react_calls(text: str, start: int) -> list[TextCall]:
    calls: list[TextCall] = []
    actions = list(_ACTION.finditer(text, start))
    for index, action in enumerate(actions):
        end = actions[index + 1].start() if index + 1 < len(actions) else len(text)
        name = _NAME_NOISE.sub("", action.group("name").strip())
        given = _INPUT.search(text, action.end(), end)
        arguments = _argument_text(text[given.end() : end]) if given else "{}"
        calls.append(TextCall(name, arguments))
    return calls


def _argument_text(raw: str) -> str:
    """The Action Input as JSON text: unfenced, up to the end of its JSON object if it has one."""
    text = raw.strip()
    fenced = re.match(r"```[A-Za-z0-9_-]*\s*(?P<body>.*?)\s*```", text, re.S)
    if fenced:
        text = fenced.group("body").strip()
    if text.startswith("{"):
        try:
            parsed, _ = json.JSONDecoder().raw_decode(text)
            return json.dumps(parsed)
        except ValueError:
            return text  # cut or broken: the executor reports where
    return text.splitlines()[0] if text else "{}"


def _read_json(content: str) -> TextReply:
    text = content.strip()
    fenced = re.match(r"\A```[A-Za-z0-9_-]*\s*(?P<body>.*?)\s*```\Z", text, re.S)
    if fenced:
        text = fenced.group("body")
    try:
        parsed = json.loads(text)
    except ValueError:
        found = calls_in_text(content)
        return TextReply(found, "") if found else TextReply([], content.strip())
    if isinstance(parsed, dict) and isinstance(parsed.get("tool"), str):
        arguments = parsed.get("arguments", {})
        call = TextCall(parsed["tool"], arguments if isinstance(arguments, str) else json.dumps(arguments))
        return TextReply([call], "")
    if isinstance(parsed, dict) and isinstance(parsed.get("answer"), str):
        return TextReply([], parsed["answer"].strip())
    found = calls_in_text(content)
    return TextReply(found, "") if found else TextReply([], content.strip())
