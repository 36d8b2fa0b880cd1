"""pydantic's validation errors reworded as configuration errors, in the words of the YAML file.

pydantic speaks of inputs, fields and Python types ("Extra inputs are not permitted", "Input should
be a valid integer"); a person editing a config file thinks in keys, values and lines. Each common
error type has its sentence here: an unknown key gets the closest known key ("did you mean"), a
value of the wrong kind says what it should be and what it was. Rare types keep pydantic's message.

The model's own annotations are walked along each error's location: that gives the keys a
mapping may hold (for "did you mean"), and tells apart the parts of a location that are no key
of the file (a union's member, such as `str` in `default.str`, or a runbook step's tag), which
are left out. Errors that differ only by such a member (a value that is neither text nor a whole
number) become one sentence.
"""

from __future__ import annotations

import difflib
import re
import types
from collections.abc import Iterable, Mapping, Sequence
from typing import Annotated, Any, NamedTuple, Union, get_args, get_origin

from pydantic import BaseModel, Tag
from pydantic_core import ErrorDetails

from .policy import NAME_PATTERN, NAME_RULE

Loc = tuple[int | str, ...]

# What a value of the wrong kind should have been: "should be <this>, got <what it was>".
_KINDS = {
    "int_type": "a whole number",
    "int_parsing": "a whole number",
    "int_from_float": "a whole number",
    "float_type": "a number",
    "float_parsing": "a number",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "string_type": "text",
    "list_type": "a list",
    "tuple_type": "a list",
    "set_type": "a list",
    "frozen_set_type": "a list",
    "dict_type": "a mapping of keys to values",
    "model_type": "a mapping of keys to values",
    "model_attributes_type": "a mapping of keys to values",
    "path_type": "a path",
    "byte_size": "a size such as 512MiB",
    "byte_size_unit": "a size such as 512MiB (B, KB, KiB, MB, MiB, GB, GiB...)",
}
# Limits: "should be <this>, got <the value>", the limit from the error's context.
_LIMITS = {
    "greater_than": "more than {gt}",
    "greater_than_equal": "at least {ge}",
    "less_than": "less than {lt}",
    "less_than_equal": "at most {le}",
    "too_short": "a list of at least {min_length} item(s)",
    "too_long": "a list of at most {max_length} item(s)",
    "string_too_short": "at least {min_length} character(s) long",
    "string_too_long": "at most {max_length} characters long",
    "string_pattern_mismatch": "text matching the pattern {pattern}",
}
# Our own validators' words (ValueError, or a custom error such as a runbook step's kind): kept as written.
_OURS = frozenset({"value_error", "assertion_error", "step_kind"})


class Worded(NamedTuple):
    """One problem in plain words: `loc` locates its line (the deepest key of it in the file),
    `path` is the key path shown before the message (a key named in the message is left out)."""

    loc: Loc
    path: Loc
    message: str


def worded(model: type[BaseModel], errors: Iterable[ErrorDetails]) -> list[Worded]:
    """Each of `errors`, raised validating `model`, as a configuration error; one per location
    for a value a union refused member by member."""
    found: list[Worded] = []
    kinds: dict[Loc, list[str]] = {}  # the kinds a value at a location may be, in order
    for error in errors:
        loc, parents = _walk(model, tuple(error["loc"]))
        kind = _KINDS.get(error["type"])
        if kind is not None:
            kinds.setdefault(loc, [])
            if kind not in kinds[loc]:
                kinds[loc].append(kind)
            if len(kinds[loc]) > 1:  # a union's other member: the sentence already written says it
                found = [w for w in found if w.loc != loc]
                found.append(Worded(loc, loc, f"should be {_either(kinds[loc])}, got {_shown(error['input'])}"))
                continue
        found.append(_one(error, loc, parents))
    return found


def _one(error: ErrorDetails, loc: Loc, parents: list[Any]) -> Worded:
    kind, context, given = error["type"], error.get("ctx") or {}, error["input"]
    key = str(loc[-1]) if loc else ""
    if kind == "missing":
        return Worded(loc, loc[:-1], f"missing required key '{key}'")
    if kind == "extra_forbidden":
        known = _keys(parents)
        hint = _suggestion(key, known) or (f" (known keys: {', '.join(known)})" if known else "")
        return Worded(loc, loc[:-1], f"unknown key '{key}'{hint}")
    if kind in _KINDS:
        return Worded(loc, loc, f"should be {_KINDS[kind]}, got {_shown(given)}")
    if kind in ("too_short", "string_too_short") and context.get("min_length") == 1:
        return Worded(loc, loc, "should not be empty")
    if kind == "string_pattern_mismatch" and context.get("pattern") == NAME_PATTERN:
        return Worded(loc, loc, f"should be {NAME_RULE}, got {_shown(given)}")
    if kind in _LIMITS:
        limit = _LIMITS[kind].format(**{name: _number(value) for name, value in context.items()})
        return Worded(loc, loc, f"should be {limit}, got {_measured(kind, given)}")
    if kind in ("literal_error", "enum"):
        expected = str(context.get("expected", ""))
        choices = re.findall(r"'([^']*)'", expected)
        return Worded(loc, loc, f"should be {expected}, got {_shown(given)}{_suggestion(str(given), choices)}")
    if kind in _OURS:
        return Worded(loc, loc, error["msg"].removeprefix("Value error, ").removeprefix("Assertion failed, "))
    return Worded(loc, loc, error["msg"])


