"""Values of the environment variables a policy names (a source's headers, an MCP server's
environment): a value is never written in the YAML, and a variable that is not set where opsbot
runs is said by name, so nothing is sent without it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple


class Unset(NamedTuple):
    """The first named variable that is not set, and the key it was to fill."""

    key: str
    variable: str


class Named(NamedTuple):
    values: dict[str, str]
    unset: Unset | None


def named_values(variables: Mapping[str, str], environ: Mapping[str, str]) -> Named:
    """Each key of `variables` with the value of the environment variable it names; empty counts as unset."""
    values: dict[str, str] = {}
    for key, variable in variables.items():
        value = environ.get(variable)
        if not value:
            return Named(values, Unset(key, variable))
        values[key] = value
    return Named(values, None)
