"""Kubernetes shapes that span lines: an env entry whose secret's name is the `name` on the line
above its `value`, and every value of a Secret's `data` and `stringData` (base64 or plain), as
`kubectl get secret -o yaml|json` prints them and manifests hold them: one object, several YAML
documents, or the items of a `kind: List` (`secret_yaml.py`, `secret_json.py`)."""

from __future__ import annotations

import re

from . import secret_json, secret_yaml
from .keys import secret_key
from .markers import Kind, harmless, marker
from .pairs import QUOTE, SEPARATOR, VALUE, value_group

# Kubernetes env and ECS task definitions: `- name: DB_PASSWORD` then `value: x`, or one JSON object.
_ENV_PAIR = re.compile(
    rf"(?i)\b(?:name|key){SEPARATOR}{QUOTE}(?P<key>[\w.-]++){QUOTE}[ \t]*,?[ \t]*(?:\r?\n[ \t]*)?"
    rf"{QUOTE}value{SEPARATOR}{VALUE}"
)
_ENV_REACH = 300  # how far before a `value` its `name` may be
_VALUE_REACH = 4_096  # how far after a `value` its value may go, when tried at each `value`
# Characters per `value`: closer together than this (YAML of `key: value` lines), one pass of the
# pattern over the text (tried at every position, about 80 ms a megabyte at worst) is cheaper
# than a try at each; further apart (log text), only the `value`s are looked at.
_DENSE = 1_000
_NAMES = ("name", "key")


def redact_env_pairs(text: str) -> str:
    lowered = text.lower()
    count = lowered.count("value")
    if not count:
        return text
    if len(lowered) != len(text) or count * _DENSE > len(text):
        # Dense, or lower() lengthened a character (İ) and offsets would not line up.
        return _ENV_PAIR.sub(_env_pair, text)
    pieces: list[str] = []
    done = 0
    at = lowered.find("value")
    while at != -1:
        match = _pair_at(text, lowered, at, done)
        if match is not None:
            pieces += [text[done : match.start()], _env_pair(match)]
            done = match.end()
        at = lowered.find("value", max(done, at + 1))
    return "".join(pieces) + text[done:] if pieces else text


def _pair_at(text: str, lowered: str, at: int, done: int) -> re.Match[str] | None:
    """The env pair whose `value` is the one at `at`, if any.

    Its `name` (or `key`) is on the same line or the line before, and only separators and the
    name's value stand between: the pattern is tried anchored at those words, nearest first. (A
    search through a window around every `value` cost 2 s for 256 KB of `key: value` lines.)"""
    line_start = text.rfind("\n", 0, at)
    start = text.rfind("\n", 0, line_start) + 1 if line_start > 0 else 0
    start = max(start, done, at - _ENV_REACH)
    starts = [found for word in _NAMES for found in _occurrences(lowered, word, start, at)]
    for begin in sorted(starts, reverse=True):
        match = _ENV_PAIR.match(text, begin, at + len("value") + _VALUE_REACH)
        if match is not None and at < match.end():
            return match
    return None


def _occurrences(lowered: str, word: str, start: int, end: int) -> list[int]:
    found = []
    at = lowered.find(word, start, end)
    while at != -1:
        found.append(at)
        at = lowered.find(word, at + 1, end)
    return found


def _env_pair(match: re.Match[str]) -> str:
    group = value_group(match)
    if group is None or not secret_key(match.group("key")) or harmless(match.group(group)):
        return match.group(0)
    return match.group(0)[: match.start(group) - match.start()] + marker(Kind.secret_value)


# ---------------------------------------------------------------- Secret data

_YAML_KIND = re.compile(r"(?m)^[ \t-]*[\"']?kind[\"']?[ \t]*:[ \t]*[\"']?Secret[\"']?[ \t]*(?:#[^\n]*)?\r?$")
_JSON_KIND = re.compile(r"\"kind\"[ \t]*:[ \t]*\"Secret\"")


def redact_secret_data(text: str) -> str:
    """Every value under `data:` / `stringData:` of each Secret object a text holds, whatever its
    key and whatever it looks like; the data of other objects beside it (a ConfigMap) is kept."""
    if _JSON_KIND.search(text):
        text = secret_json.redact_data(text)
    if _YAML_KIND.search(text):
        text = secret_yaml.redact_data(text)
    return text