def _suggestion(given: str, known: Sequence[str]) -> str:
    close = difflib.get_close_matches(given, known, n=1)
    return f" — did you mean '{close[0]}'?" if close else ""


def _either(kinds: list[str]) -> str:
    return kinds[0] if len(kinds) == 1 else f"{', '.join(kinds[:-1])} or {kinds[-1]}"


def _shown(value: object) -> str:
    """A value from the file as its author would recognise it."""
    if value is None:
        return "an empty value"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return repr(value if len(value) <= 60 else value[:57] + "...")
    if isinstance(value, int | float):
        return _number(value)
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list | tuple):
        return "a list"
    return type(value).__name__


def _measured(kind: str, value: object) -> str:
    """What a limit was compared with: the length of a list or a text, else the value."""
    if kind in ("too_short", "too_long") and isinstance(value, Sequence | Mapping):
        return f"{len(value)} item(s)"
    if kind in ("string_too_short", "string_too_long") and isinstance(value, str):
        return f"{len(value)} character(s)" if value else "empty text"
    return _shown(value)


def _number(value: object) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


# ---------------------------------------------------------------- the model along a location


class _Walked(NamedTuple):
    loc: Loc  # the keys of the file only
    parents: list[Any]  # the annotations that may hold its last part


def _walk(model: type[BaseModel], loc: Loc) -> _Walked:
    """`loc` without the parts that are no key of the file, and the annotations that may hold its
    last part (the mapping an unknown key was found in)."""
    kept: list[int | str] = []
    here: list[Any] = [model]
    parents = here
    for part in loc:
        parents = here
        here, label = _inside(here, part)
        if not label:
            kept.append(part)
    return _Walked(tuple(kept), parents)


class _Inside(NamedTuple):
    annotations: list[Any]
    label: bool  # `part` named a union's member or tag, not a key or an index


def _inside(annotations: list[Any], part: int | str) -> _Inside:
    """What may be found at `part` of a value of one of `annotations`; True when `part` names a
    union's member (or tag) rather than a key or an index."""
    members = [m for a in annotations for m in _members(a)]
    for member in members:
        if isinstance(part, str) and _label(member) == part:
            return _Inside([member], True)
    return _Inside([child for member in members for child in _children(_bare(member), part)], False)


def _members(annotation: Any) -> list[Any]:
    """A union's members (None left out), each with its own metadata; anything else alone."""
    bare = _bare(annotation)
    if get_origin(bare) in (Union, types.UnionType):
        return [m for a in get_args(bare) if a is not type(None) for m in _members(a)]
    return [annotation]


def _bare(annotation: Any) -> Any:
    while get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    return annotation


def _label(member: Any) -> str | None:
    """How pydantic names a union member in an error's location: its tag, or its type's name."""
    if get_origin(member) is Annotated:
        tag = next((m.tag for m in get_args(member)[1:] if isinstance(m, Tag)), None)
        if tag is not None:
            return tag
    bare = _bare(member)
    return bare.__name__ if isinstance(bare, type) else None


def _children(annotation: Any, part: int | str) -> list[Any]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [f.annotation for name, f in annotation.model_fields.items() if part in (name, f.validation_alias)]
    origin, args = get_origin(annotation), get_args(annotation)
    if origin in (dict, Mapping) and len(args) == 2:
        return [args[0] if part == "[key]" else args[1]]
    if origin in (list, tuple, set, frozenset, Sequence) and args:
        return [args[0]]
    return []


def _keys(annotations: list[Any]) -> list[str]:
    """The keys a mapping of one of `annotations` may hold, as the file writes them."""
    keys: list[str] = []
    for member in (m for a in annotations for m in _members(a)):
        bare = _bare(member)
        if isinstance(bare, type) and issubclass(bare, BaseModel):
            for name, field in bare.model_fields.items():
                alias = field.validation_alias
                keys.append(alias if isinstance(alias, str) else name)
    return keys
