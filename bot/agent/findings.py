"""What a run found, for a reply the model did not write: the useful part of its ok results.

When the loop stops without an answer (a model repeating one call, circling, out of steps or time,
replying with nothing), the engineer still gets what the tools returned: a result's own summary
and its first lines, cut, rather than "nothing was found".
"""

from __future__ import annotations

import json
from typing import Any

from ...tools.base import ToolResult
from ...tools.executor import Outcome
from ...tools.text import cut_middle

FINDING_CHARS = 700
FINDINGS = 2  # the newest distinct calls shown
_TEXT_FIELDS = ("lines", "output", "content", "value", "files")


def findings_text(outcomes: list[Outcome]) -> str:
    """The newest ok results of distinct calls, each as `tool(args): what it found`."""
    shown: list[str] = []
    seen: set[tuple[str, str]] = set()
    for outcome in reversed(outcomes):
        key = (outcome.call.name, outcome.call.arguments)
        if not outcome.result.ok or key in seen:
            continue
        seen.add(key)
        shown.append(f"{outcome.call.name}({_arguments(outcome.call.arguments)}): {useful_part(outcome.result)}")
        if len(shown) == FINDINGS:
            break
    return "\n".join(reversed(shown))


def useful_part(result: ToolResult) -> str:
    """A result's summary and its main text, cut to FINDING_CHARS."""
    data = result.data
    if isinstance(data, dict):
        parts = [str(data["summary"])] if "summary" in data else []
        parts += [_text(data[name]) for name in _TEXT_FIELDS if data.get(name)][:1]
        text = "\n".join(parts) if parts else json.dumps(data, ensure_ascii=False)
    else:
        text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False, default=str)
    return cut_middle(text, FINDING_CHARS, head_share=0.3).text


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def _arguments(raw: str) -> str:
    try:
        parsed = json.loads(raw) if raw.strip() else {}
    except ValueError:
        return raw[:80]
    if not isinstance(parsed, dict):
        return raw[:80]
    return ", ".join(f"{key}={json.dumps(value, ensure_ascii=False)}" for key, value in parsed.items())[:160]
