"""Reading one YAML config file and reporting every problem in it with where it is."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from .wording import Worded, worded

M = TypeVar("M", bound=BaseModel)
Located = tuple[tuple[int | str, ...], str]  # a key path in the file, and what is wrong there


@dataclass(frozen=True)
class Problem:
    where: str  # "file:line" when the YAML node is known, else the file alone
    path: str  # dotted key path, e.g. "policy.services.checkout.logs"
    message: str

    def __str__(self) -> str:
        key = f" {self.path}:" if self.path else ""
        return f"{self.where}:{key} {self.message}"


class ConfigError(Exception):
    def __init__(self, path: Path, problems: list[Problem]) -> None:
        self.path = path
        self.problems = problems
        lines = "\n".join(f"  {p}" for p in problems)
        super().__init__(f"{path}: {len(problems)} problem(s)\n{lines}")


def load_yaml_model(path: Path, model: type[M], extra: Callable[[M], list[Located]] | None = None) -> M:
    """A YAML file validated as `model`; `extra` finds further problems, each at a key path of
    the file. Raises `ConfigError` with every problem, at its line, in plain words (wording.py)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(path, [Problem(str(path), "", f"cannot read the file: {exc.strerror}")]) from exc
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(path, [_syntax_problem(path, exc)]) from exc
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(path, [Problem(f"{path}:1", "", "the top level must be a mapping of sections")])
    problems = _duplicate_keys(path, root)
    try:
        config = model.model_validate(data)
    except ValidationError as exc:
        problems += _at_lines(path, root, worded(model, exc.errors()))
    else:
        problems += _at_lines(path, root, [Worded(loc, loc, message) for loc, message in (extra or _none)(config)])
    if problems:
        raise ConfigError(path, problems)
    return config


def located(path: Path, found: list[Located]) -> list[Problem]:
    """Problems found in a file that loaded (checks of what it names against this host), each at
    the line of its key path."""
    try:
        root = yaml.compose(path.read_text(encoding="utf-8"), Loader=yaml.SafeLoader)
    except (OSError, yaml.YAMLError):  # changed since it loaded: the file alone is still a place
        root = None
    return _at_lines(path, root, [Worded(loc, loc, message) for loc, message in found])


def _at_lines(path: Path, root: yaml.Node | None, found: list[Worded]) -> list[Problem]:
    """Each problem at its line, in the order of the file: people read it top down."""
    placed = sorted(((_line(root, problem.loc), problem) for problem in found), key=lambda pair: pair[0] or 0)
    return [Problem(f"{path}:{line}" if line else str(path), _dotted(p.path), p.message) for line, p in placed]


def _none(config: object) -> list[Located]:
    return []


def _syntax_problem(path: Path, exc: yaml.YAMLError) -> Problem:
    mark = getattr(exc, "problem_mark", None)
    where = f"{path}:{mark.line + 1}" if mark else str(path)
    reason = getattr(exc, "problem", None) or str(exc)
    context, context_mark = getattr(exc, "context", None), getattr(exc, "context_mark", None)
    if context and context_mark is not None:
        # An unclosed bracket is noticed lines later; the line that opened it is what to fix.
        reason += f" ({context} opened at line {context_mark.line + 1})"
    return Problem(where, "", f"not valid YAML: {reason}")


def _duplicate_keys(path: Path, node: yaml.Node | None, trail: str = "") -> list[Problem]:
    """YAML lets a repeated key silently replace the first one; in policy that would drop rules."""
    problems: list[Problem] = []
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key, value in node.value:
            dotted = f"{trail}.{key.value}" if trail else str(key.value)
            if key.value in seen:
                problems.append(
                    Problem(
                        f"{path}:{key.start_mark.line + 1}", dotted, "this key appears twice; the first would be lost"
                    )
                )
            seen.add(key.value)
            problems += _duplicate_keys(path, value, dotted)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            problems += _duplicate_keys(path, item, f"{trail}[{index}]")
    return problems


def _dotted(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part == "[key]":  # pydantic's marker for a bad mapping key: the name itself is wrong
            out += " (name)"
        else:
            out += f".{part}" if out else part
    return out


def _line(root: yaml.Node | None, loc: tuple[int | str, ...]) -> int | None:
    """The line of the deepest key on `loc` that exists: a missing key points at its parent's key."""
    node = root
    line = node.start_mark.line + 1 if node is not None else None
    for part in loc:
        found = _child(node, part)
        if found is None:
            break
        line, node = found
    return line


class _Child(NamedTuple):
    line: int  # 1-based
    node: yaml.Node


def _child(node: yaml.Node | None, part: int | str) -> _Child | None:
    """The line to report for `part` of `node` (the key's line for mappings) and its value node."""
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if key.value == str(part):
                return _Child(key.start_mark.line + 1, value)
    if isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
        item = node.value[part]
        return _Child(item.start_mark.line + 1, item)
    return None
