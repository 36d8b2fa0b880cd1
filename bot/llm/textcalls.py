"""Tool calls a model wrote as text, for servers that did not parse them into `tool_calls`.

Recognised only when the whole message is a call (or several), in the shapes models are trained
to write: a bare or fenced JSON object (`{"name": …, "arguments": {…}}`, with `parameters`, `args`
or `input` for `arguments`, or OpenAI's own `{"type": "function", "function": {…}}`), a list of
them, Hermes/Qwen `<tool_call>…</tool_call>` tags (JSON inside, or Qwen3-Coder's XML:
`<function=name><parameter=key>value</parameter>…</function>`, as its chat template writes it),
Mistral's `[TOOL_CALLS]` (JSON list, or the newer `name[ARGS]{…}`), Llama 3.x's `<|python_tag|>`
and `<function=name>{…}</function>`. Anything else, prose that merely quotes JSON included, stays
an answer. The calls found go through the same validation, guards, access checks and approvals as
native ones: they become the same `ToolCallSpec`s.
"""

from __future__ import annotations

import json
import re
from typing import Any, NamedTuple

_FENCE = re.compile(r"\A```[A-Za-z0-9_-]*[ \t]*\r?\n(?P<body>.*?)\r?\n?```\Z", re.S)
_TAGGED = re.compile(r"<tool_call>\s*(?P<body>.*?)\s*</tool_call>", re.S)
_FUNCTION_TAG = re.compile(r"<function=(?P<name>[\w.-]+)>\s*(?P<body>.*?)\s*</function>", re.S)
_MISTRAL_ARGS = re.compile(
    r"(?P<name>[\w.-]+)\[ARGS\](?P<body>\{.*?\})(?=\s*(?:\[TOOL_CALLS\]|[\w.-]+\[ARGS\]|\Z))", re.S
)
_PARAMETER = re.compile(r"\s*<parameter=(?P<key>[^>\s]+)>\n?(?P<value>.*?)\n?</parameter>\s*", re.S)
_ARGUMENT_KEYS = ("arguments", "parameters", "args", "input")
_ALLOWED_KEYS = frozenset({"name", "type", "id", *_ARGUMENT_KEYS})


class TextCall(NamedTuple):
    """A tool call a model wrote as text."""

    name: str
    arguments: str  # JSON text as written, or not JSON at all: the executor says which


def calls_in_text(content: str) -> list[TextCall] | None:
    """Each call, when the whole of `content` is calls; else None."""
    text = content.strip()
    if not text:
        return None
    fenced = _FENCE.match(text)
    if fenced:
        text = fenced.group("body").strip()
    for read in (_tagged, _function_tags, _mistral, _python_tag, _json_calls):
        found = read(text)
        if found is not None:
            return found
    return None


def _tagged(text: str) -> list[TextCall] | None:
    if not text.startswith("<tool_call>"):
        return None
    calls: list[TextCall] = []
    end = 0
    for match in _TAGGED.finditer(text):
        if text[end : match.start()].strip():
            return None  # prose between the tags
        body = match.group("body")
        found = _function_tags(body) if body.startswith("<function=") else _json_calls(body)
        if found is None:
            return None
        calls += found
        end = match.end()
    return calls if calls and not text[end:].strip() else None


def _function_tags(text: str) -> list[TextCall] | None:
    if not text.startswith("<function="):
        return None
    calls: list[TextCall] = []
    end = 0
    for match in _FUNCTION_TAG.finditer(text):
        arguments = _object(match.group("body"))
        if arguments is None:
            arguments = _parameters(match.group("body"))
        if text[end : match.start()].strip() or arguments is None:
            return None
        calls.append(TextCall(match.group("name"), json.dumps(arguments)))
        end = match.end()
    return calls if calls and not text[end:].strip() else None


def _mistral(text: str) -> list[TextCall] | None:
    if not text.startswith("[TOOL_CALLS]"):
        return None
    rest = text.replace("[TOOL_CALLS]", " ").strip()
    found = _json_calls(rest)
    if found is not None:
        return found
    calls = [TextCall(m.group("name"), m.group("body")) for m in _MISTRAL_ARGS.finditer(rest)]
    joined = "".join(f"{name}[ARGS]{body}" for name, body in calls)
    valid = all(_object(body) is not None for _, body in calls)
    return calls if calls and valid and re.sub(r"\s", "", joined) == re.sub(r"\s", "", rest) else None


def _python_tag(text: str) -> list[TextCall] | None:
    if not text.startswith("<|python_tag|>"):
        return None
    body = text.removeprefix("<|python_tag|>").replace("<|eom_id|>", "").replace("<|eot_id|>", "").strip()
    calls: list[TextCall] = []
    for part in (p for p in re.split(r";\s*(?=\{)", body) if p.strip()):
        found = _json_calls(part)
        if found is None:
            return None
        calls += found
    return calls or None


def _json_calls(text: str) -> list[TextCall] | None:
    """A JSON object or list of objects, each a call, and nothing else."""
    try:
        parsed = json.loads(text)
    except ValueError:
        return None
    items = parsed if isinstance(parsed, list) else [parsed]
    calls = [_call(item) for item in items]
    if not calls or any(call is None for call in calls):
        return None
    return [call for call in calls if call is not None]


def _call(item: Any) -> TextCall | None:
    """One call object: `{"name", "arguments"}` and its variants, nothing more."""
    if not isinstance(item, dict):
        return None
    if isinstance(item.get("function"), dict) and set(item) <= {"type", "id", "function"}:
        return _call(item["function"])
    name = item.get("name")
    if not isinstance(name, str) or not name or not set(item) <= _ALLOWED_KEYS:
        return None
    given = [key for key in _ARGUMENT_KEYS if key in item]
    if len(given) != 1:
        return None
    arguments = item[given[0]]
    if isinstance(arguments, str):
        return TextCall(name, arguments)
    if isinstance(arguments, dict):
        return TextCall(name, json.dumps(arguments))
    return None


def _parameters(body: str) -> dict[str, Any] | None:
    """Qwen3-Coder's `<parameter=key>value</parameter>` list, and nothing else. A value is text; one
    written as a JSON object or list is that (the executor checks every value against the tool)."""
    arguments: dict[str, Any] = {}
    end = 0
    for match in _PARAMETER.finditer(body):
        if match.start() != end:
            return None
        value = match.group("value")
        structured = _json_value(value) if value.lstrip().startswith(("{", "[")) else None
        arguments[match.group("key")] = value if structured is None else structured
        end = match.end()
    return arguments if end == len(body) else None


def _json_value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def _object(text: str) -> dict[str, Any] | None:
    try:
        parsed = json.loads(text)
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) else None
