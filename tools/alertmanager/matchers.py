"""Label matchers as the model writes them (`name=value`, `name!=value`, `name=~regex`,
`name!~regex`, a value optionally in double quotes), checked before anything is sent: a bad one
is `invalid_args` saying what is wrong with it, and Alertmanager gets each in its own quoted form."""

from __future__ import annotations

import json
import re
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict

from ..base import ErrorType, ToolResult

_MATCHER = re.compile(r"^\s*(?P<name>[^\s=!~]*)\s*(?P<op>=~|!~|!=|=)\s*(?P<value>.*?)\s*$", re.DOTALL)
_LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
MATCHER_HINT = (
    "write each matcher as name=value, name!=value, name=~regex or name!~regex (e.g. alertname=HighErrorRate, "
    'severity=~"critical|page"); a label name is letters, digits and _, not starting with a digit'
)


class Op(StrEnum):
    equal = "="
    not_equal = "!="
    regex = "=~"
    not_regex = "!~"


class Matcher(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    op: Op
    value: str

    @property
    def is_regex(self) -> bool:
        return self.op in (Op.regex, Op.not_regex)

    @property
    def is_equal(self) -> bool:
        """Whether the matcher asks for a match (rather than its absence)."""
        return self.op in (Op.equal, Op.regex)

    def text(self) -> str:
        """As Alertmanager's `filter=` reads it, the value quoted (quotes and backslashes escaped)."""
        return f"{self.name}{self.op.value}{json.dumps(self.value, ensure_ascii=False)}"

    def shown(self) -> str:
        """As people write it: `alertname=HighErrorRate`, the value quoted only when it must be."""
        plain = re.fullmatch(r"[^\s\",{}]+", self.value) is not None
        return f"{self.name}{self.op.value}{self.value if plain else json.dumps(self.value, ensure_ascii=False)}"

    @classmethod
    def from_api(cls, matcher: dict[str, Any]) -> Matcher:
        """A silence's matcher as Alertmanager's API v2 gives it."""
        equal, regex = matcher.get("isEqual", True), matcher.get("isRegex", False)
        op = (Op.regex if regex else Op.equal) if equal else (Op.not_regex if regex else Op.not_equal)
        return cls(name=str(matcher.get("name", "")), op=op, value=str(matcher.get("value", "")))

    def api(self) -> dict[str, object]:
        """As a silence's matcher in Alertmanager's API v2."""
        return {"name": self.name, "value": self.value, "isRegex": self.is_regex, "isEqual": self.is_equal}


def parse_matcher(text: str) -> Matcher | str:
    """The matcher `text` writes, or what is wrong with it."""
    found = _MATCHER.match(text)
    if found is None:
        return f"{text!r} is not a matcher: it needs an operator (=, !=, =~ or !~)"
    name, value = found["name"], found["value"]
    if not _LABEL_NAME.match(name):
        return f"{text!r}: {name!r} is not a label name" if name else f"{text!r} names no label"
    if value.startswith('"'):
        try:
            value = json.loads(value)
        except ValueError:
            return f"{text!r}: the quoted value is not closed or escaped right"
    op = Op(found["op"])
    if op in (Op.regex, Op.not_regex):
        try:
            re.compile(value)
        except re.error as exc:
            return f"{text!r}: the regular expression is not valid: {exc}"
    return Matcher(name=name, op=op, value=value)


def parse_matchers(texts: list[str]) -> list[Matcher] | ToolResult:
    """Every matcher of `texts`, or `invalid_args` naming every bad one."""
    matchers: list[Matcher] = []
    problems: list[str] = []
    for text in texts:
        parsed = parse_matcher(text)
        if isinstance(parsed, str):
            problems.append(parsed)
        else:
            matchers.append(parsed)
    if problems:
        return ToolResult.failure(ErrorType.invalid_args, "; ".join(problems), hint=MATCHER_HINT)
    return matchers
