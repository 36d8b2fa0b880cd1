"""A corpus kind written as a config file of each format read_config reads, the way each format
holds a value: multi-line values as a YAML block scalar, JSON `\\n` escapes, a TOML multi-line
literal string, INI indented continuation lines, a double-quoted .env value with `\\n` escapes and
a .properties value with `\\n` escapes.

Only JSON and YAML hold nested documents (a Kubernetes Secret, a Docker config.json); the flat
formats hold one `key = value`, INI inside an `[app]` section.
"""

from __future__ import annotations

import json
import re
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from tests.corpus.secrets import SecretKind

INI_SECTION = "app"
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


@dataclass(frozen=True)
class ConfigFile:
    name: str  # relative to the config root
    text: str
    key: str  # the dotted key path read_config finds the value at


def config_file(kind: SecretKind, fmt: str) -> ConfigFile:
    name = f"{kind.id}.{fmt}"  # each format's usual extension is its name
    if fmt == "yaml":
        return ConfigFile(name, _yaml(kind), kind.key)
    if fmt == "json":
        return ConfigFile(name, json.dumps(kind.config(), indent=2) + "\n", kind.key)
    flat = _flat(kind.config())
    if fmt == "toml":
        return ConfigFile(name, _toml(kind.key, flat), kind.key)
    if fmt == "ini":
        return ConfigFile(name, _ini(kind.key, flat), f"{INI_SECTION}.{kind.key}")
    if fmt == "env":
        name_ = _env_name(kind.key)
        return ConfigFile(name, f"{name_}={_env_value(flat)}\n", name_)
    if fmt == "properties":
        return ConfigFile(name, f"{kind.key}={_properties_value(flat)}\n", kind.key)
    raise ValueError(f"no such format {fmt!r}")


def _yaml(kind: SecretKind) -> str:
    if kind.document is None and "\n" in kind.value:
        return f"{kind.key}: |-\n{textwrap.indent(kind.value, '  ')}\n"
    return str(yaml.safe_dump(dict(kind.config()), sort_keys=False, width=4096))


def _flat(document: Mapping[str, Any]) -> str:
    [value] = document.values()
    if not isinstance(value, str):
        raise ValueError("flat formats hold one string value")
    return value


def _env_name(key: str) -> str:
    """`application_key` -> `APPLICATION_KEY`, as .env files name their variables."""
    return re.sub(r"[^A-Za-z0-9]", "_", key).upper()


def _toml(key: str, value: str) -> str:
    name = key if _BARE_KEY.fullmatch(key) else json.dumps(key)
    if "\n" in value:
        return f"{name} = '''\n{value}'''\n"
    return f"{name} = {json.dumps(value)}\n"  # JSON's escapes are TOML basic-string escapes


def _ini(key: str, value: str) -> str:
    first, *rest = value.split("\n")
    continued = "".join(f"    {line}\n" for line in rest)
    return f"[{INI_SECTION}]\n{key} = {first}\n{continued}"


def _env_value(value: str) -> str:
    if "\n" in value or "'" in value:
        escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        return f'"{escaped}"'
    if re.search(r"[\s\"#$`]", value):
        return f"'{value}'"
    return value


def _properties_value(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n")
