"""read_config cannot be used as an oracle: no sequence of lookups tells two files apart that
differ only in a secret redaction hides.

Each case is a pair of files, alike but for one character of a token used as a dict key and of a
password under a secret key. The same lookups are played on both: the whole file, fixed keys, and
the token guessed character by character (every possible next character after the common prefix,
and every full-length guess that differs from the token there, the real token of either file
among them). Every result the model would get, rendered as it gets it, must be identical.
"""

from __future__ import annotations

import json
import string
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from opsbot.config.policy import ConfigRoot, Policy
from opsbot.tools.base import Registry
from opsbot.tools.catalog import ops_tools
from opsbot.tools.executor import Executor, RetryPolicy, ToolCall

GUESSES = string.ascii_letters + string.digits + "_"
PASSWORDS = ("hunter2-Kx9Qm4Lw7Rt2", "hunter2-Kx9Qm4Lw7Rt3")


@dataclass(frozen=True)
class Pair:
    """Two GitHub-shaped tokens, differing at `at` only."""

    first: str
    second: str
    at: int


def pair(body: str, at: int, other: str) -> Pair:
    first = "ghp_" + body
    return Pair(first, first[:at] + other + first[at + 1 :], at)


PAIRS = {
    "first-character": pair("A" + "b7" * 17 + "c", 4, "B"),
    "last-character": pair("b7" * 18, 39, "8"),
    # One file's token spells `secret`: a decision made on the raw key would hide the value under it there only.
    "spells-a-secret-word": pair("secret" + "9x" * 15, 9, "u"),
}


def yaml_file(token: str, password: str) -> str:
    return (
        f"tokens:\n  {token}: alice\n  other: bob\n"
        f"db:\n  host: pg-1\n  password: {password}\n"
        f"passwords:\n  - {password}\n"
    )


def json_file(token: str, password: str) -> str:
    document = {
        "tokens": {token: "alice", "other": "bob"},
        "db": {"host": "pg-1", "password": password},
        "passwords": [password],
    }
    return json.dumps(document, indent=2) + "\n"


def env_file(token: str, password: str) -> str:
    return f"{token}=alice\nDB_HOST=pg-1\nDB_PASSWORD={password}\n"


@dataclass(frozen=True)
class Format:
    file_name: str
    render: Callable[[str, str], str]
    section: str  # the key path prefix of the dict whose keys are tokens ("" at the top level)
    fixed: tuple[str, ...]  # keys looked up as they are


FORMATS = {
    "yaml": Format(
        "app.yaml",
        yaml_file,
        "tokens.",
        ("tokens", "tokens.other", "tokens.[REDACTED:github]", "db", "db.password", "db.password.x")
        + ("passwords", "passwords.0", "passwords.1", "nope", "tokens.ghp_"),
    ),
    "json": Format(
        "app.json",
        json_file,
        "tokens.",
        ("tokens", "tokens.other", "tokens.[REDACTED:github]", "db", "db.password", "passwords.0", "nope"),
    ),
    "env": Format(".env", env_file, "", ("DB_PASSWORD", "DB_HOST", "[REDACTED:github]", "ghp_", "nope")),
}


def executor(directory: Path, text: str, name: str) -> Executor:
    directory.mkdir()
    (directory / name).write_text(text)
    root = ConfigRoot(path=directory, allow=(".env",))  # .env files are read only where a root allows them
    return Executor(Registry(ops_tools(Policy(config_files={"c": root}))), RetryPolicy(timeout_s=5, retries=0))


def answer(ex: Executor, path: str, key: str | None) -> str:
    """The result exactly as the model receives it."""
    arguments = {"name": "c", "path": path, **({"key": key} if key is not None else {})}
    return ex.run_one(ToolCall("t", "read_config", json.dumps(arguments))).result.render()


def probes(fmt: Format, token: str, at: int) -> list[str | None]:
    """The whole file, the fixed keys, then the token guessed at the position where the files differ."""
    prefix = token[:at]
    guessed_next = [fmt.section + prefix + c for c in GUESSES]
    full_length = [fmt.section + prefix + c + token[at + 1 :] for c in GUESSES]
    return [None, *fmt.fixed, *guessed_next, *full_length]


def differences(first: Executor, second: Executor, fmt: Format, keys: list[str | None]) -> list[str]:
    return [
        f"{key!r}:\n  {a}\n  {b}"
        for key in keys
        if (a := answer(first, fmt.file_name, key)) != (b := answer(second, fmt.file_name, key))
    ]


@pytest.mark.parametrize("kind", sorted(FORMATS))
@pytest.mark.parametrize("case", sorted(PAIRS))
def test_no_lookup_tells_two_files_apart_that_differ_only_in_a_secret(tmp_path: Path, kind: str, case: str) -> None:
    fmt, secrets = FORMATS[kind], PAIRS[case]
    first = executor(tmp_path / "a", fmt.render(secrets.first, PASSWORDS[0]), fmt.file_name)
    second = executor(tmp_path / "b", fmt.render(secrets.second, PASSWORDS[1]), fmt.file_name)
    keys = probes(fmt, secrets.first, secrets.at)
    real = {fmt.section + secrets.first, fmt.section + secrets.second}
    assert real <= set(keys), "both files' real tokens are among the guesses"

    assert differences(first, second, fmt, keys) == []
    whole = answer(first, fmt.file_name, None)
    assert secrets.first not in whole and PASSWORDS[0] not in whole and "alice" in whole


def test_a_lookup_by_the_redacted_key_finds_the_value(tmp_path: Path) -> None:
    """The probes reach real values: the key the model sees is the key it can use."""
    secrets = PAIRS["first-character"]
    ex = executor(tmp_path / "a", yaml_file(secrets.first, PASSWORDS[0]), "app.yaml")
    assert '"value":"alice"' in answer(ex, "app.yaml", "tokens.[REDACTED:github]")
    assert '"value":"[REDACTED:secret-value]"' in answer(ex, "app.yaml", "passwords.0")


def test_the_comparison_notices_a_difference_that_is_shown(tmp_path: Path) -> None:
    """Files that differ in what is not secret do give different answers: the comparison is not blind."""
    secrets = PAIRS["first-character"]
    text = yaml_file(secrets.first, PASSWORDS[0])
    first = executor(tmp_path / "a", text, "app.yaml")
    second = executor(tmp_path / "b", text.replace("pg-1", "pg-2"), "app.yaml")
    assert len(differences(first, second, FORMATS["yaml"], [None, "db", "db.host", "db.password"])) == 3
