"""A server's input schema, checked before a tool is offered, and a call's arguments checked
against it (with `jsonschema`, which the MCP SDK depends on) before they are sent.

An input schema must be a JSON-schema object (`"type": "object"`), valid by its own metaschema,
and small: it goes to the model with every request, so a server cannot spend the context on one
tool. A schema that fails any of these refuses that tool, with the reason (check-config says it).

Arguments are checked by the schema, and one thing more: a key the schema does not declare, when it
declares its properties and says nothing of others (`additionalProperties`), is refused with the
allowed keys. JSON Schema would let it through, and servers built on pydantic drop it silently, so
a misspelt `timezone_name` would quietly mean the default. Before the check, a string given where
the schema wants a number, a boolean, an object or an array is read as one (`typed`): a person's
`times=3`, a runbook parameter (always text) and a model's "3" all become 3.
"""

from __future__ import annotations

import json
from typing import Any

# A generous tool's schema is a few kilobytes (mcp-server-git's largest is under one).
MAX_SCHEMA_CHARS = 8_000
MAX_PROBLEMS = 5


def schema_problem(schema: Any) -> str | None:
    """Why `schema` cannot be offered, or None."""
    if not isinstance(schema, dict) or schema.get("type") != "object":
        return 'its input schema is not a JSON-schema object ("type": "object")'
    size = len(json.dumps(schema, ensure_ascii=False))
    if size > MAX_SCHEMA_CHARS:
        return f"its input schema is {size:,} characters, more than the {MAX_SCHEMA_CHARS:,} a tool may take"
    from jsonschema import SchemaError
    from jsonschema.validators import validator_for

    try:
        validator_for(schema).check_schema(schema)
    except SchemaError as exc:
        return f"its input schema is not a valid JSON schema: {exc.message} (at {_where(exc.path)})"
    return None


def argument_problems(
    schema: dict[str, Any], arguments: dict[str, Any], *, unfilled: frozenset[str] = frozenset()
) -> list[str]:
    """What is wrong with `arguments` for `schema`, one line each (the first few). `unfilled`:
    keys whose values are known only later (a runbook's templates), so their absence is no problem."""
    from jsonschema.validators import validator_for

    validator = validator_for(schema)(schema)
    errors = sorted(validator.iter_errors(arguments), key=lambda e: list(e.path))
    problems = [
        f"{_where(error.path)}: {error.message}" if error.path else error.message
        for error in errors
        if not _only_unfilled(error, unfilled)
    ]
    problems += [f"{key}: not an argument of this tool" for key in undeclared(schema, arguments)]
    return problems[:MAX_PROBLEMS]


def undeclared(schema: dict[str, Any], arguments: dict[str, Any]) -> list[str]:
    """Keys of `arguments` the schema does not declare, when it declares its properties and allows
    no others by saying so (`additionalProperties`, `patternProperties`)."""
    properties = schema.get("properties")
    if not isinstance(properties, dict) or "additionalProperties" in schema or "patternProperties" in schema:
        return []
    return [key for key in arguments if key not in properties]


def typed(schema: dict[str, Any], arguments: dict[str, Any]) -> dict[str, Any]:
    """`arguments` with each string value read as the type its property wants, when the property
    takes no string and the text reads as one of its types; anything else is left for the check."""
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return arguments
    return {
        key: _read(value, types_of(properties[key]))
        if isinstance(value, str) and isinstance(properties.get(key), dict)
        else value
        for key, value in arguments.items()
    }


def types_of(prop: dict[str, Any]) -> set[str]:
    """The JSON types a property admits (`type`, one or a list, and those of `anyOf`/`oneOf`)."""
    kinds = prop.get("type")
    found = {kinds} if isinstance(kinds, str) else set(kinds) if isinstance(kinds, list) else set()
    for choice in [*prop.get("anyOf", []), *prop.get("oneOf", [])]:
        if isinstance(choice, dict):
            found |= types_of(choice)
    return found


def _read(text: str, kinds: set[str]) -> Any:
    if not kinds or "string" in kinds:
        return text
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return text
    fits = {
        "integer": isinstance(value, int) and not isinstance(value, bool),
        "number": isinstance(value, int | float) and not isinstance(value, bool),
        "boolean": isinstance(value, bool),
        "null": value is None,
        "object": isinstance(value, dict),
        "array": isinstance(value, list),
    }
    return value if any(fits.get(kind, False) for kind in kinds) else text


def _only_unfilled(error: Any, unfilled: frozenset[str]) -> bool:
    """A `required` error, at the top, for a key yet to be filled (jsonschema says each missing key
    in an error of its own, in these words)."""
    if error.validator != "required" or error.path:
        return False
    return any(error.message == f"{key!r} is a required property" for key in unfilled)


def expected(schema: dict[str, Any]) -> str:
    """The hint for arguments that do not fit: what is required and what is allowed."""
    required = ", ".join(schema.get("required", [])) or "nothing"
    allowed = ", ".join(schema.get("properties", {})) or "nothing"
    return f"required: {required}; allowed: {allowed}"


def _where(path: Any) -> str:
    return ".".join(str(part) for part in path) or "(arguments)"
