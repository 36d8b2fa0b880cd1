"""Filling a step's arguments from the run's parameters and earlier results, and deciding branches.

Both are lookups, never evaluation: a template is a whole value naming one place
(`{params.NAME}` or `{steps.ID.data.KEY...}`, see config/policy/runbooks.py `template_of`), and a
condition compares one looked-up value with one literal. A value filled from a step keeps its
JSON type (a pool size stays the number 5), so the tool's own argument model judges it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ...config.policy import Condition, template_of
from .records import StepRecord


class TemplateError(ValueError):
    """A template names something the run does not have; the step reports it as `invalid_args`."""


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


def lookup(value: Any, path: str) -> Any:
    """The value at a dotted `path` inside JSON-shaped `value` (a digit indexes a list), or MISSING."""
    for part in path.split(".") if path else []:
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return MISSING
    return value


def fill(value: Any, params: Mapping[str, str], outputs: Mapping[str, Any]) -> Any:
    """`value` (a step's args, nested dicts and lists) with every template replaced; literals as
    they are. `outputs` holds the output of each step that succeeded, by step id."""
    if isinstance(value, dict):
        return {key: fill(item, params, outputs) for key, item in value.items()}
    if isinstance(value, list):
        return [fill(item, params, outputs) for item in value]
    template = template_of(value)
    if template is None:
        return value
    kind, rest = template
    if kind == "params":
        if rest not in params:
            raise TemplateError(f"{value}: the run has no parameter {rest!r}")
        return params[rest]
    step_id, _, path = rest.partition(".")
    if step_id not in outputs:
        raise TemplateError(f"{value}: step {step_id!r} has no result to take it from (it did not succeed)")
    found = lookup(outputs[step_id], path)
    if found is MISSING:
        raise TemplateError(f"{value}: step {step_id!r} has nothing at {path or 'its output'!r}")
    return found


_PARAM_IN_TEXT = re.compile(r"\{params\.([A-Za-z0-9_]+)\}")


def fill_text(text: str, params: Mapping[str, str]) -> str:
    """Free text shown to people (an approval's question) with `{params.NAME}` filled in. Only
    parameters: they are typed and checked, unlike anything a tool printed."""
    return _PARAM_IN_TEXT.sub(lambda m: params.get(m.group(1), m.group(0)), text)


def condition_holds(condition: Condition, steps_by_id: Mapping[str, StepRecord]) -> bool:
    actual = _actual(condition, steps_by_id)
    expected = condition.value
    match condition.op:
        case "eq":
            return _equal(actual, expected)
        case "ne":
            return not _equal(actual, expected)
        case "gt" | "ge" | "lt" | "le":
            if not (_number(actual) and _number(expected)):
                return False
            holds: dict[str, bool] = {
                "gt": actual > expected,
                "ge": actual >= expected,
                "lt": actual < expected,
                "le": actual <= expected,
            }
            return holds[condition.op]
        case "contains":
            if isinstance(actual, str):
                return isinstance(expected, str) and expected in actual
            if isinstance(actual, list):
                return any(_equal(item, expected) for item in actual)
            if isinstance(actual, dict):
                return isinstance(expected, str) and expected in actual
            return False
        case "empty":
            return _empty(actual)
        case "not_empty":
            return not _empty(actual)
    return False


def _actual(condition: Condition, steps_by_id: Mapping[str, StepRecord]) -> Any:
    record = steps_by_id.get(condition.step)
    if record is None:
        return MISSING
    if condition.path == "status":
        return record.status
    output = record.output
    # Only a tool step's output is a ToolResult; an explain text or a branch decision has no `data`.
    if not (isinstance(output, dict) and "ok" in output):
        return MISSING
    if condition.path == "error":
        error = output.get("error")
        return error.get("type") if isinstance(error, dict) else None
    return lookup(output, condition.path)


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _equal(actual: Any, expected: Any) -> bool:
    if actual is MISSING:
        return False
    if _number(actual) and _number(expected):
        return bool(actual == expected)
    # True == 1 in Python; in a condition a flag and a count are different things.
    return type(actual) is type(expected) and bool(actual == expected)


def _empty(value: Any) -> bool:
    return value is MISSING or value is None or (isinstance(value, str | list | dict) and len(value) == 0)
