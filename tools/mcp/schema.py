"""A server's input schema, checked before a tool is offered, and a call's arguments checked
against it (with `jsonschema`, which the MCP SDK depends on) before they are sent.

An input schema must be a JSON-schema object (`"type": "object"`), valid by its own metaschema,
and small: it goes to the model with every request, so a server cannot spend the context on one
tool. A schema that fails any of these refuses that tool, with the reason (check-config says it).
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


def argument_problems(schema: dict[str, Any], arguments: dict[str, Any]) -> list[str]:
    """What is wrong with `arguments` for `schema`, one line each (the first few)."""
    from jsonschema.validators import validator_for

    validator = validator_for(schema)(schema)
    errors = sorted(validator.iter_errors(arguments), key=lambda e: list(e.path))
    return [
        f"{_where(error.path)}: {error.message}" if error.path else error.message for error in errors[:MAX_PROBLEMS]
    ]


def expected(schema: dict[str, Any]) -> str:
    """The hint for arguments that do not fit: what is required and what is allowed."""
    required = ", ".join(schema.get("required", [])) or "nothing"
    allowed = ", ".join(schema.get("properties", {})) or "nothing"
    return f"required: {required}; allowed: {allowed}"


def _where(path: Any) -> str:
    return ".".join(str(part) for part in path) or "(arguments)"
