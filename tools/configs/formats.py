"""Config file formats: YAML, JSON, TOML, INI, .env and Java properties, parsed into JSON-shaped
data with bounded size and depth, and values found by dotted key path."""

from __future__ import annotations

import configparser
import datetime
import json
import math
import os
import re
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple

import yaml

MAX_NODES = 100_000  # a YAML alias bomb expands to more than this long before it fills memory
MAX_NESTING = 100
MAX_KEY_TRIES = 1_000

_EXTENSIONS = {
    ".yaml": "yaml",
    ".yml": "yaml",
    ".json": "json",
    ".toml": "toml",
    ".ini": "ini",
    ".cfg": "ini",
    ".env": "env",
    ".properties": "properties",
}


class Unparsable(Exception):
    pass


class Document(NamedTuple):
    """A file's format (`yaml`, `json`, …, `text`), and its data."""

    kind: str
    data: Any


def format_of(name: str, text: str) -> Document:
    """The file's format and, when it parses, its data (None otherwise)."""
    try:
        return document(name, text)
    except Unparsable:
        return Document(_known_format(name) or "text", None)


def _known_format(name: str) -> str | None:
    lowered = name.lower()
    if lowered == ".env" or lowered.startswith(".env."):
        return "env"
    return _EXTENSIONS.get(os.path.splitext(lowered)[1])


def document(name: str, text: str) -> Document:
    """The parsed file: by its extension when it has a known one, else the first format that
    yields a mapping (JSON, TOML, YAML, INI, in that order)."""
    known = _known_format(name)
    if known is not None:
        return Document(known, _parse(known, text))
    for candidate in ("json", "toml", "yaml", "ini"):
        try:
            return Document(candidate, _parse(candidate, text))
        except Unparsable:
            continue
    raise Unparsable("not YAML, JSON, TOML, INI, .env or .properties (by its name or its content)")


def _parse(kind: str, text: str) -> Any:
    try:
        document = _PARSERS[kind](text)
    except RecursionError as exc:
        raise Unparsable("nested too deeply") from exc
    except (ValueError, yaml.YAMLError, configparser.Error) as exc:
        raise Unparsable(str(exc)[:300]) from exc
    if kind in ("yaml", "json") and not isinstance(document, dict | list):
        raise Unparsable(f"the {kind} document is a single value, not a mapping")
    return _plain(document, [MAX_NODES], 0)


def _yaml(text: str) -> Any:
    # libyaml's loader when present: the pure-Python one needs minutes for a 10 MB file.
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    documents = list(yaml.load_all(text, Loader=loader))
    return documents[0] if len(documents) == 1 else documents


def _ini(text: str) -> dict[str, Any]:
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    parser.optionxform = str  # type: ignore[assignment,method-assign]  # keys keep their case
    parser.read_string(text)
    sections: dict[str, Any] = {name: dict(parser.items(name, raw=True)) for name in parser.sections()}
    if parser.defaults():
        sections[parser.default_section] = dict(parser.defaults())
    return sections


def _env(text: str) -> dict[str, str]:
    values: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        key, sep, value = stripped.removeprefix("export ").partition("=")
        if not sep or not key.strip():
            raise ValueError(f"line {number} is not KEY=value")
        values[key.strip()] = _unquoted(value.strip())
    return values


def _unquoted(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value.split(" #", 1)[0].rstrip()


_PROPERTY = re.compile(r"((?:\\.|[^=:\s\\])+)\s*[=:\s]?\s*(.*)", re.S)


def _properties(text: str) -> dict[str, str]:
    values: dict[str, str] = {}
    for line in _logical_lines(text):
        match = _PROPERTY.fullmatch(line)
        if match is None:
            raise ValueError(f"cannot read {line[:60]!r}")
        values[_unescaped(match.group(1))] = _unescaped(match.group(2))
    return values


def _logical_lines(text: str) -> Iterator[str]:
    """Java properties lines: comments dropped, a line ending in an odd number of backslashes continued."""
    pending = ""
    for raw in text.splitlines():
        line = raw.lstrip()
        if not pending and (not line or line[0] in "#!"):
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2:
            pending += line[:-1]
            continue
        yield pending + line
        pending = ""
    if pending:
        yield pending


def _unescaped(value: str) -> str:
    return re.sub(r"\\(.)", lambda m: {"t": "\t", "n": "\n", "r": "\r"}.get(m.group(1), m.group(1)), value)


_PARSERS: dict[str, Any] = {
    "yaml": _yaml,
    "json": json.loads,
    "toml": tomllib.loads,
    "ini": _ini,
    "env": _env,
    "properties": _properties,
}


def _plain(node: Any, budget: list[int], depth: int) -> Any:
    """`node` as JSON-shaped data. YAML aliases are expanded here, so size and depth are bounded."""
    budget[0] -= 1
    if budget[0] < 0 or depth > MAX_NESTING:
        raise Unparsable(f"too large or nested too deeply (over {MAX_NODES:,} values or {MAX_NESTING} levels)")
    if isinstance(node, dict):
        return {str(k): _plain(v, budget, depth + 1) for k, v in node.items()}
    if isinstance(node, list | tuple | set):
        return [_plain(v, budget, depth + 1) for v in node]
    if isinstance(node, float) and not math.isfinite(node):
        return str(node)
    if isinstance(node, datetime.date | datetime.time):
        return node.isoformat()
    if isinstance(node, bytes):
        return f"<{len(node)} bytes of binary data>"
    if node is None or isinstance(node, str | int | float):
        return node
    return str(node)


@dataclass
class Miss:
    part: str
    keys: list[str]


def key_value(node: Any, parts: list[str], tries: list[int]) -> Any:
    """The value at `parts`, or the deepest `Miss`. Keys may contain dots themselves (flat
    properties, `spring.datasource.url: ...` in YAML), so the longest matching key is tried first."""
    if not parts:
        return node
    if isinstance(node, list):
        index = parts[0]
        if index.isdigit() and int(index) < len(node):
            return key_value(node[int(index)], parts[1:], tries)
        return Miss(index, [f"0..{len(node) - 1}"] if node else [])
    if not isinstance(node, dict):
        return Miss(parts[0], [])
    deepest = Miss(parts[0], sorted(node))
    for length in range(len(parts), 0, -1):
        joined = ".".join(parts[:length])
        tries[0] -= 1
        if joined not in node or tries[0] < 0:
            continue
        found = key_value(node[joined], parts[length:], tries)
        if not isinstance(found, Miss):
            return found
        deepest = found
    return deepest


def shown_value(value: Any) -> str:
    """A value found by key, for a person: text as it is, a number or a flag as the file would
    spell it (5, true, null), a mapping or a list as YAML lines."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict | list):
        listed: str = yaml.safe_dump(value, sort_keys=False, allow_unicode=True, width=100)
        return listed.rstrip("\n")
    return json.dumps(value)
